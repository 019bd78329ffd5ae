// What the TQ1_0 / TQ2_0 dots of every width share (ternary-avx2.cpp,
// ternary-avx512.cpp): the canonical order of ternary-scalar.cpp, one FMA
// per block, (d * dy) times the block's exact integer, into lane b % 8 of
// 8 accumulators that end in hsum's order. Isum(x, y) gives that integer:
// the codes (0..2, or 0..3) times the activations, minus the activations'
// sum for the codes' offset of 1.
#pragma once

#include <cmath>

#include "core/quant/blocks.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant::x86 {
namespace {

static inline int hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// The sum of a Q8_K block's 256 activations, from its 16 group sums.
static inline int q8k_sum(const BlockQ8_K &y) {
    const __m256i b = _mm256_loadu_si256((const __m256i *)y.bsums);
    return hsum_epi32(_mm256_madd_epi16(b, _mm256_set1_epi16(1)));
}

template <class B, int (*Isum)(const B &, const BlockQ8_K &)>
float dot_ternary(int64_t n, const void *w, const void *a) {
    const B *x = (const B *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)a;
    float acc[8] = {};
    for (int64_t b = 0; b < n / QK_K; ++b)
        acc[b % 8] = std::fma(h2f_f16c(x[b].d) * y[b].d, (float)Isum(x[b], y[b]), acc[b % 8]);
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

} // namespace
} // namespace vt::quant::x86
