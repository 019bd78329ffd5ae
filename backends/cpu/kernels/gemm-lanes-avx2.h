// AVX2 row-lane tiles for the 32-element block types: the _X16 layouts of
// Q4_0, Q4_1 and Q8_0 read in place, Q5_0 and Q5_1 rows packed per call.
// Bit-identical to dot_legacy (legacy-x86.h) like the AVX-512 tiles of
// gemm-legacy-lanes-x86.h, with a 256-bit register holding 8 rows (half a
// group) x 4 weights.
//
// Two things differ from the AVX-512 tile, both for 16 registers and no
// vpdpbusd:
// - Nibble weights (0..15) against activations in -127..127 make vpmaddubsw
//   pairs of at most 3810 in size, so a block's 8 steps add up in int16
//   (at most 30480) and take one vpmaddwd per block and token, not 8 (5-bit
//   weights: 4 steps at a time).
// - The 8 f32 accumulators per token (block b goes to b % 8) stay in L1,
//   each read and written once per 8 blocks; the registers hold the step
//   sums of all tokens instead.
#pragma once

#include "cpu/kernels/gemm-lanes-x86.h"

namespace vt::quant::x86 {
namespace {

static inline __m256i bcast32_256(const void *p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// Lanes 0..7 when n >= 8, else the first n (sign bits for vmaskmovps).
static inline __m256i lanes_below(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// hsum's pairing over 8 accumulators, lane by lane (dot_legacy's final sum).
static inline __m256 hsum_order8(const __m256 a[8]) {
    return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                         _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7])));
}

// The end of a tile whose 8 f32 accumulators per token and half sit in L1
// (acc[hh][t][j], lane j only where bit j of used is set: the others were
// never written): hsum's order, the rows of halves h0.. stored.
template <int H, int T>
static inline void store_lane_sums(const float (&acc)[H][T][8][8], unsigned used, float *out, size_t os, int h0,
                                   int nr) {
    for (int hh = 0; hh < H; ++hh)
        for (int t = 0; t < T; ++t) {
            __m256 a[8];
            for (int j = 0; j < 8; ++j) a[j] = used >> j & 1 ? _mm256_load_ps(acc[hh][t][j]) : _mm256_setzero_ps();
            _mm256_maskstore_ps(out + t * os + 8 * (h0 + hh), lanes_below(nr - 8 * (h0 + hh)), hsum_order8(a));
        }
}

// nr (1..16) rows of a group through F::halves<T, H>(.., h0, ..): decode
// takes both halves per block (each payload line read from memory once),
// tiles of tokens one half at a time.
template <class F, int T>
static inline void halves_tile(int64_t nb, const uint8_t *pw, const typename F::Acts &acts, int64_t t0, int nr,
                               float *out, size_t os) {
    if constexpr (T == 1) {
        if (nr > 8) return F::template halves<1, 2>(nb, pw, acts, t0, 0, nr, out, os);
        F::template halves<1, 1>(nb, pw, acts, t0, 0, nr, out, os);
    } else {
        F::template halves<T, 1>(nb, pw, acts, t0, 0, nr, out, os);
        if (nr > 8) F::template halves<T, 1>(nb, pw, acts, t0, 1, nr, out, os);
    }
}

// Where the tile reads a block's weights for rows 8h..8h+7. X16Src8: an
// _X16 layout in place; nibble types hold steps u and u + 4 in one line
// (low and high nibbles), Q8_0 one step per line.
template <class Ops>
struct X16Src8 {
    using BW = typename Ops::BW;
    static constexpr bool kNibbles = sizeof(BW::qs) == QK / 2;
    static constexpr size_t kPayload = kX16Payload<Ops>, kBlock = 16 * sizeof(BW);
    using Loc = X16Loc;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t nb) {
        return x16_locate<kBlock, kPayload, kX16Field<Ops>>(pw, b, nb);
    }
    static inline __m256i line(const Loc &l, int u, int h) {
        return _mm256_loadu_si256((const __m256i *)(l.q + 64 * u + 32 * h));
    }
    static inline __m256 d(const Loc &l, int h) {
        if constexpr (kE8M0<Ops>) return e8m0_half8(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(l.h + 8 * h))));
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(l.h + 16 * h)));
    }
    static inline __m256 m(const Loc &l, int h) {
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(l.h + l.field + 16 * h)));
    }
};

