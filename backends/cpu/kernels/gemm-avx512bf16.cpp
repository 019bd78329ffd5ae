// BF16 multi-token kernels for CPUs with avx512bf16.
//
// DpTile (row-major BF16 weights) mirrors dot_bf16_dp in
// quant-avx512bf16.cpp: vdpbf16ps into two accumulators over 64-element
// chunks (halves 0..31 and 32..63), 32-element steps into the first, one
// reduction, a scalar tail. Same instruction on the same inputs per (row,
// token) pair, so the same bits; the weight vector is loaded once per tile.
//
// BF16_X16 (repacked at load, x16-layout.h) keeps one row per 32-bit lane
// (gemm-pairs-x86.h): a register holds one bf16 pair of 16 rows, and each
// vdpbf16ps multiplies it by one token's pair broadcast to every lane. Its
// order is its own: per (row, token) one chain of vdpbf16ps steps, pair 0
// first, starting from zero (dot_bf16_chain, which the tests compare
// against); the row-major order above would need 32 accumulators per (row,
// token) with lanes = rows. 1B pp512 144 -> 190 tok/s, decode 15 -> 19.
#include <immintrin.h>

#include <cstring>

#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"
#include "cpu/kernels/gemm-x86.h"
#include "cpu/kernels/gemm-pairs-x86.h"

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

// BF16_X16 (gemm-pairs-x86.h): one vdpbf16ps chain per (row, token).
struct Bf16Pairs {
    // 4 x 6 measured best (3 x 8, 2 x 12 slower). Issue 43 tried again
    // (perf-matmul, 1B 2048 x 2048, 64 tokens, 1 thread): 6 x 4 and 5 x 5
    // the same within noise, 8 x 3 0.6x and 12 x 2 0.25x (more group
    // offsets than general registers); 1 group x 16 tokens, each token tile
    // packed pair-major so that its broadcasts share one base register, 0.5x
    // at 16 tokens even from L2 (a one-pass tile for 8-24 tokens, meant to
    // read each weight once). With its data in L1, this tile's loop runs at
    // vt-flops' vdpbf16ps peak: the broadcasts cost nothing there.
    static constexpr int kGroups = 4, kTokens = 6;
    template <int G, int T>
    static void run(int64_t np, const uint8_t *w, size_t gs, const uint32_t *const *y, float *out, size_t os) {
        __m512 acc[G][T];
        for (int g = 0; g < G; ++g)
            for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
        for (int64_t p = 0; p < np; ++p) {
            __m512bh wv[G];
            if constexpr (T <= 2)
                for (int g = 0; g < G; ++g)
                    _mm_prefetch((const char *)(w + g * gs + 64 * p + kPairPrefetchBytes), _MM_HINT_T0);
            for (int g = 0; g < G; ++g) wv[g] = (__m512bh)_mm512_loadu_si512(w + g * gs + 64 * p);
            for (int t = 0; t < T; ++t) {
                const __m512bh yv = (__m512bh)_mm512_set1_epi32((int)y[t][p]);
                for (int g = 0; g < G; ++g) acc[g][t] = _mm512_dpbf16_ps(acc[g][t], wv[g], yv);
            }
        }
        for (int t = 0; t < T; ++t)
            for (int g = 0; g < G; ++g) _mm512_storeu_ps(out + t * os + 16 * g, acc[g][t]);
    }
};

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
    k.gemm[x16_slot(DType::BF16)] = gemm_pairs_x16<Bf16Pairs>; // bf16 pairs as they are
    k.gemm_f32_acts[x16_slot(DType::BF16)] = false;
    k.bf16_chain = true;
}

} // namespace vt::quant
