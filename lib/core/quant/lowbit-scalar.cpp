//! NVFP4, Q1_0 and Q2_0 (ggml types 40-42: ggml-common.h block_nvfp4,
//! block_q1_0, block_q2_0; ggml-quants.c dequantize_row_nvfp4 / _q1_0 /
//! _q2_0; ggml-cpu quants.c's vec_dot_*_q8_0): the scalar references of
//! core/quant.h. blocks.h has the layouts and NVFP4's scale.
//!
//! All three take Q8_0 activations (ggml's vec_dot type) and have integer
//! weights times one scale per group, so each group's products sum exactly in
//! int32 and are scaled once, in element order: per 16-element sub-block for
//! NVFP4 (its scale's group), per 32 elements (one Q8_0 block) for Q1_0 and
//! Q2_0: sum += (wd * ad) * (float)isum.
#include "core/quant/blocks.h"
#include "core/quant/ref-table.h"

namespace vt {
namespace quant::scalar {
namespace {

// Sub-block s's 16 doubled e2m1 values of an NVFP4 block.
static inline void nvfp4_values(const BlockNVFP4 &x, int s, int out[16]) {
    for (int j = 0; j < 8; ++j) {
        out[j] = kMxfp4Values[x.qs[8 * s + j] & 0xF];
        out[j + 8] = kMxfp4Values[x.qs[8 * s + j] >> 4];
    }
}
static inline int q1_0_value(const BlockQ1_0 &x, int j) { return (x.qs[j / 8] >> (j % 8)) & 1 ? 1 : -1; }
static inline int q2_0_value(const BlockQ2_0 &x, int j) { return ((x.qs[j / 4] >> 2 * (j % 4)) & 3) - 1; }

void deq_nvfp4(const void *src, float *y, int64_t n) {
    const BlockNVFP4 *b = (const BlockNVFP4 *)src;
    int v[16];
    for (int64_t i = 0; i < n / 64; ++i)
        for (int s = 0; s < 4; ++s, y += 16) {
            const float d = ue4m3_half(b[i].d[s]);
            nvfp4_values(b[i], s, v);
            for (int j = 0; j < 16; ++j) y[j] = (float)v[j] * d;
        }
}

float dot_nvfp4(int64_t n, const void *w, const void *a) {
    const BlockNVFP4 *x = (const BlockNVFP4 *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)a;
    int v[16];
    float sum = 0;
    for (int64_t i = 0; i < n / 64; ++i)
        for (int s = 0; s < 4; ++s) {
            const BlockQ8_0 &ya = y[2 * i + s / 2];
            nvfp4_values(x[i], s, v);
            int isum = 0;
            for (int j = 0; j < 16; ++j) isum += v[j] * ya.qs[16 * (s % 2) + j];
            sum += (ue4m3_half(x[i].d[s]) * h2f(ya.d)) * (float)isum;
        }
    return sum;
}

template <class B, int QKB, int (*Value)(const B &, int)>
void deq_signed(const void *src, float *y, int64_t n) {
    const B *b = (const B *)src;
    for (int64_t i = 0; i < n / QKB; ++i, y += QKB) {
        const float d = h2f(b[i].d);
        for (int j = 0; j < QKB; ++j) y[j] = (float)Value(b[i], j) * d;
    }
}

template <class B, int QKB, int (*Value)(const B &, int)>
float dot_signed(int64_t n, const void *w, const void *a) {
    const B *x = (const B *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)a;
    float sum = 0;
    for (int64_t i = 0; i < n / QKB; ++i) {
        const float d = h2f(x[i].d);
        for (int k = 0; k < QKB / QK; ++k) {
            const BlockQ8_0 &ya = y[i * (QKB / QK) + k];
            int isum = 0;
            for (int j = 0; j < QK; ++j) isum += Value(x[i], QK * k + j) * ya.qs[j];
            sum += (d * h2f(ya.d)) * (float)isum;
        }
    }
    return sum;
}

} // namespace
} // namespace quant::scalar

void ref::fill_lowbit(RowKernels *by_type) {
    using namespace quant;
    using namespace quant::scalar;
    by_type[(int)DType::NVFP4] = {dot_nvfp4, deq_nvfp4, nullptr};
    by_type[(int)DType::Q1_0] = {dot_signed<BlockQ1_0, 128, q1_0_value>, deq_signed<BlockQ1_0, 128, q1_0_value>, nullptr};
    by_type[(int)DType::Q2_0] = {dot_signed<BlockQ2_0, 64, q2_0_value>, deq_signed<BlockQ2_0, 64, q2_0_value>, nullptr};
}

} // namespace vt
