// Register-tiled multi-token dot products (Kernels::gemm) for x86, shared by
// the AVX-512 translation units the way legacy-x86.h is. Include after
// simd-x86.h and legacy-x86.h.
//
// Every output must be bit-identical to the table's vec_dot, so each tile
// replays the vec_dot's arithmetic for R weight rows x C tokens at once:
// the same per-block integer sums (computed differently where the integers
// are exact anyway), the same f32 scale products, the same FMA sequence into
// the same accumulator lanes, the same final reduction. Only the order in
// which independent accumulators are advanced changes: the vec_dot keeps N
// accumulators (block j goes to accumulator j mod N); a tile instead runs
// one pass per accumulator, each pass holding one register per (row, token)
// pair, and combines the passes at the end exactly as the vec_dot does.
// The gain: each weight block is loaded (and, for the quantized types,
// unpacked, once per call into a scratch) for C tokens at once, each
// activation block for R rows, and no horizontal reduction is done per block.
#pragma once

#include "core/quant/blocks.h"
#include "core/quant/kernels.h"
#include "core/quant/simd-x86.h"

#include <vector>

namespace vt::quant::x86 {
namespace {

// Runs Tile<R, C> over nr rows x nt tokens in blocks of rows small enough
// to stay in L1 while every token tile passes over them; leftover rows and
// tokens get 1-wide tiles.
template <template <int, int> class Tile, int R, int C>
void gemm_tiled(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt,
                float *out, size_t os) {
    const uint8_t *ab = (const uint8_t *)a;
    int64_t rows_per_block = (int64_t)(16 * 1024 / ws) / R * R;
    if (rows_per_block < R) rows_per_block = R;
    for (int64_t r0 = 0; r0 < nr; r0 += rows_per_block) {
        const int64_t nrb = nr - r0 < rows_per_block ? nr - r0 : rows_per_block;
        const uint8_t *wb = (const uint8_t *)w + r0 * ws;
        float *ob = out + r0;
        int64_t t = 0;
        for (; t + C <= nt; t += C) {
            int64_t r = 0;
            for (; r + R <= nrb; r += R) Tile<R, C>::run(k, wb + r * ws, ws, ab + t * as, as, ob + t * os + r, os);
            for (; r < nrb; ++r) Tile<1, C>::run(k, wb + r * ws, ws, ab + t * as, as, ob + t * os + r, os);
        }
        for (; t < nt; ++t) {
            int64_t r = 0;
            for (; r + R <= nrb; r += R) Tile<R, 1>::run(k, wb + r * ws, ws, ab + t * as, as, ob + t * os + r, os);
            for (; r < nrb; ++r) Tile<1, 1>::run(k, wb + r * ws, ws, ab + t * as, as, ob + t * os + r, os);
        }
    }
}

// ---- 32-element block types (mirrors dot_legacy in legacy-x86.h) -----------
//
// Both operands are first unpacked once per call into a tile-friendly
// scratch: weights as 32 u8 per block (W) plus f32 scales, activations as
// their 32 int8 plus a per-token correction (A) and f32 scales spread to
// the lanes of the 16 (row, token) pairs of a tile. The per-block sums are
// exact integers, so an unsigned form with the correction folded into the
// vpdpbusd accumulator (the offset times the sums of 4 consecutive int8)
// gives the vec_dot's Prod numbers with one instruction per pair; the
// 16 scale products of a tile are one 512-bit multiply, each rounded to f32
// exactly like block_scales.

static inline __m256i load_q(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

// Ops per type: kOff: the u8 offset of W (0: no correction); W(): a weight
// block as 32 u8; kMin: weights carry a min (activation is Q8_1).
struct OpsQ4_0 {
    using BW = BlockQ4_0;
    using BA = BlockQ8_0;
    static constexpr int kOff = 8;
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x) { return nibbles32(x.qs); }
};
struct OpsQ4_1 {
    using BW = BlockQ4_1;
    using BA = BlockQ8_1;
    static constexpr int kOff = 0;
    static constexpr bool kMin = true;
    static inline __m256i W(const BW &x) { return nibbles32(x.qs); }
};
static inline __m256i q5_bytes(const uint8_t *qh, const uint8_t *qs) {
    const __m256i hi = _mm256_and_si256(bits_to_bytes(load_u32(qh)), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(nibbles32(qs), hi);
}
struct OpsQ5_0 {
    using BW = BlockQ5_0;
    using BA = BlockQ8_0;
    static constexpr int kOff = 16;
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x) { return q5_bytes(x.qh, x.qs); }
};
struct OpsQ5_1 {
    using BW = BlockQ5_1;
    using BA = BlockQ8_1;
    static constexpr int kOff = 0;
    static constexpr bool kMin = true;
    static inline __m256i W(const BW &x) { return q5_bytes(x.qh, x.qs); }
};
#if defined(VT_QUANT_VNNI)
// (x + 128) * y - 128 * y; x + 128 is x ^ 0x80 as u8.
struct OpsQ8_0 {
    using BW = BlockQ8_0;
    using BA = BlockQ8_0;
    static constexpr int kOff = 128;
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x) { return _mm256_xor_si256(load_q(x.qs), _mm256_set1_epi8((char)0x80)); }
};
#else
// Without VNNI the unsigned form would saturate vpmaddubsw (255 * 127 * 2):
// keep the vec_dot's sign trick per pair (kOff < 0 selects it).
struct OpsQ8_0 {
    using BW = BlockQ8_0;
    using BA = BlockQ8_0;
    static constexpr int kOff = -1;
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x) { return load_q(x.qs); }
};
#endif