// Q5_0_X16 and Q5_1_X16 in place: Q4_0's nibbles after a dword of fifth
// bits sliced by step (x16-layout.h: byte i's bit k for byte i of step k),
// merged per step into u8 weights (0..31) with a shift, a mask and an or,
// which the tile takes as it takes packed Q5 steps.
template <class Ops>
struct X16Q5Src8 : X16Src8<Ops> {
    using Loc = X16Loc;
    static constexpr bool kNibbles = false;
    // Step k (elements 4k..4k+3) of rows 8h..8h+7.
    static inline __m256i line(const Loc &l, int k, int h) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(l.q + 64 * (1 + (k & 3)) + 32 * h));
        const __m256i q = _mm256_and_si256(k < 4 ? v : _mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(l.q + 32 * h));
        const __m256i bk = k < 4 ? _mm256_slli_epi32(b, 4 - k) : k == 4 ? b : _mm256_srli_epi32(b, k - 4);
        return _mm256_or_si256(q, _mm256_and_si256(bk, _mm256_set1_epi8(0x10)));
    }
};

// Q1_0_X16 and Q2_0_X16 in place (x16-layout.h; the AVX-512 X16StepsQ1_0
// and X16StepsQ2_0 of gemm-legacy-lanes-x86.h read the same bytes): the
// tiles' block b is a 32-element piece of a layout block, with that block's
// d; a line is one step's unsigned codes (OpsQ1_0, OpsQ2_0) for 8 rows.
// Q1_0: a piece is one dword per row; step k takes its bits 4k..4k+3, byte
// k / 2 to the lane's 4 bytes (one in-lane shuffle), 2 where a bit is set.
struct X16Q1Src8 {
    static constexpr bool kNibbles = false;
    static constexpr size_t kGroupBlock = 16 * sizeof(BlockQ1_0), kPayload = 16 * sizeof(BlockQ1_0::qs);
    static constexpr size_t kBlock = kGroupBlock / 4; // per piece: prefetch distances only
    using Loc = X16Loc;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t nb) {
        Loc l = x16_locate<kGroupBlock, kPayload>(pw, b / 4, nb / 4);
        l.q += 64 * (b % 4);
        return l;
    }
    static inline __m256i line(const Loc &l, int k, int h) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(l.q + 32 * h));
        const __m256i idx = _mm256_add_epi8(_mm256_setr_epi32(0, 0x04040404, 0x08080808, 0x0C0C0C0C, 0, 0x04040404,
                                                              0x08080808, 0x0C0C0C0C),
                                            _mm256_set1_epi8((char)(k / 2)));
        const __m256i bits = _mm256_set1_epi32((int)(0x08040201u << 4 * (k % 2)));
        const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, idx), bits), bits);
        return _mm256_and_si256(set, _mm256_set1_epi8(2));
    }
    static inline __m256 d(const Loc &l, int h) {
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(l.h + 16 * h)));
    }
};

// Q2_0: a piece is two dwords per row (64 bytes each for the 16 rows), each
// dword's 2-bit fields transposed 4 x 4 by the repack, so that step k's
// codes are dword k / 4 shifted by 2 (k % 4) and masked.
struct X16Q2Src8 {
    static constexpr bool kNibbles = false;
    static constexpr size_t kGroupBlock = 16 * sizeof(BlockQ2_0), kPayload = 16 * sizeof(BlockQ2_0::qs);
    static constexpr size_t kBlock = kGroupBlock / 2; // per piece: prefetch distances only
    using Loc = X16Loc;
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t nb) {
        Loc l = x16_locate<kGroupBlock, kPayload>(pw, b / 2, nb / 2);
        l.q += 128 * (b % 2);
        return l;
    }
    static inline __m256i line(const Loc &l, int k, int h) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(l.q + 64 * (k / 4) + 32 * h));
        return _mm256_and_si256(_mm256_srli_epi32(v, 2 * (k % 4)), _mm256_set1_epi8(3));
    }
    static inline __m256 d(const Loc &l, int h) {
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(l.h + 16 * h)));
    }
};

// Rows of a 32-element type packed per call (Q5_0, Q5_1: pack_u8_steps,
// gemm-lanes-x86.h).
template <class Ops>
struct PackedSrc8 {
    static constexpr bool kNibbles = false;
    static constexpr size_t kBlock = kU8StepsBlock;
    struct Loc {
        const uint8_t *q, *h;
    };
    static inline Loc locate(const uint8_t *pw, int64_t b, int64_t) { return {pw + b * kBlock, pw + b * kBlock + 512}; }
    static inline __m256i line(const Loc &l, int k, int h) {
        return _mm256_load_si256((const __m256i *)(l.q + 64 * k + 32 * h));
    }
    static inline __m256 d(const Loc &l, int h) { return _mm256_load_ps((const float *)(l.h + 32 * h)); }
    static inline __m256 m(const Loc &l, int h) { return _mm256_load_ps((const float *)(l.h + 64 + 32 * h)); }

    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nb, uint8_t *dst) {
        pack_u8_steps<Ops>(w, ws, nr, nb, dst);
    }
};

