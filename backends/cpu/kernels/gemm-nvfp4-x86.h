// Row-lane tiles (gemm-rows-x86.h) for NVFP4, bit-identical to its dot
// (lowbit-x86.h's dot_nvfp4, the canonical order of lowbit-scalar.cpp):
// sub-block g's exact integer times (its scale * its Q8_0 block's d), added
// by FMA into lane (g % 2) * 4 + (g % 8) / 2 of 8 accumulators, which end
// in hsum's order. Here 16 rows a register: a sub-block's integer is 4
// vpdpbusd (16 rows x 4 weights x 4 activation bytes each), no horizontal
// sums, where the dot spends a reduction per 8 sub-blocks and token.
// The weights are the doubled e2m1 values + 12 (0..24, unsigned), the +12
// taken back per sub-block and token as 12 times its activation sum; they
// come from GGUF rows packed per call (NVFP4Lanes) or from the NVFP4_X16
// load-time layout in place (NVFP4X16: decode too). Include after
// gemm-legacy-lanes-x86.h.
#pragma once

#include "cpu/kernels/gemm-legacy-lanes-x86.h"
#include "cpu/kernels/lowbit-x86.h"

namespace vt::quant::x86 {
namespace {

// The tile over a weight source S: S::locate(pw, b, nb) finds block b of a
// group of 16 rows, S::step(l, s, k) gives elements 16s + 4k..+3 of its
// sub-block s for the 16 rows (u8, + 12), S::scales(l, s) their scales.
template <class S>
struct Nvfp4Tiles {
    static constexpr int kTokens = 3; // 8 accumulators per token in 32 registers
    static constexpr int64_t kBlockElems = 64;
    using Acts = Nvfp4Acts;

    // 16 rows (a group of pw) x T tokens.
    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        const BlockQ8_0 *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_0 *)(acts.a + (t0 + t) * acts.as);
        const float *ad = acts.d + t0 * 2 * nb;
        const int32_t *corr = acts.corr + t0 * 4 * nb;
        __m512 acc[T][8];
        for (int t = 0; t < T; ++t)
            for (int j = 0; j < 8; ++j) acc[t][j] = _mm512_setzero_ps();
        // Sub-block S_ of block b, b % 2 == P: its lane is a constant.
        const auto sub_block = [&]<int P, int S_>(const typename S::Loc &l, int64_t b) {
            constexpr int j = (S_ % 2) * 4 + 2 * P + S_ / 2;  // (g % 2) * 4 + (g % 8) / 2, g = 4b + S_
            const int64_t g = 4 * b + S_, ya = 2 * b + S_ / 2;
            __m512i p[T];
            for (int t = 0; t < T; ++t) p[t] = _mm512_set1_epi32(corr[t * 4 * nb + g]);
            for (int k = 0; k < 4; ++k) {
                const __m512i wq = S::step(l, S_, k);
                for (int t = 0; t < T; ++t) p[t] = dpbusd512(p[t], wq, bcast32(y[t][ya].qs + 16 * (S_ % 2) + 4 * k));
            }
            const __m512 sc = S::scales(l, S_);
            for (int t = 0; t < T; ++t)
                acc[t][j] = _mm512_fmadd_ps(_mm512_mul_ps(sc, _mm512_set1_ps(ad[t * 2 * nb + ya])),
                                            _mm512_cvtepi32_ps(p[t]), acc[t][j]);
        };
        const auto block = [&]<int P>(int64_t b) {
            const typename S::Loc l = S::locate(pw, b, nb);
            sub_block.template operator()<P, 0>(l, b);
            sub_block.template operator()<P, 1>(l, b);
            sub_block.template operator()<P, 2>(l, b);
            sub_block.template operator()<P, 3>(l, b);
        };
        int64_t b = 0;
        for (; b + 2 <= nb; b += 2) {
            block.template operator()<0>(b);
            block.template operator()<1>(b + 1);
        }
        if (b < nb) block.template operator()<0>(b);
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * os, row_mask(nr), hsum_order8(acc[t]));
    }
};

