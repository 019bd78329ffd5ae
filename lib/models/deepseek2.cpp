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
//! V3's next-n layer (models/mtp-head.h: blk.<n_layer>.nextn.* with an MLA
//! and expert block, in a folder model.layers.<n_layer>.*) drafts for
//! speculative decoding's "mtp" method; llama.cpp's converter drops it from
//! a deepseek2 GGUF, a GGUF that keeps it is read the same way.
//!
//! References: transformers/models/deepseek_v2/modeling_deepseek_v2.py,
//! deepseek_v3/modeling_deepseek_v3.py; https://arxiv.org/abs/2405.04434.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/mla.h"
#include "models/mtp-head.h"

namespace vt {

namespace {
class DeepSeek2 final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;
    bool has_mtp() const override { return mtp_.has_value(); }
    Tensor *build_mtp(const Model &m, const ForwardArgs &a) const override;

private:
    struct Layer {
        const Tensor *attn_norm, *ffn_norm;  // (n_embd)
        MlaWeights attn;
        FfnWeights ffn;                      // dense layers
        MoeWeights moe;                      // the others
    };
    struct Mtp {
        MtpHead head;
        Layer layer;  // an expert layer (transformers' MtpModel: first_k_dense_replace 0)
    };
    void load_layer(Model &m, uint32_t il, Layer &l) const;
    Tensor *block(LayerBuilder &b, uint32_t il, Tensor *x, const Layer &l, const MlaParams &mp) const;
    MlaParams mla_params(LayerBuilder &b, RopeParams &rope) const;

    MlaShape mla_;
    float kq_scale_ = 0, rope_attn_factor_ = 1;
    const Tensor *tok_embd_ = nullptr, *output_norm_ = nullptr, *output_ = nullptr;
    std::vector<Layer> layers_;
    std::optional<Mtp> mtp_;
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

    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    layers_.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) load_layer(m, i, layers_[i]);
    // The next-n layer after the layers: vLLM and llama.cpp read one, a
    // checkpoint with more chains the first.
    if (m.nextn_layers() > 0) {
        Mtp t;
        load_layer(m, hp.n_layer, t.layer);
        t.head = load_mtp_head(m, hp.n_layer, tok_embd_, output_, output_norm_);
        mtp_ = t;
        m.mtp_cache.assign(1, LayerCacheSpec{CacheKind::latent, 0, mla_.row()});
    }
}

void DeepSeek2::load_layer(Model &m, uint32_t i, Layer &l) const {
    const int64_t E = m.hparams.n_embd;
    const std::string p = "blk." + std::to_string(i) + ".";
    l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
    l.attn = load_mla_weights(m, i, mla_);
    l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
    if (is_moe_layer(m, i)) l.moe = load_moe_weights(m, i);
    else l.ffn = load_ffn_weights(m, i);
}

MlaParams DeepSeek2::mla_params(LayerBuilder &b, RopeParams &rope) const {
    rope = b.rope();
    rope.attn_factor = rope_attn_factor_;
    return MlaParams{&rope, kq_scale_, b.model().hparams.norm_eps};
}

Tensor *DeepSeek2::block(LayerBuilder &b, uint32_t il, Tensor *x, const Layer &l, const MlaParams &mp) const {
    x = b.add(x, mla_attention(b, il, b.rms_norm(x, l.attn_norm), l.attn, mla_, mp));
    return b.add(x, b.ffn_or_moe(b.rms_norm(x, l.ffn_norm), l.ffn, l.moe, Activation::silu));
}

Tensor *DeepSeek2::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    RopeParams rope;
    const MlaParams mp = mla_params(b, rope);
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) x = block(b, il, x, layers_[il], mp);
    return b.logits(x, output_norm_, output_);
}

Tensor *DeepSeek2::build_mtp(const Model &m, const ForwardArgs &a) const {
    if (!mtp_) return Architecture::build_mtp(m, a);
    LayerBuilder b(m, a);
    RopeParams rope;
    const MlaParams mp = mla_params(b, rope);
    // Its cache is the one after the model's (Model::mtp_cache).
    Tensor *x = block(b, (uint32_t)m.cache_layers.size(), mtp_block_input(b, mtp_->head), mtp_->layer, mp);
    return mtp_logits(b, mtp_->head, x);
}
} // namespace

std::unique_ptr<Architecture> make_deepseek2_architecture() { return std::make_unique<DeepSeek2>(); }

} // namespace vt