static inline float f16_at(const void *p) { return _cvtsh_ss(*(const uint16_t *)p); }

struct alignas(64) Line {
    uint8_t b[64];
};

// Per-thread scratch, grown on demand and kept between calls.
static inline uint8_t *scratch(std::vector<Line> &v, size_t bytes) {
    if (v.empty() || v.size() * 64 < bytes) v.resize(bytes / 64 + 1);
    return v.data()->b;
}

// 4 weight rows x 4 tokens; lanes of the scale vectors are t * 4 + r.
constexpr int kR = 4, kC = 4, kPairs = kR * kC;

// Scratch layout, per tile of rows (or tokens) and block:
//   weights: 4 x 32 u8, then 4 f32 d, then 4 f32 m           (160 bytes)
//   tokens:  4 x 32 i8, 4 x 8 i32 corrections, 16 f32 d, 16 f32 s (384)
// Padding rows and tokens are zero and their outputs are not stored.
constexpr size_t kWBlock = kR * 32 + 2 * kR * 4, kABlock = kC * 32 + kC * 32 + 2 * kPairs * 4;

template <class Ops>
static void pack_acts(const uint8_t *a, size_t as, int64_t nt, int64_t nb, uint8_t *dst) {
    using BA = typename Ops::BA;
    for (int64_t t0 = 0; t0 < nt; t0 += kC)
        for (int64_t b = 0; b < nb; ++b) {
            uint8_t *p = dst + ((t0 / kC) * nb + b) * kABlock;
            int32_t *corr = (int32_t *)(p + kC * 32);
            float *d = (float *)(p + 2 * kC * 32), *s = d + kPairs;
            for (int t = 0; t < kC; ++t) {
                __m256i q = _mm256_setzero_si256(), c = _mm256_setzero_si256();
                float fd = 0.f, fs = 0.f;
                if (t0 + t < nt) {
                    const BA &y = ((const BA *)(a + (t0 + t) * as))[b];
                    q = load_q(y.qs);
                    if constexpr (Ops::kOff > 0)
                        c = _mm256_sub_epi32(_mm256_setzero_si256(), dot_us8(_mm256_set1_epi8((char)Ops::kOff), q));
                    fd = f16_at(&y.d);
                    if constexpr (Ops::kMin) fs = f16_at(&y.s);
                }
                _mm256_storeu_si256((__m256i *)(p + 32 * t), q);
                _mm256_storeu_si256((__m256i *)(corr + 8 * t), c);
                for (int r = 0; r < kR; ++r) {
                    d[t * kR + r] = fd;
                    s[t * kR + r] = fs;
                }
            }
        }
}

