// FP8_E4M3 weights with f32 activations (core/quant/fp8-scalar.cpp has the
// canonical order): the dot and the gemm tiles, written once over a 16-lane
// f32 vector: Ymm2 (two AVX2 registers) and, where the unit is built with
// AVX-512, Zmm16. Bytes become binary16 bits by two masks and shifts and f32
// by vcvtph2ps (exact); each weight vector is converted once per tile and
// used for T tokens, each activation vector for R rows.
#pragma once

#include <algorithm>
#include <cstring>

#include "core/quant/blocks.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant::x86 {
namespace {

// 16 e4m3 bytes as the binary16 bits of fp8_e4m3_half16, widened to 16 bits.
static inline __m256i fp8_half16x16(const uint8_t *q) {
    const __m256i w = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)q));
    return _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x80)), 8),
                           _mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x7F)), 7));
}

struct Ymm2 {
    struct F {
        __m256 lo, hi;
    };
    static inline F zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
    static inline F set1(float v) { return {_mm256_set1_ps(v), _mm256_set1_ps(v)}; }
    static inline F load(const float *p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
    static inline F fp8(const uint8_t *q) {
        const __m256i h = fp8_half16x16(q);
        return {_mm256_cvtph_ps(_mm256_castsi256_si128(h)), _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1))};
    }
    static inline F fma(F a, F b, F c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
    static inline float fold(F v) { return hsum(_mm256_add_ps(v.lo, v.hi)); }  // fp8-scalar.cpp's fold16
};

#if defined(__AVX512F__)
struct Zmm16 {
    using F = __m512;
    static inline F zero() { return _mm512_setzero_ps(); }
    static inline F set1(float v) { return _mm512_set1_ps(v); }
    static inline F load(const float *p) { return _mm512_loadu_ps(p); }
    static inline F fp8(const uint8_t *q) { return _mm512_cvtph_ps(fp8_half16x16(q)); }
    static inline F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static inline float fold(F v) {
        const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
        return hsum(_mm256_add_ps(_mm512_castps512_ps256(v), hi));
    }
};
#endif

// out[t * os + r] for R rows of w (stride ws bytes) and T activation rows of
// a (stride as bytes), nb blocks each: the canonical order per (row, token).
template <class V, int R, int T>
static inline void fp8_tile(int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *out,
                            size_t os) {
    using F = typename V::F;
    F acc[R][T], p[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = V::zero();
    for (int64_t b = 0; b < nb; ++b) {
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < T; ++t) p[r][t] = V::zero();
        for (int i = 0; i < 4; ++i) {
            F h[R];
            for (int r = 0; r < R; ++r) h[r] = V::fp8(((const BlockFP8 *)(w + r * ws))[b].q + 16 * i);
            for (int t = 0; t < T; ++t) {
                const F x = V::load((const float *)(a + t * as) + 64 * b + 16 * i);
                for (int r = 0; r < R; ++r) p[r][t] = V::fma(h[r], x, p[r][t]);
            }
        }
        for (int r = 0; r < R; ++r) {
            float d256;  // rows start at any 2-byte offset in tests: no aligned float read
            std::memcpy(&d256, &((const BlockFP8 *)(w + r * ws))[b].d, 4);
            const F d = V::set1(d256 * 256.0f);
            for (int t = 0; t < T; ++t) acc[r][t] = V::fma(d, p[r][t], acc[r][t]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) out[t * os + r] = V::fold(acc[r][t]);
}

template <class V>
float fp8_dot(int64_t n, const void *w, const void *a) {
    float out;
    fp8_tile<V, 1, 1>(n / 64, (const uint8_t *)w, 0, (const uint8_t *)a, 0, &out, 0);
    return out;
}

// kernels.h's GemmFn: tokens in blocks that stay in L2 while every row pair
// of this thread's slice passes over them, R x T tiles inside, the edges as
// 1-row and 1-token tiles.
template <class V, int R, int T>
void fp8_gemm(int64_t k, const void *wv, size_t ws, int64_t nr, const void *av, size_t as, int64_t nt, float *out,
              size_t os) {
    constexpr int64_t kTokenBlock = 48;
    const uint8_t *w = (const uint8_t *)wv, *a = (const uint8_t *)av;
    const int64_t nb = k / 64;
    for (int64_t t0 = 0; t0 < nt; t0 += kTokenBlock) {
        const int64_t t1 = std::min(nt, t0 + kTokenBlock);
        int64_t r = 0;
        auto tokens = [&]<int RR>() {
            int64_t t = t0;
            for (; t + T <= t1; t += T)
                fp8_tile<V, RR, T>(nb, w + r * ws, ws, a + t * as, as, out + t * os + r, os);
            for (; t < t1; ++t) fp8_tile<V, RR, 1>(nb, w + r * ws, ws, a + t * as, as, out + t * os + r, os);
        };
        for (; r + R <= nr; r += R) tokens.template operator()<R>();
        for (; r < nr; ++r) tokens.template operator()<1>();
    }
}

} // namespace
} // namespace vt::quant::x86
