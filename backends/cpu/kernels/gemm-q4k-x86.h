// Row-lane tiles for Q4_K (mirrors dot_q45_k<false> in kquants-avx2.cpp:
// per super-block one exact integer for the scaled products and one for the
// mins, then acc += d * dy * isum and acc_m += dmin * dy * mins; the result
// is acc - acc_m). Include after gemm-rows-x86.h.
//
// Weights are the unsigned operand (nibbles 0..15), activations the signed
// one, read straight from the Q8_K rows; the mins term takes the bsums pair
// of each 32-element group with vpdpwssd (min as an int16 pair per lane).
#pragma once

#include "cpu/kernels/gemm-rows-x86.h"

namespace vt::quant::x86 {
namespace {

struct Q4KLanes {
    static constexpr int kTokens = 8;
    static constexpr int64_t kBlockElems = QK_K;
    // Per 16 rows and super-block: for step s, row r 4 nibbles as bytes
    // (4096); for group g (32 elements), row r the scale as int32 (512) and
    // the min as an int16 pair (512); row r's d (64) and dmin (64).
    static constexpr size_t kSc = 4096, kMn = kSc + 512, kD = kMn + 512, kDmin = kD + 64, kBlock = kDmin + 64;

    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nsb, uint8_t *dst) {
        alignas(64) uint8_t q[kLaneRows][QK_K];
        const __m256i m4 = _mm256_set1_epi8(0x0F);
        for (int64_t r0 = 0; r0 < nr; r0 += kLaneRows)
            for (int64_t b = 0; b < nsb; ++b) {
                uint8_t *p = dst + ((r0 / kLaneRows) * nsb + b) * kBlock;
                int32_t *sc = (int32_t *)(p + kSc), *mn = (int32_t *)(p + kMn);
                float *d = (float *)(p + kD), *dmin = (float *)(p + kDmin);
                for (int r = 0; r < kLaneRows; ++r) {
                    if (r0 + r >= nr) { // rows past the matrix are zero
                        std::memset(q[r], 0, QK_K);
                        for (int g = 0; g < 8; ++g) sc[g * kLaneRows + r] = mn[g * kLaneRows + r] = 0;
                        d[r] = dmin[r] = 0.f;
                        continue;
                    }
                    const BlockQ4_K &x = ((const BlockQ4_K *)(w + (r0 + r) * ws))[b];
                    for (int c = 0; c < 4; ++c) {
                        const __m256i v = load_q(x.qs + 32 * c);
                        _mm256_store_si256((__m256i *)(q[r] + 64 * c), _mm256_and_si256(v, m4));
                        _mm256_store_si256((__m256i *)(q[r] + 64 * c + 32), _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
                    }
                    for (int g = 0; g < 8; ++g) {
                        int s, m;
                        scale_min_k4(g, x.scales, s, m);
                        sc[g * kLaneRows + r] = s;
                        mn[g * kLaneRows + r] = (int32_t)((uint32_t)m | (uint32_t)m << 16);
                    }
                    d[r] = f16_at(&x.d);
                    dmin[r] = f16_at(&x.dmin);
                }
                interleave_rows(q, p);
            }
    }

    using Acts = Q8KRows;

    template <int T>
    static void tile(int64_t nsb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        __m512 acc[T], accm[T];
        for (int t = 0; t < T; ++t) acc[t] = accm[t] = _mm512_setzero_ps();
        const BlockQ8_K *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_K *)(acts.a + (t0 + t) * acts.as);
        for (int64_t b = 0; b < nsb; ++b) {
            const uint8_t *w = pw + b * kBlock;
            __m512i tot[T];
            for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
            for (int g = 0; g < 8; ++g) {
                __m512i part[T];
                for (int t = 0; t < T; ++t) part[t] = _mm512_setzero_si512();
                for (int s = 0; s < 8; ++s) {
                    const __m512i wq = _mm512_load_si512(w + (8 * g + s) * 64);
                    for (int t = 0; t < T; ++t) part[t] = dpbusd512(part[t], wq, bcast32(y[t][b].qs + 32 * g + 4 * s));
                }
                const __m512i scg = _mm512_load_si512(w + kSc + g * 64);
                for (int t = 0; t < T; ++t) tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(part[t], scg));
            }
            const __m512 d = _mm512_load_ps((const float *)(w + kD)), dmin = _mm512_load_ps((const float *)(w + kDmin));
            for (int t = 0; t < T; ++t) {
                __m512i mins = _mm512_setzero_si512();
                for (int g = 0; g < 8; ++g)
                    mins = dpwssd512(mins, _mm512_load_si512(w + kMn + g * 64), bcast32(y[t][b].bsums + 2 * g));
                const __m512 dy = _mm512_set1_ps(y[t][b].d);
                accm[t] = _mm512_add_ps(accm[t], _mm512_mul_ps(_mm512_mul_ps(dmin, dy), _mm512_cvtepi32_ps(mins)));
                acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(d, dy), _mm512_cvtepi32_ps(tot[t])));
            }
        }
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * os, row_mask(nr), _mm512_sub_ps(acc[t], accm[t]));
    }
};

