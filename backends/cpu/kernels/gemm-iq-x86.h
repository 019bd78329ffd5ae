// Row-lane tiles for the lattice i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S, IQ1_S, IQ1_M), bit-identical to their dots: per super-block one
// exact integer, the sum over each 16 elements of its odd multiplier times
// the values times the activations, then the scalar reference's f32 step
// acc + ((d * kScale) * dy) * isum (iquants-scalar.cpp) — IQ4_XS's form, so
// they take IQ4_XS's tile (gemm-iq4xs-x86.h's GroupScaledTile). Rows are packed per
// call: each super-block decoded once by iq-unpack.h's AVX2 decoder into
// the values + 64 (2..126: vpmaddubsw's pairs stay below 2^15 without
// VNNI), interleaved 4 bytes per row and step; the +64 comes back off per
// group (16 or 32 elements: IQLanes) as 64 times its Q8_K bsums. TQ1_0 and TQ2_0 take the
// same packing (TernaryLanes, below). Include after gemm-iq4xs-x86.h and
// gemm-legacy-lanes-x86.h.
#pragma once

#include "cpu/kernels/gemm-iq4xs-x86.h"
#include "cpu/kernels/iq-unpack.h"

namespace vt::quant::x86 {
namespace {

// Per 16 rows and super-block: step s, row r 4 values + 64 (4096); for
// group g (16 or 32 elements), row r its multiplier as int32 (1024 or 512);
// row r's d * kScale (64).
template <DType kType, int kGroups = iq_scale_per_32(kType) ? 8 : 16>
struct IQLanes : GroupScaledTile<kGroups, kIqUnpackOff> {
    using Tile = GroupScaledTile<kGroups, kIqUnpackOff>;
    using Tile::kBlock, Tile::kD, Tile::kSc;
    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nsb, uint8_t *dst) {
        const IqUnpackFn unpack = iq_unpack_avx2(kType);
        const size_t bb = dtype_info(kType).block_bytes;
        alignas(64) uint8_t q[kLaneRows][QK_K];
        int32_t m[16];
        for (int64_t r0 = 0; r0 < nr; r0 += kLaneRows)
            for (int64_t b = 0; b < nsb; ++b) {
                uint8_t *p = dst + ((r0 / kLaneRows) * nsb + b) * kBlock;
                int32_t *mg = (int32_t *)(p + kSc);
                float *d = (float *)(p + kD);
                for (int r = 0; r < kLaneRows; ++r) {
                    if (r0 + r >= nr) { // rows past the matrix are zero
                        std::memset(q[r], 0, QK_K);
                        for (int g = 0; g < kGroups; ++g) mg[g * kLaneRows + r] = 0;
                        d[r] = 0.f;
                        continue;
                    }
                    unpack(w + (r0 + r) * ws + b * bb, q[r], m, &d[r]);
                    for (int g = 0; g < kGroups; ++g) mg[g * kLaneRows + r] = m[16 / kGroups * g];
                }
                interleave_rows(q, p);
            }
    }
};

// TQ1_0 and TQ2_0 (ternary-x86.h's order: per block (d * dy) times its
// exact integer, by FMA into lane b % 8 of 8 accumulators, hsum's order at
// the end) over a weight source S: S::locate(pw, b, nb) finds block b of a
// group of 16 rows, S::sums<T>(l, y, b, p) adds the codes (values + 1)
// times the activations into two chains per token, S::d(l) the rows' d.
// The +1 comes back off per block as the sum of its 16 bsums.
template <class S>
struct TernaryTiles {
    static constexpr int kTokens = 3; // 8 accumulators per token in 32 registers
    static constexpr int64_t kBlockElems = QK_K;
    using Acts = Q8KRows;

    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        const BlockQ8_K *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_K *)(acts.a + (t0 + t) * acts.as);
        __m512 acc[T][8];
        for (int t = 0; t < T; ++t)
            for (int j = 0; j < 8; ++j) acc[t][j] = _mm512_setzero_ps();
        for_blocks8(nb, [&](int64_t b, int j) {
            const typename S::Loc l = S::locate(pw, b, nb);
            __m512i p[T][2];
            for (int t = 0; t < T; ++t) {
                const __m256i bs = _mm256_loadu_si256((const __m256i *)y[t][b].bsums);
                p[t][0] = _mm512_set1_epi32(-hsum_i32(_mm256_madd_epi16(bs, _mm256_set1_epi16(1))));
                p[t][1] = _mm512_setzero_si512();
            }
            S::template sums<T>(l, y, b, p);
            const __m512 d = S::d(l);
            for (int t = 0; t < T; ++t)
                acc[t][j] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(y[t][b].d)),
                                            _mm512_cvtepi32_ps(_mm512_add_epi32(p[t][0], p[t][1])), acc[t][j]);
        });
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * os, row_mask(nr), hsum_order8(acc[t]));
    }
};

