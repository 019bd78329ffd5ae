// Op::ATTN_PAGED's latent mode (src2 and src4 null): attention over a cache
// of one row per token and KV head, read as both key and value. DeepSeek's
// multi-head latent attention decodes this way: the row is [c_kv, k_pe]
// (kv_lora_rank + rope dims, dk), each head's query has the up-projection of
// K absorbed, and the value is c_kv, the row's first dv values; the model
// applies the V up-projection to the output.
//
// Shapes: q src0 (dk, n_head, n_tok), new k src1 (dk, n_head_kv, n_tok)
// written into the K pool src3 (block_size, dk * n_head_kv, n_blocks) as in
// the normal mode, dst (dv, n_head, n_tok) with dv <= dk; KV head hk's value
// of a position is dimensions [hk * dk, hk * dk + dv) of its K row.
//
// Numerics are the normal mode's (ops-attention-paged.cpp): q rounded to
// f16, f32 scores, softmax in f32 with a double sum, probabilities rounded
// to f16; out[i][d] = sum_j p[i][j] * K[j][d] is one f32 FMA chain over the
// query's keys, blocks in table order and positions in order. So the bits of
// a token's output do not depend on the tokens that share its step or its
// run, nor on how threads split the work.
//
// Values. The pool holds each block's keys transposed (one row of
// block_size positions per dimension), while Kernels::attn_values reads
// value rows (one per position, dimensions contiguous) with the dimensions
// in vector lanes and the positions as its chain. Each block's [dv x
// positions] part is therefore transposed into a per-thread tile of value
// rows first (f16 moved as is, nothing rounded), shared by every query of
// the unit: for decode, all heads of the group.
//
// Threads. A unit is (KV head, run of up to 16 tokens of one sequence), as
// in the normal mode. With at least as many units as threads each thread
// takes whole units; with fewer (decode of a few sequences: MLA has one KV
// head, so one sequence is one unit) all threads work on each unit in turn,
// split where no chain is cut: queries for rounding and softmax, blocks for
// the scores, value dimensions for the products, with a barrier between.
#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/quant.h"
#include "cpu/kernels/kernels.h"
#include "cpu-ops.h"
#include "ops-attention-paged.h"

