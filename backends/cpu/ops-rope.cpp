// Rotary position embedding. mode 0 rotates adjacent pairs (x[2i], x[2i+1]),
// the layout GGUF Llama weights use after conversion; mode 2 (NeoX) rotates
// (x[i], x[i + n_rot/2]). Angles follow ggml: theta_i = pos * base^(-2i/n_rot)
// computed by repeated float multiplication, as its rope cache does, so the
// rounding matches llama.cpp.
#include <cmath>
#include <cstring>

#include "cpu-ops.h"

namespace vt::cpu {

void op_rope(const Node &n, const OpCtx &c) {
    const Tensor *x = n.src[0];
    const int32_t *pos = static_cast<const int32_t *>(n.src[1]->data);
    const int n_rot = n.params.i[0];
    const int mode = n.params.i[1];
    const int head_dim = n.params.i[2];
    const float base = n.params.f[0];
    const float freq_scale = n.params.f[1];
    const int64_t n_tok = x->ne[1];
    const int64_t row = x->ne[0];
    const int64_t n_head = row / head_dim;
    const float theta_scale = std::pow(base, -2.0f / (float)n_rot);

    float cache[1024];  // (cos, sin) per rotated pair; supports() bounds n_rot <= 1024
    int64_t b, e;
    split(n_tok, c.ith, c.nth, b, e);
    for (int64_t t = b; t < e; ++t) {
        float theta = (float)pos[t];
        for (int i = 0; i < n_rot / 2; ++i) {
            const float th = freq_scale * theta;
            cache[2 * i] = std::cos(th);
            cache[2 * i + 1] = std::sin(th);
            theta *= theta_scale;
        }
        const float *src = static_cast<const float *>(x->data) + t * row;
        float *dst = static_cast<float *>(n.dst->data) + t * row;
        if (dst != src) std::memcpy(dst, src, (size_t)row * sizeof(float));
        for (int64_t h = 0; h < n_head; ++h) {
            float *v = dst + h * head_dim;
            for (int i = 0; i < n_rot / 2; ++i) {
                const float cs = cache[2 * i], sn = cache[2 * i + 1];
                const int i0 = mode == 0 ? 2 * i : i;
                const int i1 = mode == 0 ? 2 * i + 1 : i + n_rot / 2;
                const float x0 = v[i0], x1 = v[i1];
                v[i0] = x0 * cs - x1 * sn;
                v[i1] = x0 * sn + x1 * cs;
            }
        }
    }
}

} // namespace vt::cpu
