// Element-wise functions (UNARY) and the L2 row norm (L2_NORM): the gates
// and normalizations of the linear-attention layers (Gated DeltaNet, Kimi
// Delta Attention). They feed decays that compound over a whole sequence, so
// they go through libm's float functions (expf, log1pf: under an ulp or two)
// rather than a faster polynomial.
#include <cmath>

#include "cpu-ops.h"

namespace vt::cpu {

namespace {
template <typename F>
void map(const Node &n, const OpCtx &c, F f) {
    const float *a = static_cast<const float *>(n.src[0]->data);
    float *d = static_cast<float *>(n.dst->data);
    int64_t b, e;
    split(n.dst->nelements(), c.ith, c.nth, b, e);
    for (int64_t i = b; i < e; ++i) d[i] = f(a[i]);
}
} // namespace

void op_unary(const Node &n, const OpCtx &c) {
    switch (n.params.unary.kind) {
    case kUnarySigmoid: return map(n, c, [](float x) { return 1.0f / (1.0f + std::exp(-x)); });
    case kUnarySilu: return map(n, c, [](float x) { return x / (1.0f + std::exp(-x)); });
    // torch.nn.functional.softplus (beta 1, threshold 20): linear above the
    // threshold, where log1p(exp(x)) rounds to x anyway.
    case kUnarySoftplus: return map(n, c, [](float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); });
    case kUnaryExp: return map(n, c, [](float x) { return std::exp(x); });
    // NemotronH's relu2, torch.square(relu(x)): NaN passes through as torch's relu lets it.
    case kUnaryReluSqr: return map(n, c, [](float x) {
        const float r = x < 0.0f ? 0.0f : x;
        return r * r;
    });
    // transformers' logits / c, tanh, * c: three roundings in this order.
    case kUnarySoftcap: {
        const float cap = n.params.unary.cap;
        return map(n, c, [cap](float x) { return std::tanh(x / cap) * cap; });
    }
    default: return;
    }
}
bool supports_unary(const Node &n) {
    const int32_t k = n.params.unary.kind;
    return is_f32(n.src[0]) && is_f32(n.dst) && same_shape(n.src[0], n.dst) && k >= kUnarySigmoid &&
           k <= kUnarySoftcap && (k != kUnarySoftcap || n.params.unary.cap > 0.0f);
}
size_t work_size_unary(const Node &, int) { return 0; }

// dst row = x * (1 / sqrtf(sum x^2 + eps)), the sum in double (as RMS_NORM's).
void op_l2_norm(const Node &n, const OpCtx &c) {
    const Tensor *x = n.src[0];
    const float eps = n.params.l2_norm.eps;
    const int64_t ne0 = x->ne[0];
    int64_t b, e;
    split(x->nrows(), c.ith, c.nth, b, e);
    for (int64_t r = b; r < e; ++r) {
        const float *xr = row_at(x, r);
        float *yr = static_cast<float *>(n.dst->data) + r * ne0;
        double sum = 0.0;
        for (int64_t i = 0; i < ne0; ++i) sum += (double)(xr[i] * xr[i]);
        const float inv = 1.0f / std::sqrt((float)sum + eps);
        for (int64_t i = 0; i < ne0; ++i) yr[i] = xr[i] * inv;
    }
}
bool supports_l2_norm(const Node &n) {
    return f32_rows(n.src[0]) && is_f32(n.dst) && same_shape(n.src[0], n.dst);
}
size_t work_size_l2_norm(const Node &, int) { return 0; }

} // namespace vt::cpu
