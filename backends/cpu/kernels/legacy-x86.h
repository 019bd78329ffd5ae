// Dot products of the 32-element block types for x86, shared by the AVX2
// and AVX-512 translation units: each includes this header and gets its own
// internal-linkage copy compiled with its own flags (with VT_QUANT_VNNI the
// u8 x s8 products use vpdpbusd, see simd-x86.h). Include after simd-x86.h.
#pragma once

#include <cstring>
#include <type_traits>

#include "core/quant/blocks.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant::x86 {
namespace {

// ---- dot products: one block = 32 int8 products, scaled by dw*da ----------

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

// Q2_0: 8 bytes of 2-bit fields -> 32 codes q (0..3): byte j takes byte
// j / 4 (one shuffle of the 8 bytes in both lanes), the field at bits
// 2(j % 4) is masked in place, and one table per nibble maps each masked
// field to q.
static inline __m256i q2_0_codes32(const uint8_t *qs) {
    uint64_t b;
    std::memcpy(&b, qs, 8);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi64x((long long)b),
        _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7));
    const __m256i m = _mm256_and_si256(spread, _mm256_set1_epi32((int)0xC0300C03));
    const __m256i q_of = _mm256_setr_epi8(0, 1, 2, 3, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 1, 2, 3, 1, 0, 0, 0, 2, 0,
                                          0, 0, 3, 0, 0, 0);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    return _mm256_add_epi8(_mm256_shuffle_epi8(q_of, _mm256_and_si256(m, m4)),
                           _mm256_shuffle_epi8(q_of, _mm256_and_si256(_mm256_srli_epi16(m, 4), m4)));
}

// MXFP4: the nibbles through the doubled e2m1 table (blocks.h), signed
// bytes in -12..12, plus `off` (12 gives the unsigned 0..24 of the row-lane
// tiles).
static inline __m256i mxfp4_bytes(const uint8_t *qs, int off = 0) {
    const __m128i t = _mm_add_epi8(_mm_loadu_si128((const __m128i *)kMxfp4Values), _mm_set1_epi8((char)off));
    return _mm256_shuffle_epi8(_mm256_set_m128i(t, t), nibbles32(qs));
}
static inline __m256i prod_mxfp4(const BlockMXFP4 &x, const BlockQ8_0 &y) {
    return dot_ss8(mxfp4_bytes(x.qs), load256(y.qs));
}

// IQ4_NL (and IQ4_XS's sub-blocks): the nibbles through the level table
// (blocks.h), signed bytes in -127..113, plus `off` (128 gives the unsigned
// 1..241 of the VNNI row-lane tiles: v + 128 wraps to v ^ 0x80).
static inline __m256i iq4nl_bytes(const uint8_t *qs, int off = 0) {
    const __m128i t = _mm_add_epi8(_mm_loadu_si128((const __m128i *)kIq4nlValues), _mm_set1_epi8((char)off));
    return _mm256_shuffle_epi8(_mm256_set_m128i(t, t), nibbles32(qs));
}
static inline __m256i prod_iq4nl(const BlockIQ4NL &x, const BlockQ8_0 &y) {
    return dot_ss8(iq4nl_bytes(x.qs), load256(y.qs));
}

// 2^(e - 128) for 8 e8m0 exponents (blocks.h's e8m0_half, lane by lane):
// (e - 1) << 23 for e >= 2, the subnormals 0x00200000 << e below.
static inline __m256 e8m0_half8(__m256i e) {
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(sub, normal, _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1))));
}

// A block's weight scale as f32: the f16 d of the legacy types, MXFP4's
// exponent.
template <class BW>
static inline float weight_d(const BW &x) { return _cvtsh_ss(x.d); }
static inline float weight_d(const BlockMXFP4 &x) { return e8m0_half(x.e); }

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

// Lane k = the sum of the 8 int32 lanes of p[k] (exact).
static inline __m256i reduce8_epi32(const __m256i p[8]) {
    const __m256i ab = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    const __m256i cd = _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(ab, cd, 0x20), _mm256_permute2x128_si256(ab, cd, 0x31));
}

