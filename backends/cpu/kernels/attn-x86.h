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

template <class V, int Q>
static void scores_tile(const float *qf, int64_t hd, const uint16_t *kt, size_t kts, int64_t j0, float *sc, size_t scs) {
    typename V::F acc[Q];
    for (int i = 0; i < Q; ++i) acc[i] = V::zero();
    for (int64_t d = 0; d < hd; ++d) {
        const typename V::F k = V::f16(kt + d * kts + j0);
        for (int i = 0; i < Q; ++i) acc[i] = V::fma(V::set1(qf[i * hd + d]), k, acc[i]);
    }
    for (int i = 0; i < Q; ++i) V::store(sc + i * scs + j0, acc[i]);
}
template <class V, int Q>
static void scores_tiles(int q, const float *qf, int64_t hd, const uint16_t *kt, size_t kts, int64_t j0, float *sc,
                         size_t scs) {
    if constexpr (Q > 1)
        if (q < Q) return scores_tiles<V, Q - 1>(q, qf, hd, kt, kts, j0, sc, scs);
    scores_tile<V, Q>(qf, hd, kt, kts, j0, sc, scs);
}

// sc[i * scs + j] = sum_d qf[i * hd + d] * K^T[d * kts + j], i < nq, j < n_keys.
template <class V>
void attn_scores(const float *qf, int64_t nq, int64_t hd, const uint16_t *kt, size_t kts, int64_t n_keys, float *sc,
                 size_t scs) {
    int64_t j0 = 0;
    for (; j0 + V::W <= n_keys; j0 += V::W)
        for (int64_t i0 = 0; i0 < nq; i0 += kAttnQ<V>)
            scores_tiles<V, kAttnQ<V>>((int)(nq - i0), qf + i0 * hd, hd, kt, kts, j0, sc + i0 * scs, scs);
    for (int64_t i = 0; i < nq; ++i)
        for (int64_t j = j0; j < n_keys; ++j) {
            float s = 0.f;
            for (int64_t d = 0; d < hd; ++d) s = std::fma(qf[i * hd + d], f16f(kt[d * kts + j]), s);
            sc[i * scs + j] = s;
        }
}

template <class V, int P>
static void values_tile(const float *pf, size_t ps, int64_t n_keys, const uint16_t *v, size_t vs, int64_t d0,
                        float *const *out, bool accumulate) {
    typename V::F a0[P], a1[P];
    for (int i = 0; i < P; ++i) {
        a0[i] = accumulate ? V::load(out[i] + d0) : V::zero();
        a1[i] = accumulate ? V::load(out[i] + d0 + V::W) : V::zero();
    }
    for (int64_t j = 0; j < n_keys; ++j) {
        const typename V::F v0 = V::f16(v + j * vs + d0), v1 = V::f16(v + j * vs + d0 + V::W);
        for (int i = 0; i < P; ++i) {
            const typename V::F p = V::set1(pf[i * ps + j]);
            a0[i] = V::fma(p, v0, a0[i]);
            a1[i] = V::fma(p, v1, a1[i]);
        }
    }
    for (int i = 0; i < P; ++i) {
        V::store(out[i] + d0, a0[i]);
        V::store(out[i] + d0 + V::W, a1[i]);
    }
}
template <class V, int P>
static void values_tiles(int q, const float *pf, size_t ps, int64_t n_keys, const uint16_t *v, size_t vs, int64_t d0,
                         float *const *out, bool accumulate) {
    if constexpr (P > 1)
        if (q < P) return values_tiles<V, P - 1>(q, pf, ps, n_keys, v, vs, d0, out, accumulate);
    values_tile<V, P>(pf, ps, n_keys, v, vs, d0, out, accumulate);
}

// out[i][d] = sum_j pf[i * ps + j] * V[j * vs + d], i < nq, d < hd.
template <class V>
void attn_values(const float *pf, size_t ps, int64_t nq, int64_t n_keys, const uint16_t *v, size_t vs, int64_t hd,
                 float *const *out, bool accumulate) {
    int64_t d0 = 0;
    for (; d0 + 2 * V::W <= hd; d0 += 2 * V::W)
        for (int64_t i0 = 0; i0 < nq; i0 += kAttnP<V>)
            values_tiles<V, kAttnP<V>>((int)(nq - i0), pf + i0 * ps, ps, n_keys, v, vs, d0, out + i0, accumulate);
    for (int64_t i = 0; i < nq; ++i)
        for (int64_t d = d0; d < hd; ++d) {
            float o = accumulate ? out[i][d] : 0.f;
            for (int64_t j = 0; j < n_keys; ++j) o = std::fma(pf[i * ps + j], f16f(v[j * vs + d]), o);
            out[i][d] = o;
        }
}

} // namespace
} // namespace vt::quant::x86
