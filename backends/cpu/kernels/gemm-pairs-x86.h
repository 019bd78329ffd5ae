// Row-lane tiles for the 16-bit float _X16 layouts (BF16_X16, F16_X16; the
// driver also runs FP8_X16's, fp8-avx512bf16.cpp, which makes the same pairs
// from 4 e4m3 bytes per row):
// a group of 16 rows stores, for each pair of elements (2p, 2p + 1), the 16
// rows' pairs in 64 bytes (row r at byte 64p + 4r), so one 512-bit load
// holds one pair of 16 rows and a token's pair is broadcast against it.
// The weights of G groups stay in registers for T tokens, no (row, token)
// pair is reduced horizontally, and a token costs a 4- or 8-byte broadcast
// per pair instead of a 64-byte load: the tiles run at the FMA (or vdpbf16ps)
// rate instead of L2's. Each format's order is its own (kernels.h:
// dot_bf16_chain, dot_f16_pairs); the row-major tiles of gemm-x86.h cannot
// keep those orders with lanes = rows.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/kernels/float-x86.h"

namespace vt::quant::x86 {
namespace {

// Decode-sized tiles stream their weights from memory, G lines at a time:
// the hardware prefetchers alone left BF16 decode at 13 tok/s on the 1B
// shape, 19 with this (8 pairs ahead; 4 and 32 ahead measured slower, 16
// the same).
constexpr int kPairPrefetchBytes = 512;

template <class Tile, int G, int T>
static void pair_tiles(int64_t np, const uint8_t *w, size_t gs, const uint32_t *const *y, float *out, size_t os,
                       int ng, int nt) {
    if constexpr (G > 1)
        if (ng < G) return pair_tiles<Tile, G - 1, T>(np, w, gs, y, out, os, ng, nt);
    if constexpr (T > 1)
        if (nt < T) return pair_tiles<Tile, G, T - 1>(np, w, gs, y, out, os, ng, nt);
    Tile::template run<G, T>(np, w, gs, y, out, os);
}

// Driver for Tile::run<G, T>(pairs, group 0, group stride, each token's
// activation row as dwords (BF16: a pair per dword, F16_X16: f32 values,
// kernels.h), out, os) with G <= Tile::kGroups, T <= Tile::kTokens;
// out[t * os + 16 * g + r]. Rows in blocks whose weights stay in L2 (about a
// quarter of it) while every token tile passes over them; a token tile's
// pairs stay in L1 while it passes over the block's row tiles.
//
// From memory (perf-matmul --cold) 8-64 tokens run at 0.6-0.8x of the rate
// with the weights in L2: the first pass over a block waits on memory. Two
// prefetches meant to overlap it measured no gain (BF16 576 x 576 and
// 2048 x 2048, 16 and 64 tokens, 1 thread, loaded machine): the next
// block's rows into L2 (T0 or T1) spread over this block's passes, and a
// tile's own lines 1-2 KB ahead in the first pass.
template <class Tile>
void gemm_pairs_x16(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt, float *out,
                    size_t os) {
    constexpr int G = Tile::kGroups, T = Tile::kTokens;
    const int64_t np = k / 2, groups = nr / 16;
    const size_t gs = 16 * ws;
    int64_t block = (int64_t)((256 * 1024) / gs) / G * G;
    if (block < G) block = G;
    const uint8_t *wb = (const uint8_t *)w, *ab = (const uint8_t *)a;
    // Token tiles as even as T allows: 512 tokens as 82 tiles of 6 and 4 of
    // 5, not 85 of 6 and a tile of 2, which loads and converts a whole
    // tile's weights for a third of its FMAs (0.5% of 1B F16 pp512).
    const int64_t n_tiles = (nt + T - 1) / T;
    for (int64_t g0 = 0; g0 < groups; g0 += block) {
        const int64_t g1 = g0 + block < groups ? g0 + block : groups;
        for (int64_t i = 0, t = 0, tn; i < n_tiles; ++i, t += tn) {
            tn = (nt - t + (n_tiles - i) - 1) / (n_tiles - i);
            const uint32_t *y[T];
            for (int j = 0; j < tn; ++j) y[j] = (const uint32_t *)(ab + (t + j) * as);
            for (int64_t g = g0; g < g1; g += G)
                pair_tiles<Tile, G, T>(np, wb + g * gs, gs, y, out + t * os + 16 * g, os,
                                       (int)(g1 - g < G ? g1 - g : G), (int)tn);
        }
    }
}

#if defined(__AVX512F__)
// F16_X16: per (row, token) two f32 FMA chains, the even elements and the
// odd ones in index order, then even + odd (dot_f16_pairs). vcvtph2ps of a
// pair line's first 32 bytes gives rows 0..7 with lane 2r + e holding
// element 2p + e, the next 32 bytes rows 8..15; a token's two values
// broadcast as one 64-bit pair line up with every lane. The activations are
// f16-rounded values given as f32 (the op rounds them, kernels.h), so the
// products are those of the F16 dot and need no conversion per use: 1B pp512
// 80 -> 100 tok/s with f16 activations converted per use (2 x 6 tile; 3 x
// 4: 97, 1 x 12: 72), 108 with f32 ones. Converting a token tile to f32 in
// the tile's driver instead, once per row block, cost 9% of the time.
// F16 goes to f32, not to bf16 for vdpbf16ps (twice the f32 FMA peak,
// vt-flops): bf16 keeps 8 of f16's 11 significant bits, so the weights would
// be rounded (another model than the file's, and not llama.cpp's results);
// an exact hi + lo bf16 split of weight and activation takes 4 bf16
// products per f16 product, twice the work that the 2x peak buys back.
struct F16Pairs {
    static constexpr int kGroups = 2, kTokens = 6;
    template <int G, int T>
    static void run(int64_t np, const uint8_t *w, size_t gs, const uint32_t *const *y, float *out, size_t os) {
        __m512 acc[G][2][T];
        for (int g = 0; g < G; ++g)
            for (int h = 0; h < 2; ++h)
                for (int t = 0; t < T; ++t) acc[g][h][t] = _mm512_setzero_ps();
        for (int64_t p = 0; p < np; ++p) {
            __m512 wv[G][2];
            if constexpr (T <= 2)
                for (int g = 0; g < G; ++g)
                    _mm_prefetch((const char *)(w + g * gs + 64 * p + kPairPrefetchBytes), _MM_HINT_T0);
            for (int g = 0; g < G; ++g)
                for (int h = 0; h < 2; ++h)
                    wv[g][h] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + g * gs + 64 * p + 32 * h)));
            for (int t = 0; t < T; ++t) {
                double pair;
                std::memcpy(&pair, y[t] + 2 * p, 8);
                const __m512 yv = _mm512_castpd_ps(_mm512_set1_pd(pair));
                for (int g = 0; g < G; ++g)
                    for (int h = 0; h < 2; ++h) acc[g][h][t] = _mm512_fmadd_ps(wv[g][h], yv, acc[g][h][t]);
            }
        }
        // Lane 2r (rows 8h + r) gets even + odd; the even lanes of both
        // halves are rows 0..15.
        const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        for (int t = 0; t < T; ++t)
            for (int g = 0; g < G; ++g) {
                __m512 s[2];
                for (int h = 0; h < 2; ++h) s[h] = _mm512_add_ps(acc[g][h][t], _mm512_permute_ps(acc[g][h][t], 0xB1));
                _mm512_storeu_ps(out + t * os + 16 * g, _mm512_permutex2var_ps(s[0], evens, s[1]));
            }
    }
};
#endif

