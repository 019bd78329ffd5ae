// FP8_E4M3 weights with bf16 activations on CPUs without vdpbf16ps
// (core/quant/fp8-scalar.cpp has the canonical order): the dot and the gemm
// tiles, written once over a 16-lane f32 vector: Ymm2 (two AVX2 registers)
// and, where the unit is built with AVX-512, Zmm16. Bytes become binary16
// bits by a sign extension, a shift and a mask, and f32 by vcvtph2ps
// (exact). The dot reads the bf16 activation row and widens it as it
// streams; the gemm reads the same values as f32 (Kernels::gemm_f32_acts:
// the op rounds them through bf16 once), so its tiles widen nothing, and it
// serves the decode too: rows straight from the blocks below 4 tokens, else
// a group of rows converted once per block of tokens into f32 that its
// R x T tiles read.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/quant/blocks.h"
#include "cpu/kernels/simd-x86.h"

// Fully unrolled, so that the tile's accumulators stay in registers.
#define VT_FP8_UNROLL _Pragma("GCC unroll 16")

namespace vt::quant::x86 {
namespace {

// 16 e4m3 bytes as the binary16 bits of fp8_e4m3_half16: sign-extended to
// 16 bits and shifted left by 7, bits 13..7 are exponent and mantissa and
// bit 15 the sign (bit 8 of the extension); bit 14 (the byte's sign again)
// is cleared. Three operations, the load folded into the first.
static inline __m256i fp8_half16x16(const uint8_t *q) {
    const __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)q));
    return _mm256_and_si256(_mm256_slli_epi16(w, 7), _mm256_set1_epi16((short)0xBFFF));
}

