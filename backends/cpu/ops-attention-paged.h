// What the two modes of Op::ATTN_PAGED share (ops-attention-paged.cpp: K
// and V pools; ops-attention-latent.cpp: one latent pool read as both):
// the shape of a node, the runs of tokens that share each key load, the
// scratch a unit needs, and the steps whose rounding points both follow (K
// rows into the pool, queries rounded to f16, the softmax and its f16
// probabilities). Internal to the CPU backend.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/quant.h"
#include "cpu/kernels/kernels.h"
#include "cpu-ops.h"

namespace vt::cpu {

constexpr int64_t kRunTokens = 16;

// Latent mode (DeepSeek MLA): no new V (src2) and no V pool (src4); each
// position's value is the first dv = dst->ne[0] values of its KV head's
// cached K row.
inline bool attn_is_latent(const Node &n) { return !n.src[2] && !n.src[4]; }

struct PagedShape {
    int64_t head_dim, n_head, n_head_kv, group, n_tok, kv_row, block_size, n_blocks, window, max_kv;
    int64_t dv;   // values per head in dst: head_dim, or latent mode's dv <= head_dim
    bool latent;
};
inline PagedShape paged_shape(const Node &n) {
    PagedShape s;
    s.head_dim = n.src[0]->ne[0];
    s.n_head = n.src[0]->ne[1];
    s.n_head_kv = n.src[1]->ne[1];
    s.group = s.n_head / s.n_head_kv;
    s.n_tok = n.src[0]->ne[2];
    s.kv_row = s.head_dim * s.n_head_kv;
    s.block_size = n.src[3]->ne[0];
    s.n_blocks = n.src[3]->ne[2];
    s.window = n.params.attn_paged.window;
    s.max_kv = n.params.attn_paged.max_kv;
    s.dv = n.dst->ne[0];
    s.latent = attn_is_latent(n);
    return s;
}

inline int64_t window_start(int64_t n_kv, int64_t window) { return window > 0 && n_kv > window ? n_kv - window : 0; }

inline int64_t queries_per_unit(const PagedShape &s) { return std::min(s.n_tok, kRunTokens) * s.group; }
// Keys one unit's score row holds: from its first token's window start to
// its last token, rounded up to whole 16-lane vectors.
inline int64_t row_keys(const PagedShape &s) {
    const int64_t n = s.window > 0 ? std::min(s.max_kv, s.window + kRunTokens - 1) : s.max_kv;
    return (n + 15) & ~(int64_t)15;
}
// Per-thread scratch in floats: a unit's output row pointers, its
// f16-rounded queries as f32, their probability rows, then room for one f16
// row (so that phase 1's K row, kv_row f16 from the scratch's start, always
// fits); in latent mode then a block's values as rows (latent_tile_floats).
inline size_t latent_tile_floats(const PagedShape &s) { return ((size_t)(s.block_size * s.dv) + 1) / 2 + 16; }
inline size_t scratch_floats(const PagedShape &s) {
    const size_t nq = (size_t)queries_per_unit(s), nk = (size_t)row_keys(s);
    const size_t row16 = (std::max({nk, (size_t)s.head_dim, (size_t)s.kv_row}) + 1) / 2;
    const size_t tile = s.latent ? latent_tile_floats(s) : 0;
    return (2 * nq + nq * (size_t)s.head_dim + nq * nk + row16 + tile + 64 + 15) & ~(size_t)15;  // 64-byte units
}

// The runs of the batch: token t continues t - 1's when both read the same
// block table at consecutive positions and the run is not full. Calls
// f(unit, t0, nt) for each in order.
template <class F>
void for_each_run(const int32_t *idx, int64_t n_tok, F &&f) {
    int64_t unit = 0;
    for (int64_t t0 = 0; t0 < n_tok; ++unit) {
        int64_t nt = 1;
        while (t0 + nt < n_tok && nt < kRunTokens && idx[3 * (t0 + nt) + 2] == idx[3 * t0 + 2] &&
               idx[3 * (t0 + nt) + 1] == idx[3 * t0 + 1] + nt)
            ++nt;
        f(unit, t0, nt);
        t0 += nt;
    }
}

// f32 rows to f16, and through f16 back to f32 in one pass, by the active
// table's F16 kernels (the SIMD ones where the CPU has them; every table's
// bits equal the reference's).
inline void to_f16(const float *x, uint16_t *h, int64_t n) {
    quant::active_kernels().quant[(int)DType::F16](x, h, n);
}
inline void round_f16(const float *x, float *out, int64_t n) {
    quant::active_kernels().round[(int)DType::F16](x, out, n);
}

// Phase 1's K write: the f32 row kr (kv_row values) rounded to f16 into
// column slot % block_size of every dimension row of its block in the K
// pool kc (keys transposed). k16: scratch of kv_row f16.
inline void write_k_row(const Tensor *kc, const float *kr, int64_t slot, int64_t kv_row, uint16_t *k16) {
    const int64_t bs = kc->ne[0];
    to_f16(kr, k16, kv_row);
    uint8_t *kblk = static_cast<uint8_t *>(kc->data) + (size_t)(slot / bs) * kc->nb[2] + (size_t)(slot % bs) * 2;
    for (int64_t d = 0; d < kv_row; ++d) *reinterpret_cast<uint16_t *>(kblk + (size_t)d * kc->nb[1]) = k16[d];
}

// Phase 1 of both modes: this thread's share of the step's tokens, each K
// row (and V row, when the node has a V pool) into its slot, then a barrier:
// every write lands before any thread reads the pool (a sequence may read
// blocks another sequence of the batch fills). scratch: kv_row f16.
inline void write_new_rows(const Node &n, const OpCtx &c, const PagedShape &s, uint16_t *k16) {
    const Tensor *kc = n.src[3], *vc = n.src[4];
    const int32_t *idx = static_cast<const int32_t *>(n.src[5]->data);
    const int64_t n_slots = s.n_blocks * s.block_size;
    int64_t b, e;
    split(s.n_tok, c.ith, c.nth, b, e);
    for (int64_t t = b; t < e; ++t) {
        const int64_t slot = idx[3 * t];
        if (slot < 0 || slot >= n_slots) continue;  // the runner never sends one; never write outside
        write_k_row(kc, static_cast<const float *>(n.src[1]->data) + t * s.kv_row, slot, s.kv_row, k16);
        if (vc)
            to_f16(static_cast<const float *>(n.src[2]->data) + t * s.kv_row,
                   reinterpret_cast<uint16_t *>(static_cast<uint8_t *>(vc->data) + (size_t)slot * vc->nb[1]), s.kv_row);
    }
    c.barrier();
}

// Scores of a unit's nq queries (qf: f16-rounded, hd each) against the keys
// of KV head hk in blocks b_lo .. b_hi - 1 of its table, clipped to keys
// key0 .. n_keys - 1, into pf (query i's row at i * ps, key j at j - key0).
// Each score is its own chain, so any split of the blocks gives the same bits;
// the blocks go to the kernel in batches, so that it can keep several key
// vectors in flight across block boundaries.
inline void block_scores(const quant::Kernels &kern, const Tensor *kc, const int32_t *table, int64_t hk,
                         const float *qf, int64_t nq, int64_t hd, int64_t key0, int64_t n_keys, int64_t b_lo,
                         int64_t b_hi, float *pf, int64_t ps) {
    constexpr int64_t kBatch = 64;
    const int64_t bs = kc->ne[0];
    const uint8_t *kbase = static_cast<const uint8_t *>(kc->data);
    const uint16_t *kt[kBatch];
    int64_t nk[kBatch];
    for (int64_t b0 = b_lo; b0 < b_hi; b0 += kBatch) {
        const int64_t n = std::min(kBatch, b_hi - b0);
        for (int64_t i = 0; i < n; ++i) {
            const int64_t b = b0 + i, j0 = std::max(key0, b * bs), j1 = std::min(n_keys, (b + 1) * bs);
            kt[i] = reinterpret_cast<const uint16_t *>(kbase + (size_t)table[b] * kc->nb[2] +
                                                       (size_t)(hk * hd) * kc->nb[1]) +
                    (j0 - b * bs);
            nk[i] = j1 - j0;
        }
        const int64_t first = std::max(key0, b0 * bs);
        kern.attn_scores(qf, nq, hd, kt, nk, n, (size_t)(kc->nb[1] / 2), pf + (first - key0), (size_t)ps);
    }
}

// Asks the cache for n rows of `bytes` bytes, `stride` apart, from p.
// Always inlined: an outlined helper that only prefetches may be taken for a
// "const" function and its calls deleted (kernels/gemm-x86.h).
[[gnu::always_inline]] inline void prefetch_rows(const uint8_t *p, int64_t n, size_t stride, size_t bytes) {
    for (int64_t r = 0; r < n; ++r)
        for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + (size_t)r * stride + o);
}

