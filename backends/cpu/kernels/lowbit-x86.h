// NVFP4, Q1_0 and Q2_0 dots with Q8_0 activations in the canonical order of
// lowbit-scalar.cpp, for each vector width: the width gives the exact
// integer sums of 8 groups in their canonical lanes (Step8::isum8); these
// drivers do the rest as the scalar reference does (one conversion and one
// FMA into the 8 lanes per 8 groups, a tail of fewer than 8 groups lane by
// lane, the legacy types' hsum), so every width is bit-identical to it.
// Included by lowbit-avx2.cpp and lowbit-avx512.cpp (an anonymous namespace
// each: see meson.build on inline functions across ISA sources).
#pragma once

#include <cmath>
#include <cstring>

#include "core/quant/blocks.h"
#include "cpu/kernels/legacy-x86.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant::x86 {
namespace {

// One Q8_0 block's worth (32 elements, two sub-blocks) of NVFP4 codes
// qs[0..15] as signed doubled e2m1 values in element order: low nibbles of
// qs[0..7], their high nibbles, then the same for qs[8..15].
static inline __m256i nvfp4_values32(const uint8_t *qs) {
    const __m128i t = _mm_loadu_si128((const __m128i *)qs), m4 = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(t, m4), hi = _mm_and_si128(_mm_srli_epi16(t, 4), m4);
    const __m128i table = _mm_loadu_si128((const __m128i *)kMxfp4Values);
    return _mm256_set_m128i(_mm_shuffle_epi8(table, _mm_unpackhi_epi64(lo, hi)),
                            _mm_shuffle_epi8(table, _mm_unpacklo_epi64(lo, hi)));
}

// ue4m3_half of x0.d[0], x0.d[2], x1.d[0], x1.d[2], x0.d[1], x0.d[3],
// x1.d[1], x1.d[3] (the canonical lanes of 8 sub-blocks), as binary16: the
// byte's low 7 bits shifted into an f16 (exponent field e, mantissa m << 7:
// the value times 2^-8, subnormals included), then times 2^7, exact; the
// byte 0x7F gives 0 (0xFF does not: ue4m3_half compares the whole byte).
static inline __m256 ue4m3_half8(const BlockNVFP4 &x0, const BlockNVFP4 &x1) {
    uint32_t a, b;
    std::memcpy(&a, x0.d, 4);
    std::memcpy(&b, x1.d, 4);
    const __m128i bytes = _mm_shuffle_epi8(_mm_cvtsi64_si128((long long)((uint64_t)b << 32 | a)),
                                           _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, -1, -1, -1, -1, -1, -1, -1, -1));
    const __m128i w = _mm_cvtepu8_epi16(bytes);
    const __m256 v = _mm256_mul_ps(_mm256_cvtph_ps(_mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x7F)), 7)),
                                   _mm256_set1_ps(128.f));
    const __m256i nan = _mm256_cvtepi16_epi32(_mm_cmpeq_epi16(w, _mm_set1_epi16(0x7F)));
    return _mm256_andnot_ps(_mm256_castsi256_ps(nan), v);
}

