// Causal grouped-query attention over a per-sequence f16 KV cache.
//
// Layout: the K cache holds one row per position (n_embd_kv f16); the V cache
// is transposed, one row per value dimension (n_ctx f16), so that both
// products are f16 dot products over contiguous rows (the vec_dot kernels).
//
// Numerics follow llama.cpp's CPU path without flash attention, so logits
// agree with it: the query is rounded to f16 before QK^T (its matmul converts
// src1 to the f16 vec_dot_type), the softmax runs in f32 with a double sum,
// and the probabilities are rounded to f16 before the product with V.
#include <cmath>
#include <cstring>

#include "core/quant.h"
#include "cpu-ops.h"

namespace vt::cpu {

namespace {
struct AttnShape {
    int64_t head_dim, n_head, n_head_kv, n_tok, n_past, kv_row;
};
AttnShape attn_shape(const Node &n) {
    AttnShape s;
    s.head_dim = n.params.i[1];
    s.n_head = n.src[0]->ne[0] / s.head_dim;
    s.n_head_kv = n.src[1]->ne[0] / s.head_dim;
    s.n_tok = n.src[0]->ne[1];
    s.n_past = n.params.i[0];
    s.kv_row = s.head_dim * s.n_head_kv;
    return s;
}
// Per-thread scratch in floats: scores, f16 probabilities, f16 query.
size_t scratch_floats(const AttnShape &s) { return (size_t)(2 * (s.n_past + s.n_tok) + s.head_dim + 32); }
} // namespace

size_t attn_work_size(const Node &n, int nth) { return (size_t)nth * scratch_floats(attn_shape(n)) * sizeof(float); }

void op_attn(const Node &n, const OpCtx &c) {
    const AttnShape s = attn_shape(n);
    const Tensor *kc = n.src[3], *vc = n.src[4];  // (kv_row, n_ctx) and (n_ctx, kv_row)
    const float scale = n.params.f[0];
    const VecDotFn dot16 = vec_dot_fn(DType::F16);
    const uint8_t *kbase = static_cast<const uint8_t *>(kc->data);
    uint8_t *vbase = static_cast<uint8_t *>(vc->data);

    // Phase 1: append this step's K rows and V columns to the caches as f16.
    {
        int64_t b, e;
        split(s.n_tok, c.ith, c.nth, b, e);
        for (int64_t t = b; t < e; ++t) {
            const float *kr = static_cast<const float *>(n.src[1]->data) + t * s.kv_row;
            const float *vr = static_cast<const float *>(n.src[2]->data) + t * s.kv_row;
            quantize_row(DType::F16, kr, static_cast<uint8_t *>(kc->data) + (size_t)(s.n_past + t) * kc->nb[1], s.kv_row);
            for (int64_t d = 0; d < s.kv_row; ++d)
                reinterpret_cast<uint16_t *>(vbase + (size_t)d * vc->nb[1])[s.n_past + t] = f32_to_fp16(vr[d]);
        }
        c.barrier();
    }

    // Phase 2: one (token, head) pair at a time.
    float *scores = reinterpret_cast<float *>(c.wdata) + (size_t)c.ith * scratch_floats(s);
    uint16_t *p16 = reinterpret_cast<uint16_t *>(scores + s.n_past + s.n_tok);
    uint16_t *q16 = p16 + 2 * (s.n_past + s.n_tok);
    const int64_t group = s.n_head / s.n_head_kv;
    // Causal rows grow with the token index, so contiguous ranges would give
    // the last thread most of the work: deal the (token, head) pairs out
    // round-robin instead.
    for (int64_t idx = c.ith; idx < s.n_tok * s.n_head; idx += c.nth) {
        const int64_t t = idx / s.n_head, h = idx % s.n_head, hk = h / group;
        const int64_t n_kv = s.n_past + t + 1;  // causal: keys up to this token
        const float *q = static_cast<const float *>(n.src[0]->data) + (t * s.n_head + h) * s.head_dim;
        quantize_row(DType::F16, q, q16, s.head_dim);

        float mx = -INFINITY;
        for (int64_t j = 0; j < n_kv; ++j) {
            scores[j] = dot16(s.head_dim, kbase + (size_t)j * kc->nb[1] + (size_t)hk * s.head_dim * 2, q16) * scale;
            if (scores[j] > mx) mx = scores[j];
        }
        double sum = 0.0;
        for (int64_t j = 0; j < n_kv; ++j) {
            scores[j] = std::exp(scores[j] - mx);
            sum += (double)scores[j];
        }
        const float inv = (float)(1.0 / sum);
        for (int64_t j = 0; j < n_kv; ++j) scores[j] *= inv;
        quantize_row(DType::F16, scores, p16, n_kv);

        float *out = static_cast<float *>(n.dst->data) + (t * s.n_head + h) * s.head_dim;
        for (int64_t d = 0; d < s.head_dim; ++d)
            out[d] = dot16(n_kv, vbase + (size_t)(hk * s.head_dim + d) * vc->nb[1], p16);
    }
}

} // namespace vt::cpu
