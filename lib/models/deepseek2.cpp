//! DeepSeek-V2 and V3 (GGUF `deepseek2`, as llama.cpp converts both):
//! multi-head latent attention (MLA) and a mixture-of-experts FFN after the
//! first leading_dense_block_count dense layers.
//!
//! MLA (models/mla.h): the latent cache, the absorbed form, queries
//! straight from attn_q or through the low-rank attn_q_a / attn_q_b (V3).
//!
//! Routing: softmax (V2) or sigmoid with a selection bias and group limits
//! (V3: expert_gating_func 2, exp_probs_b, expert_group_count), the chosen
//! weights renormalized where expert_weights_norm says so, times
//! expert_weights_scale; shared experts added.
//!
//! Rope: adjacent pairs (transformers' complex / interleaved form, which the
//! converter keeps). With YaRN, DeepSeek scales the softmax by mscale^2,
//! mscale = 1 + yarn_log_multiplier ln(factor) (0.1 mscale_all_dim), and
//! leaves cos and sin unscaled: the rope's attn_factor cancels the YaRN
//! magnitude term ROPE applies (as llama.cpp does; transformers' cos/sin
//! factor mscale / mscale_all_dim is 1 whenever the two are equal, as in
//! every release).
//! References: transformers/models/deepseek_v2/modeling_deepseek_v2.py,
//! deepseek_v3/modeling_deepseek_v3.py; https://arxiv.org/abs/2405.04434.
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/mla.h"

namespace vt {

namespace {
class DeepSeek2 final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    struct Layer {
        const Tensor *attn_norm, *ffn_norm;  // (n_embd)
        MlaWeights attn;
        FfnWeights ffn;                      // dense layers
        MoeWeights moe;                      // the others
    };

    MlaShape mla_;
    float kq_scale_ = 0, rope_attn_factor_ = 1;
    const Tensor *tok_embd_ = nullptr, *output_norm_ = nullptr, *output_ = nullptr;
    std::vector<Layer> layers_;
};

void DeepSeek2::load(Model &m) {
    read_decoder_hparams(m, kRopeAdjacent);
    read_moe_hparams(m, MoeDefaults{kMoeSoftmax, false});
    Hparams &hp = m.hparams;
    hp.rope_mode = kRopeAdjacent;  // a folder's too: transformers rotates interleaved pairs
    mla_ = read_mla_shape(m);
    if (m.arch_u32("attention.value_length", mla_.kv_lora) != mla_.kv_lora)
        fail(VT_ERR_FORMAT, "deepseek2: value_length %u is not kv_lora_rank %u",
             m.arch_u32("attention.value_length"), mla_.kv_lora);
    const float factor = hp.rope_freq_scale > 0 ? 1.0f / hp.rope_freq_scale : 1.0f;
    const float mscale = hp.rope_attn_factor * (1.0f + m.arch_f32("rope.scaling.yarn_log_multiplier", 0.0f) *
                                                           std::log(factor));
    kq_scale_ = mscale * mscale / std::sqrt((float)hp.head_dim);
    rope_attn_factor_ = hp.rope_ext_factor != 0.0f ? 1.0f / (1.0f + 0.1f * std::log(factor)) : 1.0f;
    m.cache_layers.assign(hp.n_layer, LayerCacheSpec{CacheKind::latent, 0, mla_.row()});

    const int64_t E = hp.n_embd;
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    layers_.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        Layer &l = layers_[i];
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        l.attn = load_mla_weights(m, i, mla_);
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        if (is_moe_layer(m, i)) l.moe = load_moe_weights(m, i);
        else l.ffn = load_ffn_weights(m, i);
    }
}

Tensor *DeepSeek2::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    RopeParams rope = b.rope();
    rope.attn_factor = rope_attn_factor_;
    const MlaParams mp{&rope, kq_scale_, m.hparams.norm_eps};
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) {
        const Layer &l = layers_[il];
        x = b.add(x, mla_attention(b, il, b.rms_norm(x, l.attn_norm), l.attn, mla_, mp));
        x = b.add(x, b.ffn_or_moe(b.rms_norm(x, l.ffn_norm), l.ffn, l.moe, Activation::silu));
    }
    return b.logits(x, output_norm_, output_);
}
} // namespace

std::unique_ptr<Architecture> make_deepseek2_architecture() { return std::make_unique<DeepSeek2>(); }

} // namespace vt
