// Register-tiled multi-token dot products (Kernels::gemm) for x86, shared by
// the gemm translation units of every width the way legacy-x86.h is: the
// row-major float tiles and what every tile file uses (scratch buffers).
// Include after simd-x86.h.
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
// The gain: each weight block is loaded for C tokens at once, each
// activation block for R rows, and no horizontal reduction is done per
// block. (The quantized types' tiles keep one row per lane instead:
// gemm-lanes-x86.h.)
#pragma once

#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"
#include "cpu/kernels/float-x86.h"

#include <cstring>
#include <vector>

namespace vt::quant::x86 {
namespace {

// Decode and small batches read every weight once per step, from memory, in
// the order the _X16 tiles walk it (one group after another, block by
// block). The hardware prefetchers alone kept those tiles at 13 (Q4_K) to 24
// GB/s on 1 thread, where vt-membw reads 33-38; a tile that asks for each
// block's bytes kStreamAhead further on as it reaches the block streams 33-40
// (perf-matmul, 1 token, 131072 x 2048: Q4_K 12.9 -> 38.7, Q4_0 20.6 ->
// 37.4, Q8_0 23.8 -> 33.7 GB/s; 4 and 16 KB ahead about the same, 1 and 2 KB
// too short, 32 KB slower in the model). The first token tile of a group
// (t0 == 0) asks too: it streams the group as decode does (SmolLM2 Q4_1, 2
// threads, 4 sequences: 767-848 -> 1003-1058 tok/s); the others find the
// lines in cache and do not ask (asking in every tile cost prefill 3-5%:
// perf-matmul 2048 x 2048 x 512 tokens, 1 thread, Q4_K 8.05-8.23 -> 7.68-7.88
// ms CPU).
//
// Always inlined, and a loop: GCC 12 left an out-of-line helper that only
// prefetches as a "const" function and deleted its calls (whether it was
// inlined changed with the caller's size: the Q4_0 tiles lost every prefetch
// once the helper took a condition); unrolled into 36 prefetches in a row,
// Q4_K streamed 36 GB/s where the loop streams 40-42.
constexpr size_t kStreamAhead = 8192;

// A tile at token t0 asks for the Bytes at at + kStreamAhead, when it is a
// group's first token tile.
template <size_t Bytes>
[[gnu::always_inline]] static inline void prefetch_ahead(const uint8_t *at, int64_t t0) {
    if (t0 != 0) return;
#pragma GCC unroll 1
    for (size_t o = 0; o < Bytes; o += 64) __builtin_prefetch(at + kStreamAhead + o, 0, 3);
}

// The same for tiles of small blocks (the 32-element types' 16-row blocks:
// 288 to 544 bytes), asked 4 blocks at a time, at every 4th block (j = b % 8
// for for_blocks8's loops): the same lines and distance, in bursts. Why
// bursts stream faster is not known; measured (perf-matmul, 1 token, 131072
// x 2048, 1 thread, alternating): Q4_0 28-32 GB/s block by block, 38-42 in
// bursts of 4 (2: 34-35, 8: 33-36), Q4_1 31-33 -> 37-43, Q5_0 32-33 -> 37-38,
// Q8_0 the same; 1B Q4_0 decode, 1 thread: 39-42 -> 45-48 tok/s.
template <size_t Block>
[[gnu::always_inline]] static inline void prefetch_blocks_ahead(const uint8_t *pw, int64_t b, int j, int64_t t0) {
    if (j % 4 == 0) prefetch_ahead<4 * Block>(pw + b * Block, t0);
}

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

static inline float f16_at(const void *p) { return _cvtsh_ss(*(const uint16_t *)p); }

// ---- passes over L1-sized segments ------------------------------------------
//
// The float tiles replay a vec_dot that keeps N accumulators over chunks of
// N vectors (accumulator j takes vector j of every chunk), one pass per
// accumulator. A pass over a whole row touches every cache line but uses 1/N
// of it, so with rows longer than L1 each pass fetched the tile's rows from
// L2 again. The passes go segment by segment instead (kSegChunks chunks of each
// row), each accumulator parked in memory between segments: the same FMAs in
// the same order per accumulator.
constexpr int64_t kSegChunks = 16; // chunks per segment: 4-8 KiB of a tile's rows

template <class A, int R, int C>
static inline void copy_acc(A (&dst)[R][C], const A (&src)[R][C]) {
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < C; ++t) dst[r][t] = src[r][t];
}

// pass(j, s0, s1) runs accumulator j over the chunks of [s0, s1) (elements,
// chunk-aligned); acc is the register set pass works on.
template <int N, class A, int R, int C, class F>
static inline void for_passes(int64_t nmain, int64_t chunk, A (&part)[N][R][C], A (&acc)[R][C], F &&pass) {
    const int64_t seg = kSegChunks * chunk;
    for (int64_t s0 = 0; s0 < nmain; s0 += seg) {
        const int64_t s1 = s0 + seg < nmain ? s0 + seg : nmain;
        for (int j = 0; j < N; ++j) {
            copy_acc(acc, part[j]);
            pass(j, s0, s1);
            copy_acc(part[j], acc);
        }
    }
}

// ---- Float tiles, replaying float-x86.h's dot_float<L> (the tables' F32,
// F16 and BF16 dots) for R rows x C tokens: the same 4 accumulators per
// (row, token), one pass each (for_passes), then the same reduction and tail.
template <class L>
struct FloatTile {
    using E = typename L::E;
    using V = typename L::F;
    static constexpr int W = L::W;
    template <int R, int C>
    struct T {
        static void run(int64_t n, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *out,
                        size_t os) {
            const E *x[R], *y[C];
            for (int r = 0; r < R; ++r) x[r] = (const E *)(w + r * ws);
            for (int t = 0; t < C; ++t) y[t] = (const E *)(a + t * as);
            const int64_t nmain = n & ~(int64_t)(4 * W - 1), nw = n & ~(int64_t)(W - 1);

            V part[4][R][C], acc[R][C];
            for (int j = 0; j < 4; ++j)
                for (int r = 0; r < R; ++r)
                    for (int t = 0; t < C; ++t) part[j][r][t] = L::zero();
            const auto chunk = [&](int64_t i) {
                V wv[R];
                for (int r = 0; r < R; ++r) wv[r] = L::elems(x[r] + i);
                for (int t = 0; t < C; ++t) {
                    const V yv = L::elems(y[t] + i);
                    for (int r = 0; r < R; ++r) acc[r][t] = L::fma(wv[r], yv, acc[r][t]);
                }
            };
            for_passes<4>(nmain, 4 * W, part, acc, [&](int j, int64_t s0, int64_t s1) {
                for (int64_t i = s0 + W * j; i < s1; i += 4 * W) chunk(i);
            });
            copy_acc(acc, part[0]);
            for (int64_t i = nmain; i < nw; i += W) chunk(i);
            copy_acc(part[0], acc);
            for (int r = 0; r < R; ++r)
                for (int t = 0; t < C; ++t) {
                    float s = L::hsum(L::add(L::add(part[0][r][t], part[1][r][t]),
                                               L::add(part[2][r][t], part[3][r][t])));
                    for (int64_t i = nw; i < n; ++i) {
                        E xe, ye; // rows may start at any 2-byte offset: no aligned element reads
                        std::memcpy(&xe, x[r] + i, sizeof xe);
                        std::memcpy(&ye, y[t] + i, sizeof ye);
                        s += L::one(xe) * L::one(ye);
                    }
                    out[t * os + r] = s;
                }
        }
    };
};

} // namespace
} // namespace vt::quant::x86