template <class Ops>
static void pack_weights(const uint8_t *w, size_t ws, int64_t nr, int64_t nb, uint8_t *dst) {
    using BW = typename Ops::BW;
    for (int64_t r0 = 0; r0 < nr; r0 += kR)
        for (int64_t b = 0; b < nb; ++b) {
            uint8_t *p = dst + ((r0 / kR) * nb + b) * kWBlock;
            float *d = (float *)(p + kR * 32), *m = d + kR;
            for (int r = 0; r < kR; ++r) {
                __m256i q = _mm256_setzero_si256();
                float fd = 0.f, fm = 0.f;
                if (r0 + r < nr) {
                    const BW &x = ((const BW *)(w + (r0 + r) * ws))[b];
                    q = Ops::W(x);
                    fd = f16_at(&x.d);
                    if constexpr (Ops::kMin) fm = f16_at(&x.m);
                }
                _mm256_storeu_si256((__m256i *)(p + 32 * r), q);
                d[r] = fd;
                m[r] = fm;
            }
        }
}

template <class Ops>
static inline __m256i tile_prod(__m256i w, const uint8_t *q, const int32_t *corr) {
    const __m256i y = _mm256_load_si256((const __m256i *)q);
    if constexpr (Ops::kOff < 0) return dot_ss8(w, y);
    else if constexpr (Ops::kOff == 0) return dot_us8(w, y);
    else {
        const __m256i c = _mm256_load_si256((const __m256i *)corr);
#if defined(VT_QUANT_VNNI)
        return _mm256_dpbusd_epi32(c, w, y);
#else
        return _mm256_add_epi32(c, dot_us8(w, y));
#endif
    }
}

// One 4 x 4 tile over all blocks; pw / pa: the packed row and token tiles,
// sc: room for nb * 16 floats. The scale products of all blocks are formed
// first and read back as broadcast memory operands of the FMAs (kept in a
// register, GCC would spend a vpermd per pair on the FMA ports).
template <class Ops>
static void legacy_tile(int64_t nb, const uint8_t *pw, const uint8_t *pa, float *sc, __m256 part[4][kPairs],
                        __m512 msum[2]) {
    const int64_t nmain = nb & ~(int64_t)3;
    for (int64_t b = 0; b < nb; ++b) {
        const __m512 wd = _mm512_broadcast_f32x4(_mm_load_ps((const float *)(pw + b * kWBlock + kR * 32)));
        _mm512_store_ps(sc + b * kPairs,
                        _mm512_mul_ps(wd, _mm512_load_ps((const float *)(pa + b * kABlock + 2 * kC * 32))));
    }
    for (int j = 0; j < 4; ++j) {
        __m256 acc[kPairs];
        for (int i = 0; i < kPairs; ++i) acc[i] = _mm256_setzero_ps();
        const auto block = [&](int64_t b) {
            const uint8_t *w = pw + b * kWBlock, *a = pa + b * kABlock;
            const float *scb = sc + b * kPairs;
            __m256i wq[kR];
            for (int r = 0; r < kR; ++r) wq[r] = _mm256_load_si256((const __m256i *)(w + 32 * r));
            for (int t = 0; t < kC; ++t)
                for (int r = 0; r < kR; ++r) {
                    const __m256i p = tile_prod<Ops>(wq[r], a + 32 * t, (const int32_t *)(a + kC * 32) + 8 * t);
                    acc[t * kR + r] = _mm256_fmadd_ps(_mm256_set1_ps(scb[t * kR + r]), _mm256_cvtepi32_ps(p),
                                                      acc[t * kR + r]);
                }
        };
        for (int64_t b = j; b < nmain; b += 4) block(b);
        if (j == 0)
            for (int64_t b = nmain; b < nb; ++b) block(b);
        for (int i = 0; i < kPairs; ++i) part[j][i] = acc[i];
    }
    // The min terms in the vec_dot's order: blocks of its 4-block loop
    // alternate between two sums by parity, the tail goes to the first.
    if constexpr (Ops::kMin) {
        msum[0] = msum[1] = _mm512_setzero_ps();
        const auto mterm = [&](int64_t b) {
            const uint8_t *w = pw + b * kWBlock, *a = pa + b * kABlock;
            const __m512 wm = _mm512_broadcast_f32x4(_mm_load_ps((const float *)(w + kR * 32) + kR));
            return _mm512_mul_ps(wm, _mm512_load_ps((const float *)(a + 2 * kC * 32) + kPairs));
        };
        int64_t b = 0;
        for (; b < nmain; b += 2) {
            msum[0] = _mm512_add_ps(msum[0], mterm(b));
            msum[1] = _mm512_add_ps(msum[1], mterm(b + 1));
        }
        for (; b < nb; ++b) msum[0] = _mm512_add_ps(msum[0], mterm(b));
    }
}