namespace vt::cpu {

namespace {

// Value dimensions are dealt to threads in chunks this wide, the pair of
// vectors one attn_values tile spans on AVX-512 (two on AVX2): a range cut
// elsewhere gives the same bits, but through the kernel's scalar tail.
constexpr int64_t kDimChunk = 32;

// tile[j * dw + d] = kt[d * kts + j], j < nj, d < dw: a block's transposed
// keys (dw dimension rows of kts) back to nj value rows of dw.
void transpose_f16(const uint16_t *kt, size_t kts, int64_t dw, int64_t nj, uint16_t *tile) {
    int64_t d0 = 0;
#if defined(__SSE2__)
    // 8 x 8 at a time: three rounds of 16-, 32- and 64-bit interleaves.
    for (; d0 + 8 <= dw; d0 += 8) {
        int64_t j0 = 0;
        for (; j0 + 8 <= nj; j0 += 8) {
            __m128i r[8], a[8], b[8];
            for (int i = 0; i < 8; ++i) r[i] = _mm_loadu_si128((const __m128i *)(kt + (size_t)(d0 + i) * kts + j0));
            for (int i = 0; i < 4; ++i) {
                a[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
                a[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
            }
            for (int i = 0; i < 2; ++i)
                for (int h = 0; h < 2; ++h) {
                    b[4 * i + h] = _mm_unpacklo_epi32(a[4 * i + h], a[4 * i + 2 + h]);
                    b[4 * i + 2 + h] = _mm_unpackhi_epi32(a[4 * i + h], a[4 * i + 2 + h]);
                }
            // b[0]: positions 0, 1 of dims 0-3; b[2]: 2, 3; b[1]: 4, 5; b[3]: 6, 7 (dims 4-7: b[4..7]).
            const int pos_of[4] = {0, 4, 2, 6};
            for (int i = 0; i < 4; ++i) {
                _mm_storeu_si128((__m128i *)(tile + (size_t)(j0 + pos_of[i]) * dw + d0),
                                 _mm_unpacklo_epi64(b[i], b[4 + i]));
                _mm_storeu_si128((__m128i *)(tile + (size_t)(j0 + pos_of[i] + 1) * dw + d0),
                                 _mm_unpackhi_epi64(b[i], b[4 + i]));
            }
        }
        for (int64_t j = j0; j < nj; ++j)
            for (int64_t d = d0; d < d0 + 8; ++d) tile[j * dw + d] = kt[(size_t)d * kts + j];
    }
#endif
    for (int64_t j = 0; j < nj; ++j)
        for (int64_t d = d0; d < dw; ++d) tile[j * dw + d] = kt[(size_t)d * kts + j];
}

// Who computes a unit: one thread alone (ith 0 of 1, no barriers), or all
// of them together.
struct Crew {
    int ith, nth;
    const OpCtx *c;  // barriers when together, else null
    void sync() const {
        if (c) c->barrier();
    }
};

// Buffers of one unit: queries and probabilities (the crew's shared ones
// when together), and this thread's output pointers and tile.
struct UnitBufs {
    float *qf, *pf;
    float **outs;
    uint16_t *tile;
};

void latent_unit(const Node &n, const PagedShape &s, const Crew &crew, const UnitBufs &u, int64_t t0, int64_t nt,
                 int64_t hk) {
    const quant::Kernels &kern = quant::active_kernels();
    const Tensor *kc = n.src[3];
    const int32_t *idx = static_cast<const int32_t *>(n.src[5]->data);
    const int64_t dk = s.head_dim, dv = s.dv, G = s.group, bs = s.block_size, ps = row_keys(s), nq = nt * G;
    const float scale = n.params.attn_paged.scale;
    const float *qsrc = static_cast<const float *>(n.src[0]->data);
    float *dst = static_cast<float *>(n.dst->data);

    // This thread's value dimensions [d_lo, d_hi).
    int64_t c0, c1;
    split((dv + kDimChunk - 1) / kDimChunk, crew.ith, crew.nth, c0, c1);
    const int64_t d_lo = std::min(dv, c0 * kDimChunk), d_hi = std::min(dv, c1 * kDimChunk), dw = d_hi - d_lo;
    // Query i is (token t0 + i / G, head hk * G + i % G).
    for (int64_t i = 0; i < nq; ++i) u.outs[i] = dst + ((t0 + i / G) * s.n_head + hk * G + i % G) * dv + d_lo;

    const int64_t n_kv0 = idx[3 * t0 + 1], n_keys = n_kv0 + nt - 1, table_at = idx[3 * t0 + 2];
    const int64_t key0 = window_start(n_kv0, s.window), b0 = key0 / bs, b1 = (n_keys + bs - 1) / bs;
    const int32_t *table = idx + table_at;
    // A malformed index: no reads outside the pool, zeros out (every
    // thread decides alike, so none waits at a barrier the others skip).
    if (!unit_index_ok(s, idx, n.src[5]->ne[0], n_kv0, n_keys, key0, table_at, b0, b1)) {
        for (int64_t i = 0; i < nq; ++i) std::memset(u.outs[i], 0, (size_t)dw * sizeof(float));
        return;
    }

    int64_t i0, i1;
    split(nq, crew.ith, crew.nth, i0, i1);
    for (int64_t i = i0; i < i1; ++i)
        round_query(qsrc + ((t0 + i / G) * s.n_head + hk * G + i % G) * dk, u.qf + i * dk, dk);
    crew.sync();

    int64_t bb0, bb1;
    split(b1 - b0, crew.ith, crew.nth, bb0, bb1);
    block_scores(kern, kc, table, hk, u.qf, nq, dk, key0, n_keys, b0 + bb0, b0 + bb1, u.pf, ps);
    crew.sync();

    for (int64_t i = i0; i < i1; ++i)
        softmax_probs(kern, u.pf + i * ps - key0, key0, n_kv0 + i / G, n_keys, s.window, scale);
    crew.sync();

    if (dw == 0) return;
    const uint8_t *kbase = static_cast<const uint8_t *>(kc->data);
    for (int64_t b = b0; b < b1; ++b) {
        const int64_t j0 = std::max(key0, b * bs), j1 = std::min(n_keys, (b + 1) * bs);
        const uint16_t *kt = reinterpret_cast<const uint16_t *>(kbase + (size_t)table[b] * kc->nb[2] +
                                                                (size_t)(hk * dk + d_lo) * kc->nb[1]) +
                             (j0 - b * bs);
        transpose_f16(kt, kc->nb[1] / 2, dw, j1 - j0, u.tile);
        kern.attn_values(u.pf + (j0 - key0), (size_t)ps, nq, j1 - j0, u.tile, (size_t)dw, dw, u.outs, b > b0);
    }
}

} // namespace

bool supports_attn_latent(const Node &n) {
    const Tensor *q = n.src[0], *k = n.src[1], *kp = n.src[3], *idx = n.src[5], *dst = n.dst;
    const PagedAttnParams &p = n.params.attn_paged;
    if (n.src[6]) return false;  // no latent model has sinks
    if (!(is_f32(q) && is_f32(k) && kp->type == DType::F16 && idx->type == DType::I32 && is_f32(dst) &&
          p.window >= 0 && p.max_kv > 0))
        return false;
    const int64_t dk = q->ne[0], n_head = q->ne[1], n_head_kv = k->ne[1], n_tok = q->ne[2], bs = kp->ne[0];
    if (k->ne[0] != dk || k->ne[2] != n_tok || q->ne[3] != 1 || k->ne[3] != 1 || kp->ne[3] != 1) return false;
    if (dst->ne[0] <= 0 || dst->ne[0] > dk || dst->ne[1] != n_head || dst->ne[2] != n_tok || dst->ne[3] != 1)
        return false;
    // The pool's block rows contiguous.
    return n_head_kv > 0 && n_head % n_head_kv == 0 && bs > 0 && kp->ne[1] == dk * n_head_kv && kp->nb[0] == 2 &&
           idx->ne[0] >= 3 * n_tok;
}

void op_attn_latent(const Node &n, const OpCtx &c) {
    const PagedShape s = paged_shape(n);
    const int32_t *idx = static_cast<const int32_t *>(n.src[5]->data);
    const size_t per_thread = scratch_floats(s);
    float *scratch = reinterpret_cast<float *>(c.wdata) + (size_t)c.ith * per_thread;

    // Phase 1: every token's K into its slot.
    write_new_rows(n, c, s, reinterpret_cast<uint16_t *>(scratch));

    // Phase 2. Scratch as the normal mode lays it out (ops-attention-paged.h),
    // then the tile.
    const int64_t nq_max = queries_per_unit(s), ps = row_keys(s);
    auto bufs_at = [&](float *at) {
        UnitBufs u;
        u.outs = reinterpret_cast<float **>(at);
        u.qf = reinterpret_cast<float *>(u.outs + nq_max);
        u.pf = u.qf + (size_t)nq_max * s.head_dim;
        const size_t row16 = (std::max({(size_t)ps, (size_t)s.head_dim, (size_t)s.kv_row}) + 1) / 2;
        u.tile = reinterpret_cast<uint16_t *>(((uintptr_t)(u.pf + (size_t)nq_max * ps + row16) + 63) & ~(uintptr_t)63);
        return u;
    };
    UnitBufs mine = bufs_at(scratch);
    int64_t n_units = 0;
    for_each_run(idx, s.n_tok, [&](int64_t, int64_t, int64_t) { n_units += s.n_head_kv; });
    if (n_units >= c.nth) {
        // Whole units per thread, dealt round-robin (later runs of a
        // sequence see more keys).
        const Crew alone{0, 1, nullptr};
        for_each_run(idx, s.n_tok, [&](int64_t unit, int64_t t0, int64_t nt) {
            for (int64_t hk = 0; hk < s.n_head_kv; ++hk)
                if ((unit * s.n_head_kv + hk) % c.nth == c.ith) latent_unit(n, s, alone, mine, t0, nt, hk);
        });
        return;
    }
    // All threads on each unit: the queries and probabilities are thread 0's.
    const UnitBufs first = bufs_at(reinterpret_cast<float *>(c.wdata));
    mine.qf = first.qf;
    mine.pf = first.pf;
    const Crew all{c.ith, c.nth, &c};
    for_each_run(idx, s.n_tok, [&](int64_t, int64_t t0, int64_t nt) {
        for (int64_t hk = 0; hk < s.n_head_kv; ++hk) latent_unit(n, s, all, mine, t0, nt, hk);
    });
}

} // namespace vt::cpu
