// AVX2 kernels for the Q6_K_X16 layout (blocks.h; its order is described in
// gemm-q6k-x16-avx512.h), 8 rows per register: an in-place tile for decode
// and small batches, and for prefill Q6KLanes8 (gemm-q6k-avx2.h) over rows
// packed per call from the layout. Both mirror the AVX2 dot_q6_k: one exact
// integer per super-block, then sum += d * dy * isum. Include after
// gemm-q6k-avx2.h, in AVX2 units only.
//
// The in-place tile keeps the vec_dot's operands: weights q (0..63)
// unsigned, activations y signed. Two vpmaddubsw steps of a group add up in
// int16 (at most 2 * 2 * 63 * 128 = 32256) and one vpmaddwd against the
// group's scale as an int16 pair makes them the scaled int32 sum; the -32
// comes off once per super-block as 32 * sum_g sc_g * bsum_g, two groups per
// vpmaddwd.
#pragma once

#include "cpu/kernels/gemm-q6k-avx2.h"

namespace vt::quant::x86 {
namespace {

struct Q6KX16Avx2 {
    static constexpr int kTokens = kX16PackTokens - 1; // more go through Q6KLanes8X16
    static constexpr int64_t kBlockElems = QK_K;
    static constexpr size_t kBlock = 16 * sizeof(BlockQ6_K), kPayload = 16 * (sizeof(BlockQ6_K) - 2);
    using Acts = Q8KRows;

    // Payload dword u of rows 8rh..8rh+7.
    static inline __m256i line(const uint8_t *q, int u, int rh) {
        return _mm256_loadu_si256((const __m256i *)(q + 64 * u + 32 * rh));
    }

    // Value k (elements 32k + 4j.. of half h) of step j, rows 8rh..8rh+7, as
    // q6k_x16_step makes it: ql's nibble, qh's 2-bit field moved to bits 4..5
    // by one 16-bit shift and a mask.
    static inline __m256i value(const uint8_t *q, int rh, int h, int j, int k) {
        const int u = 4 + 3 * (8 * h + j);
        const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
        const __m256i l = line(q, u + (k & 1), rh), qh = line(q, u + 2, rh);
        const __m256i low = _mm256_and_si256(k < 2 ? l : _mm256_srli_epi16(l, 4), m4);
        const __m256i top = k == 0 ? _mm256_slli_epi16(qh, 4) : k == 1 ? _mm256_slli_epi16(qh, 2)
                          : k == 2 ? qh                       : _mm256_srli_epi16(qh, 2);
        return _mm256_or_si256(low, _mm256_and_si256(top, m30));
    }

    // The signed scales of groups g and g2 (one dword: g / 4 == g2 / 4) as
    // each lane's low and high int16: bytes to the high halves, then an
    // arithmetic shift.
    static inline __m256i scales16(const uint8_t *q, int rh, int g, int g2) {
        const auto m = [g, g2](int k) {
            return (int)(0x00800080u | (uint32_t)(4 * k + g2 % 4) << 24 | (uint32_t)(4 * k + g % 4) << 8);
        };
        const __m256i ctrl = _mm256_setr_epi32(m(0), m(1), m(2), m(3), m(0), m(1), m(2), m(3));
        return _mm256_srai_epi16(_mm256_shuffle_epi8(line(q, g / 4, rh), ctrl), 8);
    }

