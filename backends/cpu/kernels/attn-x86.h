// Attention products (backends/cpu/ops-attention-paged.cpp,
// Kernels::attn_scores / attn_values) for x86, one template over the vector
// width, instantiated by the AVX2 and AVX-512 translation units. Include
// after simd-x86.h.
//
// Every output is one f32 FMA chain in index order, each lane its own
// (query, key) or (query, dimension) pair, so the results are bit-identical
// to the scalar reference (attn-scalar.cpp) and across instruction sets;
// lanes past a full vector go through the same chain in scalar code.
#pragma once

#include <cmath>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant::x86 {
namespace {

static inline float f16f(uint16_t h) { return _cvtsh_ss(h); }

// Queries per score chunk and per value chunk of a width (simd-x86.h's Ymm,
// Zmm): their accumulators fit the register file.
template <class V>
constexpr int kAttnQ = 12;
template <class V>
constexpr int kAttnP = V::W == 8 ? 4 : 8;

// A vector of W keys of one run: its first key's column in K^T, and its
// score column.
struct KeyChunk {
    const uint16_t *k;
    int64_t col;
};

// Q queries x C chunks of W keys at once: Q * C independent chains, so a
// decode token's few queries still keep the FMA units busy. With P the last
// chunk holds only its first n keys (a run's end): masked lanes, the same
// chains, nothing read or written past them.
template <class V, int Q, int C, bool P>
static void scores_tile(const float *qf, int64_t hd, const KeyChunk *ch, int n, size_t kts, float *sc, size_t scs) {
    typename V::F acc[C][Q];
    for (int c = 0; c < C; ++c)
        for (int i = 0; i < Q; ++i) acc[c][i] = V::zero();
    for (int64_t d = 0; d < hd; ++d) {
        typename V::F k[C];
        for (int c = 0; c < C; ++c)
            k[c] = P && c == C - 1 ? V::f16_n(ch[c].k + d * kts, n) : V::f16(ch[c].k + d * kts);
        for (int i = 0; i < Q; ++i) {
            const typename V::F q = V::set1(qf[i * hd + d]);
            for (int c = 0; c < C; ++c) acc[c][i] = V::fma(q, k[c], acc[c][i]);
        }
    }
    for (int c = 0; c < C; ++c)
        for (int i = 0; i < Q; ++i) {
            if (P && c == C - 1) V::store_n(sc + i * scs + ch[c].col, acc[c][i], n);
            else V::store(sc + i * scs + ch[c].col, acc[c][i]);
        }
}
// scores_tile for q <= Q queries and c <= C chunks.
template <class V, int Q, int C, bool P>
static void scores_tiles(int q, int c, const float *qf, int64_t hd, const KeyChunk *ch, int n, size_t kts, float *sc,
                         size_t scs) {
    if constexpr (Q > 1)
        if (q < Q) return scores_tiles<V, Q - 1, C, P>(q, c, qf, hd, ch, n, kts, sc, scs);
    if constexpr (C > 1)
        if (c < C) return scores_tiles<V, Q, C - 1, P>(q, c, qf, hd, ch, n, kts, sc, scs);
    scores_tile<V, Q, C, P>(qf, hd, ch, n, kts, sc, scs);
}

// Key chunks in flight for nq queries: enough chains to cover the FMA
// latency, no more accumulators than the registers hold (Q * C <= 16 of
// 32 zmm, <= 8 of 16 ymm); 1 for many queries (tiles of kAttnQ).
template <class V>
constexpr int attn_chunks(int64_t nq) {
    if (V::W == 16) return nq <= 4 ? 4 : nq <= 8 ? 2 : 1;
    return nq <= 4 ? 2 : 1;
}

// attn_scores with up to C chunks at once: the full chunks of W keys are
// gathered across runs into groups of C, a run's last keys (fewer than W)
// close the group they end as its masked chunk; with C == 1, query tiles of
// kAttnQ.
template <class V, int C>
void attn_scores_c(const float *qf, int64_t nq, int64_t hd, const uint16_t *const *kt, const int64_t *nk,
                   int64_t n_runs, size_t kts, float *sc, size_t scs) {
    constexpr int QC = C == 1 ? kAttnQ<V> : (V::W == 16 ? 16 : 8) / C;
    KeyChunk pend[C];
    int np = 0;
    auto flush = [&](int n_last, bool partial) {
        for (int64_t i0 = 0; i0 < nq; i0 += QC) {
            if (partial)
                scores_tiles<V, QC, C, true>((int)(nq - i0), np, qf + i0 * hd, hd, pend, n_last, kts, sc + i0 * scs, scs);
            else
                scores_tiles<V, QC, C, false>((int)(nq - i0), np, qf + i0 * hd, hd, pend, 0, kts, sc + i0 * scs, scs);
        }
        np = 0;
    };
    int64_t col = 0;
    for (int64_t r = 0; r < n_runs; ++r) {
        int64_t j = 0;
        for (; j + V::W <= nk[r]; j += V::W) {
            pend[np++] = KeyChunk{kt[r] + j, col + j};
            if (np == C) flush(0, false);
        }
        if (j < nk[r]) {
            pend[np++] = KeyChunk{kt[r] + j, col + j};
            flush((int)(nk[r] - j), true);
        }
        col += nk[r];
    }
    if (np) flush(0, false);
}

// core/quant.h's ref::attn_scores.
template <class V>
void attn_scores(const float *qf, int64_t nq, int64_t hd, const uint16_t *const *kt, const int64_t *nk, int64_t n_runs,
                 size_t kts, float *sc, size_t scs) {
    switch (attn_chunks<V>(nq)) {
    case 4: return attn_scores_c<V, 4>(qf, nq, hd, kt, nk, n_runs, kts, sc, scs);
    case 2: return attn_scores_c<V, 2>(qf, nq, hd, kt, nk, n_runs, kts, sc, scs);
    default: return attn_scores_c<V, 1>(qf, nq, hd, kt, nk, n_runs, kts, sc, scs);
    }
}

// Queries at most that take 4 vectors of dimensions at once in attn_values.
constexpr int kAttnFewQ = 4;

// P queries x D vectors of dimensions from d0: P * D chains over the keys.
template <class V, int P, int D>
static void values_tile(const float *pf, size_t ps, int64_t n_keys, const uint16_t *v, size_t vs, int64_t d0,
                        float *const *out, bool accumulate) {
    typename V::F a[P][D];
    for (int i = 0; i < P; ++i)
        for (int e = 0; e < D; ++e) a[i][e] = accumulate ? V::load(out[i] + d0 + e * V::W) : V::zero();
    for (int64_t j = 0; j < n_keys; ++j) {
        typename V::F x[D];
        for (int e = 0; e < D; ++e) x[e] = V::f16(v + j * vs + d0 + e * V::W);
        for (int i = 0; i < P; ++i) {
            const typename V::F p = V::set1(pf[i * ps + j]);
            for (int e = 0; e < D; ++e) a[i][e] = V::fma(p, x[e], a[i][e]);
        }
    }
    for (int i = 0; i < P; ++i)
        for (int e = 0; e < D; ++e) V::store(out[i] + d0 + e * V::W, a[i][e]);
}
template <class V, int P, int D>
static void values_tiles(int q, const float *pf, size_t ps, int64_t n_keys, const uint16_t *v, size_t vs, int64_t d0,
                         float *const *out, bool accumulate) {
    if constexpr (P > 1)
        if (q < P) return values_tiles<V, P - 1, D>(q, pf, ps, n_keys, v, vs, d0, out, accumulate);
    values_tile<V, P, D>(pf, ps, n_keys, v, vs, d0, out, accumulate);
}

// out[i][d] = sum_j pf[i * ps + j] * V[j * vs + d], i < nq, d < hd. A few
// queries (a decode token's group) take 4 vectors of dimensions at once
// where the registers allow (AVX-512), for as many chains as a prefill run.
template <class V>
void attn_values(const float *pf, size_t ps, int64_t nq, int64_t n_keys, const uint16_t *v, size_t vs, int64_t hd,
                 float *const *out, bool accumulate) {
    int64_t d0 = 0;
    if (V::W == 16 && nq <= kAttnFewQ)
        for (; d0 + 4 * V::W <= hd; d0 += 4 * V::W)
            values_tiles<V, kAttnFewQ, 4>((int)nq, pf, ps, n_keys, v, vs, d0, out, accumulate);
    for (; d0 + 2 * V::W <= hd; d0 += 2 * V::W)
        for (int64_t i0 = 0; i0 < nq; i0 += kAttnP<V>)
            values_tiles<V, kAttnP<V>, 2>((int)(nq - i0), pf + i0 * ps, ps, n_keys, v, vs, d0, out + i0, accumulate);
    for (int64_t i = 0; i < nq; ++i)
        for (int64_t d = d0; d < hd; ++d) {
            float o = accumulate ? out[i][d] : 0.f;
            for (int64_t j = 0; j < n_keys; ++j) o = std::fma(pf[i * ps + j], f16f(v[j * vs + d]), o);
            out[i][d] = o;
        }
}

} // namespace
} // namespace vt::quant::x86
