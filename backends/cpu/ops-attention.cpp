// Causal grouped-query attention over a per-sequence f16 KV cache.
//
// A sliding window W (AttnParams::window) gives the keys before a query's
// last W positions probability zero (their scores are computed, then
// dropped: the same FMA chains, so a window >= the context changes nothing).
//
// Layout: the K cache is stored transposed, one row per key dimension
// (n_ctx f16 positions), and the V cache holds one row per position
// (n_embd_kv f16). Both products then run with a position or a dimension in
// each vector lane and no horizontal sums: a score is sum_d q_d K[d][j] with
// 16 keys per register, an output is sum_j p_j V[j][d] with 16 dimensions
// per register.
//
// Rounding points follow llama.cpp's CPU path without flash attention, so
// logits agree with it: the query is rounded to f16 before QK^T (its matmul
// converts src1 to f16), the softmax runs in f32 with a double sum (the
// exp is vt's own, kernels.h, within 2 ulp), and the
// probabilities are rounded to f16 before the product with V. Each sum is
// one f32 FMA chain in index order (d for a score, j for an output), so a
// token's result does not depend on which tokens share its step: a key or a
// position past a query's causal end adds an exact zero (p = 0).
//
// Work goes in units of (KV head, block of up to 16 tokens): all queries of
// the block's tokens x the group's heads share each K and V load.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant.h"
#include "core/quant/kernels.h"
#include "cpu-ops.h"

