// Portable scalar kernels for F32/F16/BF16 and the 32-element block types
// (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1). These are the numeric definition:
// every SIMD quantizer must produce exactly these bytes, every SIMD
// dequantizer exactly these floats; SIMD dots differ only by f32
// accumulation order.
//
// Activation quantizers follow llama.cpp's AVX2 build (quantize_row_q8_0/1 in
// ggml-cpu/arch/x86/quants.c): d = amax/127 (stored fp16), the multiplier is
// 127/amax in f32 (0 for an all-zero block), one f32 multiply, then round to
// nearest-even. Inputs must be finite.
#include <cmath>
#include <cstring>

#include "core/quant/blocks.h"
#include "core/quant/ref-table.h"

namespace vt {

float fp16_to_f32(uint16_t h) { return quant::h2f(h); }
uint16_t f32_to_fp16(float f) { return quant::f2h(f); }
float bf16_to_f32(uint16_t h) { return quant::b2f(h); }
uint16_t f32_to_bf16(float f) { return quant::f2b(f); }


namespace quant::scalar {
namespace {

// ---- plain floats --------------------------------------------------------

void deq_f32(const void *src, float *dst, int64_t n) { std::memcpy(dst, src, (size_t)n * 4); }

void deq_f16(const void *src, float *dst, int64_t n) {
    const uint16_t *s = (const uint16_t *)src;
    for (int64_t i = 0; i < n; ++i) dst[i] = h2f(s[i]);
}

void deq_bf16(const void *src, float *dst, int64_t n) {
    const uint16_t *s = (const uint16_t *)src;
    for (int64_t i = 0; i < n; ++i) dst[i] = b2f(s[i]);
}

void q_f32(const float *src, void *dst, int64_t n) { std::memcpy(dst, src, (size_t)n * 4); }

void q_f16(const float *src, void *dst, int64_t n) {
    uint16_t *d = (uint16_t *)dst;
    for (int64_t i = 0; i < n; ++i) d[i] = f2h(src[i]);
}

void q_bf16(const float *src, void *dst, int64_t n) {
    uint16_t *d = (uint16_t *)dst;
    for (int64_t i = 0; i < n; ++i) d[i] = f2b(src[i]);
}

// Eight independent f32 lanes: the compiler can vectorize this without
// reassociation, and the rounding behaves like the SIMD versions'.
template <class Load>
float dot_lanes(int64_t n, Load load) {
    float acc[8] = {};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l) acc[l] += load(i + l);
    for (; i < n; ++i) acc[0] += load(i);
    float s = 0;
    for (float a : acc) s += a;
    return s;
}

float dot_f32(int64_t n, const void *w, const void *a) {
    const float *x = (const float *)w, *y = (const float *)a;
    return dot_lanes(n, [&](int64_t i) { return x[i] * y[i]; });
}

float dot_f16(int64_t n, const void *w, const void *a) {
    const uint16_t *x = (const uint16_t *)w, *y = (const uint16_t *)a;
    return dot_lanes(n, [&](int64_t i) { return h2f(x[i]) * h2f(y[i]); });
}

float dot_bf16(int64_t n, const void *w, const void *a) {
    const uint16_t *x = (const uint16_t *)w, *y = (const uint16_t *)a;
    return dot_lanes(n, [&](int64_t i) { return b2f(x[i]) * b2f(y[i]); });
}

// ---- 32-element blocks: dequantize ----------------------------------------

void deq_q4_0(const void *src, float *y, int64_t n) {
    const BlockQ4_0 *b = (const BlockQ4_0 *)src;
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = h2f(b[i].d);
        for (int j = 0; j < QK / 2; ++j) {
            y[j] = (float)((b[i].qs[j] & 0xF) - 8) * d;
            y[j + 16] = (float)((b[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void deq_q4_1(const void *src, float *y, int64_t n) {
    const BlockQ4_1 *b = (const BlockQ4_1 *)src;
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = h2f(b[i].d), m = h2f(b[i].m);
        for (int j = 0; j < QK / 2; ++j) {
            y[j] = (float)(b[i].qs[j] & 0xF) * d + m;
            y[j + 16] = (float)(b[i].qs[j] >> 4) * d + m;
        }
    }
}

// The 5-bit value of element j (0..31) of a Q5 block.
inline int q5_value(const uint8_t *qs, uint32_t qh, int j) {
    const int nib = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
    return nib | (int)(((qh >> j) & 1) << 4);
}

void deq_q5_0(const void *src, float *y, int64_t n) {
    const BlockQ5_0 *b = (const BlockQ5_0 *)src;
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = h2f(b[i].d);
        const uint32_t qh = load_u32(b[i].qh);
        for (int j = 0; j < QK; ++j) y[j] = (float)(q5_value(b[i].qs, qh, j) - 16) * d;
    }
}

void deq_q5_1(const void *src, float *y, int64_t n) {
    const BlockQ5_1 *b = (const BlockQ5_1 *)src;
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = h2f(b[i].d), m = h2f(b[i].m);
        const uint32_t qh = load_u32(b[i].qh);
        for (int j = 0; j < QK; ++j) y[j] = (float)q5_value(b[i].qs, qh, j) * d + m;
    }
}

void deq_q8_0(const void *src, float *y, int64_t n) {
    const BlockQ8_0 *b = (const BlockQ8_0 *)src;
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = h2f(b[i].d);
        for (int j = 0; j < QK; ++j) y[j] = (float)b[i].qs[j] * d;
    }
}

// Q8_1 and Q8_K are activation types; their dequantizers exist for tests.
void deq_q8_1(const void *src, float *y, int64_t n) {
    const BlockQ8_1 *b = (const BlockQ8_1 *)src;
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const float d = h2f(b[i].d);
        for (int j = 0; j < QK; ++j) y[j] = (float)b[i].qs[j] * d;
    }
}

// ---- activation quantizers -------------------------------------------------

// Quantizes one 32-element block to int8 the way llama.cpp's AVX2 code does;
// returns d (f32, before fp16 rounding).
inline float quant_block_q8(const float *x, int8_t *q) {
    float amax = 0;
    for (int j = 0; j < QK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.f;
    const float id = amax != 0.f ? 127.f / amax : 0.f;
    for (int j = 0; j < QK; ++j) q[j] = (int8_t)nearest_int(x[j] * id);
    return d;
}

void q_q8_0(const float *x, void *dst, int64_t n) {
    BlockQ8_0 *b = (BlockQ8_0 *)dst;
    for (int64_t i = 0; i < n / QK; ++i, x += QK) b[i].d = f2h(quant_block_q8(x, b[i].qs));
}

void q_q8_1(const float *x, void *dst, int64_t n) {
    BlockQ8_1 *b = (BlockQ8_1 *)dst;
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        const float d = quant_block_q8(x, b[i].qs);
        int sum = 0;
        for (int j = 0; j < QK; ++j) sum += b[i].qs[j];
        b[i].d = f2h(d);
        b[i].s = f2h(d * (float)sum);
    }
}

// ---- 32-element blocks: dot products ----------------------------------------

float dot_q4_0(int64_t n, const void *w, const void *a) {
    const BlockQ4_0 *x = (const BlockQ4_0 *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        int s = 0;
        for (int j = 0; j < QK / 2; ++j)
            s += ((x[i].qs[j] & 0xF) - 8) * y[i].qs[j] + ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
        sum += (float)s * (h2f(x[i].d) * h2f(y[i].d));
    }
    return sum;
}

float dot_q4_1(int64_t n, const void *w, const void *a) {
    const BlockQ4_1 *x = (const BlockQ4_1 *)w;
    const BlockQ8_1 *y = (const BlockQ8_1 *)a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        int s = 0;
        for (int j = 0; j < QK / 2; ++j)
            s += (x[i].qs[j] & 0xF) * y[i].qs[j] + (x[i].qs[j] >> 4) * y[i].qs[j + 16];
        // sum(d*q + m) * a = d*da*sum(q*qa) + m * (da*sum(qa)), the last factor is y.s.
        sum += (float)s * (h2f(x[i].d) * h2f(y[i].d)) + h2f(x[i].m) * h2f(y[i].s);
    }
    return sum;
}

float dot_q5_0(int64_t n, const void *w, const void *a) {
    const BlockQ5_0 *x = (const BlockQ5_0 *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        const uint32_t qh = load_u32(x[i].qh);
        int s = 0;
        for (int j = 0; j < QK; ++j) s += (q5_value(x[i].qs, qh, j) - 16) * y[i].qs[j];
        sum += (float)s * (h2f(x[i].d) * h2f(y[i].d));
    }
    return sum;
}

float dot_q5_1(int64_t n, const void *w, const void *a) {
    const BlockQ5_1 *x = (const BlockQ5_1 *)w;
    const BlockQ8_1 *y = (const BlockQ8_1 *)a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        const uint32_t qh = load_u32(x[i].qh);
        int s = 0;
        for (int j = 0; j < QK; ++j) s += q5_value(x[i].qs, qh, j) * y[i].qs[j];
        sum += (float)s * (h2f(x[i].d) * h2f(y[i].d)) + h2f(x[i].m) * h2f(y[i].s);
    }
    return sum;
}

