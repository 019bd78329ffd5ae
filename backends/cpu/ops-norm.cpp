// RMSNorm with the weight multiply fused. Numerics as ggml: the sum of squares
// accumulates in double, the scale is 1/sqrtf(mean + eps) in float, and the
// row is scaled before the weight multiply.
#include <cmath>

#include "cpu-ops.h"

namespace vt::cpu {

void op_rms_norm(const Node &n, const OpCtx &c) {
    const Tensor *x = n.src[0];
    const float *w = static_cast<const float *>(n.src[1]->data);
    const float eps = n.params.rms_norm.eps;
    const int64_t ne0 = x->ne[0];
    int64_t b, e;
    split(x->nrows(), c.ith, c.nth, b, e);
    for (int64_t r = b; r < e; ++r) {
        const float *xr = static_cast<const float *>(x->data) + r * ne0;
        float *yr = static_cast<float *>(n.dst->data) + r * ne0;
        double sum = 0.0;
        for (int64_t i = 0; i < ne0; ++i) sum += (double)(xr[i] * xr[i]);
        const float mean = (float)(sum / (double)ne0);
        const float scale = 1.0f / std::sqrt(mean + eps);
        for (int64_t i = 0; i < ne0; ++i) yr[i] = (xr[i] * scale) * w[i];
    }
}

bool supports_rms_norm(const Node &n) {
    return is_f32(n.src[0]) && is_f32(n.src[1]) && is_f32(n.dst) && same_shape(n.src[0], n.dst) &&
           n.src[1]->nelements() == n.src[0]->ne[0];
}
size_t work_size_rms_norm(const Node &, int) { return 0; }

} // namespace vt::cpu
