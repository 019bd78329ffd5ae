// AVX2 row-lane tile for Q6_K: Q6KLanes's packing and integers
// (gemm-q6k-x86.h, mirroring dot_q6_k) with 8 rows per register, half a
// 16-row group at a time. Include after gemm-lanes-avx2.h.
//
// Without vpdpbusd: two vpmaddubsw steps add up in int16 (activations + 128
// against q - 32: at most 2 * 2 * 255 * 32 = 32640), and one vpmaddwd
// against the group's scale as an int16 pair makes them the scaled int32
// sum (no vpmulld, which AVX2 runs at half rate).
#pragma once

#include "cpu/kernels/gemm-lanes-avx2.h"
#include "cpu/kernels/gemm-q6k-x86.h"

namespace vt::quant::x86 {
namespace {

struct Q6KLanes8 : Q6KPack {
    static constexpr int kTokens = 4;

    template <int T>
    static void half(int64_t nsb, const uint8_t *pw, const Acts &acts, int64_t t0, int h, int nr, float *out,
                     size_t os) {
        __m256 sum[T];
        for (int t = 0; t < T; ++t) sum[t] = _mm256_setzero_ps();
        const uint8_t *ya = acts.ya + t0 * nsb * QK_K;
        const float *dy = acts.dy + t0 * nsb;
        // The low int16 of each int32 lane into both halves.
        const __m256i pair = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4,
                                              5, 8, 9, 8, 9, 12, 13, 12, 13);
        for (int64_t b = 0; b < nsb; ++b) {
            const uint8_t *w = pw + b * kBlock + 32 * h, *yb = ya + b * QK_K;
            __m256i tot[T];
            for (int t = 0; t < T; ++t) tot[t] = _mm256_setzero_si256();
#pragma GCC unroll 2
            for (int g = 0; g < 16; ++g) {
                const __m256i scp = _mm256_shuffle_epi8(_mm256_load_si256((const __m256i *)(w + kSc + g * 64)), pair);
                for (int sp = 0; sp < 2; ++sp) {
                    const int s = 4 * g + 2 * sp;
                    const __m256i w0 = _mm256_load_si256((const __m256i *)(w + s * 64));
                    const __m256i w1 = _mm256_load_si256((const __m256i *)(w + (s + 1) * 64));
                    for (int t = 0; t < T; ++t) {
                        const uint8_t *yt = yb + t * nsb * QK_K + 4 * s;
                        const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(bcast32_256(yt), w0),
                                                           _mm256_maddubs_epi16(bcast32_256(yt + 4), w1));
                        tot[t] = _mm256_add_epi32(tot[t], _mm256_madd_epi16(p, scp));
                    }
                }
            }
            const __m256i off = _mm256_load_si256((const __m256i *)(w + kOff));
            const __m256 d = _mm256_load_ps((const float *)(w + kD));
            for (int t = 0; t < T; ++t) {
                const __m256 isum = _mm256_cvtepi32_ps(_mm256_sub_epi32(tot[t], off));
                sum[t] = _mm256_add_ps(sum[t], _mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(dy[t * nsb + b])), isum));
            }
        }
        for (int t = 0; t < T; ++t) _mm256_maskstore_ps(out + t * os, lanes_below(nr), sum[t]);
    }

    // nr (1..16) rows of a packed group, half by half.
    template <int T>
    static void tile(int64_t nsb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        half<T>(nsb, pw, acts, t0, 0, nr, out, os);
        if (nr > 8) half<T>(nsb, pw, acts, t0, 1, nr - 8, out + 8, os);
    }
};

} // namespace
} // namespace vt::quant::x86
