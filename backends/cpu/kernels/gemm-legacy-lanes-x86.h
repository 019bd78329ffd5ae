// Row-lane tiles (gemm-rows-x86.h) for the 32-element block types, bit-
// identical to dot_legacy in legacy-x86.h. Include after gemm-rows-x86.h.
//
// dot_legacy sums each block's 32 products exactly, then adds
// fma(wd * ad, isum) into lane b % 8 of its accumulator. Here the 16 rows of
// a register each form their block's isum with 8 vpdpbusd (4 weights x 4
// activation bytes broadcast per step), then take one conversion and one
// FMA per block and token into accumulator b % 8: 11 vector instructions
// per 16 rows, 32 elements and token, where the vec_dot's form spends a
// conversion and an FMA per 4 elements. The end combines the 8 accumulators
// in hsum's order.
//
// Two weight sources share the tile: the _X16 load-time layouts, read in
// place (decode and prefill), and rows of any 32-element type packed per
// call into 8 steps of u8 per block (GGUF rows the layouts do not take).
#pragma once

#include "cpu/kernels/gemm-rows-x86.h"

namespace vt::quant::x86 {
namespace {

// acc + the 4 products per lane of weight step w and activation bytes y.
template <class Ops>
static inline __m512i step_dot(__m512i acc, __m512i w, __m512i y) {
    if constexpr (Ops::kOff < 0) {
        // Signed weights: |w| against y with w's sign (|w| <= 128,
        // |y| <= 127, so vpmaddubsw's pairs cannot saturate).
        const __m512i z = _mm512_setzero_si512();
        const __m512i ys =
            _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(w, w), _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(w), z, y));
        return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_abs_epi8(w), ys),
                                                       _mm512_set1_epi16(1)));
    } else {
        return dpbusd512(acc, w, y);
    }
}

// Weights packed per call (pack_u8_steps, gemm-lanes-x86.h).
template <class Ops>
struct U8Steps {
    static constexpr size_t kBlock = kU8StepsBlock;
    // Block b of a group at pw: its steps and its scales.
    struct Loc {
        const uint8_t *q, *h;
    };
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t) { return {pw + b * kBlock, pw + b * kBlock + 512}; }
    static inline __m512i step(const Loc &l, int k) { return _mm512_load_si512(l.q + 64 * k); }
    static inline __m512 d(const Loc &l) { return _mm512_load_ps((const float *)l.h); }
    static inline __m512 m(const Loc &l) { return _mm512_load_ps((const float *)(l.h + 64)); }

    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nb, uint8_t *dst) {
        pack_u8_steps<Ops>(w, ws, nr, nb, dst);
    }
};

// The _X16 layouts in place (x16-layout.h): Q4_0 and Q4_1 hold two steps
// per dword (low nibbles: step u, high: step u + 4), Q8_0 one; Q5_0 and Q5_1
// hold Q4_0's nibbles after a dword of fifth bits sliced by step (byte i's
// bit k for byte i of step k), which one shift and one vpternlogd merge into
// the nibbles where qh's own order took a shift, a shuffle, a test and a
// masked add per step (decode, 1 thread, 512 x 2048 in L2: the tiles alone
// 33 -> 51 GB/s, Q4_0's 61; perf-matmul's node 33 -> 40, Q4_0's 45).
// Blocks go in pairs (both quants, then both d, then both m) so that every
// quant load is 64-byte aligned when the matrix is (the loader's copies
// are; the loads stay unaligned ones for any other buffer, e.g. odd block
// counts).
template <class Ops>
struct X16Steps {
    using BW = typename Ops::BW;
    static constexpr bool kNibbles = sizeof(BW::qs) == QK / 2;
    static constexpr size_t kPayload = kX16Payload<Ops>, kBlock = 16 * sizeof(BW);
    static constexpr bool kFifthBits = kPayload > 16 * sizeof(BW::qs);
    using Loc = X16Loc;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t nb) {
        return x16_locate<kBlock, kPayload, kX16Field<Ops>>(pw, b, nb);
    }
    static inline __m512i step(const Loc &l, int k) {
        if constexpr (kNibbles) {
            constexpr int kQs = kFifthBits ? 1 : 0; // the nibbles' first dword
            const __m512i v = _mm512_loadu_si512(l.q + 64 * (kQs + (k & 3)));
            const __m512i q = _mm512_and_si512(k < 4 ? v : _mm512_srli_epi16(v, 4), _mm512_set1_epi8(0x0F));
            if constexpr (kLevels<Ops> != nullptr) {  // MXFP4, IQ4_NL: the codes through the table, + kOff (Ops::W's bytes)
                const __m128i t = _mm_add_epi8(_mm_loadu_si128((const __m128i *)kLevels<Ops>),
                                               _mm_set1_epi8((char)(Ops::kOff > 0 ? Ops::kOff : 0)));
                return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(t), q);
            }
            if constexpr (!kFifthBits) return q;
            // Bit k of each byte to bit 4 (q's bit 4 is clear): q | (h & 0x10).
            const __m512i h = _mm512_loadu_si512(l.q);
            const __m512i hk = k < 4 ? _mm512_slli_epi32(h, 4 - k) : k == 4 ? h : _mm512_srli_epi32(h, k - 4);
            return _mm512_ternarylogic_epi32(q, hk, _mm512_set1_epi8(0x10), 0xF8);
        } else {
            const __m512i v = _mm512_loadu_si512(l.q + 64 * k);
            if constexpr (Ops::kOff == 128) return _mm512_xor_si512(v, _mm512_set1_epi8((char)0x80));
            else return v;
        }
    }
    static inline __m512 d(const Loc &l) {
        if constexpr (kE8M0<Ops>) {
            // 2^(e - 128) per row (legacy-x86.h's e8m0_half8, 16 lanes).
            const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)l.h));
            const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
            const __m512i sub = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
            return _mm512_castsi512_ps(
                _mm512_mask_mov_epi32(sub, _mm512_cmpgt_epi32_mask(e, _mm512_set1_epi32(1)), normal));
        }
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)l.h));
    }
    static inline __m512 m(const Loc &l) {
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(l.h + l.field)));
    }
};