// Token tiles per chunk: about 384 KiB of packed activations (half the L2
// of the CPUs this targets), at least one tile.
static inline int64_t chunk_tiles(size_t tile_bytes) {
    const int64_t n = (int64_t)((384 * 1024) / tile_bytes);
    return n < 1 ? 1 : n;
}

// Weight rows per cache block: their unpacked blocks (160 bytes per 4 rows
// per block) stay in L1 while every token tile passes over them.
constexpr size_t kWeightBlockBytes = 24 * 1024;

template <class Ops>
void gemm_legacy(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt,
                 float *out, size_t os) {
    const int64_t nb = k / QK;
    const int64_t ntiles_t = (nt + kC - 1) / kC;
    thread_local std::vector<Line> act_buf, w_buf, sc_buf;
    float *sc = (float *)scratch(sc_buf, (size_t)nb * kPairs * 4);
    uint8_t *pa = scratch(act_buf, (size_t)(ntiles_t * nb) * kABlock);
    pack_acts<Ops>((const uint8_t *)a, as, nt, nb, pa);

    int64_t rows_per_block = (int64_t)(kWeightBlockBytes / ((size_t)nb * kWBlock)) * kR;
    if (rows_per_block < kR) rows_per_block = kR;
    uint8_t *pw = scratch(w_buf, (size_t)(rows_per_block / kR * nb) * kWBlock);
    // Token chunks whose packed activations stay in L2 while the weights
    // (repacked per chunk) pass over them.
    const int64_t chunk = chunk_tiles(nb * kABlock);
    for (int64_t tc = 0; tc < ntiles_t; tc += chunk) {
        const int64_t tc_end = tc + chunk < ntiles_t ? tc + chunk : ntiles_t;
        for (int64_t r0 = 0; r0 < nr; r0 += rows_per_block) {
            const int64_t rn = nr - r0 < rows_per_block ? nr - r0 : rows_per_block;
            pack_weights<Ops>((const uint8_t *)w + r0 * ws, ws, rn, nb, pw);
            for (int64_t tt = tc; tt < tc_end; ++tt)
                for (int64_t rt = 0; rt * kR < rn; ++rt) {
                    __m256 part[4][kPairs];
                    __m512 msum[2];
                    legacy_tile<Ops>(nb, pw + rt * nb * kWBlock, pa + tt * nb * kABlock, sc, part, msum);
                    alignas(64) float m[kPairs] = {};
                    if constexpr (Ops::kMin) _mm512_store_ps(m, _mm512_add_ps(msum[0], msum[1]));
                    for (int t = 0; t < kC && tt * kC + t < nt; ++t)
                        for (int r = 0; r < kR && rt * kR + r < rn; ++r) {
                            const int i = t * kR + r;
                            const float s = hsum(_mm256_add_ps(_mm256_add_ps(part[0][i], part[1][i]),
                                                               _mm256_add_ps(part[2][i], part[3][i])));
                            out[(tt * kC + t) * os + r0 + rt * kR + r] = Ops::kMin ? s + m[i] : s;
                        }
                }
        }
    }
}

// ---- F16 (mirrors dot_half in quant-avx2.cpp: 8-lane FMAs, 4 accumulators
// over 32-element chunks, 8-element steps into the first, scalar tail) -------

static inline __m256 load8_f16(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }

