// AVX2 row-lane tile for the Q4_K_X16 layout in place: the integers and f32
// steps of Q4KX16 (gemm-q4k-x86.h, mirroring dot_q45_k<false>) with 8 rows
// per register, half a group at a time. Include after gemm-lanes-avx2.h.
//
// Without vpdpbusd: a 32-element group's 8 vpmaddubsw steps add up in int16
// (nibbles against -127..127: at most 8 * 3810), and one vpmaddwd against
// the group's scale as an int16 pair turns them into the scaled int32 sum
// (no vpmulld, which AVX2 runs at half rate).
#pragma once

#include "cpu/kernels/gemm-lanes-avx2.h"

namespace vt::quant::x86 {
namespace {

struct Q4KX16Avx2 {
    static constexpr int kTokens = 4;
    static constexpr int64_t kBlockElems = QK_K;
    static constexpr size_t kBlock = 16 * sizeof(BlockQ4_K), kPayload = 16 * (sizeof(BlockQ4_K) - 4);
    using Acts = Q8KRows;

    // Bytes i and i2 (0..3) of every lane as its two int16 (high bytes zero):
    // one vpshufb, where shift, mask and pair took 4.
    static inline __m256i bytes16(__m256i v, int i, int i2) {
        const auto m = [i, i2](int k) {
            return (int)(0x80008000u | (uint32_t)(4 * k + i2) << 16 | (uint32_t)(4 * k + i));
        };
        return _mm256_shuffle_epi8(v, _mm256_setr_epi32(m(0), m(1), m(2), m(3), m(0), m(1), m(2), m(3)));
    }
    static inline __m256i scale_line(const uint8_t *q, int h, int s) {
        return _mm256_loadu_si256((const __m256i *)(q + 64 * s + 32 * h));
    }

    // scale_min_k4 (blocks.h) for 8 rows, lane = row: the scales (kMin false)
    // or mins of groups g and g2, as the lane's low and high int16. Made
    // where they are used, from the 3 lines of packed scales (L1 after the
    // first), not held: 32 live registers of scales and mins spilled.
    template <bool kMin>
    static inline __m256i scales(const uint8_t *q, int h, int g, int g2) {
        const __m256i lo6 = bytes16(scale_line(q, h, kMin ? 1 : 0), g & 3, g2 & 3);
        if (g < 4) return _mm256_and_si256(lo6, _mm256_set1_epi16(63));
        // Groups 4..7: 4 bits from the third line, the top 2 from lo6's.
        const __m256i third = bytes16(scale_line(q, h, 2), g & 3, g2 & 3);
        const __m256i low4 = kMin ? _mm256_srli_epi16(third, 4) : _mm256_and_si256(third, _mm256_set1_epi16(0x0F));
        return _mm256_or_si256(low4, _mm256_srli_epi16(_mm256_and_si256(lo6, _mm256_set1_epi16(0xC0)), 2));
    }

    // sum over groups g of min_g * (bsums[2g] + bsums[2g + 1]), 2 groups per
    // vpmaddwd: the mins of groups 2p and 2p + 1 against their 32-element
    // sums (at most 32 * 127, an int16).
    static inline __m256i min_sums(const uint8_t *q, int h, const BlockQ8_K &y) {
        // Per 128-bit lane: the 4 pair sums of its 8 bsums, twice.
        const __m256i sums = _mm256_hadd_epi16(_mm256_loadu_si256((const __m256i *)y.bsums),
                                               _mm256_loadu_si256((const __m256i *)y.bsums));
        __m256i acc = _mm256_setzero_si256();
        for (int p = 0; p < 4; ++p) {
            const __m256i yp = _mm256_permutevar8x32_epi32(sums, _mm256_set1_epi32(p < 2 ? p : p + 2));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(scales<true>(q, h, 2 * p, 2 * p + 1), yp));
        }
        return acc;
    }

