//! NVFP4, Q1_0 and Q2_0 (ggml types 40-42: ggml-common.h block_nvfp4,
//! block_q1_0, block_q2_0; ggml-quants.c dequantize_row_nvfp4 / _q1_0 /
//! _q2_0; ggml-cpu quants.c's vec_dot_*_q8_0): the scalar references of
//! core/quant.h. blocks.h has the layouts and NVFP4's scale.
//!
//! All three take Q8_0 activations (ggml's vec_dot type) and have integer
//! weights times one scale per group, so each group's products sum exactly in
//! int32 (isum) and are scaled once: the groups are NVFP4's 16-element
//! sub-blocks (one scale each) and Q1_0's and Q2_0's 32-element pieces (one
//! Q8_0 block each). Their canonical order, which the SIMD dots replay bit
//! for bit, keeps 8 f32 lanes: group g adds into lane lane(g) as
//!     acc[lane] = fma(wd * ad, (float)isum, acc[lane])
//! (wd * ad one f32 product of the two scales), lane(g) = g % 8 for Q1_0 and
//! Q2_0 and, for NVFP4, (g % 2) * 4 + (g % 8) / 2 (the order in which one
//! 256-bit step pairs up four Q8_0 blocks' sub-blocks); the result is
//! ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)), the legacy types' hsum.
#include <cmath>

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

// The 8 lanes of the canonical order (above).
struct Lanes8 {
    float a[8] = {};
    void add(int lane, float scale, int isum) { a[lane] = std::fma(scale, (float)isum, a[lane]); }
    float sum() const { return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7])); }
};

float dot_nvfp4(int64_t n, const void *w, const void *a) {
    const BlockNVFP4 *x = (const BlockNVFP4 *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)a;
    int v[16];
    Lanes8 acc;
    for (int64_t g = 0; g < n / 16; ++g) {
        const BlockNVFP4 &xb = x[g / 4];
        const BlockQ8_0 &ya = y[g / 2];
        nvfp4_values(xb, (int)(g % 4), v);
        int isum = 0;
        for (int j = 0; j < 16; ++j) isum += v[j] * ya.qs[16 * (g % 2) + j];
        acc.add((int)(g % 2) * 4 + (int)(g % 8) / 2, ue4m3_half(xb.d[g % 4]) * h2f(ya.d), isum);
    }
    return acc.sum();
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
    Lanes8 acc;
    for (int64_t g = 0; g < n / QK; ++g) {
        const B &xb = x[g / (QKB / QK)];
        int isum = 0;
        for (int j = 0; j < QK; ++j) isum += Value(xb, (int)(g % (QKB / QK)) * QK + j) * y[g].qs[j];
        acc.add((int)(g % 8), h2f(xb.d) * h2f(y[g].d), isum);
    }
    return acc.sum();
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