// 8 f16 values at p, p + stride, ... as one vector.
static inline __m128i f16x8(const void *p, size_t stride) {
    const uint8_t *b = (const uint8_t *)p;
    uint64_t lo = 0, hi = 0;
    for (int k = 0; k < 4; ++k) {
        uint16_t v, w;
        std::memcpy(&v, b + k * stride, 2);
        std::memcpy(&w, b + (k + 4) * stride, 2);
        lo |= (uint64_t)v << (16 * k);
        hi |= (uint64_t)w << (16 * k);
    }
    return _mm_set_epi64x((long long)hi, (long long)lo);
}

// The weight scales of 8 consecutive blocks as one vector.
template <class BW>
static inline __m256 weight_d8(const BW *x) {
    if constexpr (std::is_same_v<BW, BlockMXFP4>) {
        return e8m0_half8(_mm256_setr_epi32(x[0].e, x[1].e, x[2].e, x[3].e, x[4].e, x[5].e, x[6].e, x[7].e));
    } else {
        return _mm256_cvtph_ps(f16x8(&x->d, sizeof(BW)));
    }
}

// The canonical order of the 32-element block dots, which every kernel of
// these types replays bit for bit (the row-lane gemm tiles, the repacked
// decode kernels): each block's 32 products are summed exactly (isum), and
// block b adds into lane b % 8 of one f32 accumulator,
//     acc[b % 8] = fma(wd * ad, (float)isum, acc[b % 8]),
// (wd * ad one f32 product of the two scales: f16, or MXFP4's 2^(e-128)); with a min (HasMin:
// weights x = d*q + m against Q8_1), m_acc[b % 8] += wm * as. The result is
// hsum(acc) (+ hsum(m_acc)), hsum pairing lanes k and k+4, then k and k+2,
// then 0 and 1. An exact integer per block is what lets a tile form it with
// 16 rows per register (a lane per row) and one f32 step per block.
template <class BW, class BA, __m256i (*Prod)(const BW &, const BA &), bool HasMin>
float dot_legacy(int64_t n, const void *w, const void *a) {
    const BW *x = (const BW *)w;
    const BA *y = (const BA *)a;
    const int64_t nb = n / QK;
    __m256 acc = _mm256_setzero_ps(), macc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= nb; i += 8) {
        __m256i p[8];
        for (int k = 0; k < 8; ++k) p[k] = Prod(x[i + k], y[i + k]);
        // The 8 blocks' f16 scales gathered into one vector each (a vector
        // gather measured slower), one conversion for 8 blocks.
        const __m256 sc = _mm256_mul_ps(weight_d8(x + i), _mm256_cvtph_ps(f16x8(&y[i].d, sizeof(BA))));
        acc = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(reduce8_epi32(p)), acc);
        if constexpr (HasMin)
            macc = _mm256_add_ps(macc, _mm256_mul_ps(_mm256_cvtph_ps(f16x8(&x[i].m, sizeof(BW))),
                                                     _mm256_cvtph_ps(f16x8(&y[i].s, sizeof(BA)))));
    }
    if (i < nb) {
        // Last partial group: missing lanes add exact zeros (fma(0, 0, acc)
        // leaves acc as it is: acc is never -0).
        __m256i p[8];
        alignas(32) float d[8] = {}, m[8] = {};
        for (int k = 0; k < 8; ++k) {
            p[k] = _mm256_setzero_si256();
            if (i + k >= nb) continue;
            p[k] = Prod(x[i + k], y[i + k]);
            if constexpr (std::is_same_v<BW, BlockMXFP4>) {
                d[k] = weight_d(x[i + k]) * _cvtsh_ss(y[i + k].d);
            } else {
                const __m128 sc = block_scales(&x[i + k], &y[i + k]);
                d[k] = _mm_cvtss_f32(sc);
                if constexpr (HasMin) m[k] = _mm_cvtss_f32(_mm_movehdup_ps(sc));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_load_ps(d), _mm256_cvtepi32_ps(reduce8_epi32(p)), acc);
        if constexpr (HasMin) macc = _mm256_add_ps(macc, _mm256_load_ps(m));
    }
    const float s = hsum(acc);
    if constexpr (HasMin) return s + hsum(macc);
    return s;
}

} // namespace
} // namespace vt::quant::x86
