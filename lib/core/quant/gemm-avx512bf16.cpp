// BF16 multi-token kernels for CPUs with avx512bf16.
//
// DpTile (row-major BF16 weights) mirrors dot_bf16_dp in
// quant-avx512bf16.cpp: vdpbf16ps into two accumulators over 64-element
// chunks (halves 0..31 and 32..63), 32-element steps into the first, one
// reduction, a scalar tail. Same instruction on the same inputs per (row,
// token) pair, so the same bits; the weight vector is loaded once per tile.
//
// BF16_X16 (repacked at load, dtype.h) keeps one row per 32-bit lane: a
// register holds one bf16 pair of 16 rows, and each vdpbf16ps multiplies it
// by one token's pair broadcast to every lane. Its order is its own: per
// (row, token) one chain of vdpbf16ps steps, pair 0 first, starting from
// zero (dot_bf16_chain, which the tests compare against). The row-major
// order above cannot be kept in lanes = rows: it needs 32 accumulators per
// (row, token). What the chain buys: no reduction per (row, token), the
// weights in registers for several tokens, a 4-byte broadcast per token and
// pair instead of a 64-byte load, so the tile runs at the instruction's
// rate instead of L2's.
#include <immintrin.h>

#include <cstring>

#include "core/quant/blocks.h"
#include "core/quant/kernels.h"
#include "core/quant/simd-x86.h"
#include "core/quant/gemm-x86.h"

namespace vt::quant {
namespace {
using namespace x86;

static inline __m512bh load32_bf16(const uint16_t *p) { return (__m512bh)_mm512_loadu_si512(p); }

template <int R, int C>
struct DpTile {
    static void run(int64_t n, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *out, size_t os) {
        const uint16_t *x[R], *y[C];
        for (int r = 0; r < R; ++r) x[r] = (const uint16_t *)(w + r * ws);
        for (int t = 0; t < C; ++t) y[t] = (const uint16_t *)(a + t * as);
        const int64_t nmain = n & ~(int64_t)63, n32 = n & ~(int64_t)31;

        __m512 part[2][R][C];
        for (int j = 0; j < 2; ++j) {
            __m512 acc[R][C];
            for (int r = 0; r < R; ++r)
                for (int t = 0; t < C; ++t) acc[r][t] = _mm512_setzero_ps();
            const auto chunk = [&](int64_t i) {
                __m512bh wv[R];
                for (int r = 0; r < R; ++r) wv[r] = load32_bf16(x[r] + i);
                for (int t = 0; t < C; ++t) {
                    const __m512bh yv = load32_bf16(y[t] + i);
                    for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv[r], yv);
                }
            };
            for (int64_t i = 32 * j; i < nmain; i += 64) chunk(i);
            if (j == 0)
                for (int64_t i = nmain; i < n32; i += 32) chunk(i);
            for (int r = 0; r < R; ++r)
                for (int t = 0; t < C; ++t) part[j][r][t] = acc[r][t];
        }
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < C; ++t) {
                float s = _mm512_reduce_add_ps(_mm512_add_ps(part[0][r][t], part[1][r][t]));
                for (int64_t i = n32; i < n; ++i) s += b2f(x[r][i]) * b2f(y[t][i]);
                out[t * os + r] = s;
            }
    }
};

// Decode-sized tiles stream their weights from memory, G lines at a time:
// the hardware prefetchers alone left decode at 13 tok/s on the 1B shape,
// 19 with this (8 pairs ahead; 4 and 16 measured slower).
constexpr int kPrefetchBytes = 512;

// G groups of 16 rows (group g at w + g * gs) x T tokens (token t's pairs
// at y[t]) over np pairs; out[t * os + 16 * g + r].
template <int G, int T>
static void chain_tile(int64_t np, const uint8_t *w, size_t gs, const uint32_t *const *y, float *out, size_t os) {
    __m512 acc[G][T];
    for (int g = 0; g < G; ++g)
        for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
    for (int64_t p = 0; p < np; ++p) {
        __m512bh wv[G];
        if constexpr (T <= 2)
            for (int g = 0; g < G; ++g) _mm_prefetch((const char *)(w + g * gs + 64 * p + kPrefetchBytes), _MM_HINT_T0);
        for (int g = 0; g < G; ++g) wv[g] = (__m512bh)_mm512_loadu_si512(w + g * gs + 64 * p);
        for (int t = 0; t < T; ++t) {
            const __m512bh yv = (__m512bh)_mm512_set1_epi32((int)y[t][p]);
            for (int g = 0; g < G; ++g) acc[g][t] = _mm512_dpbf16_ps(acc[g][t], wv[g], yv);
        }
    }
    for (int t = 0; t < T; ++t)
        for (int g = 0; g < G; ++g) _mm512_storeu_ps(out + t * os + 16 * g, acc[g][t]);
}

constexpr int kChainGroups = 4, kChainTokens = 6;

// The widest tile that fits ng groups x nt tokens (both >= 1).
template <int G, int T>
static void chain_tiles(int64_t np, const uint8_t *w, size_t gs, const uint32_t *const *y, float *out, size_t os,
                        int ng, int nt) {
    if constexpr (G > 1)
        if (ng < G) return chain_tiles<G - 1, T>(np, w, gs, y, out, os, ng, nt);
    if constexpr (T > 1)
        if (nt < T) return chain_tiles<G, T - 1>(np, w, gs, y, out, os, ng, nt);
    chain_tile<G, T>(np, w, gs, y, out, os);
}

// Rows in blocks whose weights stay in L2 (about a quarter of it) while
// every token tile passes over them; a token tile's pairs stay in L1 while
// it passes over the block's row tiles.
void gemm_bf16_x16(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt, float *out,
                   size_t os) {
    const int64_t np = k / 2, groups = nr / 16;
    const size_t gs = 16 * ws;
    int64_t block = (int64_t)((256 * 1024) / gs) / kChainGroups * kChainGroups;
    if (block < kChainGroups) block = kChainGroups;
    const uint8_t *wb = (const uint8_t *)w, *ab = (const uint8_t *)a;
    for (int64_t g0 = 0; g0 < groups; g0 += block) {
        const int64_t g1 = g0 + block < groups ? g0 + block : groups;
        for (int64_t t = 0; t < nt; t += kChainTokens) {
            const uint32_t *y[kChainTokens];
            const int tn = (int)(nt - t < kChainTokens ? nt - t : kChainTokens);
            for (int i = 0; i < tn; ++i) y[i] = (const uint32_t *)(ab + (t + i) * as);
            for (int64_t g = g0; g < g1; g += kChainGroups)
                chain_tiles<kChainGroups, kChainTokens>(np, wb + g * gs, gs, y, out + t * os + 16 * g, os,
                                                        (int)(g1 - g < kChainGroups ? g1 - g : kChainGroups), tn);
        }
    }
}

} // namespace

float dot_bf16_chain(int64_t k, const uint16_t *w, const uint16_t *a) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t p = 0; p < k / 2; ++p) {
        uint32_t wp, ap;
        std::memcpy(&wp, w + 2 * p, 4);
        std::memcpy(&ap, a + 2 * p, 4);
        acc = _mm512_dpbf16_ps(acc, (__m512bh)_mm512_set1_epi32((int)wp), (__m512bh)_mm512_set1_epi32((int)ap));
    }
    return _mm512_cvtss_f32(acc);
}

void fill_gemm_avx512bf16(Kernels &k) {
    k.gemm[(int)DType::BF16] = gemm_tiled<DpTile, 4, 4>;
    k.gemm[(int)DType::BF16_X16] = gemm_bf16_x16;
}

} // namespace vt::quant