float dot_q8_0(int64_t n, const void *w, const void *a) {
    const BlockQ8_0 *x = (const BlockQ8_0 *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)a;
    float sum = 0;
    for (int64_t i = 0; i < n / QK; ++i) {
        int s = 0;
        for (int j = 0; j < QK; ++j) s += x[i].qs[j] * y[i].qs[j];
        sum += (float)s * (h2f(x[i].d) * h2f(y[i].d));
    }
    return sum;
}

} // namespace

} // namespace quant::scalar

void ref::fill_legacy(RowKernels *by_type) {
    using namespace quant::scalar;
    auto set = [&](DType t, VecDotFn dot, DequantFn dq, QuantFn q) { by_type[(int)t] = {dot, dq, q}; };
    set(DType::F32, dot_f32, deq_f32, q_f32);
    set(DType::F16, dot_f16, deq_f16, q_f16);
    set(DType::BF16, dot_bf16, deq_bf16, q_bf16);
    set(DType::Q4_0, dot_q4_0, deq_q4_0, nullptr);
    set(DType::Q4_1, dot_q4_1, deq_q4_1, nullptr);
    set(DType::Q5_0, dot_q5_0, deq_q5_0, nullptr);
    set(DType::Q5_1, dot_q5_1, deq_q5_1, nullptr);
    set(DType::Q8_0, dot_q8_0, deq_q8_0, q_q8_0);
    set(DType::Q8_1, nullptr, deq_q8_1, q_q8_1);
}
} // namespace vt
