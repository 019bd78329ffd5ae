// AVX2 row-lane tiles of the TQ1_0_X16 and TQ2_0_X16 layouts read in place
// (decode and prefill), the 256-bit twins of gemm-iq-x86.h's TernaryTiles:
// a register holds 8 rows (half a group) x 4 codes, so a step is one code
// line per half and one vpmaddubsw per token, with no horizontal sum per
// block. Bit-identical to the AVX2 dot (ternary-x86.h's order): per block
// the exact integer (codes times activations, minus the activations' sum for
// the codes' offset of 1), then fma(d * dy, isum) into lane b % 8, hsum's
// order at the end.
//
// The products sum in int16 (a pair is at most 2 * 3 * 128, even for bytes
// of -128, which vt's Q8_K never makes) and move to int32 every 30 to 34
// steps (26112 at most), not per step. As in gemm-lanes-avx2.h the 8 f32
// accumulators per token and half stay in L1, one read and one write per
// block.
#pragma once

#include "cpu/kernels/gemm-lanes-avx2.h"
#include "cpu/kernels/ternary-x86.h"

namespace vt::quant::x86 {
namespace {

// A TQ1_0_X16 or TQ2_0_X16 block in place for 8 rows: the 16 rows' payload
// dwords interleaved (rows 8h..8h+7 the second 32 bytes of each 64), then
// their d (x16-layout.h; d is last in both blocks).
template <class B>
struct TernaryX16Loc8 {
    static constexpr size_t kBlock = 16 * sizeof(B), kPayload = 16 * (sizeof(B) - 2);
    using Loc = X16Loc;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t nb) {
        return x16_locate<kBlock, kPayload>(pw, b, nb);
    }
    static inline __m256i dword(const Loc &l, int u, int h) {
        return _mm256_loadu_si256((const __m256i *)(l.q + 64 * u + 32 * h));
    }
    static inline __m256 d(const Loc &l, int h) {
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(l.h + 16 * h)));
    }
};

template <int T>
static inline void step16(__m256i (&s16)[T], __m256i codes, const BlockQ8_K *const (&y)[T], int64_t b, int e) {
    for (int t = 0; t < T; ++t) s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(codes, bcast32_256(y[t][b].qs + e)));
}
template <int T>
static inline void flush16(__m256i (&s16)[T], __m256i (&s32)[T]) {
    for (int t = 0; t < T; ++t) {
        s32[t] = _mm256_add_epi32(s32[t], _mm256_madd_epi16(s16[t], _mm256_set1_epi16(1)));
        s16[t] = _mm256_setzero_si256();
    }
}

// TQ2_0_X16: dword 8p + u of a row holds elements 128p + 32f + 4u..+3 as its
// bytes' fields f (gemm-iq-x86.h's Tq2X16Src).
struct Tq2X16Src8 : TernaryX16Loc8<BlockTQ2_0> {
    template <int T>
    static inline void sums(const Loc &l, int h, const BlockQ8_K *const (&y)[T], int64_t b, __m256i (&s32)[T]) {
        const __m256i m3 = _mm256_set1_epi8(3);
        __m256i s16[T];
        for (int t = 0; t < T; ++t) s16[t] = _mm256_setzero_si256();
        for (int p = 0; p < 2; ++p) {
#pragma GCC unroll 2
            for (int u = 0; u < 8; ++u) {
                const __m256i v = dword(l, 8 * p + u, h);
                for (int f = 0; f < 4; ++f)
                    step16<T>(s16, _mm256_and_si256(_mm256_srli_epi32(v, 2 * f), m3), y, b, 128 * p + 32 * f + 4 * u);
            }
            flush16<T>(s16, s32);
        }
    }
};