// The AVX2 pair tiles (8 lanes): a group's 16 rows as kParts vectors of
// rows. Decode-sized tiles (up to 2 tokens) take all parts per pair line, so
// each line is read from memory once; larger ones half a group at a time
// (the accumulators of 8 rows x kTokens fill the 16 registers).
template <class D>
struct PairsInHalves {
    static constexpr int kGroups = 1;
    template <int G, int T>
    static void run(int64_t np, const uint8_t *w, size_t, const uint32_t *const *y, float *out, size_t os) {
        static_assert(G == 1);
        constexpr int P = D::kParts;
        if constexpr (T <= 2) {
            D::template parts<T, 0, P>(np, w, y, out, os);
        } else {
            D::template parts<T, 0, P / 2>(np, w, y, out, os);
            D::template parts<T, P / 2, P / 2>(np, w, y, out, os);
        }
    }
};

// F16_X16 and BF16_X16 on AVX2, in the orders of the F16 tile above and of
// dot_bf16_pairs (the same: per (row, token) an even and an odd chain, then
// even + odd). A part is a quarter of the group: 4 rows' pairs, 16 bytes,
// which the element traits of float-x86.h (F16x8, Bf16x8) widen to one
// vector of f32 with lane 2r + e holding element 2p + e of row r. A token's
// two values are one 64-bit broadcast, so 8 rows x 6 tokens take 12
// accumulators per pass. The activations come as f32 rounded through the
// vec_dot type (Kernels::gemm_f32_acts). BF16 was first a tile with lane =
// row (a shift for the even elements, an AND for the odd ones, two 32-bit
// broadcasts per token: 8 rows x 5 tokens fitted); this one runs 1B pp512 on
// AVX2 at 91-99 tok/s instead of 86.
template <class Elems>
struct HalfPairs8 : PairsInHalves<HalfPairs8<Elems>> {
    static constexpr int kParts = 4, kTokens = 6;