template <class Ops, class S>
struct LegacyLanes8 {
    using BA = typename Ops::BA;
    using Acts = LegacyActs<Ops>;
    static constexpr int kTokens = 4;
    static constexpr int64_t kBlockElems = QK;
    static constexpr size_t kBlock = S::kBlock;
    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nb, uint8_t *dst) {
        S::pack(w, ws, nr, nb, dst);
    }

    // Block b's integer sums for rows 8h..8h+7 of the group and T tokens,
    // each from its correction (-kOff * sum(y)).
    template <int T>
    static inline void block_sums(const typename S::Loc &l, int h, const BA *const y[T], int64_t b, const int32_t *corr,
                                  int64_t nb, __m256i p[T]) {
        const __m256i ones = _mm256_set1_epi16(1);
        if constexpr (S::kNibbles) {
            const __m256i low4 = _mm256_set1_epi8(0x0F);
            __m256i s16[T], s32[T];
            for (int t = 0; t < T; ++t) s16[t] = s32[t] = _mm256_setzero_si256();
            // MXFP4's codes go through its table (+ kOff: 0..24, OpsMXFP4::W's
            // bytes): pairs up to 6096, so its int16 sums take 4 products,
            // then move to int32 (steps 0, 4, 1, 5, then 2, 6, 3, 7).
            const __m256i tbl = [] {
                if constexpr (kE8M0<Ops>) {
                    const __m128i t = _mm_add_epi8(_mm_loadu_si128((const __m128i *)kMxfp4Values),
                                                   _mm_set1_epi8((char)Ops::kOff));
                    return _mm256_set_m128i(t, t);
                } else {
                    return _mm256_setzero_si256();
                }
            }();
            const auto step = [&](int u) { // low nibbles: step u, high: step u + 4
                const __m256i v = S::line(l, u, h);
                __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
                if constexpr (kE8M0<Ops>) {
                    lo = _mm256_shuffle_epi8(tbl, lo);
                    hi = _mm256_shuffle_epi8(tbl, hi);
                }
                for (int t = 0; t < T; ++t) {
                    s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(lo, bcast32_256(y[t][b].qs + 4 * u)));
                    s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(hi, bcast32_256(y[t][b].qs + 16 + 4 * u)));
                }
                if constexpr (kE8M0<Ops>)
                    if (u == 1)
                        for (int t = 0; t < T; ++t) {
                            s32[t] = _mm256_madd_epi16(s16[t], ones);
                            s16[t] = _mm256_setzero_si256();
                        }
            };
            // Token tiles unroll 2 steps deep: at 4, GCC summed the products
            // as trees and spilled (1 thread, 256 x 2048 in L2, 4 tokens:
            // 10.4 -> 12.6 GB/s); decode keeps 4 (2 lost 14%).
            if constexpr (T == 1) {
#pragma GCC unroll 4
                for (int u = 0; u < 4; ++u) step(u);
            } else {
#pragma GCC unroll 2
                for (int u = 0; u < 4; ++u) step(u);
            }
            for (int t = 0; t < T; ++t)
                p[t] = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(s16[t], ones), s32[t]),
                                        _mm256_set1_epi32(corr[t * nb + b]));
        } else if constexpr (Ops::kOff >= 0) {
            // Unsigned 5-bit weights: 4 steps in int16 (at most 4 * 2 * 31 * 127).
            for (int t = 0; t < T; ++t) p[t] = _mm256_set1_epi32(corr[t * nb + b]);
            for (int k0 = 0; k0 < 8; k0 += 4) {
                __m256i s16[T];
                for (int t = 0; t < T; ++t) s16[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
                for (int k = k0; k < k0 + 4; ++k) {
                    const __m256i w = S::line(l, k, h);
                    for (int t = 0; t < T; ++t)
                        s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(w, bcast32_256(y[t][b].qs + 4 * k)));
                }
                for (int t = 0; t < T; ++t) p[t] = _mm256_add_epi32(p[t], _mm256_madd_epi16(s16[t], ones));
            }
        } else {
            // Signed weights: |w| against y with w's sign (dot_ss8's form).
            for (int t = 0; t < T; ++t) p[t] = _mm256_set1_epi32(corr[t * nb + b]);
#pragma GCC unroll 2
            for (int k = 0; k < 8; ++k) {
                const __m256i w = S::line(l, k, h);
                const __m256i aw = _mm256_sign_epi8(w, w);
                for (int t = 0; t < T; ++t) {
                    const __m256i ys = _mm256_sign_epi8(bcast32_256(y[t][b].qs + 4 * k), w);
                    p[t] = _mm256_add_epi32(p[t], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, ys), ones));
                }
            }
        }
    }

    // Halves h0..h0+H-1 of the group at pw (rows 8h..8h+7) x T tokens.
    template <int T, int H>
    static void halves(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int h0, int nr, float *out,
                       size_t os) {
        const BA *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BA *)(acts.a + (t0 + t) * acts.as);
        const float *ad = acts.d + t0 * nb, *as = acts.s + t0 * nb;
        const int32_t *corr = acts.corr + t0 * nb;
        // Parked in L1 (see the top): 8 per token would not fit in registers.
        // Not zeroed up front: blocks 0..7 start theirs from a zero register
        // (a 1-2 KiB memset per call was 5% of 135M Q8_0 prefill, whose rows
        // have 18 blocks), and the sums read only the ones written.
        alignas(32) float acc[H][T][8][8], macc[H][T][Ops::kMin ? 8 : 1][8];
        const __m256 zero = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const int j = (int)(b & 7);
            const bool first = b < 8;
            const typename S::Loc l = S::locate(pw, b, nb);
            prefetch_blocks_ahead<S::kBlock>(pw, b, j, t0);
            for (int hh = 0; hh < H; ++hh) {
                const int h = h0 + hh;
                __m256i p[T];
                block_sums<T>(l, h, y, b, corr, nb, p);
                const __m256 wd = S::d(l, h);
                for (int t = 0; t < T; ++t)
                    _mm256_store_ps(acc[hh][t][j],
                                    _mm256_fmadd_ps(_mm256_mul_ps(wd, _mm256_set1_ps(ad[t * nb + b])),
                                                    _mm256_cvtepi32_ps(p[t]),
                                                    first ? zero : _mm256_load_ps(acc[hh][t][j])));
                if constexpr (Ops::kMin) {
                    const __m256 wm = S::m(l, h);
                    for (int t = 0; t < T; ++t)
                        _mm256_store_ps(macc[hh][t][j],
                                        _mm256_add_ps(first ? zero : _mm256_load_ps(macc[hh][t][j]),
                                                      _mm256_mul_ps(wm, _mm256_set1_ps(as[t * nb + b]))));
                }
            }
        }
        for (int hh = 0; hh < H; ++hh)
            for (int t = 0; t < T; ++t) {
                __m256 a[8];
                for (int j = 0; j < 8; ++j) a[j] = j < nb ? _mm256_load_ps(acc[hh][t][j]) : zero;
                __m256 s = hsum_order8(a);
                if constexpr (Ops::kMin) {
                    for (int j = 0; j < 8; ++j) a[j] = j < nb ? _mm256_load_ps(macc[hh][t][j]) : zero;
                    s = _mm256_add_ps(s, hsum_order8(a));
                }
                _mm256_maskstore_ps(out + t * os + 8 * (h0 + hh), lanes_below(nr - 8 * (h0 + hh)), s);
            }
    }

    // Decode of the nibble types, both halves per block: the 16 accumulators
    // (2 halves x 8) start from zero and for_blocks8 makes each block's j a
    // constant, so no block tests whether it is among the first 8 or computes
    // its L1 slot. 1B decode on 1 thread: Q4_0 26-29 -> 29-31 tok/s, Q4_1
    // 23-24 -> 26-29; Q8_0 lost 12% this way (its 8 signed steps per half,
    // unrolled 8 blocks deep, spill), so it keeps halves<1, 2>.
    static void decode(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out) {
        const BA *y[1] = {(const BA *)(acts.a + t0 * acts.as)};
        const float *ad = acts.d + t0 * nb, *as = acts.s + t0 * nb;
        const int32_t *corr = acts.corr + t0 * nb;
        __m256 acc[2][8], macc[2][Ops::kMin ? 8 : 1];
        for (int h = 0; h < 2; ++h) {
            for (int j = 0; j < 8; ++j) acc[h][j] = _mm256_setzero_ps();
            for (auto &m : macc[h]) m = _mm256_setzero_ps();
        }
        for_blocks8(nb, [&](int64_t b, int j) {
            const typename S::Loc l = S::locate(pw, b, nb);
            prefetch_blocks_ahead<S::kBlock>(pw, b, j, t0);
            const __m256 yd = _mm256_set1_ps(ad[b]);
            for (int h = 0; h < 2; ++h) {
                __m256i p[1];
                block_sums<1>(l, h, y, b, corr, nb, p);
                acc[h][j] = _mm256_fmadd_ps(_mm256_mul_ps(S::d(l, h), yd), _mm256_cvtepi32_ps(p[0]), acc[h][j]);
                if constexpr (Ops::kMin)
                    macc[h][j] = _mm256_add_ps(macc[h][j], _mm256_mul_ps(S::m(l, h), _mm256_set1_ps(as[b])));
            }
        });
        for (int h = 0; h < 2; ++h) {
            __m256 s = hsum_order8(acc[h]);
            if constexpr (Ops::kMin) s = _mm256_add_ps(s, hsum_order8(macc[h]));
            _mm256_maskstore_ps(out + 8 * h, lanes_below(nr - 8 * h), s);
        }
    }

    // nr (1..16) rows of a group: decode takes both halves per block (each
    // weight line read from memory once), tiles of tokens one half at a time.
    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        if constexpr (T == 1) {
            if (nr > 8) {
                if constexpr (S::kNibbles) return decode(nb, pw, acts, t0, nr, out);
                return halves<1, 2>(nb, pw, acts, t0, 0, nr, out, os);
            }
            halves<1, 1>(nb, pw, acts, t0, 0, nr, out, os);
        } else {
            halves<T, 1>(nb, pw, acts, t0, 0, nr, out, os);
            if (nr > 8) halves<T, 1>(nb, pw, acts, t0, 1, nr, out, os);
        }
    }
};