// The Q1_0_X16 layout in place: a block's 16 code bytes are 4 payload
// dwords per row, dword p the bits of its 32-element group p, and the tiles'
// block b is a group: its block's d, the dword of part b % 4. Step k takes
// bits 4k..4k+3 of each row's dword: byte k / 2 to the lane's 4 bytes (one
// in-lane shuffle), one bit per byte tested, 2 where set and 0 where clear
// (OpsQ1_0's unsigned codes).
struct X16StepsQ1_0 {
    using BW = BlockQ1_0;
    static constexpr size_t kBlock = 16 * sizeof(BW) / 4; // per group: prefetch distances only
    static constexpr size_t kGroupBlock = 16 * sizeof(BW), kPayload = 16 * sizeof(BW::qs);
    using Loc = X16Loc;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t nb) {
        Loc l = x16_locate<kGroupBlock, kPayload>(pw, b / 4, nb / 4);
        l.q += 64 * (b % 4);
        return l;
    }
    static inline __m512i step(const Loc &l, int k) {
        const __m512i v = _mm512_loadu_si512(l.q);
        const __m512i idx = _mm512_add_epi8(_mm512_set4_epi32(0x0C0C0C0C, 0x08080808, 0x04040404, 0),
                                            _mm512_set1_epi8((char)(k / 2)));
        const __mmask64 set = _mm512_test_epi8_mask(_mm512_shuffle_epi8(v, idx),
                                                    _mm512_set1_epi32((int)(0x08040201u << 4 * (k % 2))));
        return _mm512_maskz_mov_epi8(set, _mm512_set1_epi8(2));
    }
    static inline __m512 d(const Loc &l) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)l.h)); }
};

// The Q2_0_X16 layout in place: a block's 4 qs dwords per row, the tiles'
// block b a 32-element piece of it (dwords 2 (b % 2) and 2 (b % 2) + 1)
// with its block's d. repack.cpp transposed each dword's 2-bit fields, so
// step k's codes (OpsQ2_0's q, unsigned) are field k % 4 of each byte of
// the piece's dword k / 4: one shift and one mask.
struct X16StepsQ2_0 {
    using BW = BlockQ2_0;
    static constexpr size_t kBlock = 16 * sizeof(BW) / 2; // per piece: prefetch distances only
    static constexpr size_t kGroupBlock = 16 * sizeof(BW), kPayload = 16 * sizeof(BW::qs);
    using Loc = X16Loc;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t nb) {
        Loc l = x16_locate<kGroupBlock, kPayload>(pw, b / 2, nb / 2);
        l.q += 128 * (b % 2);
        return l;
    }
    static inline __m512i step(const Loc &l, int k) {
        const __m512i v = _mm512_loadu_si512(l.q + 64 * (k / 4));
        return _mm512_and_si512(_mm512_srli_epi32(v, 2 * (k % 4)), _mm512_set1_epi8(3));
    }
    static inline __m512 d(const Loc &l) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)l.h)); }
};

