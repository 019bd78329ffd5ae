// BF16 multi-token tile for CPUs with avx512bf16, mirroring dot_bf16_dp in
// quant-avx512bf16.cpp: vdpbf16ps into two accumulators over 64-element
// chunks (halves 0..31 and 32..63), 32-element steps into the first, one
// reduction, a scalar tail. Same instruction on the same inputs per (row,
// token) pair, so the same bits; the weight vector is loaded once per tile.
#include <immintrin.h>

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

} // namespace

void fill_gemm_avx512bf16(Kernels &k) { k.gemm[(int)DType::BF16] = gemm_tiled<DpTile, 4, 4>; }

} // namespace vt::quant