namespace vt::cpu {

namespace {
struct AttnShape {
    int64_t head_dim, n_head, n_head_kv, n_tok, n_past, kv_row, window;
};
AttnShape attn_shape(const Node &n) {
    AttnShape s;
    s.head_dim = n.src[0]->ne[0];
    s.n_head = n.src[0]->ne[1];
    s.n_head_kv = n.src[1]->ne[1];
    s.n_tok = n.src[0]->ne[2];
    s.n_past = n.params.attn.n_past;
    s.window = n.params.attn.window;
    s.kv_row = s.head_dim * s.n_head_kv;
    return s;
}

constexpr int64_t kTokBlock = 16;
int64_t n_queries(const AttnShape &s) { return (s.n_tok < kTokBlock ? s.n_tok : kTokBlock) * (s.n_head / s.n_head_kv); }
// Keys rounded up to whole 16-lane vectors.
int64_t keys_padded(const AttnShape &s) { return (s.n_past + s.n_tok + 15) & ~(int64_t)15; }

// Per-thread scratch in floats: a unit's output row pointers, its
// f16-rounded queries and f16-rounded probabilities as f32, then one f16
// row: a query (head_dim) while rounding queries, probabilities (keys) after.
// Both bounds count: with few keys a 256-wide head is the longer row.
size_t scratch_floats(const AttnShape &s) {
    const size_t nq = (size_t)n_queries(s), nk = (size_t)keys_padded(s);
    const size_t row16 = (std::max(nk, (size_t)s.head_dim) + 1) / 2;  // f16s in floats
    return (2 * nq + nq * (size_t)s.head_dim + nq * nk + row16 + 64 + 15) & ~(size_t)15; // 64-byte units
}

} // namespace

size_t work_size_attn(const Node &n, int nth) {
    const AttnShape s = attn_shape(n);
    // Phase 1 uses the start of each thread's scratch for one f16 K row.
    return (size_t)nth * std::max(scratch_floats(s), (size_t)s.kv_row) * sizeof(float);
}

void op_attn(const Node &n, const OpCtx &c) {
    const AttnShape s = attn_shape(n);
    const Tensor *kc = n.src[3], *vc = n.src[4];  // K^T (n_ctx, kv_row) and V (kv_row, n_ctx)
    const float scale = n.params.attn.scale;
    uint8_t *kbase = static_cast<uint8_t *>(kc->data);
    uint8_t *vbase = static_cast<uint8_t *>(vc->data);
    const size_t kt_stride = kc->nb[1] / 2, v_stride = vc->nb[1] / 2; // in f16
    const quant::Kernels &kern = quant::active_kernels();

    // Phase 1: append this step's K columns and V rows to the caches as f16.
    {
        int64_t b, e;
        split(s.n_tok, c.ith, c.nth, b, e);
        // The K row goes through the scratch (converted in one call), then
        // one f16 per K^T row.
        uint16_t *k16 = reinterpret_cast<uint16_t *>(c.wdata) + (size_t)c.ith * ((s.kv_row + 31) & ~(int64_t)31);
        for (int64_t t = b; t < e; ++t) {
            const float *kr = static_cast<const float *>(n.src[1]->data) + t * s.kv_row;
            const float *vr = static_cast<const float *>(n.src[2]->data) + t * s.kv_row;
            quantize_row(DType::F16, kr, k16, s.kv_row);
            for (int64_t d = 0; d < s.kv_row; ++d)
                reinterpret_cast<uint16_t *>(kbase + (size_t)d * kc->nb[1])[s.n_past + t] = k16[d];
            quantize_row(DType::F16, vr, vbase + (size_t)(s.n_past + t) * vc->nb[1], s.kv_row);
        }
        c.barrier();
    }

    // Phase 2: one unit (KV head, token block) at a time.
    const int64_t hd = s.head_dim, group = s.n_head / s.n_head_kv, nq_max = n_queries(s), nk_pad = keys_padded(s);
    float **outs = reinterpret_cast<float **>(reinterpret_cast<float *>(c.wdata) + (size_t)c.ith * scratch_floats(s));
    float *qf = reinterpret_cast<float *>(outs + nq_max);
    float *pf = qf + (size_t)nq_max * hd;
    uint16_t *p16 = reinterpret_cast<uint16_t *>(pf + (size_t)nq_max * nk_pad);
    const int64_t n_blocks = (s.n_tok + kTokBlock - 1) / kTokBlock, n_units = n_blocks * s.n_head_kv;
    // Causal blocks grow with the token index, so contiguous ranges would
    // give the last thread most of the work: deal the units out round-robin.
    for (int64_t u = c.ith; u < n_units; u += c.nth) {
        const int64_t hk = u % s.n_head_kv, t0 = (u / s.n_head_kv) * kTokBlock;
        const int64_t nt = s.n_tok - t0 < kTokBlock ? s.n_tok - t0 : kTokBlock, nq = nt * group;
        const int64_t n_keys = s.n_past + t0 + nt; // keys of the block's last token
        // Query (t0 + i / group, head hk * group + i % group) is row i: f16-rounded, as f32.
        for (int64_t i = 0; i < nq; ++i) {
            const int64_t t = t0 + i / group, h = hk * group + i % group;
            const float *q = static_cast<const float *>(n.src[0]->data) + (t * s.n_head + h) * hd;
            quantize_row(DType::F16, q, p16, hd);
            dequantize_row(DType::F16, p16, qf + i * hd, hd);
        }
        // Scores into pf (row stride nk_pad).
        const uint16_t *kt = reinterpret_cast<const uint16_t *>(kbase + (size_t)hk * hd * kc->nb[1]);
        kern.attn_scores(qf, nq, hd, kt, kt_stride, n_keys, pf, (size_t)nk_pad);
        // Softmax per query over its own keys; probabilities rounded to f16
        // and back, zero outside its keys (past it, and before its window).
        for (int64_t i = 0; i < nq; ++i) {
            const int64_t n_kv = s.n_past + t0 + i / group + 1; // causal: keys up to this token
            const int64_t lo = s.window > 0 && n_kv > s.window ? n_kv - s.window : 0;
            float *sc = pf + i * nk_pad;
            std::memset(sc, 0, (size_t)lo * sizeof(float));
            float *win = sc + lo;
            const int64_t nw = n_kv - lo;
            const float inv = (float)(1.0 / kern.softmax(win, nw, scale));
            for (int64_t j = 0; j < nw; ++j) win[j] *= inv;
            quantize_row(DType::F16, win, p16, nw);
            dequantize_row(DType::F16, p16, win, nw);
            std::memset(sc + n_kv, 0, (size_t)(n_keys - n_kv) * sizeof(float));
        }
        const uint16_t *v = reinterpret_cast<const uint16_t *>(vbase) + hk * hd;
        for (int64_t i = 0; i < nq; ++i) {
            const int64_t t = t0 + i / group, h = hk * group + i % group;
            outs[i] = static_cast<float *>(n.dst->data) + (t * s.n_head + h) * hd;
        }
        kern.attn_values(pf, (size_t)nk_pad, nq, n_keys, v, v_stride, hd, outs);
    }
}

bool supports_attn(const Node &n) {
    const Tensor *q = n.src[0], *k = n.src[1], *v = n.src[2], *kc = n.src[3], *vc = n.src[4];
    const AttnParams &p = n.params.attn;
    if (!(is_f32(q) && is_f32(k) && is_f32(v) && kc->type == DType::F16 && vc->type == DType::F16 && is_f32(n.dst) &&
          same_shape(q, n.dst) && same_shape(k, v) && p.n_past >= 0 && p.window >= 0))
        return false;
    const int64_t head_dim = q->ne[0], n_head = q->ne[1], n_head_kv = k->ne[1], n_tok = q->ne[2];
    const int64_t kv_row = head_dim * n_head_kv;
    if (k->ne[0] != head_dim || k->ne[2] != n_tok || q->ne[3] != 1 || k->ne[3] != 1) return false;
    // The caches must hold every position this step writes.
    // K^T: (n_ctx, kv_row); V: (kv_row, n_ctx), both with contiguous rows.
    return n_head_kv > 0 && n_head % n_head_kv == 0 && kc->ne[1] == kv_row && vc->ne[0] == kv_row &&
           kc->nb[0] == 2 && vc->nb[0] == 2 && p.n_past + n_tok <= kc->ne[0] && p.n_past + n_tok <= vc->ne[1];
}

} // namespace vt::cpu
