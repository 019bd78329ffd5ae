// Rotary position embedding. Mode kRopeAdjacent rotates adjacent pairs
// (x[2i], x[2i+1]), the layout GGUF Llama weights use after conversion;
// kRopeNeox rotates (x[i], x[i + n_rot/2]) (Hugging Face's rotate_half, and
// GGUF Qwen, Gemma, Phi-3). Angles follow ggml's rope cache exactly:
// theta_i = pos * base^(-2i/n_rot) by repeated float multiplication, divided
// by the frequency factor of pair i when there is one (Llama 3.1's
// rope_freqs, Phi-3's LongRoPE), then YaRN's ramp and magnitude terms
// (ggml's rope_yarn) when ext_factor is set, so the rounding matches
// llama.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu-ops.h"

namespace vt::cpu {

namespace {
constexpr int kMaxHeadDim = 1024;

float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return (float)n_dims * std::log((float)n_ctx_orig / (n_rot * 2.0f * (float)M_PI)) / (2.0f * std::log(base));
}

// The (cos, sin) of every rotated pair at one position.
void rope_cache(const RopeParams &p, float pos, const float *factors, float *cache) {
    const float theta_scale = std::pow(p.freq_base, -2.0f / (float)p.n_rot);
    float corr[2] = {0.0f, 0.0f};
    if (p.ext_factor != 0.0f) {
        // transformers' truncate false (yarn_exact) keeps them fractional.
        const float fast = yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.freq_base);
        const float slow = yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.freq_base);
        const float start = p.yarn_exact ? fast : std::floor(fast), end = p.yarn_exact ? slow : std::ceil(slow);
        corr[0] = std::max(0.0f, start);
        corr[1] = std::min((float)(p.n_rot - 1), end);
    }
    float theta = pos;
    for (int i = 0; i < p.n_rot / 2; ++i) {
        const float extrap = factors ? theta / factors[i] : theta;
        const float interp = p.freq_scale * extrap;
        float th = interp, mscale = p.attn_factor;
        if (p.ext_factor != 0.0f) {
            const float y = ((float)i - corr[0]) / std::max(0.001f, corr[1] - corr[0]);
            const float ramp = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
            th = interp * (1.0f - ramp) + extrap * ramp;
            mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
        }
        cache[2 * i] = std::cos(th) * mscale;
        cache[2 * i + 1] = std::sin(th) * mscale;
        theta *= theta_scale;
    }
}
} // namespace

void op_rope(const Node &n, const OpCtx &c) {
    const RopeParams &p = n.params.rope;
    const Tensor *x = n.src[0];
    const int32_t *pos = static_cast<const int32_t *>(n.src[1]->data);
    const float *factors = n.src[2] ? static_cast<const float *>(n.src[2]->data) : nullptr;
    const int64_t head_dim = x->ne[0], n_head = x->ne[1], n_tok = x->ne[2];
    const int64_t row = head_dim * n_head;
    const int half = p.n_rot / 2;

    float cache[kMaxHeadDim];  // (cos, sin) per rotated pair; supports() bounds n_rot <= 1024
    int64_t b, e;
    split(n_tok, c.ith, c.nth, b, e);
    for (int64_t t = b; t < e; ++t) {
        rope_cache(p, (float)pos[t], factors, cache);
        const float *src = static_cast<const float *>(x->data) + t * row;
        float *dst = static_cast<float *>(n.dst->data) + t * row;
        if (dst != src) std::memcpy(dst, src, (size_t)row * sizeof(float));
        for (int64_t h = 0; h < n_head; ++h) {
            float *v = dst + h * head_dim;
            for (int i = 0; i < half; ++i) {
                const float cs = cache[2 * i], sn = cache[2 * i + 1];
                const int i0 = p.mode == kRopeAdjacent ? 2 * i : i;
                const int i1 = p.mode == kRopeAdjacent ? 2 * i + 1 : i + half;
                const float x0 = v[i0], x1 = v[i1];
                v[i0] = x0 * cs - x1 * sn;
                v[i1] = x0 * sn + x1 * cs;
            }
        }
    }
}

bool supports_rope(const Node &n) {
    const RopeParams &p = n.params.rope;
    const Tensor *x = n.src[0], *f = n.src[2];
    return is_f32(x) && is_f32(n.dst) && same_shape(x, n.dst) && x->ne[3] == 1 && n.src[1]->type == DType::I32 &&
           n.src[1]->ne[0] == x->ne[2] && (p.mode == kRopeAdjacent || p.mode == kRopeNeox) && p.n_rot > 0 &&
           p.n_rot % 2 == 0 && p.n_rot <= x->ne[0] && x->ne[0] <= kMaxHeadDim && p.freq_base > 0.0f &&
           p.freq_scale > 0.0f && (p.ext_factor == 0.0f || p.n_ctx_orig > 0) &&
           (!f || (is_f32(f) && f->nelements() == p.n_rot / 2));
}
size_t work_size_rope(const Node &, int) { return 0; }

} // namespace vt::cpu
