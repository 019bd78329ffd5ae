//! Llama family (Llama 1-3, SmolLM, Mistral without sliding window, ...).
//! Pre-norm decoder: RMSNorm -> attention with RoPE and grouped-query heads
//! -> residual -> RMSNorm -> SwiGLU MLP -> residual; output tied to the token
//! embedding when the file has no output.weight.
//! Paper: https://arxiv.org/abs/2302.13971; reference implementation:
//! transformers/models/llama/modeling_llama.py; GGUF tensor names as written
//! by llama.cpp's convert_hf_to_gguf.py (Q/K rows permuted for adjacent-pair
//! RoPE, hence rope mode 0).
#include <cmath>
#include <string>
#include <vector>

#include "backend/graph.h"
#include "core/error.h"
#include "model/model.h"

namespace vt {
namespace {

struct LlamaLayer {
    const Tensor *attn_norm;  // (n_embd)
    const Tensor *wq;         // (n_embd, n_head*head_dim)
    const Tensor *wk;         // (n_embd, n_head_kv*head_dim)
    const Tensor *wv;         // (n_embd, n_head_kv*head_dim)
    const Tensor *wo;         // (n_head*head_dim, n_embd)
    const Tensor *ffn_norm;   // (n_embd)
    const Tensor *ffn_gate;   // (n_embd, n_ff)
    const Tensor *ffn_up;     // (n_embd, n_ff)
    const Tensor *ffn_down;   // (n_ff, n_embd)
};

class Llama final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    const Tensor *tok_embd_ = nullptr;     // (n_embd, n_vocab)
    const Tensor *output_norm_ = nullptr;  // (n_embd)
    const Tensor *output_ = nullptr;       // (n_embd, n_vocab); tok_embd_ when tied
    std::vector<LlamaLayer> layers_;
};

void Llama::load(Model &m) {
    Hparams &hp = m.hparams;
    hp.n_ctx_train = m.arch_u32("context_length");
    hp.n_embd = m.arch_u32("embedding_length");
    hp.n_layer = m.arch_u32("block_count");
    hp.n_ff = m.arch_u32("feed_forward_length");
    hp.n_head = m.arch_u32("attention.head_count");
    hp.n_head_kv = m.arch_u32("attention.head_count_kv", hp.n_head);
    if (hp.n_head == 0 || hp.n_head_kv == 0 || hp.n_head % hp.n_head_kv != 0 || hp.n_layer == 0)
        fail(VT_ERR_FORMAT, "llama: invalid head counts %u/%u or %u layers", hp.n_head, hp.n_head_kv, hp.n_layer);
    hp.head_dim = m.arch_u32("attention.key_length", hp.n_embd / hp.n_head);
    if (m.arch_u32("attention.value_length", hp.head_dim) != hp.head_dim)
        fail(VT_ERR_UNSUPPORTED, "llama: key and value head sizes differ");
    if (hp.head_dim == 0 || hp.head_dim > 1024 || hp.head_dim % 2 != 0)
        fail(VT_ERR_FORMAT, "llama: invalid head size %u", hp.head_dim);
    hp.n_rot = m.arch_u32("rope.dimension_count", hp.head_dim);
    if (hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0) fail(VT_ERR_FORMAT, "llama: invalid rope dimension %u", hp.n_rot);
    hp.rope_mode = 0;
    hp.rope_freq_base = m.arch_f32("rope.freq_base", 10000.0f);
    hp.norm_eps = m.arch_f32("attention.layer_norm_rms_epsilon", 1e-5f);
    if (auto type = m.gguf().get_string(m.arch_name() + ".rope.scaling.type")) {
        if (*type == "linear") {
            float factor = m.arch_f32("rope.scaling.factor", 1.0f);
            hp.rope_freq_scale = factor > 0.0f ? 1.0f / factor : 1.0f;
        } else if (*type != "none") {
            fail(VT_ERR_UNSUPPORTED, "llama: rope scaling '%.*s' is not supported yet", (int)type->size(), type->data());
        }
    }
    if (m.gguf().find_tensor("rope_freqs.weight"))
        fail(VT_ERR_UNSUPPORTED, "llama: per-dimension rope frequency factors (Llama 3.1 rope) are not supported yet");

    const GgufTensorInfo *embd = m.gguf().find_tensor("token_embd.weight");
    if (!embd) fail(VT_ERR_FORMAT, "llama: model has no token_embd.weight");
    hp.n_vocab = (uint32_t)embd->ne[1];
    const int64_t E = hp.n_embd, V = hp.n_vocab, F = hp.n_ff;
    const int64_t Q = (int64_t)hp.n_head * hp.head_dim, KV = hp.n_embd_kv();
    tok_embd_ = m.matmul_weight("token_embd.weight", {E, V});
    output_norm_ = m.weight("output_norm.weight", {E});
    output_ = m.matmul_weight("output.weight", {E, V}, false);
    if (!output_) output_ = tok_embd_;
    layers_.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        LlamaLayer &l = layers_[i];
        l.attn_norm = m.weight(p + "attn_norm.weight", {E});
        l.wq = m.matmul_weight(p + "attn_q.weight", {E, Q});
        l.wk = m.matmul_weight(p + "attn_k.weight", {E, KV});
        l.wv = m.matmul_weight(p + "attn_v.weight", {E, KV});
        l.wo = m.matmul_weight(p + "attn_output.weight", {Q, E});
        l.ffn_norm = m.weight(p + "ffn_norm.weight", {E});
        l.ffn_gate = m.matmul_weight(p + "ffn_gate.weight", {E, F});
        l.ffn_up = m.matmul_weight(p + "ffn_up.weight", {E, F});
        l.ffn_down = m.matmul_weight(p + "ffn_down.weight", {F, E});
    }
    for (const Tensor *norm : {output_norm_}) {
        if (norm->type != DType::F32) fail(VT_ERR_UNSUPPORTED, "llama: norm weights must be F32");
    }
    for (const LlamaLayer &l : layers_)
        if (l.attn_norm->type != DType::F32 || l.ffn_norm->type != DType::F32)
            fail(VT_ERR_UNSUPPORTED, "llama: norm weights must be F32");
}

