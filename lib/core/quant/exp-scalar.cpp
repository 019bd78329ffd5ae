// Scalar reference of the exp-based kernels (core/quant.h softmax and
// swiglu), which the CPU backend's SIMD tables reproduce bit for bit.
#include <cmath>

#include "core/quant.h"
#include "core/quant/expf-poly.h"

namespace vt::ref {

double softmax_row(float *x, int64_t n, float scale) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j) {
        x[j] *= scale;
        if (x[j] > mx) mx = x[j];
    }
    double sums[16] = {};
    for (int64_t j = 0; j < n; ++j) {
        x[j] = quant::expf_poly::exp_ref(x[j] - mx);
        sums[j % 16] += (double)x[j];
    }
    return quant::expf_poly::fold16(sums);
}

void swiglu_row(const float *g, const float *u, float *d, int64_t n) {
    for (int64_t i = 0; i < n; ++i) d[i] = g[i] / (1.0f + quant::expf_poly::exp_ref(-g[i])) * u[i];
}
} // namespace vt::ref
