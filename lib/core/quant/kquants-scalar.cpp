// Portable scalar kernels for the K quants (Q2_K..Q6_K weights, Q8_K
// activations): the numeric definition the SIMD files must reproduce.
//
// Each weight block is first unpacked into its 256 small integers and its
// per-sub-block integer scales (unpack_*), so dequantize and vec_dot share one
// reading of the bit layout (documented in blocks.h). Dots are integer per
// super-block, scaled in f32 once per super-block, as ggml's
// ggml_vec_dot_<type>_q8_K.
//
// Q8_K quantization is llama.cpp's quantize_row_q8_K_ref, which its x86 build
// also uses: the signed value of largest magnitude (first one on ties) sets
// iscale = -127/max, q = min(127, nearest_int(iscale*x)), d = 1/iscale (f32),
// bsums per 16.
#include <cmath>
#include <cstring>

#include "core/quant/blocks.h"
#include "core/quant/ref-table.h"

namespace vt::quant::scalar {
namespace {

// Element e of a 2-bit plane (Q2_K, Q3_K): 128-element half h, 32-group s.
inline int q2_at(const uint8_t *qs, int e) {
    const int h = e / 128, s = (e % 128) / 32, l = e % 32;
    return (qs[32 * h + l] >> (2 * s)) & 3;
}

// q in 0..3, scale[16] in 0..15, min[16] in 0..15.
void unpack_q2_k(const BlockQ2_K &b, int8_t q[QK_K], int sc[16], int mn[16]) {
    for (int e = 0; e < QK_K; ++e) q[e] = (int8_t)q2_at(b.qs, e);
    for (int j = 0; j < 16; ++j) {
        sc[j] = b.scales[j] & 0xF;
        mn[j] = b.scales[j] >> 4;
    }
}

// q in -4..3, sc[16] in -32..31.
void unpack_q3_k(const BlockQ3_K &b, int8_t q[QK_K], int sc[16]) {
    for (int e = 0; e < QK_K; ++e) {
        const int h = e / 128, s = (e % 128) / 32, l = e % 32;
        const bool hi = (b.hmask[l] >> (4 * h + s)) & 1;
        q[e] = (int8_t)(q2_at(b.qs, e) - (hi ? 0 : 4));
    }
    int8_t s8[16];
    q3k_scales(b.scales, s8);
    for (int j = 0; j < 16; ++j) sc[j] = s8[j];
}

// Element e of a Q4_K/Q5_K nibble plane.
inline int q4k_nibble(const uint8_t *qs, int e) {
    const int c = e / 64, r = e % 64;
    return r < 32 ? (qs[32 * c + r] & 0xF) : (qs[32 * c + r - 32] >> 4);
}

// q in 0..15, sc[8], mn[8] in 0..63.
void unpack_q4_k(const BlockQ4_K &b, int8_t q[QK_K], int sc[8], int mn[8]) {
    for (int e = 0; e < QK_K; ++e) q[e] = (int8_t)q4k_nibble(b.qs, e);
    for (int j = 0; j < 8; ++j) scale_min_k4(j, b.scales, sc[j], mn[j]);
}

// q in 0..31.
void unpack_q5_k(const BlockQ5_K &b, int8_t q[QK_K], int sc[8], int mn[8]) {
    for (int e = 0; e < QK_K; ++e) {
        const int bit = e / 32; // 2c for the low half of chunk c, 2c+1 for the high half
        q[e] = (int8_t)(q4k_nibble(b.qs, e) | (((b.qh[e % 32] >> bit) & 1) << 4));
    }
    for (int j = 0; j < 8; ++j) scale_min_k4(j, b.scales, sc[j], mn[j]);
}

// q in -32..31, scales are the block's int8 scales.
void unpack_q6_k(const BlockQ6_K &b, int8_t q[QK_K]) {
    for (int h = 0; h < 2; ++h) {
        const uint8_t *ql = b.ql + 64 * h, *qh = b.qh + 32 * h;
        int8_t *o = q + 128 * h;
        for (int l = 0; l < 32; ++l) {
            o[l] = (int8_t)(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
            o[l + 32] = (int8_t)(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
            o[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            o[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}

// ---- dequantize (same f32 expressions as ggml's dequantize_row_*) ---------

void deq_q2_k(const void *src, float *y, int64_t n) {
    const BlockQ2_K *b = (const BlockQ2_K *)src;
    int8_t q[QK_K];
    int sc[16], mn[16];
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        unpack_q2_k(b[i], q, sc, mn);
        const float d = h2f(b[i].d), dmin = h2f(b[i].dmin);
        for (int j = 0; j < 16; ++j) {
            const float dl = d * (float)sc[j], ml = dmin * (float)mn[j];
            for (int l = 0; l < 16; ++l) y[16 * j + l] = dl * (float)q[16 * j + l] - ml;
        }
    }
}

void deq_q3_k(const void *src, float *y, int64_t n) {
    const BlockQ3_K *b = (const BlockQ3_K *)src;
    int8_t q[QK_K];
    int sc[16];
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        unpack_q3_k(b[i], q, sc);
        const float d = h2f(b[i].d);
        for (int j = 0; j < 16; ++j) {
            const float dl = d * (float)sc[j];
            for (int l = 0; l < 16; ++l) y[16 * j + l] = dl * (float)q[16 * j + l];
        }
    }
}

template <class Block, void (*Unpack)(const Block &, int8_t *, int *, int *)>
void deq_q45_k(const void *src, float *y, int64_t n) {
    const Block *b = (const Block *)src;
    int8_t q[QK_K];
    int sc[8], mn[8];
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        Unpack(b[i], q, sc, mn);
        const float d = h2f(b[i].d), dmin = h2f(b[i].dmin);
        for (int j = 0; j < 8; ++j) {
            const float dl = d * (float)sc[j], ml = dmin * (float)mn[j];
            for (int l = 0; l < 32; ++l) y[32 * j + l] = dl * (float)q[32 * j + l] - ml;
        }
    }
}

void deq_q6_k(const void *src, float *y, int64_t n) {
    const BlockQ6_K *b = (const BlockQ6_K *)src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K) {
        unpack_q6_k(b[i], q);
        const float d = h2f(b[i].d);
        for (int e = 0; e < QK_K; ++e) y[e] = d * (float)b[i].scales[e / 16] * (float)q[e];
    }
}

void deq_q8_k(const void *src, float *y, int64_t n) {
    const BlockQ8_K *b = (const BlockQ8_K *)src;
    for (int64_t i = 0; i < n / QK_K; ++i, y += QK_K)
        for (int e = 0; e < QK_K; ++e) y[e] = b[i].d * (float)b[i].qs[e];
}

// ---- Q8_K activations ---------------------------------------------------------

void q_q8_k(const float *x, void *dst, int64_t n) {
    BlockQ8_K *b = (BlockQ8_K *)dst;
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        float amax = 0, max = 0;
        for (int e = 0; e < QK_K; ++e) {
            const float ax = std::fabs(x[e]);
            if (ax > amax) {
                amax = ax;
                max = x[e];
            }
        }
        if (amax == 0.f) {
            std::memset(&b[i], 0, sizeof(BlockQ8_K));
            continue;
        }
        const float iscale = -127.f / max;
        for (int e = 0; e < QK_K; ++e) {
            const int v = nearest_int(iscale * x[e]);
            b[i].qs[e] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < 16; ++j) {
            int s = 0;
            for (int l = 0; l < 16; ++l) s += b[i].qs[16 * j + l];
            b[i].bsums[j] = (int16_t)s;
        }
        b[i].d = 1.f / iscale;
    }
}

// ---- dot products ---------------------------------------------------------------

// Sum over sub-blocks of length len: sc[j] * sum(q*a) in the sub-block.
inline int scaled_isum(const int8_t *q, const int8_t *a, const int *sc, int nsub, int len) {
    int total = 0;
    for (int j = 0; j < nsub; ++j) {
        int s = 0;
        for (int l = 0; l < len; ++l) s += q[j * len + l] * a[j * len + l];
        total += sc[j] * s;
    }
    return total;
}

float dot_q2_k(int64_t n, const void *w, const void *act) {
    const BlockQ2_K *x = (const BlockQ2_K *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)act;
    int8_t q[QK_K];
    int sc[16], mn[16];
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        unpack_q2_k(x[i], q, sc, mn);
        int summs = 0;
        for (int j = 0; j < 16; ++j) summs += y[i].bsums[j] * mn[j];
        const int isum = scaled_isum(q, y[i].qs, sc, 16, 16);
        sum += y[i].d * h2f(x[i].d) * (float)isum - y[i].d * h2f(x[i].dmin) * (float)summs;
    }
    return sum;
}

float dot_q3_k(int64_t n, const void *w, const void *act) {
    const BlockQ3_K *x = (const BlockQ3_K *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)act;
    int8_t q[QK_K];
    int sc[16];
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        unpack_q3_k(x[i], q, sc);
        sum += h2f(x[i].d) * y[i].d * (float)scaled_isum(q, y[i].qs, sc, 16, 16);
    }
    return sum;
}

template <class Block, void (*Unpack)(const Block &, int8_t *, int *, int *)>
float dot_q45_k(int64_t n, const void *w, const void *act) {
    const Block *x = (const Block *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)act;
    int8_t q[QK_K];
    int sc[8], mn[8];
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        Unpack(x[i], q, sc, mn);
        int summs = 0;
        for (int j = 0; j < 8; ++j) summs += mn[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        const int isum = scaled_isum(q, y[i].qs, sc, 8, 32);
        sum += h2f(x[i].d) * y[i].d * (float)isum - h2f(x[i].dmin) * y[i].d * (float)summs;
    }
    return sum;
}

float dot_q6_k(int64_t n, const void *w, const void *act) {
    const BlockQ6_K *x = (const BlockQ6_K *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)act;
    int8_t q[QK_K];
    int sc[16];
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        unpack_q6_k(x[i], q);
        for (int j = 0; j < 16; ++j) sc[j] = x[i].scales[j];
        sum += h2f(x[i].d) * y[i].d * (float)scaled_isum(q, y[i].qs, sc, 16, 16);
    }
    return sum;
}

} // namespace

} // namespace vt::quant::scalar

namespace vt::ref {
void fill_kquants(RowKernels *by_type) {
    using namespace quant;
    using namespace quant::scalar;
    auto set = [&](DType t, VecDotFn dot, DequantFn dq) { by_type[(int)t] = {dot, dq, nullptr}; };
    set(DType::Q2_K, dot_q2_k, deq_q2_k);
    set(DType::Q3_K, dot_q3_k, deq_q3_k);
    set(DType::Q4_K, dot_q45_k<BlockQ4_K, unpack_q4_k>, deq_q45_k<BlockQ4_K, unpack_q4_k>);
    set(DType::Q5_K, dot_q45_k<BlockQ5_K, unpack_q5_k>, deq_q45_k<BlockQ5_K, unpack_q5_k>);
    set(DType::Q6_K, dot_q6_k, deq_q6_k);
    by_type[(int)DType::Q8_K] = {nullptr, deq_q8_k, q_q8_k};
}
} // namespace vt::ref