template <class Ops>
void gemm_legacy_x16_avx2(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt,
                          float *out, size_t os) {
    gemm_x16<LegacyLanes8<Ops, X16Src8<Ops>>>(k, w, ws, nr, a, as, nt, out, os);
}

// An in-place source S (Q5_0_X16, Q5_1_X16, Q1_0_X16, Q2_0_X16) with many
// tokens: PackedSrc8's steps packed per call from the layout, so that the
// codes are formed (Q5: the fifth bits merged) once per call, not once per
// token tile (135M Q4_K file, mostly Q5_0, pp512 on AVX2: 849-865 tok/s in
// place, 1024-1035 packed, as fast as packing the Q5_0 rows).
template <class Ops, class S>
struct PackedFromX16Src8 : PackedSrc8<Ops> {
    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nb, uint8_t *dst) {
        for (int64_t g = 0; g < nr / 16; ++g)
            for (int64_t b = 0; b < nb; ++b) {
                const X16Loc l = S::locate(w + g * 16 * ws, b, nb);
                uint8_t *p = dst + (g * nb + b) * kU8StepsBlock;
                for (int h = 0; h < 2; ++h) {
                    for (int k = 0; k < 8; ++k) _mm256_store_si256((__m256i *)(p + 64 * k + 32 * h), S::line(l, k, h));
                    _mm256_store_ps((float *)(p + 512 + 32 * h), S::d(l, h));
                    if constexpr (Ops::kMin) _mm256_store_ps((float *)(p + 576 + 32 * h), S::m(l, h));
                    else _mm256_store_ps((float *)(p + 576 + 32 * h), _mm256_setzero_ps());
                }
            }
    }
};

