// AVX2 row-lane tiles of the NVFP4_X16 layout read in place (decode and
// prefill), the 256-bit twins of gemm-nvfp4-x86.h's Nvfp4Tiles over
// Nvfp4X16Src: a register holds 8 rows (half a group) x 4 weights, a
// sub-block's integer is 4 vpmaddubsw per token summed in int16 (the values
// + 12 are at most 24: a pair at most 2 * 24 * 128, four steps 24576) and one
// vpmaddwd, no horizontal sums. Bit-identical to the dot (lowbit-x86.h's
// dot_nvfp4): sub-block g's exact integer times (its scale * its Q8_0 block's
// d) by FMA into lane (g % 2) * 4 + (g % 8) / 2, hsum's order at the end. As
// in gemm-lanes-avx2.h the 8 f32 accumulators per token and half stay in L1.
#pragma once

#include "cpu/kernels/gemm-lanes-avx2.h"
#include "cpu/kernels/lowbit-x86.h"

namespace vt::quant::x86 {
namespace {

// NVFP4_X16 for rows 8h..8h+7 (x16-layout.h; gemm-nvfp4-x86.h's Nvfp4X16Src
// reads the same bytes 16 rows at a time): dword 2s + v of a row holds
// elements 16s + 4v..+3 in its low nibbles and 16s + 8 + 4v..+3 in its high
// ones; its four scale bytes are four one-byte header fields.
struct Nvfp4X16Src8 {
    static constexpr size_t kBlock = 16 * sizeof(BlockNVFP4), kPayload = 16 * sizeof(BlockNVFP4::qs);
    using Loc = X16Loc;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t nb) {
        return x16_locate<kBlock, kPayload, 1>(pw, b, nb);
    }
    // Elements 16s + 4k..+3 of sub-block s (the values + 12).
    static inline __m256i step(const Loc &l, int s, int k, int h) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(l.q + 64 * (2 * s + k % 2) + 32 * h));
        const __m256i c = _mm256_and_si256(k < 2 ? v : _mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
        const __m128i t = _mm_add_epi8(_mm_loadu_si128((const __m128i *)kMxfp4Values), _mm_set1_epi8(kNvfp4Off));
        return _mm256_shuffle_epi8(_mm256_set_m128i(t, t), c);
    }
    // Sub-block s's 8 scales (ue4m3_half's bits through binary16, 0x7F -> 0).
    static inline __m256 scales(const Loc &l, int s, int h) {
        const __m128i w = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(l.h + s * l.field + 8 * h)));
        const __m256 v = _mm256_mul_ps(_mm256_cvtph_ps(_mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x7F)), 7)),
                                       _mm256_set1_ps(128.f));
        const __m256i nan = _mm256_cvtepi16_epi32(_mm_cmpeq_epi16(w, _mm_set1_epi16(0x7F)));
        return _mm256_andnot_ps(_mm256_castsi256_ps(nan), v);
    }
};

template <class S>
struct Nvfp4Lanes8 {
    static constexpr int kTokens = 4;
    static constexpr int64_t kBlockElems = 64;
    using Acts = Nvfp4Acts;

    // Halves h0..h0+H-1 of the group at pw (rows 8h..8h+7) x T tokens.
    template <int T, int H>
    static void halves(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int h0, int nr, float *out,
                       size_t os) {
        const BlockQ8_0 *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_0 *)(acts.a + (t0 + t) * acts.as);
        const float *ad = acts.d + t0 * 2 * nb;
        const int32_t *corr = acts.corr + t0 * 4 * nb;
        alignas(32) float acc[H][T][8][8];
        const __m256 zero = _mm256_setzero_ps();
        const __m256i ones = _mm256_set1_epi16(1);
        for (int64_t b = 0; b < nb; ++b) {
            const int P = (int)(b & 1);
            const bool first = b < 2; // blocks 0 and 1 start the lanes of b % 2 == 0 and 1
            const typename S::Loc l = S::locate(pw, b, nb);
            prefetch_ahead<S::kBlock>(pw + b * S::kBlock, t0);
            for (int hh = 0; hh < H; ++hh) {
                const int h = h0 + hh;
#pragma GCC unroll 4
                for (int s = 0; s < 4; ++s) {
                    const int j = (s % 2) * 4 + 2 * P + s / 2; // (g % 2) * 4 + (g % 8) / 2, g = 4b + s
                    const int64_t g = 4 * b + s, ya = 2 * b + s / 2;
                    __m256i s16[T];
                    for (int t = 0; t < T; ++t) s16[t] = _mm256_setzero_si256();
                    for (int k = 0; k < 4; ++k) {
                        const __m256i wq = S::step(l, s, k, h);
                        for (int t = 0; t < T; ++t)
                            s16[t] = _mm256_add_epi16(
                                s16[t], _mm256_maddubs_epi16(wq, bcast32_256(y[t][ya].qs + 16 * (s % 2) + 4 * k)));
                    }
                    const __m256 sc = S::scales(l, s, h);
                    for (int t = 0; t < T; ++t) {
                        const __m256i p = _mm256_add_epi32(_mm256_madd_epi16(s16[t], ones),
                                                           _mm256_set1_epi32(corr[t * 4 * nb + g]));
                        _mm256_store_ps(acc[hh][t][j],
                                        _mm256_fmadd_ps(_mm256_mul_ps(sc, _mm256_set1_ps(ad[t * 2 * nb + ya])),
                                                        _mm256_cvtepi32_ps(p),
                                                        first ? zero : _mm256_load_ps(acc[hh][t][j])));
                    }
                }
            }
        }
        // Lane j takes the blocks with b % 2 == (j >> 1) & 1: the odd ones
        // only with two blocks or more.
        store_lane_sums<H, T>(acc, nb > 1 ? 0xFFu : 0x33u, out, os, h0, nr);
    }

    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        halves_tile<Nvfp4Lanes8, T>(nb, pw, acts, t0, nr, out, os);
    }
};

} // namespace
} // namespace vt::quant::x86