// Step8::isum8(x0, x1, y): the 8 sub-blocks of NVFP4 blocks x0, x1 against
// Q8_0 blocks y[0..3], sub-block 2k's integer in lane k, 2k + 1's in 4 + k.
template <class Step8>
float dot_nvfp4(int64_t n, const void *w, const void *act) {
    const BlockNVFP4 *x = (const BlockNVFP4 *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)act;
    const int64_t ng = n / 16;  // sub-blocks
    __m256 acc = _mm256_setzero_ps();
    int64_t g = 0;
    for (; g + 8 <= ng; g += 8) {
        const BlockNVFP4 &x0 = x[g / 4], &x1 = x[g / 4 + 1];
        const BlockQ8_0 *ya = y + g / 2;
        const __m256i isum = Step8::isum8(x0, x1, ya);
        const __m256 d = ue4m3_half8(x0, x1);
        const __m128 dy4 = _mm_cvtph_ps(_mm_set_epi16(0, 0, 0, 0, (short)ya[3].d, (short)ya[2].d, (short)ya[1].d,
                                                      (short)ya[0].d));
        const __m256 sc = _mm256_mul_ps(d, _mm256_set_m128(dy4, dy4));
        acc = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(isum), acc);
    }
    if (g < ng) {  // 4 sub-blocks left (n is a multiple of 64): lane by lane
        alignas(32) float a[8];
        _mm256_store_ps(a, acc);
        const BlockNVFP4 &xb = x[g / 4];
        for (int h = 0; h < 2; ++h) {
            const BlockQ8_0 &ya = y[g / 2 + h];
            const __m256i p = dot_ss8(nvfp4_values32(xb.qs + 16 * h), load256(ya.qs));
            const float dy = h2f_f16c(ya.d);
            const __m128i lo = _mm256_castsi256_si128(p), hi = _mm256_extracti128_si256(p, 1);
            const int s0 = 2 * h, s1 = 2 * h + 1;  // sub-blocks g + s0, g + s1 (g % 8 == 0)
            a[s0 / 2] = std::fma(ue4m3_half(xb.d[s0]) * dy, (float)hsum_i32(_mm256_set_m128i(_mm_setzero_si128(), lo)), a[s0 / 2]);
            a[4 + s1 / 2] = std::fma(ue4m3_half(xb.d[s1]) * dy, (float)hsum_i32(_mm256_set_m128i(_mm_setzero_si128(), hi)), a[4 + s1 / 2]);
        }
        acc = _mm256_load_ps(a);
    }
    return hsum(acc);
}

// Q1_0's 32 bits -> +1 where set, -1 where clear.
static inline __m256i q1_0_values32(const uint8_t *qs) {
    return _mm256_or_si256(_mm256_andnot_si256(bits_to_bytes(load_u32(qs)), _mm256_set1_epi8(-1)),
                           _mm256_set1_epi8(1));
}
// Q2_0's codes q (legacy-x86.h) as the values q - 1 (-1..2).
static inline __m256i q2_0_values32(const uint8_t *qs) { return _mm256_sub_epi8(q2_0_codes32(qs), _mm256_set1_epi8(1)); }

// Q1_0 (QKB 128) and Q2_0 (64): Step8::isum8(x, y, g) gives the integers of
// 32-element groups g..g+7 (those of x's blocks, y's Q8_0 blocks) in lanes
// 0..7; Values32(qs) a group's 32 values, for the tail.
template <class B, int QKB, class Step8, __m256i (*Values32)(const uint8_t *)>
    requires(QKB == 128 || QKB == 64)
float dot_signed(int64_t n, const void *w, const void *act) {
    const B *x = (const B *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)act;
    constexpr int kPer = QKB / QK;                    // 32-element groups per block
    constexpr int kBytes = (int)sizeof(B::qs) / kPer; // their code bytes
    const int64_t ng = n / QK;
    __m256 acc = _mm256_setzero_ps();
    int64_t g = 0;
    for (; g + 8 <= ng; g += 8) {
        // The 8 groups' weight scales: 8 / kPer blocks' d, each kPer times.
        __m128i dh;
        const B *xb = x + g / kPer;
        if constexpr (kPer == 4) dh = _mm_unpacklo_epi64(_mm_set1_epi16((short)xb[0].d), _mm_set1_epi16((short)xb[1].d));
        else dh = _mm_unpacklo_epi64(_mm_unpacklo_epi32(_mm_set1_epi16((short)xb[0].d), _mm_set1_epi16((short)xb[1].d)),
                                     _mm_unpacklo_epi32(_mm_set1_epi16((short)xb[2].d), _mm_set1_epi16((short)xb[3].d)));
        const __m256 sc = _mm256_mul_ps(_mm256_cvtph_ps(dh), _mm256_cvtph_ps(f16x8(&y[g].d, sizeof(BlockQ8_0))));
        acc = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(Step8::isum8(x, y, g)), acc);
    }
    if (g < ng) {  // the last groups, lane by lane
        alignas(32) float a[8];
        _mm256_store_ps(a, acc);
        for (int k = 0; g + k < ng; ++k) {
            const __m256i v = Values32(x[(g + k) / kPer].qs + kBytes * ((g + k) % kPer));
            const int isum = hsum_i32(dot_ss8(v, load256(y[g + k].qs)));
            a[k] = std::fma(h2f_f16c(x[(g + k) / kPer].d) * h2f_f16c(y[g + k].d), (float)isum, a[k]);
        }
        acc = _mm256_load_ps(a);
    }
    return hsum(acc);
}

} // namespace
} // namespace vt::quant::x86
