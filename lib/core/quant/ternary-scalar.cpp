//! TQ1_0 and TQ2_0 (ggml types 34 and 35: ggml-common.h block_tq1_0 and
//! block_tq2_0, ggml-quants.c dequantize_row_tq1_0 / _tq2_0, ggml-cpu
//! quants.c's vec_dot_tq*_q8_K): the ternary weights of BitNet-style models,
//! as the scalar references of core/quant.h. blocks.h has the layouts.
//!
//! Both take Q8_K activations (ggml's vec_dot type): a block's 256 products
//! sum exactly in int32 and are scaled once. The canonical order, which the
//! SIMD dots replay bit for bit, keeps 8 f32 lanes: block b adds into lane
//! b % 8 as acc = fma(d * d8, (float)isum, acc) (d * d8 one f32 product of
//! the block's two scales), and the result is ((a0 + a4) + (a2 + a6)) +
//! ((a1 + a5) + (a3 + a7)), the legacy types' hsum.
#include <cmath>

#include "core/quant/blocks.h"
#include "core/quant/ref-table.h"

namespace vt {
namespace quant::scalar {
namespace {

// Element e (0..255) of a TQ1_0 / TQ2_0 block as its ternary code - 1.
inline int tq1_value(const BlockTQ1_0 &x, int e) {
    if (e < 160) return tq_trit(x.qs[e % 32], e / 32) - 1;
    if (e < 240) return tq_trit(x.qs[32 + (e - 160) % 16], (e - 160) / 16) - 1;
    return tq_trit(x.qh[(e - 240) % 4], (e - 240) / 4) - 1;
}
inline int tq2_value(const BlockTQ2_0 &x, int e) {
    return ((x.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) - 1;
}

template <class B, int (*Value)(const B &, int)>
void deq_ternary(const void *src, float *y, int64_t n) {
    const B *b = (const B *)src;
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        const float d = h2f(b[i].d);
        for (int e = 0; e < QK_K; ++e) y[e] = (float)Value(b[i], e) * d;
    }
}

template <class B, int (*Value)(const B &, int)>
float dot_ternary(int64_t n, const void *w, const void *a) {
    const B *x = (const B *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)a;
    float acc[8] = {};
    for (int64_t b = 0; b < n / QK_K; ++b) {
        int isum = 0;
        for (int e = 0; e < QK_K; ++e) isum += Value(x[b], e) * y[b].qs[e];
        acc[b % 8] = std::fma(h2f(x[b].d) * y[b].d, (float)isum, acc[b % 8]);
    }
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

} // namespace
} // namespace quant::scalar

void ref::fill_ternary(RowKernels *by_type) {
    using namespace quant;
    using namespace quant::scalar;
    by_type[(int)DType::TQ1_0] = {dot_ternary<BlockTQ1_0, tq1_value>, deq_ternary<BlockTQ1_0, tq1_value>, nullptr};
    by_type[(int)DType::TQ2_0] = {dot_ternary<BlockTQ2_0, tq2_value>, deq_ternary<BlockTQ2_0, tq2_value>, nullptr};
}

} // namespace vt
