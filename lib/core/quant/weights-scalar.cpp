// Weight quantizers (core/quant.h: quantize_weights): f32 rows to the block
// types a GGUF file stores, byte for byte what ggml's quantize_row_<t>_ref
// writes, which is what llama.cpp's quantizer writes without an importance
// matrix. Written from the algorithm's description (ggml-quants.c), checked
// against ggml's own output by tests/unit/test-quantize-weights.cpp.
//
// Bit-exactness rests on doing the same f32 operations in the same order:
// every expression below keeps ggml's evaluation order and its int -> float
// conversions, and must not be contracted into FMAs: ggml-base is built
// without FMA flags, and a build of vt with -march=native would otherwise
// fuse `scale * L + min` (measured: 2 of the golden's Q4_K rows differ), so
// contraction is switched off for this file below (honoured by GCC, and by
// Clang unless built with -ffp-contract=fast). These are load-time code
// paths, one row at a time on one thread; callers split rows over threads.
//
// Unlike the activation quantizers (quant-scalar.cpp), which follow
// llama.cpp's AVX2 code, these follow the _ref functions: Q8_0 takes
// id = 1 / (amax / 127) and rounds half away from zero (roundf).
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/quant.h"
#include "core/quant/blocks.h"

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace vt {
namespace {

using namespace quant;

// The element of largest magnitude (the first of equals), ggml's
// `if (amax < fabsf(v)) { amax = fabsf(v); max = v; }`.
inline float signed_absmax(const float *x, int n) {
    float amax = 0.f, max = 0.f;
    for (int j = 0; j < n; ++j)
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    return max;
}

inline void min_max(const float *x, int n, float &min, float &max) {
    min = FLT_MAX;
    max = -FLT_MAX;
    for (int j = 0; j < n; ++j) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
}

inline uint8_t clamp_u8(int v, int hi) { return (uint8_t)(v < hi ? v : hi); }

// ---- 32-element blocks ------------------------------------------------------

void q4_0(const float *x, void *dst, int64_t n) {
    BlockQ4_0 *y = (BlockQ4_0 *)dst;
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        const float d = signed_absmax(x, QK) / -8;
        const float id = d != 0.f ? 1.0f / d : 0.0f;
        y[i].d = f2h(d);
        for (int j = 0; j < QK / 2; ++j) {
            // ggml truncates through int8_t: x * id + 8.5 lies in [0.5, 16.5].
            const uint8_t lo = clamp_u8((int8_t)(x[j] * id + 8.5f), 15);
            const uint8_t hi = clamp_u8((int8_t)(x[QK / 2 + j] * id + 8.5f), 15);
            y[i].qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

void q4_1(const float *x, void *dst, int64_t n) {
    BlockQ4_1 *y = (BlockQ4_1 *)dst;
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        float min, max;
        min_max(x, QK, min, max);
        const float d = (max - min) / 15;
        const float id = d != 0.f ? 1.0f / d : 0.0f;
        y[i].d = f2h(d);
        y[i].m = f2h(min);
        for (int j = 0; j < QK / 2; ++j) {
            const uint8_t lo = clamp_u8((int8_t)((x[j] - min) * id + 0.5f), 15);
            const uint8_t hi = clamp_u8((int8_t)((x[QK / 2 + j] - min) * id + 0.5f), 15);
            y[i].qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

// Stores the 5-bit values of a Q5 block: low nibbles in qs, bit 4 of element
// j in bit j of qh.
template <class Block>
void pack_q5(Block &b, const uint8_t *v) {
    uint32_t qh = 0;
    for (int j = 0; j < QK / 2; ++j) {
        b.qs[j] = (uint8_t)((v[j] & 0x0F) | (v[QK / 2 + j] & 0x0F) << 4);
        qh |= (uint32_t)(v[j] >> 4 & 1) << j;
        qh |= (uint32_t)(v[QK / 2 + j] >> 4 & 1) << (j + QK / 2);
    }
    std::memcpy(b.qh, &qh, sizeof qh);
}

void q5_0(const float *x, void *dst, int64_t n) {
    BlockQ5_0 *y = (BlockQ5_0 *)dst;
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        const float d = signed_absmax(x, QK) / -16;
        const float id = d != 0.f ? 1.0f / d : 0.0f;
        y[i].d = f2h(d);
        uint8_t v[QK];
        for (int j = 0; j < QK; ++j) v[j] = clamp_u8((int8_t)(x[j] * id + 16.5f), 31);
        pack_q5(y[i], v);
    }
}

void q5_1(const float *x, void *dst, int64_t n) {
    BlockQ5_1 *y = (BlockQ5_1 *)dst;
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        float min, max;
        min_max(x, QK, min, max);
        const float d = (max - min) / 31;
        const float id = d != 0.f ? 1.0f / d : 0.0f;
        y[i].d = f2h(d);
        y[i].m = f2h(min);
        uint8_t v[QK];
        for (int j = 0; j < QK; ++j) v[j] = (uint8_t)((x[j] - min) * id + 0.5f);  // no clamp in ggml either
        pack_q5(y[i], v);
    }
}

void q8_0(const float *x, void *dst, int64_t n) {
    BlockQ8_0 *y = (BlockQ8_0 *)dst;
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        float amax = 0.f;
        for (int j = 0; j < QK; ++j) amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);
        const float d = amax / 127;
        const float id = d != 0.f ? 1.0f / d : 0.0f;
        y[i].d = f2h(d);
        for (int j = 0; j < QK; ++j) y[i].qs[j] = (int8_t)std::roundf(x[j] * id);
    }
}

// ---- K quants ---------------------------------------------------------------

constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS: a group below it is all zero

// Q4_K's sub-block fit (ggml's make_qkx2_quants with nmax 15, rmin -1,
// rdelta 0.1, 20 steps, squared error): levels L[i] in [0, nmax] and an
// affine map x ~ scale * L - min, searched over 21 trial scales, each refined
// by weighted least squares. Returns scale; *neg_min = min (>= 0).
float fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min, uint8_t *Laux) {
    const float rmin = -1.f, rdelta = 0.1f;
    const int nstep = 20;
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *neg_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
        float diff = scale * L[i] + min - x[i];
        diff = diff * diff;
        best_error += w[i] * diff;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            int l = nearest_int(iscale * (x[i] - min));
            l = l < 0 ? 0 : l > nmax ? nmax : l;
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                diff = diff * diff;
                cur_error += w[i] * diff;
            }
            if (cur_error < best_error) {
                for (int i = 0; i < n; ++i) L[i] = Laux[i];
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *neg_min = -min;
    return scale;
}

void q4_k(const float *x, void *dst, int64_t n) {
    BlockQ4_K *y = (BlockQ4_K *)dst;
    uint8_t L[QK_K], Laux[32];
    float w[32], mins[QK_K / 32], scales[QK_K / 32];
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        float max_scale = 0, max_min = 0;  // scales and mins are >= 0 once the min is taken out
        for (int j = 0; j < QK_K / 32; ++j) {
            const float *xs = x + 32 * j;
            float sum_x2 = 0;
            for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
            const float av_x = std::sqrt(sum_x2 / 32);
            for (int l = 0; l < 32; ++l) w[l] = av_x + std::fabs(xs[l]);
            scales[j] = fit_scale_min(32, 15, xs, w, L + 32 * j, &mins[j], Laux);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
        const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
        for (int j = 0; j < QK_K / 32; ++j) {
            // Through uint8_t as ggml does (a negative scale wraps, then clamps to 63).
            const uint8_t ls = clamp_u8((uint8_t)nearest_int(inv_scale * scales[j]), 63);
            const uint8_t lm = clamp_u8((uint8_t)nearest_int(inv_min * mins[j]), 63);
            if (j < 4) {  // the layout scale_min_k4 reads (blocks.h)
                y[i].scales[j] = ls;
                y[i].scales[j + 4] = lm;
            } else {
                y[i].scales[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
                y[i].scales[j - 4] |= (uint8_t)((ls >> 4) << 6);
                y[i].scales[j] |= (uint8_t)((lm >> 4) << 6);
            }
        }
        y[i].d = f2h(max_scale / 63.f);
        y[i].dmin = f2h(max_min / 63.f);
        // Requantize each sub-block with the scales as stored; one whose
        // scale rounded to 0 keeps the levels of its fit.
        for (int j = 0; j < QK_K / 32; ++j) {
            int sc, m;
            scale_min_k4(j, y[i].scales, sc, m);
            const float d = h2f(y[i].d) * sc;
            if (d == 0.f) continue;
            const float dm = h2f(y[i].dmin) * m;
            for (int ii = 0; ii < 32; ++ii) {
                const int l = nearest_int((x[32 * j + ii] + dm) / d);
                L[32 * j + ii] = (uint8_t)(l < 0 ? 0 : l > 15 ? 15 : l);
            }
        }
        uint8_t *q = y[i].qs;
        for (int j = 0; j < QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; ++l) q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
    }
}

// Q6_K's sub-block fit (ggml's make_qx_quants with nmax 32 and x^2 weights):
// symmetric levels L[i] in [0, 2 nmax) (value L - nmax), searched over 19
// trial scales around nmax / max. Returns the scale (negative when the
// largest-magnitude element is positive, as ggml's).
float fit_symmetric(int n, int nmax, const float *x, int8_t *L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < kGroupMaxEps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    auto level = [&](float iscale, int i) {
        const int l = nearest_int(iscale * x[i]);
        return l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
    };
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = level(iscale, i);
        L[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 != 0.f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = level(iscale, i);
            const float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = (int8_t)(level(iscale, i) + nmax);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

void q6_k(const float *x, void *dst, int64_t n) {
    BlockQ6_K *y = (BlockQ6_K *)dst;
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            scales[ib] = fit_symmetric(16, 32, x + 16 * ib, L + 16 * ib);
            if (std::fabs(scales[ib]) > max_abs_scale) {
                max_abs_scale = std::fabs(scales[ib]);
                max_scale = scales[ib];
            }
        }
        if (max_abs_scale < kGroupMaxEps) {
            std::memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -128.f / max_scale;
        y[i].d = f2h(1 / iscale);
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const int s = nearest_int(iscale * scales[ib]);
            y[i].scales[ib] = (int8_t)(s < 127 ? s : 127);
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = h2f(y[i].d) * y[i].scales[j];
            if (d == 0.f) continue;  // keeps the levels of the fit, as ggml
            for (int ii = 0; ii < 16; ++ii) {
                const int l = nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = (int8_t)((l < -32 ? -32 : l > 31 ? 31 : l) + 32);
            }
        }
        uint8_t *ql = y[i].ql, *qh = y[i].qh;
        for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32)  // the layout of blocks.h's BlockQ6_K
            for (int l = 0; l < 32; ++l) {
                const uint8_t *u = (const uint8_t *)L + j + l;
                ql[l] = (uint8_t)((u[0] & 0xF) | (u[64] & 0xF) << 4);
                ql[l + 32] = (uint8_t)((u[32] & 0xF) | (u[96] & 0xF) << 4);
                qh[l] = (uint8_t)(u[0] >> 4 | (u[32] >> 4) << 2 | (u[64] >> 4) << 4 | (u[96] >> 4) << 6);
            }
    }
}

// ---- MXFP4 ------------------------------------------------------------------

// ggml's quantize_row_mxfp4_ref: e = floor(log2(amax)) - 2 + 127 (so amax /
// 2^(e-127) lies in [4, 8), near the largest e2m1 value 6), each element the
// code whose doubled value times 2^(e-128) is nearest, the first of equals
// (so +0 over -0, and ties go to the lower code). log2f is libm's, as
// ggml's; the float -> uint8_t conversion wraps modulo 256 as it does on
// x86 (an amax below 2^-125 gives a negative exponent there).
void mxfp4(const float *x, void *dst, int64_t n) {
    BlockMXFP4 *y = (BlockMXFP4 *)dst;
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        float amax = 0.f;
        for (int j = 0; j < QK; ++j)
            if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
        const uint8_t e = amax > 0.f ? (uint8_t)(int)(std::floor(log2f(amax)) - 2 + 127) : 0;
        const float d = e8m0_half(e);
        y[i].e = e;
        const auto best = [d](float v) {
            int bi = 0;
            float be = std::fabs(kMxfp4Values[0] * d - v);  // the product is exact: no FMA question
            for (int c = 1; c < 16; ++c) {
                const float err = std::fabs(kMxfp4Values[c] * d - v);
                if (err < be) {
                    bi = c;
                    be = err;
                }
            }
            return (uint8_t)bi;
        };
        for (int j = 0; j < QK / 2; ++j) y[i].qs[j] = (uint8_t)(best(x[j]) | best(x[QK / 2 + j]) << 4);
    }
}

using WeightQuantFn = void (*)(const float *, void *, int64_t);

WeightQuantFn weight_quantizer(DType t) {
    switch (t) {
    case DType::Q4_0: return q4_0;
    case DType::Q4_1: return q4_1;
    case DType::Q5_0: return q5_0;
    case DType::Q5_1: return q5_1;
    case DType::Q8_0: return q8_0;
    case DType::Q4_K: return q4_k;
    case DType::Q6_K: return q6_k;
    case DType::MXFP4: return mxfp4;
    default: return nullptr;
    }
}

} // namespace

bool can_quantize_weights(DType t) { return weight_quantizer(t) != nullptr; }

void quantize_weights(DType t, const float *src, void *dst, int64_t n) {
    const WeightQuantFn f = weight_quantizer(t);
    if (!f) throw std::invalid_argument("quantize_weights: no weight quantizer for type " + std::to_string((uint32_t)t));
    if (n % dtype_info(t).block_elems != 0)
        throw std::invalid_argument("quantize_weights: " + std::to_string(n) + " elements are not whole blocks");
    f(src, dst, n);
}

} // namespace vt
