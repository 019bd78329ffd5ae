//! MXFP4 (OCP Microscaling Formats v1.0: e2m1 elements, one e8m0 scale per
//! 32) as ggml defines it (ggml-common.h block_mxfp4, kvalues_mxfp4;
//! ggml-quants.c dequantize_row_mxfp4; ggml-cpu's vec_dot_mxfp4_q8_0):
//! the scalar references of core/quant.h. blocks.h has the layout, the table
//! and the scale.
//!
//! The table holds the e2m1 values doubled, so every weight is an integer in
//! -12..12 times 2^(e - 128): against Q8_0 activations (the vec_dot type, as
//! in ggml) a block's 32 products sum exactly in int32, and the dot scales
//! that integer once per block, like Q4_0's.
#include "core/quant/blocks.h"
#include "core/quant/ref-table.h"

namespace vt {
namespace quant::scalar {
namespace {

void deq_mxfp4(const void *src, float *y, int64_t n) {
    const BlockMXFP4 *b = (const BlockMXFP4 *)src;
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = e8m0_half(b[i].e);
        for (int j = 0; j < QK / 2; ++j) {
            // f32 products as ggml's (int8 value * d): exact, or inf past
            // FLT_MAX (e = 255 with |value| >= 2), or subnormal (e < 2).
            y[j] = (float)kMxfp4Values[b[i].qs[j] & 0xF] * d;
            y[j + 16] = (float)kMxfp4Values[b[i].qs[j] >> 4] * d;
        }
    }
}

// The canonical per-block form of the 32-element types (quant-scalar.cpp's
// dot_q4_0): an exact integer sum per block, scaled by one f32 product of
// the two scales, added in block order.
float dot_mxfp4(int64_t n, const void *w, const void *a) {
    const BlockMXFP4 *x = (const BlockMXFP4 *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        int s = 0;
        for (int j = 0; j < QK / 2; ++j)
            s += kMxfp4Values[x[i].qs[j] & 0xF] * y[i].qs[j] + kMxfp4Values[x[i].qs[j] >> 4] * y[i].qs[j + 16];
        sum += (float)s * (e8m0_half(x[i].e) * h2f(y[i].d));
    }
    return sum;
}

} // namespace
} // namespace quant::scalar

void ref::fill_mxfp4(RowKernels *by_type) {
    by_type[(int)DType::MXFP4] = {quant::scalar::dot_mxfp4, quant::scalar::deq_mxfp4, nullptr};
}

} // namespace vt