    // Rows 8rh.. for rh = rh0..rh0+H-1 of a group x T tokens; decode (H = 2)
    // takes both halves per super-block, sharing the broadcasts.
    template <int T, int H>
    static void halves(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int rh0, float *out,
                       size_t os) {
        __m256 sum[H][T];
        for (auto &s : sum)
            for (auto &v : s) v = _mm256_setzero_ps();
        const BlockQ8_K *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_K *)(acts.a + (t0 + t) * acts.as);
        for (int64_t b = 0; b < nb; ++b) {
            const X16Loc w = x16_locate<kBlock, kPayload>(pw, b, nb);
            // The lines kStreamAhead on (gemm-x86.h). Asking for this
            // block's whole payload up front instead: 20.5 GB/s from memory
            // (1 thread, 131072 x 2048), this: 26.3-26.7.
            prefetch_ahead<kBlock>(pw + b * kBlock, t0);
            __m256i tot[H][T];
            for (auto &s : tot)
                for (auto &v : s) v = _mm256_setzero_si256();
            // Steps in memory order, k innermost (1 thread, 256 x 2048 in L2:
            // 35 GB/s, k outermost 33). Unrolled whole: value() and
            // scales16() take k, j and g as constants.
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
                for (int jh = 0; jh < 2; ++jh)
#pragma GCC unroll 2
                    for (int jp = 0; jp < 2; ++jp) {
                        const int j = 4 * jh + 2 * jp; // steps j and j + 1
#pragma GCC unroll 4
                        for (int k = 0; k < 4; ++k) {
                            const int g = 8 * h + 2 * k + jh;
                            for (int t = 0; t < T; ++t) {
                                const int8_t *yq = y[t][b].qs + 128 * h + 32 * k + 4 * j;
                                const __m256i y0 = bcast32_256(yq), y1 = bcast32_256(yq + 4);
                                for (int r = 0; r < H; ++r) {
                                    const __m256i p =
                                        _mm256_add_epi16(_mm256_maddubs_epi16(value(w.q, rh0 + r, h, j, k), y0),
                                                         _mm256_maddubs_epi16(value(w.q, rh0 + r, h, j + 1, k), y1));
                                    tot[r][t] = _mm256_add_epi32(tot[r][t],
                                                                 _mm256_madd_epi16(p, scales16(w.q, rh0 + r, g, g)));
                                }
                            }
                        }
                    }
            for (int r = 0; r < H; ++r) {
                const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w.h + 16 * (rh0 + r))));
                for (int t = 0; t < T; ++t) {
                    __m256i off = _mm256_setzero_si256(); // sum_g sc_g * bsum_g
#pragma GCC unroll 8
                    for (int g = 0; g < 16; g += 2)
                        off = _mm256_add_epi32(off, _mm256_madd_epi16(scales16(w.q, rh0 + r, g, g + 1),
                                                                      bcast32_256(y[t][b].bsums + g)));
                    const __m256 isum = _mm256_cvtepi32_ps(_mm256_sub_epi32(tot[r][t], _mm256_slli_epi32(off, 5)));
                    sum[r][t] = _mm256_add_ps(sum[r][t],
                                              _mm256_mul_ps(_mm256_mul_ps(d, _mm256_set1_ps(y[t][b].d)), isum));
                }
            }
        }
        for (int r = 0; r < H; ++r)
            for (int t = 0; t < T; ++t) _mm256_storeu_ps(out + t * os + 8 * (rh0 + r), sum[r][t]);
    }

    // A whole group (gemm_x16 passes nr = 16).
    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int, float *out, size_t os) {
        if constexpr (T == 1) {
            halves<1, 2>(nb, pw, acts, t0, 0, out, os);
        } else {
            halves<T, 1>(nb, pw, acts, t0, 0, out, os);
            halves<T, 1>(nb, pw, acts, t0, 1, out, os);
        }
    }
};

// Q6_K_X16 with many tokens: Q6KLanes8 over rows packed per call from the
// layout (Q6KPack's bytes, as its pack makes them from the base rows).
struct Q6KLanes8X16 : Q6KLanes8 {
    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nsb, uint8_t *dst) {
        using X = Q6KX16Avx2;
        const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1), off32 = _mm256_set1_epi8(32);
        for (int64_t g0 = 0; g0 < nr / kLaneRows; ++g0)
            for (int64_t b = 0; b < nsb; ++b) {
                const X16Loc x = x16_locate<X::kBlock, X::kPayload>(w + g0 * kLaneRows * ws, b, nsb);
                uint8_t *p = dst + (g0 * nsb + b) * kBlock;
                for (int rh = 0; rh < 2; ++rh) {
                    __m256i qsum[16]; // per group, the sum of q (0..63) per row
                    for (auto &s : qsum) s = _mm256_setzero_si256();
                    for (int h = 0; h < 2; ++h)
                        for (int j = 0; j < 8; ++j)
                            for (int k = 0; k < 4; ++k) {
                                const __m256i q = X::value(x.q, rh, h, j, k);
                                _mm256_store_si256((__m256i *)(p + 64 * (32 * h + 8 * k + j) + 32 * rh),
                                                   _mm256_sub_epi8(q, off32));
                                __m256i &s = qsum[8 * h + 2 * k + j / 4];
                                s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(q, ones8), ones16));
                            }
                    __m256i off = _mm256_setzero_si256();
                    for (int g = 0; g < 16; ++g) {
                        const __m256i sc =
                            _mm256_srai_epi32(_mm256_slli_epi32(X::line(x.q, g / 4, rh), 24 - 8 * (g % 4)), 24);
                        _mm256_store_si256((__m256i *)(p + kSc + 64 * g + 32 * rh), sc);
                        off = _mm256_add_epi32(
                            off, _mm256_mullo_epi32(sc, _mm256_sub_epi32(qsum[g], _mm256_set1_epi32(16 * 32))));
                    }
                    _mm256_store_si256((__m256i *)(p + kOff + 32 * rh), _mm256_slli_epi32(off, 7));
                    _mm256_store_ps((float *)(p + kD + 32 * rh),
                                    _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x.h + 16 * rh))));
                }
            }
    }
};

void gemm_q6k_x16_avx2(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt,
                       float *out, size_t os) {
    if (nt < kX16PackTokens) return gemm_x16<Q6KX16Avx2>(k, w, ws, nr, a, as, nt, out, os);
    gemm_lanes<Q6KLanes8X16>(k, w, ws, nr, a, as, nt, out, os);
}

} // namespace
} // namespace vt::quant::x86