Tensor *Llama::build(const Model &m, const ForwardArgs &a) const {
    const Hparams &hp = m.hparams;
    Graph &g = *a.graph;
    const int64_t n = a.n_tokens, E = hp.n_embd, F = hp.n_ff;
    const int64_t Q = (int64_t)hp.n_head * hp.head_dim, KV = hp.n_embd_kv();
    auto w = [](const Tensor *t) { return const_cast<Tensor *>(t); };

    OpParams norm{};
    norm.f[0] = hp.norm_eps;
    OpParams rope{};
    rope.i[0] = (int32_t)hp.n_rot;
    rope.i[1] = hp.rope_mode;
    rope.i[2] = (int32_t)hp.head_dim;
    rope.f[0] = hp.rope_freq_base;
    rope.f[1] = hp.rope_freq_scale;
    OpParams attn{};
    attn.i[0] = (int32_t)a.n_past;
    attn.i[1] = (int32_t)hp.head_dim;
    attn.f[0] = 1.0f / std::sqrt((float)hp.head_dim);
    OpParams paged{};
    paged.i[0] = (int32_t)hp.head_dim;
    paged.i[1] = (int32_t)a.block_size;
    paged.f[0] = attn.f[0];

    Tensor *x = g.op(Op::GET_ROWS, DType::F32, E, n, {w(tok_embd_), a.tokens});
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LlamaLayer &l = layers_[il];
        Tensor *h = g.op(Op::RMS_NORM, DType::F32, E, n, {x, w(l.attn_norm)}, norm);
        Tensor *q = g.op(Op::MUL_MAT, DType::F32, Q, n, {w(l.wq), h});
        Tensor *k = g.op(Op::MUL_MAT, DType::F32, KV, n, {w(l.wk), h});
        Tensor *v = g.op(Op::MUL_MAT, DType::F32, KV, n, {w(l.wv), h});
        q = g.op(Op::ROPE, DType::F32, Q, n, {q, a.positions}, rope);
        k = g.op(Op::ROPE, DType::F32, KV, n, {k, a.positions}, rope);
        Tensor *att = a.kv_index
                          ? g.op(Op::ATTN_PAGED, DType::F32, Q, n,
                                 {q, k, v, &(*a.k_cache)[il], &(*a.v_cache)[il], a.kv_index}, paged)
                          : g.op(Op::ATTN, DType::F32, Q, n, {q, k, v, &(*a.k_cache)[il], &(*a.v_cache)[il]}, attn);
        Tensor *o = g.op(Op::MUL_MAT, DType::F32, E, n, {w(l.wo), att});
        x = g.op(Op::ADD, DType::F32, E, n, {x, o});
        h = g.op(Op::RMS_NORM, DType::F32, E, n, {x, w(l.ffn_norm)}, norm);
        Tensor *gate = g.op(Op::MUL_MAT, DType::F32, F, n, {w(l.ffn_gate), h});
        Tensor *up = g.op(Op::MUL_MAT, DType::F32, F, n, {w(l.ffn_up), h});
        Tensor *act = g.op(Op::SWIGLU, DType::F32, F, n, {gate, up});
        Tensor *down = g.op(Op::MUL_MAT, DType::F32, E, n, {w(l.ffn_down), act});
        x = g.op(Op::ADD, DType::F32, E, n, {x, down});
    }
    const int64_t n_out = a.out_rows->ne[0];
    Tensor *sel = g.op(Op::GET_ROWS, DType::F32, E, n_out, {x, a.out_rows});
    Tensor *h = g.op(Op::RMS_NORM, DType::F32, E, n_out, {sel, w(output_norm_)}, norm);
    Tensor *logits = g.op(Op::MUL_MAT, DType::F32, hp.n_vocab, n_out, {w(output_), h});
    g.mark_output(logits);
    return logits;
}

} // namespace

std::unique_ptr<Architecture> make_llama_architecture() { return std::make_unique<Llama>(); }

} // namespace vt
