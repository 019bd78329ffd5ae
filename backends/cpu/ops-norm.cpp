// RMSNorm, with the weight multiply fused (or none), and its gated form.
// Numerics as ggml: the sum of squares accumulates in double, the scale is
// 1/sqrtf(mean + eps) in float, and the row is scaled before the weight
// multiply.
#include <cmath>

#include "cpu-ops.h"

namespace vt::cpu {

namespace {
// 1 / sqrt(mean(x^2) + eps) of one row, as ggml computes it.
float rms_scale(const float *x, int64_t ne0, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < ne0; ++i) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)ne0);
    return 1.0f / std::sqrt(mean + eps);
}

// rms_scale of 4 rows of x at once: the same chain per row, in the same
// order (so the same bits), but 4 independent chains in flight. One row's
// chain of dependent double adds is latency-bound (~4 cycles each: ~1 us for
// a 576-wide row); a batched decode normalizes 16 or 64 rows per node.
void rms_scale4(const float *x, int64_t ne0, float eps, float *scale) {
    const float *x0 = x, *x1 = x + ne0, *x2 = x + 2 * ne0, *x3 = x + 3 * ne0;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (int64_t i = 0; i < ne0; ++i) {
        s0 += (double)(x0[i] * x0[i]);
        s1 += (double)(x1[i] * x1[i]);
        s2 += (double)(x2[i] * x2[i]);
        s3 += (double)(x3[i] * x3[i]);
    }
    const double s[4] = {s0, s1, s2, s3};
    for (int j = 0; j < 4; ++j) scale[j] = 1.0f / std::sqrt((float)(s[j] / (double)ne0) + eps);
}
} // namespace

void op_rms_norm(const Node &n, const OpCtx &c) {
    const Tensor *x = n.src[0];
    const float *w = n.src[1] ? static_cast<const float *>(n.src[1]->data) : nullptr;
    const float eps = n.params.rms_norm.eps;
    const int64_t ne0 = x->ne[0];
    int64_t b, e;
    split(x->nrows(), c.ith, c.nth, b, e);
    float scales[4];
    for (int64_t r = b; r < e; ++r) {
        const float *xr = static_cast<const float *>(x->data) + r * ne0;
        float *yr = static_cast<float *>(n.dst->data) + r * ne0;
        // Rows b, b + 4, ... start a group of 4 when 4 are left.
        const int64_t j = (r - b) % 4, group_end = r - j + 4;
        if (j == 0 && group_end <= e) rms_scale4(xr, ne0, eps, scales);
        const float scale = group_end <= e ? scales[j] : rms_scale(xr, ne0, eps);
        if (w) {
            for (int64_t i = 0; i < ne0; ++i) yr[i] = (xr[i] * scale) * w[i];
        } else {
            for (int64_t i = 0; i < ne0; ++i) yr[i] = xr[i] * scale;
        }
    }
}

bool supports_rms_norm(const Node &n) {
    return is_f32(n.src[0]) && is_f32(n.dst) && same_shape(n.src[0], n.dst) &&
           (!n.src[1] || (is_f32(n.src[1]) && n.src[1]->nelements() == n.src[0]->ne[0]));
}
size_t work_size_rms_norm(const Node &, int) { return 0; }

// Two orders over groups of a row (GatedNormParams::group; 0: the whole row):
//  - kGateAfterNorm: y = ((x * scale) * w) * act(z), transformers'
//    Qwen3NextRMSNormGated (and Kimi's sigmoid-gated norm) normalize in float,
//    multiply by the weight, then by the activated gate;
//  - kGateBeforeNorm: g = x * act(z), y = (g * scale(g)) * w, Mamba's
//    MambaRMSNormGated (norm_before_gate=False), one norm per group of
//    ne0 / n_groups (NemotronH's group_size = intermediate / n_groups).
// g is built in dst first (dst never aliases x or z), then normalized in place.
void op_rms_norm_gated(const Node &n, const OpCtx &c) {
    const Tensor *x = n.src[0];
    const float *w = static_cast<const float *>(n.src[1]->data);
    const GatedNormParams &p = n.params.rms_norm_gated;
    const int64_t ne0 = x->ne[0], gs = p.group > 0 ? p.group : ne0;
    const bool silu = p.gate == kGateSilu;
    auto act = [silu](float z) { return silu ? z / (1.0f + std::exp(-z)) : 1.0f / (1.0f + std::exp(-z)); };
    int64_t b, e;
    split(x->nrows(), c.ith, c.nth, b, e);
    for (int64_t r = b; r < e; ++r) {
        // z may be a view (the gate split off a projection).
        const float *xr = static_cast<const float *>(x->data) + r * ne0, *zr = row_at(n.src[2], r);
        float *yr = static_cast<float *>(n.dst->data) + r * ne0;
        if (p.order == kGateBeforeNorm) {
            for (int64_t i = 0; i < ne0; ++i) yr[i] = xr[i] * act(zr[i]);
            for (int64_t g0 = 0; g0 < ne0; g0 += gs) {
                const float scale = rms_scale(yr + g0, gs, p.eps);
                for (int64_t i = g0; i < g0 + gs; ++i) yr[i] = (yr[i] * scale) * w[i];
            }
        } else {
            for (int64_t g0 = 0; g0 < ne0; g0 += gs) {
                const float scale = rms_scale(xr + g0, gs, p.eps);
                for (int64_t i = g0; i < g0 + gs; ++i) yr[i] = ((xr[i] * scale) * w[i]) * act(zr[i]);
            }
        }
    }
}

bool supports_rms_norm_gated(const Node &n) {
    const GatedNormParams &p = n.params.rms_norm_gated;
    const int64_t ne0 = n.src[0] ? n.src[0]->ne[0] : 0;
    return is_f32(n.src[0]) && is_f32(n.src[1]) && f32_rows(n.src[2]) && is_f32(n.dst) &&
           same_shape(n.src[0], n.dst) && same_shape(n.src[0], n.src[2]) &&
           n.src[1]->nelements() == ne0 && (p.gate == kGateSilu || p.gate == kGateSigmoid) &&
           (p.order == kGateAfterNorm || p.order == kGateBeforeNorm) && p.group >= 0 &&
           (p.group == 0 || ne0 % p.group == 0);
}
size_t work_size_rms_norm_gated(const Node &, int) { return 0; }

} // namespace vt::cpu
