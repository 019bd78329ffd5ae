//! LFM2 (Lfm2ForCausalLM, GGUF `lfm2`): short-conv and attention layers with
//! dense SwiGLU FFNs; models/lfm2.h has the block, LFM2-MoE is lfm2moe.cpp.
//! Reference: transformers/models/lfm2/modeling_lfm2.py.
#include "models/lfm2.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace vt {

void Lfm2::load(Model &m) {
    read_decoder_hparams(m, kRopeNeox);  // no permutation in the converter: rotate_half halves
    read_moe_hparams(m, MoeDefaults{kMoeSigmoid, true});
    Hparams &hp = m.hparams;
    if (traits_.experts && hp.n_expert == 0) fail(VT_ERR_FORMAT, "%s: the model has no expert_count", traits_.name);
    if (!traits_.experts && hp.n_expert != 0)
        fail(VT_ERR_UNSUPPORTED, "%s: experts (expert_count %u) are lfm2moe's, not lfm2's", traits_.name, hp.n_expert);
    const uint32_t kernel = read_short_conv_kernel(m);
    const std::vector<uint32_t> kv_heads = read_head_count_kv(m);
    full_attention_cache(m);

    const int64_t E = hp.n_embd;
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_, "token_embd_norm.weight");
    layers_.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer &l = layers_[il];
        l.conv = kv_heads[il] == 0;
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        if (l.conv) {
            m.cache_layers[il] = short_conv_cache_spec(E, kernel);
            l.sc = load_short_conv_weights(m, il, kernel);
        } else {
            l.attn = load_attn_weights(m, il);
            if (!l.attn.q_norm) fail(VT_ERR_FORMAT, "%s: %sattn_{q,k}_norm.weight missing", traits_.name, p.c_str());
            if (l.attn.bq || l.attn.bk || l.attn.bv)
                fail(VT_ERR_FORMAT, "%s: %sattn_{q,k,v}.bias is not part of this architecture", traits_.name, p.c_str());
        }
        if (is_moe_layer(m, il)) l.moe = load_moe_weights(m, il);
        else l.ffn = load_ffn_weights(m, il);
        if (l.moe.shared.gate)
            fail(VT_ERR_FORMAT, "%s: %sffn_*_shexp: LFM2-MoE has no shared expert", traits_.name, p.c_str());
    }
}

Tensor *Lfm2::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    const RopeParams rope = b.rope();
    const float scale = 1.0f / std::sqrt((float)m.hparams.head_dim);
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) {
        const Layer &l = layers_[il];
        Tensor *h = b.rms_norm(x, l.attn_norm);
        x = b.add(x, l.conv ? short_conv(b, il, h, l.sc) : b.attention(il, h, l.attn, rope, scale));
        x = b.add(x, b.ffn_or_moe(b.rms_norm(x, l.ffn_norm), l.ffn, l.moe, Activation::silu));
    }
    return b.logits(x, output_norm_, output_);
}

std::unique_ptr<Architecture> make_lfm2_architecture() { return std::make_unique<Lfm2>(Lfm2Traits{"lfm2", false}); }

} // namespace vt
