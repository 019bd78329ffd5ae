//! Kimi-Linear (KimiLinearForCausalLM, GGUF `kimi-linear`): a hybrid of Kimi
//! Delta Attention layers (models/kimi-delta.h) and, every few layers, MLA
//! (models/mla.h) with no position encoding at all: neither q_pe nor k_pe is
//! rotated, the model relies on the KDA layers for order. Pre-norm blocks
//! with plain RMSNorms (weights as stored, no 1 + w); the first
//! leading_dense_block_count layers have a dense SwiGLU FFN, the others
//! DeepSeek-V3-style experts: sigmoid scores, chosen by score +
//! exp_probs_b, weighted by the unbiased scores renormalised, times
//! expert_weights_scale, plus ungated shared experts.
//!
//! Which layers are KDA: attention.head_count_kv is a list, 0 for a KDA
//! layer (1 for MLA, the absorbed form's one latent KV head). The KDA head
//! count is attention.head_count (llama.cpp has no key of its own), its head
//! size kda.head_dim. attention.value_length is not read: transformers saves
//! head_dim = qk_rope_head_dim and the converter copies it; MLA's sizes are
//! key_length_mla, value_length_mla and kv_lora_rank.
//!
//! Epsilons: transformers' kv_a_layernorm (and q_a_layernorm) uses its
//! module default 1e-6, not rms_norm_eps; the KDA L2 norm 1e-6 too.
//! Reference: transformers/models/kimi_linear/modeling_kimi_linear.py.
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/kimi-delta.h"
#include "models/mla.h"

namespace vt {

namespace {
// KimiLinearRMSNorm's default, which kv_a_layernorm and q_a_layernorm keep.
constexpr float kLatentNormEps = 1e-6f;

class KimiLinear final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    struct Layer {
        bool kda = false;
        const Tensor *attn_norm = nullptr, *ffn_norm = nullptr;  // (n_embd)
        KdaWeights delta;  // KDA layers
        MlaWeights attn;   // the others
        FfnWeights ffn;    // dense layers
        MoeWeights moe;    // the others
    };

    KdaShape kda_;
    MlaShape mla_;
    float kq_scale_ = 1.0f;
    const Tensor *tok_embd_ = nullptr;     // (n_embd, n_vocab)
    const Tensor *output_norm_ = nullptr;  // (n_embd)
    const Tensor *output_ = nullptr;       // (n_embd, n_vocab); tok_embd_ when tied
    std::vector<Layer> layers_;
};

void KimiLinear::load(Model &m) {
    read_decoder_hparams(m, kRopeNeox);  // the rope mode is never used
    read_moe_hparams(m, MoeDefaults{kMoeSigmoid, true});
    Hparams &hp = m.hparams;
    const std::vector<uint32_t> kv_heads = read_head_count_kv(m);
    bool any_mla = false;
    for (uint32_t c : kv_heads) any_mla |= c != 0;
    if (!any_mla) fail(VT_ERR_FORMAT, "kimi-linear: no MLA layer (attention.head_count_kv is 0 for every layer)");
    kda_ = read_kda_shape(m);
    mla_ = read_mla_shape(m);
    if (hp.n_head_kv != 1)
        fail(VT_ERR_FORMAT, "kimi-linear: the MLA layers have %u KV heads, expected 1 (the latent row)", hp.n_head_kv);
    kq_scale_ = 1.0f / std::sqrt((float)hp.head_dim);  // 1/sqrt(qk_nope + qk_rope)

    const int64_t E = hp.n_embd;
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    m.cache_layers.assign(hp.n_layer, LayerCacheSpec{CacheKind::latent, 0, mla_.row()});
    layers_.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer &l = layers_[il];
        l.kda = kv_heads[il] == 0;
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        if (l.kda) {
            m.cache_layers[il] = kda_cache_spec(kda_);
            l.delta = load_kda_weights(m, il, kda_);
        } else {
            l.attn = load_mla_weights(m, il, mla_);
        }
        if (is_moe_layer(m, il)) {
            l.moe = load_moe_weights(m, il);
            if (!l.moe.shared.gate)
                fail(VT_ERR_FORMAT, "kimi-linear: %sffn_{gate,up,down}_shexp are required", p.c_str());
        } else {
            l.ffn = load_ffn_weights(m, il);
        }
    }
}

Tensor *KimiLinear::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    const MlaParams mp{nullptr, kq_scale_, kLatentNormEps};
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) {
        const Layer &l = layers_[il];
        Tensor *h = b.rms_norm(x, l.attn_norm);
        x = b.add(x, l.kda ? kimi_delta_attention(b, il, h, l.delta, kda_) : mla_attention(b, il, h, l.attn, mla_, mp));
        x = b.add(x, b.ffn_or_moe(b.rms_norm(x, l.ffn_norm), l.ffn, l.moe, Activation::silu));
    }
    return b.logits(x, output_norm_, output_);
}
} // namespace

std::unique_ptr<Architecture> make_kimi_linear_architecture() { return std::make_unique<KimiLinear>(); }

} // namespace vt
