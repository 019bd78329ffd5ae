#include "models/decoder.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace vt {

void PreNormDecoder::load(Model &m) {
    read_decoder_hparams(m, traits_.rope_mode);
    read_moe_hparams(m, traits_.moe);
    full_attention_cache(m);
    // Mistral v0.1's window applies to every layer (a folder's config.json
    // sliding_window; GGUF conversions of it carry none).
    const uint32_t window = traits_.sliding_window ? m.arch_u32("attention.sliding_window", 0) : 0;
    if (window)
        for (LayerCacheSpec &l : m.cache_layers) l = {CacheKind::sliding_window, window, l.kv_row};
    const Hparams &hp = m.hparams;
    const int64_t E = hp.n_embd;
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    if (traits_.rope_freqs) rope_freqs_ = load_norm(m, "rope_freqs.weight", hp.n_rot / 2, false);
    else if (m.gguf().find_tensor("rope_freqs.weight"))
        fail(VT_ERR_FORMAT, "%s: unexpected rope_freqs.weight", traits_.name);
    if (traits_.long_rope) {
        // rope_freqs_ holds the short factors; build() swaps in the long ones.
        rope_freqs_ = load_norm(m, "rope_factors_short.weight", hp.n_rot / 2, false);
        rope_long_ = load_norm(m, "rope_factors_long.weight", hp.n_rot / 2, false);
        if (!rope_freqs_ != !rope_long_)
            fail(VT_ERR_FORMAT, "%s: rope_factors_long and _short come together", traits_.name);
    }
    layers_.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        Layer &l = layers_[i];
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        l.attn = load_attn_weights(m, i, traits_.qk_norm_full);
        const bool has_bias = l.attn.bq && l.attn.bk && l.attn.bv;
        if (traits_.qkv_bias && !has_bias) fail(VT_ERR_FORMAT, "%s: %sattn_{q,k,v}.bias missing", traits_.name, p.c_str());
        if (traits_.qk_norm && !l.attn.q_norm)
            fail(VT_ERR_FORMAT, "%s: %sattn_{q,k}_norm.weight missing", traits_.name, p.c_str());
        if (!traits_.qk_norm && l.attn.q_norm)
            fail(VT_ERR_FORMAT, "%s: %sattn_q_norm.weight is not part of this architecture", traits_.name, p.c_str());
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        if (is_moe_layer(m, i)) l.moe = load_moe_weights(m, i);
        else l.ffn = load_ffn_weights(m, i);
    }
}

Tensor *PreNormDecoder::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    const RopeParams rope = b.rope();
    const float scale = 1.0f / std::sqrt((float)m.hparams.head_dim);
    const Tensor *factors = rope_long_ && a.n_ctx > (int64_t)m.hparams.rope_n_ctx_orig ? rope_long_ : rope_freqs_;
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) {
        const Layer &l = layers_[il];
        x = b.add(x, b.attention(il, b.rms_norm(x, l.attn_norm), l.attn, rope, scale, factors));
        x = b.add(x, b.ffn_or_moe(b.rms_norm(x, l.ffn_norm), l.ffn, l.moe, Activation::silu));
    }
    return b.logits(x, output_norm_, output_);
}

} // namespace vt
