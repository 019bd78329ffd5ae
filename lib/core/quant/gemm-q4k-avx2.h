// AVX2 row-lane tile for the Q4_K_X16 layout in place: the integers and f32
// steps of Q4KX16 (gemm-q4k-x86.h, mirroring dot_q45_k<false>) with 8 rows
// per register, half a group at a time. Include after gemm-lanes-avx2.h.
//
// Without vpdpbusd: a 32-element group's 8 vpmaddubsw steps add up in int16
// (nibbles against -127..127: at most 8 * 3810), and one vpmaddwd against
// the group's scale as an int16 pair turns them into the scaled int32 sum
// (no vpmulld, which AVX2 runs at half rate).
#pragma once

#include "core/quant/gemm-lanes-avx2.h"

namespace vt::quant::x86 {
namespace {

struct Q4KX16Avx2 {
    static constexpr int kTokens = 4;
    static constexpr int64_t kBlockElems = QK_K;
    static constexpr size_t kBlock = 16 * sizeof(BlockQ4_K), kPayload = 16 * (sizeof(BlockQ4_K) - 4);
    using Acts = Q8KRows;

    // Byte i (0..3) of every lane.
    static inline __m256i byte(__m256i v, int i) {
        return _mm256_and_si256(_mm256_srli_epi32(v, 8 * i), _mm256_set1_epi32(0xFF));
    }
    static inline __m256i pair16(__m256i v) { return _mm256_or_si256(v, _mm256_slli_epi32(v, 16)); }

    // scale_min_k4 (blocks.h) for 8 rows, lane = row, each as an int16 pair.
    static inline void scales(const uint8_t *q, int h, __m256i sc[8], __m256i mn[8]) {
        const __m256i m6 = _mm256_set1_epi32(63), n4 = _mm256_set1_epi32(0x0F);
        const __m256i s0 = _mm256_loadu_si256((const __m256i *)(q + 32 * h)),
                      s1 = _mm256_loadu_si256((const __m256i *)(q + 64 + 32 * h)),
                      s2 = _mm256_loadu_si256((const __m256i *)(q + 128 + 32 * h));
        for (int j = 0; j < 4; ++j) {
            sc[j] = pair16(_mm256_and_si256(byte(s0, j), m6));
            mn[j] = pair16(_mm256_and_si256(byte(s1, j), m6));
            const __m256i hi = byte(s2, j);
            sc[j + 4] = pair16(
                _mm256_or_si256(_mm256_and_si256(hi, n4), _mm256_slli_epi32(_mm256_srli_epi32(byte(s0, j), 6), 4)));
            mn[j + 4] = pair16(
                _mm256_or_si256(_mm256_srli_epi32(hi, 4), _mm256_slli_epi32(_mm256_srli_epi32(byte(s1, j), 6), 4)));
        }
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
            __m256i sc[H][8], mn[H][8];
            for (int hh = 0; hh < H; ++hh) scales(w.q, h0 + hh, sc[hh], mn[hh]);
            __m256i tot[H][T];
            for (int hh = 0; hh < H; ++hh)
                for (int t = 0; t < T; ++t) tot[hh][t] = _mm256_setzero_si256();
            for (int c = 0; c < 4; ++c) {
                __m256i lo[H][T], hi[H][T];
                for (int hh = 0; hh < H; ++hh)
                    for (int t = 0; t < T; ++t) lo[hh][t] = hi[hh][t] = _mm256_setzero_si256();
#pragma GCC unroll 8
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
                for (int hh = 0; hh < H; ++hh)
                    for (int t = 0; t < T; ++t)
                        tot[hh][t] = _mm256_add_epi32(
                            tot[hh][t], _mm256_add_epi32(_mm256_madd_epi16(lo[hh][t], sc[hh][2 * c]),
                                                         _mm256_madd_epi16(hi[hh][t], sc[hh][2 * c + 1])));
            }
            for (int hh = 0; hh < H; ++hh) {
                const int h = h0 + hh;
                const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w.h + 16 * h)));
                const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w.h + w.field + 16 * h)));
                for (int t = 0; t < T; ++t) {
                    __m256i mins = _mm256_setzero_si256();
                    for (int g = 0; g < 8; ++g)
                        mins = _mm256_add_epi32(mins, _mm256_madd_epi16(mn[hh][g], bcast32_256(y[t][b].bsums + 2 * g)));
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
    // one half at a time.
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

} // namespace
} // namespace vt::quant::x86
