//! Muse Glimmer (text model): a pre- and post-norm decoder (Gemma's four
//! norms per block) over embeddings that a weightless RMSNorm normalizes
//! first. Its block norms are "centered": x / rms(x) * (1 + w), stored as
//! 1 + w by the converter (and by the folder loader), so plain RMS norms
//! here; the post-attention and post-FFN ones use their own epsilon
//! (attention.post_norm_rms_epsilon, 1e-8 when absent as llama.cpp assumes).
//! Queries and keys get a weightless per-head RMSNorm, the queries then
//! times qk_scale_factor: the converter writes both as attn_{q,k}_norm
//! weights (qk_scale_factor and ones), which the folder loader synthesizes
//! too. Sliding layers (window attention.sliding_window, the file's
//! attention.sliding_window_pattern) rotate at rope.freq_base_swa (the base
//! when absent); full layers have no rope at all. A sigmoid gate per
//! channel, from its own projection of the layer input (attn_gate), scales
//! the attention output before o_proj. Dense SwiGLU FFN. The logits are
//! multiplied by logit_scale (output_multiplier) and then soft-capped,
//! c * tanh(l / c) with c = final_logit_softcapping.
//! Reference: transformers/models/muse_glimmer/modeling_muse_glimmer.py
//! (MuseGlimmerTextModel, MuseGlimmerForConditionalGeneration's logits);
//! llama.cpp's muse-glimmer graph. The GGUF converter reorders Q and K rows
//! for adjacent-pair rope; a folder keeps rotate_half (NeoX).
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/layers.h"

namespace vt {
namespace {

struct MuseLayer {
    const Tensor *attn_norm, *attn_post_norm, *ffn_norm, *ffn_post_norm;  // (n_embd) each, 1 + w
    AttnWeights attn;              // q/k norms: qk_scale_factor and ones (head_dim)
    const Tensor *gate = nullptr;  // (n_embd, n_head * head_dim)
    FfnWeights ffn;
};

class MuseGlimmer final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    const Tensor *tok_embd_ = nullptr, *output_ = nullptr, *output_norm_ = nullptr;
    float post_norm_eps_ = 1e-8f;
    float freq_base_swa_ = 0.0f;
    float logit_scale_ = 1.0f;
    float softcap_ = 0.0f;
    std::vector<MuseLayer> layers_;
};

void MuseGlimmer::load(Model &m) {
    read_decoder_hparams(m, kRopeAdjacent);
    const Hparams &hp = m.hparams;
    if (m.arch_u32("expert_count", 0) != 0)
        fail(VT_ERR_UNSUPPORTED, "muse-glimmer: experts (expert_count) are not part of this architecture");
    const uint32_t window = m.arch_u32("attention.sliding_window");
    const std::string key = m.arch_name() + ".attention.sliding_window_pattern";
    const GgufValue *pattern = m.gguf().get_array(key, GgufType::BOOL);
    m.cache_layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        // llama.cpp's default without a list: period 4, the last of each full.
        bool sliding = il % 4 < 3;
        if (pattern) {
            if (!m.per_layer_list_ok(pattern->arr_n))
                fail(VT_ERR_FORMAT, "%s has %llu entries for %u layers", key.c_str(),
                     (unsigned long long)pattern->arr_n, hp.n_layer);
            sliding = pattern->uint_at(il) != 0;
        }
        sliding = sliding && window > 0;
        m.cache_layers[il] = {sliding ? CacheKind::sliding_window : CacheKind::full_attention, sliding ? window : 0,
                              hp.n_embd_kv()};
    }
    post_norm_eps_ = m.arch_f32("attention.post_norm_rms_epsilon", 1e-8f);
    freq_base_swa_ = m.arch_f32("rope.freq_base_swa", hp.rope_freq_base);
    logit_scale_ = m.arch_f32("logit_scale", 1.0f);
    softcap_ = m.arch_f32("final_logit_softcapping", 0.0f);
    if (!(post_norm_eps_ >= 0.0f) || !(freq_base_swa_ > 0.0f) || !std::isfinite(logit_scale_) || !(softcap_ >= 0.0f) ||
        !std::isfinite(softcap_))
        fail(VT_ERR_FORMAT, "muse-glimmer: invalid post-norm epsilon %g, rope.freq_base_swa %g, logit_scale %g or "
             "final_logit_softcapping %g", (double)post_norm_eps_, (double)freq_base_swa_, (double)logit_scale_,
             (double)softcap_);

    const int64_t E = hp.n_embd, Q = (int64_t)hp.n_head * hp.head_dim;
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    layers_.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        MuseLayer &l = layers_[i];
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        l.attn_post_norm = load_norm(m, p + "post_attention_norm.weight", E);
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        l.ffn_post_norm = load_norm(m, p + "post_ffw_norm.weight", E);
        l.attn = load_attn_weights(m, i);
        if (!l.attn.q_norm)
            fail(VT_ERR_FORMAT, "muse-glimmer: %sattn_q_norm.weight is missing (it carries qk_scale_factor)",
                 p.c_str());
        l.gate = m.matmul_weight(p + "attn_gate.weight", {E, Q});
        l.ffn = load_ffn_weights(m, i);
    }
}

Tensor *MuseGlimmer::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    Graph &g = b.graph();
    const Hparams &hp = m.hparams;
    const int64_t n = b.n_tokens(), hd = hp.head_dim, Q = (int64_t)hp.n_head * hd;
    RopeParams sliding = b.rope();
    sliding.freq_base = freq_base_swa_;
    RopeParams none = sliding;
    none.n_rot = 0;  // the full layers: no positions (NoPE)
    const float scale = 1.0f / std::sqrt((float)hd);
    Tensor *x = b.rms_norm(b.embed(tok_embd_), nullptr);  // the embedding's weightless norm
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const MuseLayer &l = layers_[il];
        const bool slides = m.cache_layers[il].kind == CacheKind::sliding_window;
        Tensor *h = b.rms_norm(x, l.attn_norm);
        Tensor *q = g.reshape(b.linear(l.attn.wq, h), {hd, (int64_t)hp.n_head, n});
        Tensor *k = g.reshape(b.linear(l.attn.wk, h), {hd, (int64_t)hp.n_head_kv, n});
        Tensor *v = g.reshape(b.linear(l.attn.wv, h), {hd, (int64_t)hp.n_head_kv, n});
        Tensor *att = b.attend(il, q, k, v, l.attn, slides ? sliding : none, scale);  // (Q, n)
        Tensor *gate = g.op<Op::UNARY>(DType::F32, {Q, n}, {b.linear(l.gate, h)}, UnaryParams{kUnarySigmoid, 0.0f});
        att = g.op<Op::MUL>(DType::F32, {Q, n}, {att, gate});
        x = b.add(x, b.rms_norm(b.linear(l.attn.wo, att), l.attn_post_norm, post_norm_eps_));
        Tensor *f = b.ffn(b.rms_norm(x, l.ffn_norm), l.ffn, Activation::silu);
        x = b.add(x, b.rms_norm(f, l.ffn_post_norm, post_norm_eps_));
    }
    Tensor *lg = b.logits(x, output_norm_, output_, logit_scale_);
    if (softcap_ > 0.0f) {
        lg = b.softcap(lg, softcap_);
        g.mark_output(lg);
    }
    return lg;
}

} // namespace

std::unique_ptr<Architecture> make_muse_glimmer_architecture() { return std::make_unique<MuseGlimmer>(); }

} // namespace vt
