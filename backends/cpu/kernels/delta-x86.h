// The recurrent gated delta rule's rows (kernels.h DeltaRows) for x86, one
// template over simd-x86.h's vector traits. Four state rows go through a
// token together: their dots' reductions meet in one transpose-add, and the
// token's vectors are loaded once for the four. A row is read twice and
// written once per token: pass 1 takes kv = r.(d k) with the decayed keys
// d k shared by every row (DeltaRows::dk), pass 2 writes r d + delta k and
// takes its dot with q.
#pragma once

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant::x86 {
namespace {

// The sums of four vectors' lanes, as the lanes of one.
static inline __m128 sum4(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}
#if defined(__AVX512F__)
static inline __m256 halves(__m512 a) {
    return _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}
static inline __m128 sum4(__m512 a, __m512 b, __m512 c, __m512 d) {
    return sum4(halves(a), halves(b), halves(c), halves(d));
}
#endif

// Rows j0 .. j0 + R - 1 (R = 4, or 1 for the last rows) through the block.
template <class V, int R>
inline void delta_rows_r(float *S, int64_t j0, const DeltaRows &b) {
    using F = typename V::F;
    const int64_t dk = b.dk, nv = dk / V::W * V::W;
    float *row[R];
    for (int r = 0; r < R; ++r) row[r] = S + (j0 + r) * dk;
    for (int64_t t = 0; t < b.n; ++t) {
        const float *k = b.k[t], *q = b.q[t], *kd = b.kd + t * dk;
        const float *dvec = b.per_channel ? b.dec + t * dk : nullptr;
        const float d1 = b.per_channel ? 0.0f : b.dec[t];
        // Pass 1: kv = r.(d k).
        F acc[R];
        for (int r = 0; r < R; ++r) acc[r] = V::zero();
        for (int64_t i = 0; i < nv; i += V::W) {
            const F kv = V::load(kd + i);
            for (int r = 0; r < R; ++r) acc[r] = V::fma(V::load(row[r] + i), kv, acc[r]);
        }
        float kvs[R];
        if constexpr (R == 4) _mm_storeu_ps(kvs, sum4(acc[0], acc[1], acc[2], acc[3]));
        else kvs[0] = V::hsum(acc[0]);
        float dl[R];
        for (int r = 0; r < R; ++r) {
            for (int64_t i = nv; i < dk; ++i) kvs[r] += row[r][i] * kd[i];
            dl[r] = b.beta[t] * (b.v[t][j0 + r] - kvs[r]);
        }
        // Pass 2: r = r d + delta k, o = r.q.
        F dd[R];
        for (int r = 0; r < R; ++r) {
            acc[r] = V::zero();
            dd[r] = V::set1(dl[r]);
        }
        const F ds = V::set1(d1);
        for (int64_t i = 0; i < nv; i += V::W) {
            const F kv = V::load(k + i), qv = V::load(q + i), dc = dvec ? V::load(dvec + i) : ds;
            for (int r = 0; r < R; ++r) {
                const F x = V::fma(dd[r], kv, V::mul(V::load(row[r] + i), dc));
                V::store(row[r] + i, x);
                acc[r] = V::fma(x, qv, acc[r]);
            }
        }
        float o[R];
        if constexpr (R == 4) _mm_storeu_ps(o, sum4(acc[0], acc[1], acc[2], acc[3]));
        else o[0] = V::hsum(acc[0]);
        for (int r = 0; r < R; ++r) {
            for (int64_t i = nv; i < dk; ++i) {
                row[r][i] = row[r][i] * (dvec ? dvec[i] : d1) + dl[r] * k[i];
                o[r] += row[r][i] * q[i];
            }
            b.o[t][j0 + r] = o[r];
        }
    }
}

template <class V>
void delta_rows(float *S, int64_t j0, int64_t j1, const DeltaRows &b) {
    int64_t j = j0;
    for (; j + 4 <= j1; j += 4) delta_rows_r<V, 4>(S, j, b);
    for (; j < j1; ++j) delta_rows_r<V, 1>(S, j, b);
}

} // namespace
} // namespace vt::quant::x86
