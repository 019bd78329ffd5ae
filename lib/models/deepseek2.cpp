//! DeepSeek-V2 and V3 (GGUF `deepseek2`, as llama.cpp converts both):
//! multi-head latent attention (MLA) and a mixture-of-experts FFN after the
//! first leading_dense_block_count dense layers.
//!
//! MLA: the cache keeps, per token and layer, the normed latent c_kv
//! (kv_lora_rank values) and the rotated k_pe (n_rot values, shared by every
//! head): CacheKind::latent, 576 values for V2-Lite instead of 2 x 16 heads
//! x 128 + 64. Every step runs attention in the absorbed form: head h's
//! query becomes [W_UK_h^T q_nope_h, rope(q_pe_h)] (attn_k_b as a per-head
//! product, MUL_MAT_ID without ids), the keys are the cached rows, the values
//! their c_kv part (ATTN_PAGED's latent mode), and head h's output is
//! W_UV_h times its mixed latent (attn_v_b) before attn_output. Queries come
//! straight from attn_q, or through the low-rank attn_q_a, its norm and
//! attn_q_b (q_lora_rank, V2 and V3).
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
#include "models/layers.h"

namespace vt {

namespace {
class DeepSeek2 final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    struct Layer {
        const Tensor *attn_norm, *ffn_norm;      // (n_embd)
        const Tensor *wq = nullptr;              // (n_embd, n_head * d_qk), without q_lora
        const Tensor *wq_a = nullptr, *q_a_norm = nullptr, *wq_b = nullptr;  // (n_embd, q_lora), (q_lora), (q_lora, n_head * d_qk)
        const Tensor *wkv_a;                     // (n_embd, kv_lora + n_rot)
        const Tensor *kv_a_norm;                 // (kv_lora)
        const Tensor *wk_b;                      // (d_nope, kv_lora, n_head): W_UK_h^T per head
        const Tensor *wv_b;                      // (kv_lora, d_v, n_head)
        const Tensor *wo;                        // (n_head * d_v, n_embd)
        FfnWeights ffn;                          // dense layers
        MoeWeights moe;                          // the others
    };
    Tensor *attention(LayerBuilder &b, uint32_t il, Tensor *h) const;

    uint32_t kv_lora_ = 0, q_lora_ = 0, d_nope_ = 0, d_v_ = 0;
    float kq_scale_ = 0, rope_attn_factor_ = 1;
    const Tensor *tok_embd_ = nullptr, *output_norm_ = nullptr, *output_ = nullptr;
    std::vector<Layer> layers_;
};

void DeepSeek2::load(Model &m) {
    read_decoder_hparams(m, kRopeAdjacent);
    read_moe_hparams(m, MoeDefaults{kMoeSoftmax, false});
    Hparams &hp = m.hparams;
    hp.rope_mode = kRopeAdjacent;  // a folder's too: transformers rotates interleaved pairs
    kv_lora_ = m.arch_u32("attention.kv_lora_rank");
    q_lora_ = m.arch_u32("attention.q_lora_rank", 0);
    d_v_ = m.arch_u32("attention.value_length_mla");
    const uint32_t d_qk = hp.head_dim, n_rot = hp.n_rot;
    if (n_rot >= d_qk || d_v_ == 0 || m.arch_u32("attention.key_length") != kv_lora_ + n_rot ||
        m.arch_u32("attention.value_length", kv_lora_) != kv_lora_)
        fail(VT_ERR_FORMAT, "deepseek2: inconsistent MLA sizes (kv_lora_rank %u, rope %u, head %u, value head %u)",
             kv_lora_, n_rot, d_qk, d_v_);
    d_nope_ = d_qk - n_rot;
    const float factor = hp.rope_freq_scale > 0 ? 1.0f / hp.rope_freq_scale : 1.0f;
    const float mscale = hp.rope_attn_factor * (1.0f + m.arch_f32("rope.scaling.yarn_log_multiplier", 0.0f) *
                                                           std::log(factor));
    kq_scale_ = mscale * mscale / std::sqrt((float)d_qk);
    rope_attn_factor_ = hp.rope_ext_factor != 0.0f ? 1.0f / (1.0f + 0.1f * std::log(factor)) : 1.0f;
    m.cache_layers.assign(hp.n_layer, LayerCacheSpec{CacheKind::latent, 0, kv_lora_ + n_rot});

    const int64_t E = hp.n_embd, H = hp.n_head, V = hp.n_vocab;
    tok_embd_ = m.embedding_weight("token_embd.weight", {E, V});
    output_norm_ = load_norm(m, "output_norm.weight", E);
    output_ = m.output_weight("token_embd.weight", {E, V});
    if (!output_) output_ = tok_embd_;
    layers_.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        Layer &l = layers_[i];
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        if (q_lora_) {
            l.wq_a = m.matmul_weight(p + "attn_q_a.weight", {E, q_lora_});
            l.q_a_norm = load_norm(m, p + "attn_q_a_norm.weight", q_lora_);
            l.wq_b = m.matmul_weight(p + "attn_q_b.weight", {q_lora_, H * d_qk});
        } else {
            l.wq = m.matmul_weight(p + "attn_q.weight", {E, H * d_qk});
        }
        l.wkv_a = m.matmul_weight(p + "attn_kv_a_mqa.weight", {E, kv_lora_ + n_rot});
        l.kv_a_norm = load_norm(m, p + "attn_kv_a_norm.weight", kv_lora_);
        if (!m.gguf().find_tensor(p + "attn_k_b.weight"))
            fail(VT_ERR_UNSUPPORTED, "deepseek2: %sattn_kv_b.weight is not split into attn_k_b and attn_v_b: convert "
                                     "the model again with a current convert_hf_to_gguf.py", p.c_str());
        l.wk_b = m.matmul_weight(p + "attn_k_b.weight", {d_nope_, kv_lora_, H});
        l.wv_b = m.matmul_weight(p + "attn_v_b.weight", {kv_lora_, d_v_, H});
        l.wo = m.matmul_weight(p + "attn_output.weight", {H * d_v_, E});
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        if (is_moe_layer(m, i)) l.moe = load_moe_weights(m, i);
        else l.ffn = load_ffn_weights(m, i);
    }
}

