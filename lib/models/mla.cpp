#include "models/mla.h"

#include <string>

#include "core/error.h"

namespace vt {

MlaShape read_mla_shape(Model &m) {
    const Hparams &hp = m.hparams;
    MlaShape s;
    s.kv_lora = m.arch_u32("attention.kv_lora_rank");
    s.q_lora = m.arch_u32("attention.q_lora_rank", 0);
    s.d_v = m.arch_u32("attention.value_length_mla");
    s.d_rope = hp.n_rot;
    if (s.kv_lora == 0 || s.d_rope >= hp.head_dim || s.d_v == 0 ||
        m.arch_u32("attention.key_length") != s.kv_lora + s.d_rope)
        fail(VT_ERR_FORMAT, "%s: inconsistent MLA sizes (kv_lora_rank %u, rope %u, head %u, value head %u)",
             m.arch_name().c_str(), s.kv_lora, s.d_rope, hp.head_dim, s.d_v);
    s.d_nope = hp.head_dim - s.d_rope;
    return s;
}

MlaWeights load_mla_weights(Model &m, uint32_t il, const MlaShape &s) {
    const Hparams &hp = m.hparams;
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t E = hp.n_embd, H = hp.n_head, d_qk = hp.head_dim;
    MlaWeights w;
    if (s.q_lora) {
        w.wq_a = m.matmul_weight(p + "attn_q_a.weight", {E, s.q_lora});
        w.q_a_norm = load_norm(m, p + "attn_q_a_norm.weight", s.q_lora);
        w.wq_b = m.matmul_weight(p + "attn_q_b.weight", {s.q_lora, H * d_qk});
    } else {
        w.wq = m.matmul_weight(p + "attn_q.weight", {E, H * d_qk});
    }
    w.wkv_a = m.matmul_weight(p + "attn_kv_a_mqa.weight", {E, s.row()});
    w.kv_a_norm = load_norm(m, p + "attn_kv_a_norm.weight", s.kv_lora);
    if (!m.gguf().find_tensor(p + "attn_k_b.weight"))
        fail(VT_ERR_UNSUPPORTED, "%s: %sattn_kv_b.weight is not split into attn_k_b and attn_v_b: convert "
                                 "the model again with a current convert_hf_to_gguf.py",
             m.arch_name().c_str(), p.c_str());
    w.wk_b = m.matmul_weight(p + "attn_k_b.weight", {s.d_nope, s.kv_lora, H});
    w.wv_b = m.matmul_weight(p + "attn_v_b.weight", {s.kv_lora, s.d_v, H});
    w.wo = m.matmul_weight(p + "attn_output.weight", {H * s.d_v, E});
    return w;
}

Tensor *mla_attention(LayerBuilder &b, uint32_t il, Tensor *h, const MlaWeights &w, const MlaShape &s,
                      const MlaParams &p) {
    Graph &g = b.graph();
    const ForwardArgs &a = b.args();
    const Hparams &hp = b.model().hparams;
    const int64_t n = b.n_tokens(), H = hp.n_head, R = s.d_rope, d_qk = hp.head_dim, L = s.kv_lora, dn = s.d_nope;
    auto norm = [&](Tensor *x, const Tensor *wt) {
        return g.op<Op::RMS_NORM>(DType::F32, {x->ne[0], x->ne[1], x->ne[2]}, {x, const_cast<Tensor *>(wt)},
                                  NormParams{p.kv_norm_eps});
    };

    Tensor *q = w.wq ? b.linear(w.wq, h) : b.linear(w.wq_b, norm(b.linear(w.wq_a, h), w.q_a_norm));
    const size_t f = sizeof(float);
    // q per head: [q_nope (d_nope) | q_pe (R)].
    Tensor *q_nope = g.view(q, {dn, H, n}, {d_qk * f, H * d_qk * f});
    Tensor *q_pe = g.op<Op::CPY>(DType::F32, {R, H, n}, {g.view(q, {R, H, n}, {d_qk * f, H * d_qk * f}, dn * f)});
    if (p.rope) q_pe = g.op<Op::ROPE>(DType::F32, {R, H, n}, {q_pe, a.positions, nullptr}, *p.rope);
    // The absorbed query: W_UK_h^T q_nope_h for each head h.
    Tensor *q_lat = g.op<Op::MUL_MAT_ID>(DType::F32, {L, H, n}, {const_cast<Tensor *>(w.wk_b), q_nope, nullptr});
    Tensor *q_full = g.op<Op::CONCAT>(DType::F32, {L + R, H, n}, {q_lat, q_pe});

    // The cached row: [rms_norm(c_kv) | k_pe (rotated where there is rope)].
    Tensor *kv = b.linear(w.wkv_a, h);  // (L + R, n)
    Tensor *c = g.op<Op::CPY>(DType::F32, {L, 1, n}, {g.view(kv, {L, 1, n}, {(L + R) * f, (L + R) * f})});
    c = norm(c, w.kv_a_norm);
    Tensor *k_pe = g.op<Op::CPY>(DType::F32, {R, 1, n}, {g.view(kv, {R, 1, n}, {(L + R) * f, (L + R) * f}, L * f)});
    if (p.rope) k_pe = g.op<Op::ROPE>(DType::F32, {R, 1, n}, {k_pe, a.positions, nullptr}, *p.rope);
    Tensor *k_full = g.op<Op::CONCAT>(DType::F32, {L + R, 1, n}, {c, k_pe});

    Tensor *kc = &(*a.k_cache)[il];
    Tensor *att = g.op<Op::ATTN_PAGED>(DType::F32, {L, H, n}, {q_full, k_full, nullptr, kc, nullptr, a.kv_index[il], nullptr},
                                       {p.kq_scale, 0, (int32_t)a.n_ctx});
    // Each head's mixed latent through W_UV_h, then the output projection.
    Tensor *o = g.op<Op::MUL_MAT_ID>(DType::F32, {s.d_v, H, n}, {const_cast<Tensor *>(w.wv_b), att, nullptr});
    return b.linear(w.wo, g.reshape(o, {(int64_t)s.d_v * H, n}));
}

} // namespace vt
