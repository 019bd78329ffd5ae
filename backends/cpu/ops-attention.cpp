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
//
// Work goes in units of (KV head, block of tokens): the scores of all their
// queries (the block's tokens x the query heads sharing that KV head) come
// from one gemm over the K rows, whose F16 tiles are bit-identical to the
// f16 vec_dot, so each score is exactly the per-pair dot it replaces and a
// token's result does not depend on the block it was computed in.
#include <cmath>
#include <cstring>

#include "core/quant.h"
#include "core/quant/kernels.h"
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
// Tokens per work unit: enough queries to fill the gemm's token tiles.
constexpr int64_t kTokBlock = 16;
int64_t n_queries(const AttnShape &s) {
    return (s.n_tok < kTokBlock ? s.n_tok : kTokBlock) * (s.n_head / s.n_head_kv);
}
// Per-thread scratch in floats: a unit's scores (queries x keys), its f16
// probabilities and f16 queries.
size_t scratch_floats(const AttnShape &s) {
    const size_t nq = (size_t)n_queries(s), n_kv = (size_t)(s.n_past + s.n_tok);
    return nq * n_kv + nq * (n_kv / 2 + 1) + nq * (size_t)s.head_dim / 2 + 32;
}
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

    // Phase 2: one unit (KV head, token block) at a time.
    const int64_t group = s.n_head / s.n_head_kv, nq_max = n_queries(s), n_kv_all = s.n_past + s.n_tok;
    float *scores = reinterpret_cast<float *>(c.wdata) + (size_t)c.ith * scratch_floats(s);
    uint16_t *p16 = reinterpret_cast<uint16_t *>(scores + (size_t)nq_max * n_kv_all);
    const size_t p_stride = (size_t)(n_kv_all / 2 + 1) * 2; // in f16
    uint16_t *q16 = p16 + (size_t)nq_max * p_stride;
    const quant::GemmFn gemm16 = quant::active_kernels().gemm[(int)DType::F16];
    const int64_t n_blocks = (s.n_tok + kTokBlock - 1) / kTokBlock, n_units = n_blocks * s.n_head_kv;
    // Causal blocks grow with the token index, so contiguous ranges would
    // give the last thread most of the work: deal the units out round-robin.
    for (int64_t u = c.ith; u < n_units; u += c.nth) {
        const int64_t hk = u % s.n_head_kv, t0 = (u / s.n_head_kv) * kTokBlock;
        const int64_t nt = s.n_tok - t0 < kTokBlock ? s.n_tok - t0 : kTokBlock, nq = nt * group;
        const int64_t n_kv_max = s.n_past + t0 + nt; // keys of the block's last token
        // Query (t0 + i / group, head hk * group + i % group) is row i.
        for (int64_t i = 0; i < nq; ++i) {
            const int64_t t = t0 + i / group, h = hk * group + i % group;
            const float *q = static_cast<const float *>(n.src[0]->data) + (t * s.n_head + h) * s.head_dim;
            quantize_row(DType::F16, q, q16 + i * s.head_dim, s.head_dim);
        }
        const uint8_t *kh = kbase + (size_t)hk * s.head_dim * 2;
        if (gemm16) {
            gemm16(s.head_dim, kh, kc->nb[1], n_kv_max, q16, (size_t)s.head_dim * 2, nq, scores, (size_t)n_kv_all);
        } else {
            for (int64_t i = 0; i < nq; ++i)
                for (int64_t j = 0; j < n_kv_max; ++j)
                    scores[i * n_kv_all + j] = dot16(s.head_dim, kh + (size_t)j * kc->nb[1], q16 + i * s.head_dim);
        }
        for (int64_t i = 0; i < nq; ++i) {
            const int64_t t = t0 + i / group, h = hk * group + i % group;
            const int64_t n_kv = s.n_past + t + 1; // causal: keys up to this token
            float *sc = scores + i * n_kv_all;
            uint16_t *p = p16 + i * p_stride;
            float mx = -INFINITY;
            for (int64_t j = 0; j < n_kv; ++j) {
                sc[j] *= scale;
                if (sc[j] > mx) mx = sc[j];
            }
            double sum = 0.0;
            for (int64_t j = 0; j < n_kv; ++j) {
                sc[j] = std::exp(sc[j] - mx);
                sum += (double)sc[j];
            }
            const float inv = (float)(1.0 / sum);
            for (int64_t j = 0; j < n_kv; ++j) sc[j] *= inv;
            quantize_row(DType::F16, sc, p, n_kv);

            float *out = static_cast<float *>(n.dst->data) + (t * s.n_head + h) * s.head_dim;
            for (int64_t d = 0; d < s.head_dim; ++d)
                out[d] = dot16(n_kv, vbase + (size_t)(hk * s.head_dim + d) * vc->nb[1], p);
        }
    }
}

} // namespace vt::cpu