    // Halves h0..h0+H-1 of the group at pw (rows 8h..8h+7) x T tokens. The
    // halves go side by side through the steps, sharing each token's
    // broadcasts (decode: H = 2).
    template <int T, int H>
    static void halves(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int h0, float *out, size_t os) {
        __m256 acc[H][T], accm[H][T];
        for (int hh = 0; hh < H; ++hh)
            for (int t = 0; t < T; ++t) acc[hh][t] = accm[hh][t] = _mm256_setzero_ps();
        const BlockQ8_K *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_K *)(acts.a + (t0 + t) * acts.as);
        const __m256i m4 = _mm256_set1_epi8(0x0F);
        for (int64_t b = 0; b < nb; ++b) {
            const X16Loc w = x16_locate<kBlock, kPayload>(pw, b, nb);
            prefetch_ahead<kBlock>(pw + b * kBlock, t0);
            __m256i tot[H][T];
            for (int hh = 0; hh < H; ++hh)
                for (int t = 0; t < T; ++t) tot[hh][t] = _mm256_setzero_si256();
            // Unrolled whole: scales() takes its groups as constants.
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
                __m256i lo[H][T], hi[H][T];
                for (int hh = 0; hh < H; ++hh)
                    for (int t = 0; t < T; ++t) lo[hh][t] = hi[hh][t] = _mm256_setzero_si256();
                // Unrolled by 2, not 8: fully unrolled, GCC summed the 16
                // products of each accumulator as a tree and spilled them
                // (decode in L2, 1 thread: 34 -> 45 GB/s).
#pragma GCC unroll 2
                for (int s = 0; s < 8; ++s) {
                    __m256i ql[H], qh[H];
                    for (int hh = 0; hh < H; ++hh) {
                        const __m256i v =
                            _mm256_loadu_si256((const __m256i *)(w.q + 64 * (3 + 8 * c + s) + 32 * (h0 + hh)));
                        ql[hh] = _mm256_and_si256(v, m4);
                        qh[hh] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                    }
                    for (int t = 0; t < T; ++t) {
                        const int8_t *yq = y[t][b].qs + 64 * c + 4 * s;
                        const __m256i yl = bcast32_256(yq), yh = bcast32_256(yq + 32);
                        for (int hh = 0; hh < H; ++hh) {
                            lo[hh][t] = _mm256_add_epi16(lo[hh][t], _mm256_maddubs_epi16(ql[hh], yl));
                            hi[hh][t] = _mm256_add_epi16(hi[hh][t], _mm256_maddubs_epi16(qh[hh], yh));
                        }
                    }
                }
                for (int hh = 0; hh < H; ++hh) {
                    const __m256i sl = scales<false>(w.q, h0 + hh, 2 * c, 2 * c),
                                  sh = scales<false>(w.q, h0 + hh, 2 * c + 1, 2 * c + 1);
                    for (int t = 0; t < T; ++t)
                        tot[hh][t] = _mm256_add_epi32(tot[hh][t], _mm256_add_epi32(_mm256_madd_epi16(lo[hh][t], sl),
                                                                                   _mm256_madd_epi16(hi[hh][t], sh)));
                }
            }
            for (int hh = 0; hh < H; ++hh) {
                const int h = h0 + hh;
                const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w.h + 16 * h)));
                const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w.h + w.field + 16 * h)));
                for (int t = 0; t < T; ++t) {
                    const __m256i mins = min_sums(w.q, h, y[t][b]);
                    const __m256 dy = _mm256_set1_ps(y[t][b].d);
                    accm[hh][t] = _mm256_add_ps(accm[hh][t],
                                                _mm256_mul_ps(_mm256_mul_ps(dmin, dy), _mm256_cvtepi32_ps(mins)));
                    acc[hh][t] = _mm256_add_ps(acc[hh][t],
                                               _mm256_mul_ps(_mm256_mul_ps(d, dy), _mm256_cvtepi32_ps(tot[hh][t])));
                }
            }
        }
        for (int hh = 0; hh < H; ++hh)
            for (int t = 0; t < T; ++t)
                _mm256_storeu_ps(out + t * os + 8 * (h0 + hh), _mm256_sub_ps(acc[hh][t], accm[hh][t]));
    }

    // A whole group (gemm_x16 passes nr = 16): decode takes both halves per
    // super-block (each weight line read from memory once), tiles of tokens
    // one half at a time. Two tokens go as two decodes: halves<2, 1> spilled
    // (in L2, 1 thread: 21 us per 256 x 2048 call, two decodes 13).
    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int, float *out, size_t os) {
        if constexpr (T <= 2) {
            for (int t = 0; t < T; ++t) halves<1, 2>(nb, pw, acts, t0 + t, 0, out + t * os, os);
        } else {
            halves<T, 1>(nb, pw, acts, t0, 0, out, os);
            halves<T, 1>(nb, pw, acts, t0, 1, out, os);
        }
    }
};

} // namespace
} // namespace vt::quant::x86