// GGUF rows of TQ1_0 or TQ2_0 packed per call: per 16 rows and block, 64
// steps of the codes (4096 bytes), then the rows' d as f32 (64).
template <DType kType>
struct TernaryPacked {
    static constexpr size_t kD = 4096, kBlock = kD + 64;
    using Loc = const uint8_t *;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t) { return pw + b * kBlock; }
    static inline __m512 d(Loc l) { return _mm512_load_ps((const float *)(l + kD)); }
    template <int T>
    static inline void sums(Loc l, const BlockQ8_K *const (&y)[T], int64_t b, __m512i (&p)[T][2]) {
#pragma GCC unroll 8
        for (int s = 0; s < 64; ++s) {
            const __m512i wq = _mm512_load_si512(l + s * 64);
            for (int t = 0; t < T; ++t) p[t][s % 2] = dpbusd512(p[t][s % 2], wq, bcast32(y[t][b].qs + 4 * s));
        }
    }

    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nb, uint8_t *dst) {
        const TernaryUnpackFn unpack = ternary_unpack_avx2(kType);
        const size_t bb = dtype_info(kType).block_bytes;
        alignas(64) uint8_t q[kLaneRows][QK_K];
        for (int64_t r0 = 0; r0 < nr; r0 += kLaneRows)
            for (int64_t b = 0; b < nb; ++b) {
                uint8_t *p = dst + ((r0 / kLaneRows) * nb + b) * kBlock;
                float *d = (float *)(p + kD);
                for (int r = 0; r < kLaneRows; ++r) {
                    if (r0 + r >= nr) { // rows past the matrix are zero
                        std::memset(q[r], 0, QK_K);
                        d[r] = 0.f;
                        continue;
                    }
                    unpack(w + (r0 + r) * ws + b * bb, q[r], &d[r]);
                }
                interleave_rows(q, p);
            }
    }
};
template <DType kType>
struct TernaryLanes : TernaryTiles<TernaryPacked<kType>> {
    static constexpr size_t kBlock = TernaryPacked<kType>::kBlock;
    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nb, uint8_t *dst) {
        TernaryPacked<kType>::pack(w, ws, nr, nb, dst);
    }
};

// A TQ1_0_X16 or TQ2_0_X16 block in place: the 16 rows' payload dwords
// interleaved, then their d (x16-layout.h; d is last in both blocks).
template <class B>
struct TernaryX16Loc {
    static constexpr size_t kBlock = 16 * sizeof(B), kPayload = 16 * (sizeof(B) - 2);
    using Loc = X16Loc;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t nb) {
        return x16_locate<kBlock, kPayload>(pw, b, nb);
    }
    static inline __m512 d(const Loc &l) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)l.h)); }
};

// TQ2_0_X16: element 128h + 32l + m is field l of byte 32h + m, so dword
// 8h + u of a row holds elements 128h + 32l + 4u..+3 for every l, one shift
// and one mask each.
struct Tq2X16Src : TernaryX16Loc<BlockTQ2_0> {
    template <int T>
    static inline void sums(const Loc &l, const BlockQ8_K *const (&y)[T], int64_t b, __m512i (&p)[T][2]) {
        const __m512i m3 = _mm512_set1_epi8(3);
        for (int h = 0; h < 2; ++h)
#pragma GCC unroll 2
            for (int u = 0; u < 8; ++u) {
                const __m512i v = _mm512_loadu_si512(l.q + 64 * (8 * h + u));
                for (int f = 0; f < 4; ++f) {
                    const __m512i wq = _mm512_and_si512(_mm512_srli_epi32(v, 2 * f), m3);
                    for (int t = 0; t < T; ++t)
                        p[t][f % 2] = dpbusd512(p[t][f % 2], wq, bcast32(y[t][b].qs + 128 * h + 32 * f + 4 * u));
                }
            }
    }
};
using TernaryX16 = TernaryTiles<Tq2X16Src>;

// TQ1_0's trits without a multiply: q = byte * 3^n mod 256 by byte adds
// (3q = q + q + q, 9q = (q << 3) + q with the shift masked per byte), and
// the trit (3 q) >> 8 as the top two bits of two byte averages of
// q' = max(q - 1, 0) (equal for every byte; test-gemm holds the tile to
// the dot bit for bit).
static inline __m512i times3(__m512i q) { return _mm512_add_epi8(q, _mm512_add_epi8(q, q)); }
static inline __m512i times9(__m512i q) {
    return _mm512_add_epi8(_mm512_and_si512(_mm512_slli_epi16(q, 3), _mm512_set1_epi8((char)0xF8)), q);
}
static inline __m512i trit_of(__m512i q) {
    const __m512i q1 = _mm512_subs_epu8(q, _mm512_set1_epi8(1));
    const __m512i t = _mm512_avg_epu8(q1, _mm512_avg_epu8(q1, _mm512_setzero_si512()));
    return _mm512_and_si512(_mm512_srli_epi16(t, 6), _mm512_set1_epi8(3));
}

// TQ1_0_X16 (13 payload dwords, qs then qh): dword u < 8 holds elements
// 32n + 4u..+3 as its bytes' trits n (n = 0..4), dword 8 + u elements
// 160 + 16n + 4u..+3, dword 12 elements 240 + 4n..+3 (n = 0..3); per dword
// its bytes times 3^0..3^4, one trit each.
struct Tq1X16Src : TernaryX16Loc<BlockTQ1_0> {
    template <int T>
    static inline void sums(const Loc &l, const BlockQ8_K *const (&y)[T], int64_t b, __m512i (&p)[T][2]) {
        // Dword u's trits n = 0..n_trits-1 against the activations at e0 + stride * n.
        const auto dword = [&](int u, int n_trits, int e0, int stride) {
            const __m512i q = _mm512_loadu_si512(l.q + 64 * u), q3 = times3(q), q9 = times9(q);
            const __m512i pow[5] = {q, q3, q9, times9(q3), times9(q9)};
            for (int n = 0; n < n_trits; ++n) {
                const __m512i wq = trit_of(pow[n]);
                for (int t = 0; t < T; ++t)
                    p[t][n % 2] = dpbusd512(p[t][n % 2], wq, bcast32(y[t][b].qs + e0 + stride * n));
            }
        };
        for (int u = 0; u < 8; ++u) dword(u, 5, 4 * u, 32);
        for (int u = 0; u < 4; ++u) dword(8 + u, 5, 160 + 4 * u, 16);
        dword(12, 4, 240, 4);
    }
};
using TernaryX16Tq1 = TernaryTiles<Tq1X16Src>;

} // namespace
} // namespace vt::quant::x86
