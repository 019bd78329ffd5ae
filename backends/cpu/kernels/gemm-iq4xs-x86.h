// Row-lane tiles for IQ4_XS (mirrors dot_iq4_xs: per super-block one exact
// integer, the sub-blocks' product sums times their scales ls - 32, then
// acc += (d * dy) * isum in super-block order). Include after
// gemm-rows-x86.h and gemm-lanes-x86.h; VNNI tables only: the levels go
// unsigned (+128, up to 241), which vpmaddubsw's int16 pairs would saturate
// (241 * 127 * 2). Activations are the Q8_K rows in place; the +128 comes
// back off per sub-block as 128 times its activation sum (two of Q8_K's
// 16-element bsums).
//
// Two weight sources: GGUF rows packed per call (IQ4XSLanes, as Q4KLanes
// packs Q4_K: the 16 rows' levels + 128 interleaved 4 bytes per row and
// step, each sub-block's scale per row as int32, each row's d as f32), and
// the IQ4_XS_X16 load-time layout read in place (IQ4XSX16: decode too).
#pragma once

#include "cpu/kernels/gemm-rows-x86.h"

namespace vt::quant::x86 {
namespace {

// dot_iq4_xs's f32 step for T tokens and 16 rows: acc += (d * dy) * isum.
template <int T>
static inline void superblock_step(__m512 (&acc)[T], __m512 d, const BlockQ8_K *const (&y)[T], int64_t b,
                                   const __m512i (&tot)[T]) {
    for (int t = 0; t < T; ++t)
        acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(y[t][b].d)),
                                                     _mm512_cvtepi32_ps(tot[t])));
}

// The tile of super-block types packed per call as 64 steps of unsigned
// values (the signed values + kOff), then kGroups int32 multipliers per row
// (one per 256 / kGroups elements), then each row's f32 d: per group the
// steps' vpdpbusd from -kOff times the group's activation sum (its Q8_K
// bsums), times the group's multiplier, summed exactly; then the super-
// block step above. IQ4_XS (8 groups, + 128) and the lattice i-quants
// (gemm-iq-x86.h: 8 or 16 groups, + 64) take it.
template <int kGroups, int kOff>
struct GroupScaledTile {
    static constexpr int kTokens = 8;
    static constexpr int64_t kBlockElems = QK_K;
    static constexpr size_t kSc = 4096, kD = kSc + 64 * kGroups, kBlock = kD + 64;
    static constexpr int kSteps = QK_K / 4 / kGroups, kBsums = QK_K / 16 / kGroups; // per group
    using Acts = Q8KRows;

    template <int T>
    static void tile(int64_t nsb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        __m512 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
        const BlockQ8_K *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_K *)(acts.a + (t0 + t) * acts.as);
        for (int64_t b = 0; b < nsb; ++b) {
            const uint8_t *w = pw + b * kBlock;
            __m512i tot[T];
            for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
            for (int g = 0; g < kGroups; ++g) {
                __m512i part[T];
                for (int t = 0; t < T; ++t) {
                    int sum = 0;
                    for (int i = 0; i < kBsums; ++i) sum += y[t][b].bsums[kBsums * g + i];
                    part[t] = _mm512_set1_epi32(-kOff * sum);
                }
                for (int s = 0; s < kSteps; ++s) {
                    const __m512i wq = _mm512_load_si512(w + (kSteps * g + s) * 64);
                    for (int t = 0; t < T; ++t)
                        part[t] = dpbusd512(part[t], wq, bcast32(y[t][b].qs + 4 * (kSteps * g + s)));
                }
                const __m512i sc = _mm512_load_si512(w + kSc + g * 64);
                for (int t = 0; t < T; ++t) tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(part[t], sc));
            }
            const __m512 d = _mm512_load_ps((const float *)(w + kD));
            superblock_step<T>(acc, d, y, b, tot);
        }
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * os, row_mask(nr), acc[t]);
    }
};