// TQ1_0's trits as gemm-iq-x86.h forms them (times3, times9, trit_of: byte
// adds and averages, no multiply), on 256-bit registers.
static inline __m256i times3_256(__m256i q) { return _mm256_add_epi8(q, _mm256_add_epi8(q, q)); }
static inline __m256i times9_256(__m256i q) {
    return _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(q, 3), _mm256_set1_epi8((char)0xF8)), q);
}
static inline __m256i trit_of_256(__m256i q) {
    const __m256i q1 = _mm256_subs_epu8(q, _mm256_set1_epi8(1));
    const __m256i t = _mm256_avg_epu8(q1, _mm256_avg_epu8(q1, _mm256_setzero_si256()));
    return _mm256_and_si256(_mm256_srli_epi16(t, 6), _mm256_set1_epi8(3));
}

// TQ1_0_X16 (13 payload dwords, qs then qh; gemm-iq-x86.h's Tq1X16Src):
// dword u < 8 holds elements 32n + 4u..+3 as its bytes' trits n (n = 0..4),
// dword 8 + u elements 160 + 16n + 4u..+3, dword 12 elements 240 + 4n..+3
// (n = 0..3).
struct Tq1X16Src8 : TernaryX16Loc8<BlockTQ1_0> {
    template <int T>
    static inline void sums(const Loc &l, int h, const BlockQ8_K *const (&y)[T], int64_t b, __m256i (&s32)[T]) {
        __m256i s16[T];
        for (int t = 0; t < T; ++t) s16[t] = _mm256_setzero_si256();
        const auto trits = [&](int u, int n_trits, int e0, int stride) {
            const __m256i q = dword(l, u, h), q3 = times3_256(q), q9 = times9_256(q);
            const __m256i pow[5] = {q, q3, q9, times9_256(q3), times9_256(q9)};
            for (int n = 0; n < n_trits; ++n) step16<T>(s16, trit_of_256(pow[n]), y, b, e0 + stride * n);
        };
        for (int u = 0; u < 6; ++u) trits(u, 5, 4 * u, 32);  // 30 steps
        flush16<T>(s16, s32);
        for (int u = 6; u < 8; ++u) trits(u, 5, 4 * u, 32);
        for (int u = 0; u < 4; ++u) trits(8 + u, 5, 160 + 4 * u, 16);
        trits(12, 4, 240, 4);  // 34 steps
        flush16<T>(s16, s32);
    }
};

template <class S>
struct TernaryLanes8 {
    static constexpr int kTokens = 4;
    static constexpr int64_t kBlockElems = QK_K;
    using Acts = Q8KRows;

    // Halves h0..h0+H-1 of the group at pw (rows 8h..8h+7) x T tokens.
    template <int T, int H>
    static void halves(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int h0, int nr, float *out,
                       size_t os) {
        const BlockQ8_K *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_K *)(acts.a + (t0 + t) * acts.as);
        alignas(32) float acc[H][T][8][8];
        const __m256 zero = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const int j = (int)(b & 7);
            const bool first = b < 8;
            const typename S::Loc l = S::locate(pw, b, nb);
            prefetch_ahead<S::kBlock>(pw + b * S::kBlock, t0);
            for (int hh = 0; hh < H; ++hh) {
                __m256i s32[T];
                for (int t = 0; t < T; ++t) s32[t] = _mm256_set1_epi32(-q8k_sum(y[t][b]));
                S::template sums<T>(l, h0 + hh, y, b, s32);
                const __m256 d = S::d(l, h0 + hh);
                for (int t = 0; t < T; ++t)
                    _mm256_store_ps(acc[hh][t][j], _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(y[t][b].d)),
                                                                   _mm256_cvtepi32_ps(s32[t]),
                                                                   first ? zero : _mm256_load_ps(acc[hh][t][j])));
            }
        }
        store_lane_sums<H, T>(acc, nb >= 8 ? 0xFFu : (1u << nb) - 1, out, os, h0, nr);
    }

    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        halves_tile<TernaryLanes8, T>(nb, pw, acts, t0, nr, out, os);
    }
};

} // namespace
} // namespace vt::quant::x86