// A query row rounded to f16 and back (llama.cpp's f16 Q).
inline void round_query(const float *q, float *qf, int64_t hd) { round_f16(q, qf, hd); }

// One query's probabilities in place of its scores: row is indexed by key
// and holds keys key0 .. n_keys - 1 (its unit's); the query sees n_kv of
// them (its window from window_start). Softmax in f32 with the kernel's
// double sum, probabilities rounded to f16 and back, exact zeros outside
// the window. sink (null: none) points at the query head's sink logit
// (gpt-oss), a term of the denominator that no value follows: exp(sink -
// mx) added to the kernel's sum in double, mx the largest scaled score the
// kernel subtracted (recomputed here with the same f32 products, so equal).
// In exact arithmetic that is ggml's soft_max with sinks and transformers'
// concatenated sink column, whatever max each subtracts.
inline void softmax_probs(const quant::Kernels &kern, float *row, int64_t key0, int64_t n_kv, int64_t n_keys,
                          int64_t window, float scale, const float *sink = nullptr) {
    const int64_t lo = window_start(n_kv, window);
    std::fill(row + key0, row + lo, 0.0f);
    float *win = row + lo;
    const int64_t nw = n_kv - lo;
    float mx = -INFINITY;
    if (sink)
        for (int64_t j = 0; j < nw; ++j)
            if (win[j] * scale > mx) mx = win[j] * scale;
    double sum = kern.softmax(win, nw, scale);
    // A row of -inf scores (mx = -inf) has no finite term to stand beside.
    if (sink && std::isfinite(mx)) sum += std::exp((double)*sink - (double)mx);
    const float inv = (float)(1.0 / sum);
    for (int64_t j = 0; j < nw; ++j) win[j] *= inv;
    kern.round[(int)DType::F16](win, win, nw);
    std::fill(row + n_kv, row + n_keys, 0.0f);
}

// Whether a unit's index entries are sound: it sees at least one position,
// no more than max_kv, its keys fit the score rows, and its table (tokens'
// header first, then the tables) lies in the index and names blocks of the
// pool for b0 .. b1 - 1. A unit that is not gets zeros and reads nothing.
inline bool unit_index_ok(const PagedShape &s, const int32_t *idx, int64_t n_idx, int64_t n_kv0, int64_t n_keys,
                          int64_t key0, int64_t table_at, int64_t b0, int64_t b1) {
    bool ok = n_kv0 > 0 && n_keys <= s.max_kv && n_keys - key0 <= row_keys(s) && table_at >= 3 * s.n_tok &&
              table_at + b1 <= n_idx;
    const int32_t *table = idx + table_at;
    for (int64_t b = b0; ok && b < b1; ++b) ok = table[b] >= 0 && table[b] < s.n_blocks;
    return ok;
}

// The latent mode (ops-attention-latent.cpp), which op_attn_paged,
// supports_attn_paged and work_size_attn_paged hand over to.
void op_attn_latent(const Node &n, const OpCtx &c);
bool supports_attn_latent(const Node &n);

} // namespace vt::cpu