// Per 16 rows and super-block: step s, row r 4 levels (+128) (4096); for
// sub-block g, row r its scale as int32 (512); row r's d (64).
struct IQ4XSLanes : GroupScaledTile<8, 128> {

    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nsb, uint8_t *dst) {
        alignas(64) uint8_t q[kLaneRows][QK_K];
        for (int64_t r0 = 0; r0 < nr; r0 += kLaneRows)
            for (int64_t b = 0; b < nsb; ++b) {
                uint8_t *p = dst + ((r0 / kLaneRows) * nsb + b) * kBlock;
                int32_t *sc = (int32_t *)(p + kSc);
                float *d = (float *)(p + kD);
                for (int r = 0; r < kLaneRows; ++r) {
                    if (r0 + r >= nr) { // rows past the matrix are zero
                        std::memset(q[r], 0, QK_K);
                        for (int g = 0; g < 8; ++g) sc[g * kLaneRows + r] = 0;
                        d[r] = 0.f;
                        continue;
                    }
                    const BlockIQ4XS &x = ((const BlockIQ4XS *)(w + (r0 + r) * ws))[b];
                    for (int g = 0; g < 8; ++g) {
                        _mm256_store_si256((__m256i *)(q[r] + 32 * g), iq4nl_bytes(x.qs + 16 * g, 128));
                        sc[g * kLaneRows + r] = iq4xs_scale(x, g);
                    }
                    d[r] = f16_at(&x.d);
                }
                interleave_rows(q, p);
            }
    }
};

// The IQ4_XS_X16 layout (x16-layout.h): per 16 rows and super-block, the
// payload dwords interleaved (scales_l, then the 32 dwords of qs: sub-block
// g's 16 code bytes are dwords 1 + 4g .. 4 + 4g), then the 16 d and the 16
// scales_h. The same integers and f32 steps as IQ4XSLanes, with the 6-bit
// scales formed per super-block for 16 rows at once (a row per lane: the
// low nibble of sub-block g is bits 4g..4g+3 of scales_l's dword) and the
// codes through the level table per step.
struct IQ4XSX16 {
    static constexpr int kTokens = 6; // 4 -> 6: +4% at 64 tokens; 8 no better
    static constexpr int64_t kBlockElems = QK_K;
    static constexpr size_t kBlock = 16 * sizeof(BlockIQ4XS), kPayload = 16 * (sizeof(BlockIQ4XS) - 4);
    using Acts = Q8KRows;

    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        __m512 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
        const BlockQ8_K *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_K *)(acts.a + (t0 + t) * acts.as);
        const __m512i table = _mm512_broadcast_i32x4(
            _mm_add_epi8(_mm_loadu_si128((const __m128i *)kIq4nlValues), _mm_set1_epi8((char)128)));
        const __m512i m4 = _mm512_set1_epi8(0x0F);
        for (int64_t b = 0; b < nb; ++b) {
            const X16Loc w = x16_locate<kBlock, kPayload>(pw, b, nb);
            prefetch_ahead<kBlock>(pw + b * kBlock, t0);
            const __m512i sl = _mm512_loadu_si512(w.q);
            const __m512i sh = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(w.h + w.field)));
            __m512i tot[T];
            for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
            for (int g = 0; g < 8; ++g) {
                const __m512i sc = _mm512_sub_epi32(
                    _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(sl, 4 * g), _mm512_set1_epi32(15)),
                                    _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(sh, 2 * g), _mm512_set1_epi32(3)), 4)),
                    _mm512_set1_epi32(32));
                // The low and high nibbles' sums in separate chains: one
                // chain of 8 vpdpbusd per token left the tile waiting on
                // their latency.
                __m512i lo_part[T], hi_part[T];
                for (int t = 0; t < T; ++t) {
                    lo_part[t] = _mm512_set1_epi32(-128 * (y[t][b].bsums[2 * g] + y[t][b].bsums[2 * g + 1]));
                    hi_part[t] = _mm512_setzero_si512();
                }
#pragma GCC unroll 4
                for (int u = 0; u < 4; ++u) {
                    const __m512i v = _mm512_loadu_si512(w.q + 64 * (1 + 4 * g + u));
                    const __m512i lo = _mm512_shuffle_epi8(table, _mm512_and_si512(v, m4));
                    const __m512i hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
                    for (int t = 0; t < T; ++t) {
                        lo_part[t] = dpbusd512(lo_part[t], lo, bcast32(y[t][b].qs + 32 * g + 4 * u));
                        hi_part[t] = dpbusd512(hi_part[t], hi, bcast32(y[t][b].qs + 32 * g + 16 + 4 * u));
                    }
                }
                for (int t = 0; t < T; ++t)
                    tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(_mm512_add_epi32(lo_part[t], hi_part[t]), sc));
            }
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)w.h));
            superblock_step<T>(acc, d, y, b, tot);
        }
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * os, row_mask(nr), acc[t]);
    }
};

} // namespace
} // namespace vt::quant::x86
