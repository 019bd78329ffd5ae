// Dot products of the 32-element block types for x86, shared by the AVX2
// and AVX-512 translation units: each includes this header and gets its own
// internal-linkage copy compiled with its own flags (with VT_QUANT_VNNI the
// u8 x s8 products use vpdpbusd, see simd-x86.h). Include after simd-x86.h.
#pragma once

#include "core/quant/blocks.h"
#include "core/quant/simd-x86.h"

namespace vt::quant::x86 {
namespace {

// ---- dot products: one block = 32 int8 products, scaled by dw*da ----------
//
// Four blocks per iteration into four accumulators: one FMA chain would
// limit the loop to one block per FMA latency (4 cycles).

static inline __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

// Per-block integer products (8 x i32 partial sums) for each weight type.
static inline __m256i prod_q8_0(const BlockQ8_0 &x, const BlockQ8_0 &y) { return dot_ss8(load256(x.qs), load256(y.qs)); }
static inline __m256i prod_q4_0(const BlockQ4_0 &x, const BlockQ8_0 &y) {
    return dot_ss8(_mm256_sub_epi8(nibbles32(x.qs), _mm256_set1_epi8(8)), load256(y.qs));
}
static inline __m256i prod_q4_1(const BlockQ4_1 &x, const BlockQ8_1 &y) { return dot_us8(nibbles32(x.qs), load256(y.qs)); }
// Q5: the fifth bit of element j is bit j of qh.
static inline __m256i prod_q5_0(const BlockQ5_0 &x, const BlockQ8_0 &y) {
    // value - 16 as int8: nibble | 0xF0 where the high bit is clear.
    const __m256i hi = _mm256_andnot_si256(bits_to_bytes(load_u32(x.qh)), _mm256_set1_epi8((char)0xF0));
    return dot_ss8(_mm256_or_si256(nibbles32(x.qs), hi), load256(y.qs));
}
static inline __m256i prod_q5_1(const BlockQ5_1 &x, const BlockQ8_1 &y) {
    const __m256i hi = _mm256_and_si256(bits_to_bytes(load_u32(x.qh)), _mm256_set1_epi8(0x10));
    return dot_us8(_mm256_or_si256(nibbles32(x.qs), hi), load256(y.qs));
}

// The block scales as one conversion: the first 4 bytes of each block are
// (d, m) for the weight and (d, s) for the Q8_1 activation (d and 2 quant
// bytes where there is no min; those lanes are ignored). Returns
// [wd*ad, wm*as, ., .], each product rounded exactly as the scalar code does.
static inline __m128 block_scales(const void *w, const void *a) {
    const __m128i h = _mm_unpacklo_epi32(_mm_cvtsi32_si128((int)load_u32((const uint8_t *)w)),
                                         _mm_cvtsi32_si128((int)load_u32((const uint8_t *)a)));
    const __m128 f = _mm_cvtph_ps(h); // [wd, wm, ad, as]
    return _mm_mul_ps(f, _mm_movehl_ps(f, f));
}

// HasMin: weights x = d*q + m against Q8_1, adding m * y.s per block.
template <class BW, class BA, __m256i (*Prod)(const BW &, const BA &), bool HasMin>
float dot_legacy(int64_t n, const void *w, const void *a) {
    const BW *x = (const BW *)w;
    const BA *y = (const BA *)a;
    const int64_t nb = n / QK;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    __m128 ms[2] = {_mm_setzero_ps(), _mm_setzero_ps()}; // lane 1: sum of m * s
    int64_t i = 0;
    for (; i + 4 <= nb; i += 4) {
        for (int k = 0; k < 4; ++k) {
            const __m256i p = Prod(x[i + k], y[i + k]);
            const __m128 sc = block_scales(&x[i + k], &y[i + k]);
            acc[k] = _mm256_fmadd_ps(_mm256_broadcastss_ps(sc), _mm256_cvtepi32_ps(p), acc[k]);
            if constexpr (HasMin) ms[k & 1] = _mm_add_ps(ms[k & 1], sc);
        }
    }
    for (; i < nb; ++i) {
        const __m256i p = Prod(x[i], y[i]);
        const __m128 sc = block_scales(&x[i], &y[i]);
        acc[0] = _mm256_fmadd_ps(_mm256_broadcastss_ps(sc), _mm256_cvtepi32_ps(p), acc[0]);
        if constexpr (HasMin) ms[0] = _mm_add_ps(ms[0], sc);
    }
    const float s = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    if constexpr (HasMin) {
        const __m128 m = _mm_add_ps(ms[0], ms[1]);
        return s + _mm_cvtss_f32(_mm_movehdup_ps(m));
    }
    return s;
}

} // namespace
} // namespace vt::quant::x86