    // Quarters Q0..Q0+NQ-1 (rows 4 * Q0 ...) of the group at w x T tokens.
    template <int T, int Q0, int NQ>
    static void parts(int64_t np, const uint8_t *w, const uint32_t *const *y, float *out, size_t os) {
        __m256 acc[NQ][T];
        for (int q = 0; q < NQ; ++q)
            for (int t = 0; t < T; ++t) acc[q][t] = _mm256_setzero_ps();
        for (int64_t p = 0; p < np; ++p) {
            const uint8_t *line = w + 64 * p;
            if constexpr (T <= 2) _mm_prefetch((const char *)(line + kPairPrefetchBytes), _MM_HINT_T0);
            __m256 wv[NQ];
            for (int q = 0; q < NQ; ++q) wv[q] = Elems::elems((const uint16_t *)(line + 16 * (Q0 + q)));
            for (int t = 0; t < T; ++t) {
                const __m256 yv = _mm256_castpd_ps(_mm256_broadcast_sd((const double *)(y[t] + 2 * p)));
                for (int q = 0; q < NQ; ++q) acc[q][t] = _mm256_fmadd_ps(wv[q], yv, acc[q][t]);
            }
        }
        // Lane 2r gets even + odd; the even lanes of two quarters, shuffled
        // (rows 0 1 4 5 | 2 3 6 7) and their 64-bit pieces put in order.
        // (Unrolled: an accumulator indexed at run time here would keep
        // GCC storing every one to the stack inside the pair loop.)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t)
#pragma GCC unroll 4
            for (int q = 0; q < NQ; q += 2) {
                __m256 s[2];
                for (int i = 0; i < 2; ++i) s[i] = _mm256_add_ps(acc[q + i][t], _mm256_permute_ps(acc[q + i][t], 0xB1));
                const __m256 rows = _mm256_castpd_ps(_mm256_permute4x64_pd(
                    _mm256_castps_pd(_mm256_shuffle_ps(s[0], s[1], 0x88)), _MM_SHUFFLE(3, 1, 2, 0)));
                _mm256_storeu_ps(out + t * os + 4 * (Q0 + q), rows);
            }
    }
};
using F16Pairs8 = HalfPairs8<F16x8>;
using Bf16Pairs8 = HalfPairs8<Bf16x8>;

} // namespace
} // namespace vt::quant::x86