Tensor *DeepSeek2::attention(LayerBuilder &b, uint32_t il, Tensor *h) const {
    const Layer &l = layers_[il];
    Graph &g = b.graph();
    const ForwardArgs &a = b.args();
    const Hparams &hp = b.model().hparams;
    const int64_t n = b.n_tokens(), H = hp.n_head, R = hp.n_rot, d_qk = hp.head_dim, L = kv_lora_;
    RopeParams rope = b.rope();
    rope.attn_factor = rope_attn_factor_;

    Tensor *q = l.wq ? b.linear(l.wq, h) : b.linear(l.wq_b, b.rms_norm(b.linear(l.wq_a, h), l.q_a_norm));
    const size_t f = sizeof(float);
    // q per head: [q_nope (d_nope) | q_pe (R)].
    Tensor *q_nope = g.view(q, {d_nope_, H, n}, {d_qk * f, H * d_qk * f});
    Tensor *q_pe = g.op<Op::CPY>(DType::F32, {R, H, n}, {g.view(q, {R, H, n}, {d_qk * f, H * d_qk * f}, d_nope_ * f)});
    q_pe = g.op<Op::ROPE>(DType::F32, {R, H, n}, {q_pe, a.positions, nullptr}, rope);
    // The absorbed query: W_UK_h^T q_nope_h for each head h.
    Tensor *q_lat = g.op<Op::MUL_MAT_ID>(DType::F32, {L, H, n}, {const_cast<Tensor *>(l.wk_b), q_nope, nullptr});
    Tensor *q_full = g.op<Op::CONCAT>(DType::F32, {L + R, H, n}, {q_lat, q_pe});

    // The cached row: [rms_norm(c_kv) | rope(k_pe)].
    Tensor *kv = b.linear(l.wkv_a, h);  // (L + R, n)
    Tensor *c = g.op<Op::CPY>(DType::F32, {L, 1, n}, {g.view(kv, {L, 1, n}, {(L + R) * f, (L + R) * f})});
    c = b.rms_norm(c, l.kv_a_norm);
    Tensor *k_pe = g.op<Op::CPY>(DType::F32, {R, 1, n}, {g.view(kv, {R, 1, n}, {(L + R) * f, (L + R) * f}, L * f)});
    k_pe = g.op<Op::ROPE>(DType::F32, {R, 1, n}, {k_pe, a.positions, nullptr}, rope);
    Tensor *k_full = g.op<Op::CONCAT>(DType::F32, {L + R, 1, n}, {c, k_pe});

    Tensor *kc = &(*a.k_cache)[il];
    Tensor *att = g.op<Op::ATTN_PAGED>(DType::F32, {L, H, n}, {q_full, k_full, nullptr, kc, nullptr, a.kv_index[il]},
                                       {kq_scale_, 0, (int32_t)a.n_ctx});
    // Each head's mixed latent through W_UV_h, then the output projection.
    Tensor *o = g.op<Op::MUL_MAT_ID>(DType::F32, {d_v_, H, n}, {const_cast<Tensor *>(l.wv_b), att, nullptr});
    return b.linear(l.wo, g.reshape(o, {d_v_ * H, n}));
}

Tensor *DeepSeek2::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) {
        const Layer &l = layers_[il];
        x = b.add(x, attention(b, il, b.rms_norm(x, l.attn_norm)));
        x = b.add(x, b.ffn_or_moe(b.rms_norm(x, l.ffn_norm), l.ffn, l.moe, Activation::silu));
    }
    return b.logits(x, output_norm_, output_);
}
} // namespace

std::unique_ptr<Architecture> make_deepseek2_architecture() { return std::make_unique<DeepSeek2>(); }

} // namespace vt