static inline __m512 hsum_order8(const __m512 a[8]) {
    return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                         _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
}

template <class Ops, class S>
struct LegacyLanes {
    using BA = typename Ops::BA;
    using Acts = LegacyActs<Ops>;
    static constexpr int kTokens = 3; // 8 accumulators per token in 32 registers
    static constexpr int64_t kBlockElems = QK;
    static constexpr size_t kBlock = S::kBlock;
    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nb, uint8_t *dst) {
        S::pack(w, ws, nr, nb, dst);
    }

    // 16 rows (a group of pw, blocks kBlock apart) x T tokens.
    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        const BA *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BA *)(acts.a + (t0 + t) * acts.as);
        const float *ad = acts.d + t0 * nb, *as = acts.s + t0 * nb;
        const int32_t *corr = acts.corr + t0 * nb;
        __m512 acc[T][8];
        for (int t = 0; t < T; ++t)
            for (int j = 0; j < 8; ++j) acc[t][j] = _mm512_setzero_ps();
        for_blocks8(nb, [&](int64_t b, int j) {
            const typename S::Loc w = S::locate(pw, b, nb);
            prefetch_blocks_ahead<kBlock>(pw, b, j, t0);
            // Independent chains of steps (one of 8 would make a block wait
            // 8 vpdpbusd latencies), the first from the correction, added
            // exactly: 2 chains per token in tiles, 4 for decode.
            constexpr int C = T == 1 ? 4 : 2;
            __m512i p[T][C];
            for (int t = 0; t < T; ++t) {
                p[t][0] = _mm512_set1_epi32(corr[t * nb + b]);
                for (int c = 1; c < C; ++c) p[t][c] = _mm512_setzero_si512();
            }
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                const __m512i wlo = S::step(w, k), whi = S::step(w, k + 4);
                for (int t = 0; t < T; ++t) {
                    __m512i &a = p[t][(2 * k) % C], &h = p[t][(2 * k + 1) % C];
                    a = step_dot<Ops>(a, wlo, bcast32(y[t][b].qs + 4 * k));
                    h = step_dot<Ops>(h, whi, bcast32(y[t][b].qs + 16 + 4 * k));
                }
            }
            __m512i isum[T];
            for (int t = 0; t < T; ++t) {
                isum[t] = _mm512_add_epi32(p[t][0], p[t][1]);
                if constexpr (C == 4) isum[t] = _mm512_add_epi32(isum[t], _mm512_add_epi32(p[t][2], p[t][3]));
            }
            const __m512 wd = S::d(w);
            for (int t = 0; t < T; ++t)
                acc[t][j] = _mm512_fmadd_ps(_mm512_mul_ps(wd, _mm512_set1_ps(ad[t * nb + b])),
                                            _mm512_cvtepi32_ps(isum[t]), acc[t][j]);
        });
        for (int t = 0; t < T; ++t) {
            __m512 s = hsum_order8(acc[t]);
            if constexpr (Ops::kMin) {
                __m512 m[8];
                for (int j = 0; j < 8; ++j) m[j] = _mm512_setzero_ps();
                for_blocks8(nb, [&](int64_t b, int j) {
                    m[j] = _mm512_add_ps(m[j], _mm512_mul_ps(S::m(S::locate(pw, b, nb)), _mm512_set1_ps(as[t * nb + b])));
                });
                s = _mm512_add_ps(s, hsum_order8(m));
            }
            _mm512_mask_storeu_ps(out + t * os, row_mask(nr), s);
        }
    }
};

// Rows of a 32-element type: packed per call.
template <class Ops>
void gemm_legacy(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt, float *out,
                 size_t os) {
    gemm_lanes<LegacyLanes<Ops, U8Steps<Ops>>>(k, w, ws, nr, a, as, nt, out, os);
}

// An _X16 matrix in place, for every token count. Q5_0 and Q5_1 too: with
// their fifth bits sliced by step, merging them in each token tile costs
// less than packing u8 steps per call and reading those (1 thread, 512 x
// 2048 in L2, the tiles alone, GFLOP/s packed -> in place: Q5_0 134 -> 218
// at 4 tokens, 200 -> 265 at 16, 222 -> 275 at 128; Q5_1 121 -> 175,
// 177 -> 211, 204 -> 218; Q4_0 in place 278, 331, 340).
template <class Ops>
void gemm_legacy_x16(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt,
                     float *out, size_t os) {
    gemm_x16<LegacyLanes<Ops, X16Steps<Ops>>>(k, w, ws, nr, a, as, nt, out, os);
}

} // namespace
} // namespace vt::quant::x86