template <int R, int C>
struct HalfTile {
    static void run(int64_t n, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *out, size_t os) {
        const uint16_t *x[R], *y[C];
        for (int r = 0; r < R; ++r) x[r] = (const uint16_t *)(w + r * ws);
        for (int t = 0; t < C; ++t) y[t] = (const uint16_t *)(a + t * as);
        const int64_t nmain = n & ~(int64_t)31, n8 = n & ~(int64_t)7;

        __m256 part[4][R][C];
        for (int j = 0; j < 4; ++j) {
            __m256 acc[R][C];
            for (int r = 0; r < R; ++r)
                for (int t = 0; t < C; ++t) acc[r][t] = _mm256_setzero_ps();
            const auto chunk = [&](int64_t i) {
                __m256 wv[R];
                for (int r = 0; r < R; ++r) wv[r] = load8_f16(x[r] + i);
                for (int t = 0; t < C; ++t) {
                    const __m256 yv = load8_f16(y[t] + i);
                    for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], yv, acc[r][t]);
                }
            };
            for (int64_t i = 8 * j; i < nmain; i += 32) chunk(i);
            if (j == 0)
                for (int64_t i = nmain; i < n8; i += 8) chunk(i);
            for (int r = 0; r < R; ++r)
                for (int t = 0; t < C; ++t) part[j][r][t] = acc[r][t];
        }
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < C; ++t) {
                float s = hsum(_mm256_add_ps(_mm256_add_ps(part[0][r][t], part[1][r][t]),
                                             _mm256_add_ps(part[2][r][t], part[3][r][t])));
                for (int64_t i = n8; i < n; ++i) s += h2f(x[r][i]) * h2f(y[t][i]);
                out[t * os + r] = s;
            }
    }
};

// ---- BF16 / F32 with 16-lane FMAs (mirrors dot_wide in quant-avx512.cpp) ---

// Element types as traits classes (a function pointer returning __m512 as
// a template argument would drop its vector attributes, -Wignored-attributes).
struct Bf16x16 {
    using E = uint16_t;
    static inline __m512 load(const E *p) {
        const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
        return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    }
    static inline float one(E h) { return b2f(h); }
};
struct F32x16 {
    using E = float;
    static inline __m512 load(const E *p) { return _mm512_loadu_ps(p); }
    static inline float one(E v) { return v; }
};

template <class L>
struct Wide {
    using E = typename L::E;
    template <int R, int C>
    struct T {
        static void run(int64_t n, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *out,
                        size_t os) {
            const E *x[R], *y[C];
            for (int r = 0; r < R; ++r) x[r] = (const E *)(w + r * ws);
            for (int t = 0; t < C; ++t) y[t] = (const E *)(a + t * as);
            const int64_t nmain = n & ~(int64_t)63, n16 = n & ~(int64_t)15;

            __m512 part[4][R][C];
            for (int j = 0; j < 4; ++j) {
                __m512 acc[R][C];
                for (int r = 0; r < R; ++r)
                    for (int t = 0; t < C; ++t) acc[r][t] = _mm512_setzero_ps();
                const auto chunk = [&](int64_t i) {
                    __m512 wv[R];
                    for (int r = 0; r < R; ++r) wv[r] = L::load(x[r] + i);
                    for (int t = 0; t < C; ++t) {
                        const __m512 yv = L::load(y[t] + i);
                        for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], yv, acc[r][t]);
                    }
                };
                for (int64_t i = 16 * j; i < nmain; i += 64) chunk(i);
                if (j == 0)
                    for (int64_t i = nmain; i < n16; i += 16) chunk(i);
                for (int r = 0; r < R; ++r)
                    for (int t = 0; t < C; ++t) part[j][r][t] = acc[r][t];
            }
            for (int r = 0; r < R; ++r)
                for (int t = 0; t < C; ++t) {
                    float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(part[0][r][t], part[1][r][t]),
                                                                 _mm512_add_ps(part[2][r][t], part[3][r][t])));
                    for (int64_t i = n16; i < n; ++i) s += L::one(x[r][i]) * L::one(y[t][i]);
                    out[t * os + r] = s;
                }
        }
    };
};

} // namespace
} // namespace vt::quant::x86