// Q5_0_X16, Q5_1_X16: in place below 8 tokens, packed from 8. With 16
// registers the packed steps' plain loads gain more here than the merge
// costs from about 8 tokens (1 thread, 512 x 2048 in L2, the tiles alone,
// Q5_0 GFLOP/s packed / in place: 107 / 134 at 4 tokens, 120 / 129 at 6,
// 130 / 97-137 at 8, 145 / 141 at 12, 156 / 145 at 16, 177 / 146 at 128).
// Q1_0 and Q2_0 likewise from 8 (1 thread, 8192 x 2048, 64 tokens,
// GFLOP/s in place / packed: Q1_0 105 / 121, Q2_0 122 / 127).
constexpr int64_t kPackTokensAvx2 = 8;
template <class Ops, class S>
void gemm_legacy_packed_x16_avx2(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as,
                                 int64_t nt, float *out, size_t os) {
    if (nt >= kPackTokensAvx2)
        return gemm_lanes<LegacyLanes8<Ops, PackedFromX16Src8<Ops, S>>>(k, w, ws, nr, a, as, nt, out, os);
    gemm_x16<LegacyLanes8<Ops, S>>(k, w, ws, nr, a, as, nt, out, os);
}

template <class Ops>
void gemm_legacy_avx2(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt,
                      float *out, size_t os) {
    gemm_lanes<LegacyLanes8<Ops, PackedSrc8<Ops>>>(k, w, ws, nr, a, as, nt, out, os);
}

} // namespace
} // namespace vt::quant::x86
