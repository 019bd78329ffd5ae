//! Gemma 3 (text): a pre- and post-norm decoder. Each block normalizes its
//! input, attends, normalizes the attention output before the residual add,
//! and the same around a GELU-tanh gated FFN (four norms per block). Queries
//! and keys get a per-head RMSNorm before rotary embedding (NeoX halves).
//! Layers alternate five sliding-window ones (window `attention.
//! sliding_window`, rope base `rope.freq_base_swa` or 10000, no scaling) with
//! one global layer (the file's rope base and scaling). Token embeddings are scaled by
//! sqrt(n_embd); the output is tied to them. Queries are scaled by
//! query_pre_attn_scalar^-1/2: head_dim, except the 27B's n_embd / n_head.
//! Reference: transformers/models/gemma3/modeling_gemma3.py; llama.cpp's
//! gemma3 graph (its convert_hf_to_gguf.py stores the norms as 1 + w, so they
//! are plain RMSNorm weights here).
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/layers.h"

namespace vt {
namespace {

constexpr uint32_t kSlidingPattern = 6;      // default: layer il slides unless il % 6 == 5
constexpr float kSlidingRopeBase = 10000.0f;  // default of rope.freq_base_swa

struct Gemma3Layer {
    const Tensor *attn_norm, *attn_post_norm, *ffn_norm, *ffn_post_norm;  // (n_embd) each
    AttnWeights attn;  // with q/k norms (head_dim)
    FfnWeights ffn;
};

class Gemma3 final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    const Tensor *tok_embd_ = nullptr;     // (n_embd, n_vocab)
    const Tensor *output_ = nullptr;       // (n_embd, n_vocab); tok_embd_ when tied (as Gemma 3 is)
    const Tensor *output_norm_ = nullptr;  // (n_embd)
    float attn_scale_ = 1.0f;
    float sliding_rope_base_ = kSlidingRopeBase;
    std::vector<Gemma3Layer> layers_;
};

void Gemma3::load(Model &m) {
    read_decoder_hparams(m, kRopeNeox);
    const Hparams &hp = m.hparams;
    const uint32_t window = m.arch_u32("attention.sliding_window", 0);
    const std::vector<bool> slides = sliding_layers(m, hp.n_layer, kSlidingPattern);
    m.cache_layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const bool sliding = window > 0 && slides[il];
        m.cache_layers[il] = {sliding ? CacheKind::sliding_window : CacheKind::full_attention, sliding ? window : 0,
                              hp.n_embd_kv()};
    }
    sliding_rope_base_ = m.arch_f32("rope.freq_base_swa", kSlidingRopeBase);
    if (m.arch_f32("final_logit_softcapping", 0.0f) != 0.0f)
        fail(VT_ERR_UNSUPPORTED, "gemma3: final logit soft-capping is not supported yet");
    // llama.cpp's rule: the 27B (62 layers) scales by n_embd / n_head.
    const float pre_attn = hp.n_layer == 62 ? (float)hp.n_embd / (float)hp.n_head : (float)hp.head_dim;
    attn_scale_ = 1.0f / std::sqrt(pre_attn);

    const int64_t E = hp.n_embd;
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    layers_.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        Gemma3Layer &l = layers_[i];
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        l.attn_post_norm = load_norm(m, p + "post_attention_norm.weight", E);
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        l.ffn_post_norm = load_norm(m, p + "post_ffw_norm.weight", E);
        l.attn = load_attn_weights(m, i);
        if (!l.attn.q_norm) fail(VT_ERR_FORMAT, "gemma3: %sattn_q_norm.weight is missing", p.c_str());
        l.ffn = load_ffn_weights(m, i);
    }
}

Tensor *Gemma3::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    const RopeParams global = b.rope();
    RopeParams sliding = global;
    sliding.freq_base = sliding_rope_base_;
    sliding.freq_scale = 1.0f;
    sliding.ext_factor = 0.0f;
    Tensor *x = b.scale(b.embed(tok_embd_), std::sqrt((float)m.hparams.n_embd));
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) {
        const Gemma3Layer &l = layers_[il];
        const bool slides = m.cache_layers[il].kind == CacheKind::sliding_window;
        Tensor *att = b.attention(il, b.rms_norm(x, l.attn_norm), l.attn, slides ? sliding : global, attn_scale_);
        x = b.add(x, b.rms_norm(att, l.attn_post_norm));
        Tensor *ffn = b.ffn(b.rms_norm(x, l.ffn_norm), l.ffn, Activation::gelu_tanh);
        x = b.add(x, b.rms_norm(ffn, l.ffn_post_norm));
    }
    return b.logits(x, output_norm_, output_);
}

} // namespace

std::unique_ptr<Architecture> make_gemma3_architecture() { return std::make_unique<Gemma3>(); }

} // namespace vt
