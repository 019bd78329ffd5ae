//! IQ4_NL and IQ4_XS (ggml's non-linear 4-bit types: ggml-common.h
//! block_iq4_nl, block_iq4_xs, kvalues_iq4nl; ggml-quants.c
//! dequantize_row_iq4_nl / _xs): the scalar references of core/quant.h.
//! blocks.h has the layouts, the level table and the IQ4_XS scale.
//!
//! Every level is an integer (-127..113), so against 8-bit activations a
//! block's products sum exactly in int32: IQ4_NL against Q8_0 (the vec_dot
//! type, as in ggml) scales each 32-element block's integer once, like Q4_0;
//! IQ4_XS against Q8_K sums its 8 sub-blocks' integers times their 6-bit
//! scales into one exact integer per super-block, scaled once, like Q6_K.
#include "core/quant/blocks.h"
#include "core/quant/ref-table.h"

namespace vt {
namespace quant::scalar {
namespace {

// The 32 levels of one 32-element group of codes (Q4_0's nibble order).
static inline void iq4_levels(const uint8_t *qs, int out[QK]) {
    for (int j = 0; j < QK / 2; ++j) {
        out[j] = kIq4nlValues[qs[j] & 0xF];
        out[j + QK / 2] = kIq4nlValues[qs[j] >> 4];
    }
}

void deq_iq4_nl(const void *src, float *y, int64_t n) {
    const BlockIQ4NL *b = (const BlockIQ4NL *)src;
    int v[QK];
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = h2f(b[i].d);
        iq4_levels(b[i].qs, v);
        for (int j = 0; j < QK; ++j) y[j] = d * (float)v[j];
    }
}

float dot_iq4_nl(int64_t n, const void *w, const void *a) {
    const BlockIQ4NL *x = (const BlockIQ4NL *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)a;
    int v[QK];
    float sum = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        iq4_levels(x[i].qs, v);
        int s = 0;
        for (int j = 0; j < QK; ++j) s += v[j] * y[i].qs[j];
        sum += (float)s * (h2f(x[i].d) * h2f(y[i].d));
    }
    return sum;
}

void deq_iq4_xs(const void *src, float *y, int64_t n) {
    const BlockIQ4XS *b = (const BlockIQ4XS *)src;
    int v[QK];
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = h2f(b[i].d);
        for (int s = 0; s < QK_K / QK; ++s, y += QK) {
            const float dl = d * (float)iq4xs_scale(b[i], s);
            iq4_levels(b[i].qs + s * QK / 2, v);
            for (int j = 0; j < QK; ++j) y[j] = dl * (float)v[j];
        }
    }
}

float dot_iq4_xs(int64_t n, const void *w, const void *a) {
    const BlockIQ4XS *x = (const BlockIQ4XS *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)a;
    int v[QK];
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        int isum = 0;
        for (int s = 0; s < QK_K / QK; ++s) {
            iq4_levels(x[i].qs + s * QK / 2, v);
            int p = 0;
            for (int j = 0; j < QK; ++j) p += v[j] * y[i].qs[s * QK + j];
            isum += iq4xs_scale(x[i], s) * p;
        }
        sum += h2f(x[i].d) * y[i].d * (float)isum;
    }
    return sum;
}

} // namespace
} // namespace quant::scalar

void ref::fill_iq4(RowKernels *by_type) {
    by_type[(int)DType::IQ4_NL] = {quant::scalar::dot_iq4_nl, quant::scalar::deq_iq4_nl, nullptr};
    by_type[(int)DType::IQ4_XS] = {quant::scalar::dot_iq4_xs, quant::scalar::deq_iq4_xs, nullptr};
}

} // namespace vt
