//! gpt-oss (OpenAI's open-weight MoE): a pre-norm decoder whose attention
//! has biases on q, k, v and o, a learned sink logit per head in the softmax
//! (ATTN_PAGED's sinks), NeoX rope with YaRN, and a sliding window on
//! alternate layers (layer il slides unless il % 2 == 1: transformers'
//! layer_types, llama.cpp's default period 2). Every FFN is a mixture of
//! experts: a router with a bias, the top k chosen on its logits and
//! weighed by a softmax over theirs only (kMoeSoftmaxTopk), each expert
//! with biases on gate, up and down and the clamped SwiGLU
//! (clamp(up, -limit, limit) + 1) * g * sigmoid(alpha g), g = min(gate,
//! limit). Attention scale head_dim^-1/2; the output is untied.
//! The released configs set rope_scaling truncate false: transformers keeps
//! YaRN's correction range at fractional dimensions (8.09 .. 17.4 for
//! gpt-oss-20b), and so does vt from a folder (RopeParams::yarn_exact); a
//! GGUF has no such key and llama.cpp rounds them (8 .. 18), so vt does too
//! there, moving the angles of the dimensions in between a little.
//! Reference: transformers/models/gpt_oss/modeling_gpt_oss.py (GptOssAttention,
//! GptOssTopKRouter, GptOssExperts); llama.cpp's openai-moe graph (src/models/
//! openai-moe.cpp) and conversion/gpt_oss.py (GGUF names: attn_sinks,
//! post_attention_norm, ffn_*_exps.bias).
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/layers.h"

namespace vt {
namespace {

// llama.cpp hard-codes both (LLM_FFN_SWIGLU_OAI_MOE) and its converter
// writes no key; a folder's config may say otherwise (swiglu_alpha,
// swiglu_limit: hf-folder writes them as these keys).
constexpr float kSwigluAlpha = 1.702f;
constexpr float kSwigluLimit = 7.0f;

struct GptOssLayer {
    const Tensor *attn_norm, *post_attention_norm;  // (n_embd) each
    AttnWeights attn;                               // with biases and sinks
    MoeWeights moe;                                 // with router and expert biases
};

class GptOss final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    const Tensor *tok_embd_ = nullptr;     // (n_embd, n_vocab)
    const Tensor *output_ = nullptr;       // (n_embd, n_vocab)
    const Tensor *output_norm_ = nullptr;  // (n_embd)
    std::vector<GptOssLayer> layers_;
};

void GptOss::load(Model &m) {
    read_decoder_hparams(m, kRopeNeox);
    MoeDefaults moe_defaults;
    moe_defaults.gating = kMoeSoftmaxTopk;
    moe_defaults.norm = false;  // the softmax over the chosen already sums to 1
    read_moe_hparams(m, moe_defaults);
    Hparams &hp = m.hparams;
    if (hp.n_expert == 0) fail(VT_ERR_FORMAT, "gpt-oss: the model has no experts (expert_count)");
    // llama.cpp's graph weighs the chosen experts by the softmax of their
    // logits whatever the file says (LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT).
    hp.expert_gating = kMoeSoftmaxTopk;
    hp.expert_weights_norm = false;
    const uint32_t window = m.arch_u32("attention.sliding_window", 0);
    const std::vector<bool> slides = sliding_layers(m, m.hparams.n_layer, 2);
    m.cache_layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const bool sliding = window > 0 && slides[il];
        m.cache_layers[il] = {sliding ? CacheKind::sliding_window : CacheKind::full_attention, sliding ? window : 0,
                              hp.n_embd_kv()};
    }
    SwigluParams act{m.arch_f32("expert_swiglu_alpha", kSwigluAlpha), m.arch_f32("expert_swiglu_limit", kSwigluLimit)};
    if (!(act.limit > 0.0f) || !std::isfinite(act.limit) || !std::isfinite(act.alpha))
        fail(VT_ERR_FORMAT, "gpt-oss: invalid SwiGLU alpha %g / limit %g", (double)act.alpha, (double)act.limit);

    const int64_t E = hp.n_embd, V = hp.n_vocab, F = hp.n_ff_exp, X = hp.n_expert;
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    layers_.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        GptOssLayer &l = layers_[i];
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        l.post_attention_norm = load_norm(m, p + "post_attention_norm.weight", E);
        l.attn = load_attn_weights(m, i);
        l.attn.bo = load_norm(m, p + "attn_output.bias", E, false);
        // Required: without them this is another model, not gpt-oss with zero sinks.
        l.attn.sinks = load_norm(m, p + "attn_sinks.weight", hp.n_head);
        l.moe = load_moe_weights(m, i);
        l.moe.router_bias = load_norm(m, p + "ffn_gate_inp.bias", X, false);
        l.moe.gate_bias = m.weight(p + "ffn_gate_exps.bias", {F, X}, false);
        l.moe.up_bias = m.weight(p + "ffn_up_exps.bias", {F, X}, false);
        l.moe.down_bias = m.weight(p + "ffn_down_exps.bias", {E, X}, false);
        l.moe.swiglu = act;
    }
}

Tensor *GptOss::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    const RopeParams rope = b.rope();
    const float scale = 1.0f / std::sqrt((float)m.hparams.head_dim);
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) {
        const GptOssLayer &l = layers_[il];
        x = b.add(x, b.attention(il, b.rms_norm(x, l.attn_norm), l.attn, rope, scale));
        x = b.add(x, b.moe(b.rms_norm(x, l.post_attention_norm), l.moe));
    }
    return b.logits(x, output_norm_, output_);
}

} // namespace

std::unique_ptr<Architecture> make_gpt_oss_architecture() { return std::make_unique<GptOss>(); }

} // namespace vt
