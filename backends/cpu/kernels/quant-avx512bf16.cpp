// AVX512-BF16 overlay: the BF16 x BF16 dot with vdpbf16ps, which multiplies
// pairs of bf16 values and adds both products into one f32 lane per pair.
// Applied on top of the AVX-512 tables when the CPU reports avx512bf16
// (Cooper Lake, Sapphire Rapids, Zen 4); the products are exact in f32, so it
// differs from the FMA kernel only in summation order (and, as the
// instruction defines, flushes bf16 denormals to zero).
#include <immintrin.h>

#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"

namespace vt::quant {
namespace {

float dot_bf16_dp(int64_t n, const void *w, const void *a) {
    const uint16_t *x = (const uint16_t *)w, *y = (const uint16_t *)a;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        acc0 = _mm512_dpbf16_ps(acc0, (__m512bh)_mm512_loadu_si512(x + i), (__m512bh)_mm512_loadu_si512(y + i));
        acc1 = _mm512_dpbf16_ps(acc1, (__m512bh)_mm512_loadu_si512(x + i + 32),
                                (__m512bh)_mm512_loadu_si512(y + i + 32));
    }
    for (; i + 32 <= n; i += 32)
        acc0 = _mm512_dpbf16_ps(acc0, (__m512bh)_mm512_loadu_si512(x + i), (__m512bh)_mm512_loadu_si512(y + i));
    float s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    for (; i < n; ++i) s += b2f(x[i]) * b2f(y[i]);
    return s;
}

} // namespace

void fill_avx512bf16(Kernels &k) { k.dot[(int)DType::BF16] = dot_bf16_dp; }

} // namespace vt::quant
