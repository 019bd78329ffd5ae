//! The i-quants IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M
//! (ggml types 16-19, 21, 22, 29: ggml-common.h block_iq*, the grids and
//! ksigns_iq2xs; ggml-quants.c dequantize_row_iq*; ggml-cpu quants.c's
//! vec_dot_iq*_q8_K): the scalar references of core/quant.h. blocks.h has
//! the layouts, iq-grids.h the lattices (generated from the gguf package).
//!
//! Every element is d * kScale * m * v with integers m (the group's odd
//! multiplier 2 ls + 1) and v (grid value times sign; for IQ1_S/IQ1_M
//! 8 grid + delta sign, delta being 1/8), kScale a power of two: 1/8 for
//! IQ2_* and IQ1_*, 1/4 for IQ3_XXS, 1 for IQ3_S. d * kScale * (m * v) is
//! exact in f32 (at most 11 + 11 significant bits), so dequantization is
//! exact, in any order.
//!
//! The dots take Q8_K activations (ggml's vec_dot type for all of them).
//! Canonical order: per super-block one exact int32
//!     isum = sum over the 32 groups g of m_g * sum_j v_j * q_j
//! (|isum| < 2^26 for every type, so the integer order is free), then one
//! f32 step
//!     sum = sum + ((d * kScale) * y.d) * (float)isum
//! (d * kScale exact; a product, a conversion, a product and an add, each
//! rounded once), super-blocks in order from 0 — IQ4_XS's order
//! (iq4-scalar.cpp). The AVX2 dots (backends/cpu/kernels/iquants-avx2.cpp)
//! compute isum in vectors and replay that f32 step, bit for bit.
#include "core/quant/blocks.h"
#include "core/quant/iq-grids.h"
#include "core/quant/ref-table.h"

namespace vt {
namespace quant::scalar {
namespace {

// Each type: its block, kScale, d as f32, and group(x, g, v) filling the
// 8 integers v of group g (elements 8g..8g+7) and returning its m.
static inline void signed8(uint64_t grid, uint32_t signs, int v[8]) {
    for (int j = 0; j < 8; ++j) v[j] = (int)(grid >> 8 * j & 255) * ((signs >> j) & 1 ? -1 : 1);
}
static inline void signed4x2(uint32_t g0, uint32_t g1, uint32_t signs, int v[8]) {
    signed8((uint64_t)g1 << 32 | g0, signs, v);
}
// IQ1: 8 grid + delta sign (grid bytes are int8 -1, 0, 1).
static inline void iq1_values(uint64_t grid, bool neg_delta, int v[8]) {
    for (int j = 0; j < 8; ++j) v[j] = 8 * (int)(int8_t)(grid >> 8 * j & 255) + (neg_delta ? -1 : 1);
}

struct IQ2XXS {
    using B = BlockIQ2XXS;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f(x.d); }
    static int group(const B &x, int g, int v[8]) {
        const int s = g / 4, l = g % 4;
        const uint32_t b = load_u32(x.qs + 8 * s + 4);
        signed8(kIq2xxsGrid[x.qs[8 * s + l]], iq_signs(b >> 7 * l), v);
        return 2 * (int)(b >> 28) + 1;
    }
};

struct IQ2XS {
    using B = BlockIQ2XS;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f(x.d); }
    static int group(const B &x, int g, int v[8]) {
        const uint16_t q = x.qs[g];
        signed8(kIq2xsGrid[q & 511], iq_signs(q >> 9), v);
        return 2 * ((x.scales[g / 4] >> 4 * (g % 4 / 2)) & 15) + 1;
    }
};

struct IQ2S {
    using B = BlockIQ2S;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f(x.d); }
    static int group(const B &x, int g, int v[8]) {
        const int s = g / 4, l = g % 4;
        signed8(kIq2sGrid[x.qs[g] | ((x.qh[s] >> 2 * l) & 3) << 8], x.qs[32 + g], v);
        return 2 * ((x.scales[s] >> 4 * (l / 2)) & 15) + 1;
    }
};

