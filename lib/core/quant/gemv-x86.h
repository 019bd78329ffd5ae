// Decode kernels over load-time layouts (Kernels::gemv), shared by the x86
// tables that include this header after legacy-x86.h (each build's dot_us8
// decides VNNI or not). Every output is bit-identical to the table's vec_dot
// on the row before repacking.
//
// Q4_0_X4 (dtype.h): a group of 4 rows is one contiguous stream, and each
// activation block serves the 4 rows:
//  - sum((q - 8) * y) = sum(q * y) - sum(8 * y): the nibbles go unsigned into
//    the u8 x s8 product, and 8 * sum(y) is computed once per activation
//    block for the 4 rows (both exact int32 per group of 4 bytes, so every
//    lane equals dot_legacy's, which makes q - 8 signed and flips signs);
//  - the 4 rows' scales come from one f16 conversion (d_w * d_y, one f32
//    rounding each, as dot_legacy's block_scales).
// Each row keeps dot_legacy's 4 accumulators (block i in i % 4, tail blocks
// in the first) and its final pairwise sum: 16 accumulators, so this is for
// the 32-register AVX-512 tables.
// Measured (micro-benchmark, 1B-shaped 700 MB matrix, 2 threads): 24.5 GB/s
// for dot_legacy over rows, 34-35 GB/s here; the same kernel reading 4 rows
// in place (4 strided streams) managed 9.7 GB/s, hence the repacking.
#pragma once

#include "core/quant/blocks.h"
#include "core/quant/simd-x86.h"

namespace vt::quant::x86 {

static inline void gemv4_q4_0_x4(int64_t nb, const BlockQ4_0x4 *x, const BlockQ8_0 *y, float *out) {
    __m256 acc[4][4];
    for (auto &row : acc)
        for (__m256 &a : row) a = _mm256_setzero_ps();
    const __m256i eight = _mm256_set1_epi8(8);
    auto block = [&](int64_t i, int slot) {
        const __m256i yv = _mm256_loadu_si256((const __m256i *)y[i].qs);
        const __m256i minus_y8 = _mm256_sub_epi32(_mm256_setzero_si256(), dot_us8(eight, yv));
        const __m256 sc = _mm256_castps128_ps256(
            _mm_mul_ps(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)x[i].d)), _mm_set1_ps(h2f_f16c(y[i].d))));
        for (int r = 0; r < 4; ++r) {
            const __m256i p = dot_us8_acc(minus_y8, nibbles32(x[i].qs[r]), yv);
            const __m256 s = _mm256_permutevar8x32_ps(sc, _mm256_set1_epi32(r));
            acc[r][slot] = _mm256_fmadd_ps(s, _mm256_cvtepi32_ps(p), acc[r][slot]);
        }
    };
    int64_t i = 0;
    for (; i + 4 <= nb; i += 4)
        for (int k = 0; k < 4; ++k) block(i + k, k);
    for (; i < nb; ++i) block(i, 0);
    for (int r = 0; r < 4; ++r)
        out[r] = hsum(_mm256_add_ps(_mm256_add_ps(acc[r][0], acc[r][1]), _mm256_add_ps(acc[r][2], acc[r][3])));
}

// nr (a multiple of 4) rows of Q4_0_X4 starting at a group; w_stride is the
// bytes of one row (a group is 4 of them).
static void gemv_q4_0_x4(int64_t k, const void *w, size_t w_stride, int64_t nr, const void *a, float *out) {
    const uint8_t *wb = (const uint8_t *)w;
    for (int64_t r = 0; r + 4 <= nr; r += 4)
        gemv4_q4_0_x4(k / QK, (const BlockQ4_0x4 *)(wb + r * w_stride), (const BlockQ8_0 *)a, out + r);
}

} // namespace vt::quant::x86