struct Ymm2 {
    struct F {
        __m256 lo, hi;
    };
    static inline F zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
    static inline F set1(float v) { return {_mm256_set1_ps(v), _mm256_set1_ps(v)}; }
    static inline F load(const float *p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
    static inline F bf16(const uint16_t *p) {
        const __m256i lo = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
        const __m256i hi = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p + 8)));
        return {_mm256_castsi256_ps(_mm256_slli_epi32(lo, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16))};
    }
    static inline void store(float *p, F v) {
        _mm256_storeu_ps(p, v.lo);
        _mm256_storeu_ps(p + 8, v.hi);
    }
    static inline F fp8(const uint8_t *q) {
        const __m256i h = fp8_half16x16(q);
        return {_mm256_cvtph_ps(_mm256_castsi256_si128(h)), _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1))};
    }
    static inline F fma(F a, F b, F c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
    static inline F mul(F a, F b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
    static inline F add(F a, F b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
    static inline float fold(F v) { return hsum(_mm256_add_ps(v.lo, v.hi)); }  // fp8-scalar.cpp's fold16
};

#if defined(__AVX512F__)
struct Zmm16 {
    using F = __m512;
    static inline F zero() { return _mm512_setzero_ps(); }
    static inline F set1(float v) { return _mm512_set1_ps(v); }
    static inline F load(const float *p) { return _mm512_loadu_ps(p); }
    static inline F bf16(const uint16_t *p) {
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
    }
    static inline void store(float *p, F v) { _mm512_storeu_ps(p, v); }
    static inline F fp8(const uint8_t *q) { return _mm512_cvtph_ps(fp8_half16x16(q)); }
    static inline F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static inline F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static inline F add(F a, F b) { return _mm512_add_ps(a, b); }
    static inline float fold(F v) {
        const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
        return hsum(_mm256_add_ps(_mm512_castps512_ps256(v), hi));
    }
};
#endif

// The weights of a tile, straight from the blocks (decode: each vector
// converted where it is used) or from rows converted once into f32 (prefill:
// fp8_gemm's buffer, each converted value used by every token of the tile).
struct Fp8Blocks {
    const uint8_t *w;
    size_t ws;
    template <class V>
    typename V::F h(int r, int64_t b, int i) const {
        return V::fp8(((const BlockFP8 *)(w + r * ws))[b].q + 16 * i);
    }
    float d256(int r, int64_t b) const {
        float d;  // rows start at any 2-byte offset in tests: no aligned float read
        std::memcpy(&d, &((const BlockFP8 *)(w + r * ws))[b].d, 4);
        return d * 256.0f;
    }
};
struct Fp8Converted {
    const float *h0;     // row r's h at h0 + r * hs
    const float *d0;     // row r's block scales (d * 256) at d0 + r * ds
    int64_t hs, ds;
    template <class V>
    typename V::F h(int r, int64_t b, int i) const {
        return V::load(h0 + r * hs + 64 * b + 16 * i);
    }
    float d256(int r, int64_t b) const { return d0[r * ds + b]; }
};

// An activation row: bf16 values (the dot) or the same values as f32 (the
// gemm); 16 of them from element i.
struct Bf16Acts {
    template <class V>
    static typename V::F at(const uint8_t *row, int64_t i) { return V::bf16((const uint16_t *)row + i); }
};
struct F32Acts {
    template <class V>
    static typename V::F at(const uint8_t *row, int64_t i) { return V::load((const float *)row + i); }
};

// out[t * os + r] for R rows and T activation rows of a (stride as bytes),
// nb blocks each: the canonical order per (row, token).
template <class V, int R, int T, class A, class W>
static inline void fp8_tile(const W &wt, int64_t nb, const uint8_t *a, size_t as, float *out, size_t os) {
    using F = typename V::F;
    F acc[R][T];
    VT_FP8_UNROLL
    for (int r = 0; r < R; ++r)
        VT_FP8_UNROLL
        for (int t = 0; t < T; ++t) acc[r][t] = V::zero();
    for (int64_t b = 0; b < nb; ++b) {
        F h[R][4], d[R];
        VT_FP8_UNROLL
        for (int r = 0; r < R; ++r) {
            VT_FP8_UNROLL
            for (int i = 0; i < 4; ++i) h[r][i] = wt.template h<V>(r, b, i);
            d[r] = V::set1(wt.d256(r, b));
        }
        VT_FP8_UNROLL
        for (int t = 0; t < T; ++t) {
            const uint8_t *x = a + t * as;
            const F x0 = A::template at<V>(x, 64 * b), x1 = A::template at<V>(x, 64 * b + 16),
                    x2 = A::template at<V>(x, 64 * b + 32), x3 = A::template at<V>(x, 64 * b + 48);
            VT_FP8_UNROLL
            for (int r = 0; r < R; ++r) {
                const F u = V::fma(h[r][1], x1, V::mul(h[r][0], x0));
                const F v = V::fma(h[r][3], x3, V::mul(h[r][2], x2));
                acc[r][t] = V::fma(d[r], V::add(u, v), acc[r][t]);
            }
        }
    }
    VT_FP8_UNROLL
    for (int r = 0; r < R; ++r)
        VT_FP8_UNROLL
        for (int t = 0; t < T; ++t) out[t * os + r] = V::fold(acc[r][t]);
}

template <class V>
float fp8_dot(int64_t n, const void *w, const void *a) {
    float out;
    fp8_tile<V, 1, 1, Bf16Acts>(Fp8Blocks{(const uint8_t *)w, 0}, n / 64, (const uint8_t *)a, 0, &out, 0);
    return out;
}

// kernels.h's GemmFn on f32 activations: below 4 tokens (the decode) each
// row streams from its blocks as in the dot; else each group of R rows is
// converted once per block of tokens into f32 (a thread's buffer), and R x T
// tiles read it with the tokens, which stay in L2 while every row group of
// this thread's slice passes over them.
template <class V, int R, int T>
void fp8_gemm(int64_t k, const void *wv, size_t ws, int64_t nr, const void *av, size_t as, int64_t nt, float *out,
              size_t os) {
    constexpr int64_t kTokenBlock = 48, kConvertMinTokens = 4;
    const uint8_t *w = (const uint8_t *)wv, *a = (const uint8_t *)av;
    const int64_t nb = k / 64;
    if (nt < kConvertMinTokens) {
        for (int64_t r = 0; r < nr; ++r)
            for (int64_t t = 0; t < nt; ++t)
                fp8_tile<V, 1, 1, F32Acts>(Fp8Blocks{w + r * ws, 0}, nb, a + t * as, as, out + t * os + r, os);
        return;
    }
    thread_local std::vector<Line> buf;
    float *h0 = (float *)scratch(buf, sizeof(float) * (size_t)(R * (k + nb))), *d0 = h0 + R * k;
    for (int64_t t0 = 0; t0 < nt; t0 += kTokenBlock) {
        const int64_t t1 = std::min(nt, t0 + kTokenBlock);
        for (int64_t r = 0; r < nr; r += R) {
            const int rows = (int)std::min<int64_t>(R, nr - r);
            for (int i = 0; i < rows; ++i) {
                const Fp8Blocks src{w + (r + i) * ws, 0};
                for (int64_t b = 0; b < nb; ++b) {
                    for (int j = 0; j < 4; ++j) V::store(h0 + i * k + 64 * b + 16 * j, src.template h<V>(0, b, j));
                    d0[i * nb + b] = src.d256(0, b);
                }
            }
            if (rows == R) {
                const Fp8Converted cv{h0, d0, k, nb};
                int64_t t = t0;
                for (; t + T <= t1; t += T) fp8_tile<V, R, T, F32Acts>(cv, nb, a + t * as, as, out + t * os + r, os);
                for (; t < t1; ++t) fp8_tile<V, R, 1, F32Acts>(cv, nb, a + t * as, as, out + t * os + r, os);
            } else {  // the slice's last rows
                for (int i = 0; i < rows; ++i) {
                    const Fp8Converted one{h0 + i * k, d0 + i * nb, k, nb};
                    for (int64_t t = t0; t < t1; ++t)
                        fp8_tile<V, 1, 1, F32Acts>(one, nb, a + t * as, as, out + t * os + r + i, os);
                }
            }
        }
    }
}

} // namespace
} // namespace vt::quant::x86