// The Q4_K_X16 layout in place (blocks.h): per 16 rows and super-block, each
// row's 35 payload dwords interleaved (3 of scales, then 32 of qs), then the
// 16 d and the 16 dmin as f16. The same integers and f32 steps as Q4KLanes,
// with the 6-bit scales unpacked per super-block for 16 rows at once (a
// row per lane) and the nibbles split per step.
struct Q4KX16 {
    static constexpr int kTokens = 4;
    static constexpr int64_t kBlockElems = QK_K;
    static constexpr size_t kBlock = 16 * sizeof(BlockQ4_K), kPayload = 16 * (sizeof(BlockQ4_K) - 4);
    using Acts = Q4KLanes::Acts;

    // Byte i (0..3) of every lane.
    static inline __m512i byte(__m512i v, int i) {
        return _mm512_and_si512(_mm512_srli_epi32(v, 8 * i), _mm512_set1_epi32(0xFF));
    }

    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        __m512 acc[T], accm[T];
        for (int t = 0; t < T; ++t) acc[t] = accm[t] = _mm512_setzero_ps();
        const BlockQ8_K *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_K *)(acts.a + (t0 + t) * acts.as);
        const __m512i m4 = _mm512_set1_epi8(0x0F), m6 = _mm512_set1_epi32(63), n4 = _mm512_set1_epi32(0x0F);
        for (int64_t b = 0; b < nb; ++b) {
            const X16Loc w = x16_locate<kBlock, kPayload>(pw, b, nb);
            prefetch_ahead<kBlock>(pw + b * kBlock, t0);
            // scale_min_k4 (blocks.h), lanes = rows: bytes 0..3 in s0, 4..7 in s1, 8..11 in s2.
            const __m512i s0 = _mm512_loadu_si512(w.q), s1 = _mm512_loadu_si512(w.q + 64),
                          s2 = _mm512_loadu_si512(w.q + 128);
            __m512i sc[8], mn[8];
            for (int j = 0; j < 4; ++j) {
                sc[j] = _mm512_and_si512(byte(s0, j), m6);
                mn[j] = _mm512_and_si512(byte(s1, j), m6);
                const __m512i hi = byte(s2, j);
                sc[j + 4] = _mm512_or_si512(_mm512_and_si512(hi, n4), _mm512_slli_epi32(_mm512_srli_epi32(byte(s0, j), 6), 4));
                mn[j + 4] = _mm512_or_si512(_mm512_srli_epi32(hi, 4), _mm512_slli_epi32(_mm512_srli_epi32(byte(s1, j), 6), 4));
            }
            __m512i tot[T];
            for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
            for (int c = 0; c < 4; ++c) {
                __m512i lo[T], hi[T];
                for (int t = 0; t < T; ++t) lo[t] = hi[t] = _mm512_setzero_si512();
                // Unrolled 2 steps deep: GCC's full unroll summed the dot
                // products as trees (1 thread, 256 x 2048 in L2, decode: 44
                // -> 50 GB/s).
#pragma GCC unroll 2
                for (int s = 0; s < 8; ++s) {
                    const __m512i v = _mm512_loadu_si512(w.q + 64 * (3 + 8 * c + s));
                    const __m512i ql = _mm512_and_si512(v, m4), qh = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                    for (int t = 0; t < T; ++t) {
                        lo[t] = dpbusd512(lo[t], ql, bcast32(y[t][b].qs + 64 * c + 4 * s));
                        hi[t] = dpbusd512(hi[t], qh, bcast32(y[t][b].qs + 64 * c + 32 + 4 * s));
                    }
                }
                for (int t = 0; t < T; ++t)
                    tot[t] = _mm512_add_epi32(tot[t], _mm512_add_epi32(_mm512_mullo_epi32(lo[t], sc[2 * c]),
                                                                       _mm512_mullo_epi32(hi[t], sc[2 * c + 1])));
            }
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)w.h));
            const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w.h + w.field)));
            for (int t = 0; t < T; ++t) {
                __m512i mins = _mm512_setzero_si512();
                for (int g = 0; g < 8; ++g)
                    mins = dpwssd512(mins, _mm512_or_si512(mn[g], _mm512_slli_epi32(mn[g], 16)),
                                     bcast32(y[t][b].bsums + 2 * g));
                const __m512 dy = _mm512_set1_ps(y[t][b].d);
                accm[t] = _mm512_add_ps(accm[t], _mm512_mul_ps(_mm512_mul_ps(dmin, dy), _mm512_cvtepi32_ps(mins)));
                acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(d, dy), _mm512_cvtepi32_ps(tot[t])));
            }
        }
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * os, row_mask(nr), _mm512_sub_ps(acc[t], accm[t]));
    }
};

} // namespace
} // namespace vt::quant::x86