// GGUF rows packed per call: per 16 rows and block, 16 steps of 16 rows x 4
// bytes (the values + 12, 1024 bytes), then per sub-block the 16 rows'
// scales as f32 (256).
struct Nvfp4Packed {
    static constexpr size_t kScales = 1024, kBlock = kScales + 256;
    using Loc = const uint8_t *;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t) { return pw + b * kBlock; }
    static inline __m512i step(Loc l, int s, int k) { return _mm512_load_si512(l + (4 * s + k) * 64); }
    static inline __m512 scales(Loc l, int s) { return _mm512_load_ps((const float *)(l + kScales) + s * kLaneRows); }

    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nb, uint8_t *dst) {
        alignas(32) uint8_t q[kLaneRows][64];
        for (int64_t r0 = 0; r0 < nr; r0 += kLaneRows)
            for (int64_t b = 0; b < nb; ++b) {
                uint8_t *p = dst + ((r0 / kLaneRows) * nb + b) * kBlock;
                float *sc = (float *)(p + kScales);
                for (int r = 0; r < kLaneRows; ++r) {
                    if (r0 + r >= nr) { // rows past the matrix are zero
                        std::memset(q[r], 0, 64);
                        for (int s = 0; s < 4; ++s) sc[s * kLaneRows + r] = 0.f;
                        continue;
                    }
                    const BlockNVFP4 &x = ((const BlockNVFP4 *)(w + (r0 + r) * ws))[b];
                    for (int h = 0; h < 2; ++h)
                        _mm256_store_si256((__m256i *)(q[r] + 32 * h), _mm256_add_epi8(nvfp4_values32(x.qs + 16 * h),
                                                                                      _mm256_set1_epi8(kNvfp4Off)));
                    for (int s = 0; s < 4; ++s) sc[s * kLaneRows + r] = ue4m3_half(x.d[s]);
                }
                interleave_rows8<64>(q, p);
            }
    }
};
struct NVFP4Lanes : Nvfp4Tiles<Nvfp4Packed> {
    static constexpr size_t kBlock = Nvfp4Packed::kBlock;
    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nb, uint8_t *dst) {
        Nvfp4Packed::pack(w, ws, nr, nb, dst);
    }
};

// The NVFP4_X16 layout in place (x16-layout.h: the 16 rows' qs dwords
// interleaved, then the four scale bytes as four one-byte fields): dword
// 2s + v of a row holds elements 16s + 4v..+3 in its low nibbles and
// 16s + 8 + 4v..+3 in its high ones; the codes go through the table of the
// values + 12, the scale bytes through binary16 as in ue4m3_half8.
struct Nvfp4X16Src {
    static constexpr size_t kBlock = 16 * sizeof(BlockNVFP4), kPayload = 16 * sizeof(BlockNVFP4::qs);
    using Loc = X16Loc;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t nb) {
        return x16_locate<kBlock, kPayload, 1>(pw, b, nb);
    }
    static inline __m512i step(const Loc &l, int s, int k) {
        const __m512i v = _mm512_loadu_si512(l.q + 64 * (2 * s + k % 2));
        const __m512i c = _mm512_and_si512(k < 2 ? v : _mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0F));
        const __m128i t = _mm_add_epi8(_mm_loadu_si128((const __m128i *)kMxfp4Values), _mm_set1_epi8(kNvfp4Off));
        return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(t), c);
    }
    static inline __m512 scales(const Loc &l, int s) {
        const __m256i w = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(l.h + s * l.field)));
        const __m512 v = _mm512_mul_ps(
            _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x7F)), 7)), _mm512_set1_ps(128.f));
        const __mmask16 nan = _mm256_cmpeq_epi16_mask(w, _mm256_set1_epi16(0x7F));
        return _mm512_maskz_mov_ps(_knot_mask16(nan), v);
    }
};
using NVFP4X16 = Nvfp4Tiles<Nvfp4X16Src>;

} // namespace
} // namespace vt::quant::x86
