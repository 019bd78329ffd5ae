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
} // namespace

void op_rms_norm(const Node &n, const OpCtx &c) {
    const Tensor *x = n.src[0];
    const float *w = n.src[1] ? static_cast<const float *>(n.src[1]->data) : nullptr;
    const float eps = n.params.rms_norm.eps;
    const int64_t ne0 = x->ne[0];
    int64_t b, e;
    split(x->nrows(), c.ith, c.nth, b, e);
    for (int64_t r = b; r < e; ++r) {
        const float *xr = static_cast<const float *>(x->data) + r * ne0;
        float *yr = static_cast<float *>(n.dst->data) + r * ne0;
        const float scale = rms_scale(xr, ne0, eps);
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