struct IQ3XXS {
    using B = BlockIQ3XXS;
    static constexpr float kScale = 0.25f;
    static float d(const B &x) { return h2f(x.d); }
    static int group(const B &x, int g, int v[8]) {
        const int s = g / 4, l = g % 4;
        const uint32_t b = load_u32(x.qs + 64 + 4 * s);
        signed4x2(kIq3xxsGrid[x.qs[2 * g]], kIq3xxsGrid[x.qs[2 * g + 1]], iq_signs(b >> 7 * l), v);
        return 2 * (int)(b >> 28) + 1;
    }
};

struct IQ3S {
    using B = BlockIQ3S;
    static constexpr float kScale = 1.f;
    static float d(const B &x) { return h2f(x.d); }
    static int group(const B &x, int g, int v[8]) {
        const int s = g / 4, l = g % 4;
        const int k0 = 2 * l, k1 = 2 * l + 1;
        signed4x2(kIq3sGrid[x.qs[8 * s + k0] | ((x.qh[s] >> k0) & 1) << 8],
                  kIq3sGrid[x.qs[8 * s + k1] | ((x.qh[s] >> k1) & 1) << 8], x.signs[g], v);
        return 2 * ((x.scales[s / 2] >> 4 * (s % 2)) & 15) + 1;
    }
};

struct IQ1S {
    using B = BlockIQ1S;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f(x.d); }
    static int group(const B &x, int g, int v[8]) {
        const int s = g / 4, l = g % 4;
        const uint16_t h = x.qh[s];
        iq1_values(kIq1sGrid[x.qs[g] | ((h >> 3 * l) & 7) << 8], h & 0x8000, v);
        return 2 * ((h >> 12) & 7) + 1;
    }
};

struct IQ1M {
    using B = BlockIQ1M;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f(iq1m_d(x)); }
    static int group(const B &x, int g, int v[8]) {
        const int s = g / 4, l = g % 4;
        const int h = (x.qh[2 * s + l / 2] >> 4 * (l % 2)) & 15;
        iq1_values(kIq1sGrid[x.qs[g] | (h & 7) << 8], h & 8, v);
        const int w = x.scales[s / 2 * 2] | x.scales[s / 2 * 2 + 1] << 8;
        return 2 * ((w >> (6 * (s % 2) + 3 * (l / 2))) & 7) + 1;
    }
};

template <class T>
void deq(const void *src, float *y, int64_t n) {
    const typename T::B *x = (const typename T::B *)src;
    int v[8];
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = T::d(x[i]) * T::kScale;
        for (int g = 0; g < QK_K / 8; ++g, y += 8) {
            const int m = T::group(x[i], g, v);
            for (int j = 0; j < 8; ++j) y[j] = d * (float)(m * v[j]);
        }
    }
}

template <class T>
float dot(int64_t n, const void *w, const void *a) {
    const typename T::B *x = (const typename T::B *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)a;
    int v[8];
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        int isum = 0;
        for (int g = 0; g < QK_K / 8; ++g) {
            const int m = T::group(x[i], g, v);
            int p = 0;
            for (int j = 0; j < 8; ++j) p += v[j] * y[i].qs[8 * g + j];
            isum += m * p;
        }
        sum += (T::d(x[i]) * T::kScale) * y[i].d * (float)isum;
    }
    return sum;
}

} // namespace
} // namespace quant::scalar

void ref::fill_iquants(RowKernels *by_type) {
    using namespace quant::scalar;
    by_type[(int)DType::IQ2_XXS] = {dot<IQ2XXS>, deq<IQ2XXS>, nullptr};
    by_type[(int)DType::IQ2_XS] = {dot<IQ2XS>, deq<IQ2XS>, nullptr};
    by_type[(int)DType::IQ2_S] = {dot<IQ2S>, deq<IQ2S>, nullptr};
    by_type[(int)DType::IQ3_XXS] = {dot<IQ3XXS>, deq<IQ3XXS>, nullptr};
    by_type[(int)DType::IQ3_S] = {dot<IQ3S>, deq<IQ3S>, nullptr};
    by_type[(int)DType::IQ1_S] = {dot<IQ1S>, deq<IQ1S>, nullptr};
    by_type[(int)DType::IQ1_M] = {dot<IQ1M>, deq<IQ1M>, nullptr};
}

} // namespace vt
