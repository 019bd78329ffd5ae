// Causal grouped-query attention over a per-sequence f16 KV cache.
//
// Numerics follow llama.cpp's CPU path without flash attention, so that
// logits agree with it: K and V are stored as f16; the query is rounded to
// f16 before QK^T (its matmul converts src1 to the f16 vec_dot_type); the
// softmax runs in f32 with a double sum; the probabilities are rounded to
// f16 before multiplying V (again the matmul's src1 conversion).
#include <cmath>
#include <cstring>

#include "core/quant.h"
#include "cpu-ops.h"

namespace vt::cpu {

namespace {
struct AttnShape {
    int64_t head_dim, n_head, n_head_kv, n_tok, n_past, kv_row;
};
AttnShape attn_shape(const Node &n) {
    AttnShape s;
    s.head_dim = n.params.i[1];
    s.n_head = n.src[0]->ne[0] / s.head_dim;
    s.n_head_kv = n.src[1]->ne[0] / s.head_dim;
    s.n_tok = n.src[0]->ne[1];
    s.n_past = n.params.i[0];
    s.kv_row = s.head_dim * s.n_head_kv;
    return s;
}
} // namespace

size_t attn_work_size(const Node &n, int nth) {
    const AttnShape s = attn_shape(n);
    const int64_t n_kv = s.n_past + s.n_tok;
    // Per thread: scores (n_kv f32) + f16-rounded probabilities as f32 + query.
    return (size_t)nth * (size_t)(2 * n_kv + s.head_dim + 16) * sizeof(float);
}

void op_attn(const Node &n, const OpCtx &c) {
    const AttnShape s = attn_shape(n);
    const Tensor *kc = n.src[3], *vc = n.src[4];
    const float scale = n.params.f[0];

    // Phase 1: append this step's K and V rows to the caches as f16.
    {
        int64_t b, e;
        split(s.n_tok, c.ith, c.nth, b, e);
        for (int64_t t = b; t < e; ++t) {
            const float *kr = static_cast<const float *>(n.src[1]->data) + t * s.kv_row;
            const float *vr = static_cast<const float *>(n.src[2]->data) + t * s.kv_row;
            uint16_t *kd = reinterpret_cast<uint16_t *>(static_cast<uint8_t *>(kc->data) + (size_t)(s.n_past + t) * kc->nb[1]);
            uint16_t *vd = reinterpret_cast<uint16_t *>(static_cast<uint8_t *>(vc->data) + (size_t)(s.n_past + t) * vc->nb[1]);
            for (int64_t i = 0; i < s.kv_row; ++i) {
                kd[i] = f32_to_fp16(kr[i]);
                vd[i] = f32_to_fp16(vr[i]);
            }
        }
        c.barrier();
    }

    // Phase 2: one (token, head) pair at a time.
    const int64_t n_kv_max = s.n_past + s.n_tok;
    float *scores = reinterpret_cast<float *>(c.wdata) + (size_t)c.ith * (size_t)(2 * n_kv_max + s.head_dim + 16);
    float *probs = scores + n_kv_max;
    float *q16 = probs + n_kv_max;
    const int64_t group = s.n_head / s.n_head_kv;
    int64_t b, e;
    split(s.n_tok * s.n_head, c.ith, c.nth, b, e);
    for (int64_t idx = b; idx < e; ++idx) {
        const int64_t t = idx / s.n_head, h = idx % s.n_head, hk = h / group;
        const int64_t n_kv = s.n_past + t + 1;  // causal: keys up to this token
        const float *q = static_cast<const float *>(n.src[0]->data) + t * s.n_head * s.head_dim + h * s.head_dim;
        for (int64_t d = 0; d < s.head_dim; ++d) q16[d] = fp16_to_f32(f32_to_fp16(q[d]));

        float mx = -INFINITY;
        for (int64_t j = 0; j < n_kv; ++j) {
            const uint16_t *kr = reinterpret_cast<const uint16_t *>(static_cast<const uint8_t *>(kc->data) + (size_t)j * kc->nb[1]) + hk * s.head_dim;
            float dot = 0.0f;
            for (int64_t d = 0; d < s.head_dim; ++d) dot += q16[d] * fp16_to_f32(kr[d]);
            scores[j] = dot * scale;
            if (scores[j] > mx) mx = scores[j];
        }
        double sum = 0.0;
        for (int64_t j = 0; j < n_kv; ++j) {
            probs[j] = std::exp(scores[j] - mx);
            sum += (double)probs[j];
        }
        const float inv = (float)(1.0 / sum);
        for (int64_t j = 0; j < n_kv; ++j) probs[j] = fp16_to_f32(f32_to_fp16(probs[j] * inv));

        float *out = static_cast<float *>(n.dst->data) + t * s.n_head * s.head_dim + h * s.head_dim;
        for (int64_t d = 0; d < s.head_dim; ++d) out[d] = 0.0f;
        for (int64_t j = 0; j < n_kv; ++j) {
            const uint16_t *vr = reinterpret_cast<const uint16_t *>(static_cast<const uint8_t *>(vc->data) + (size_t)j * vc->nb[1]) + hk * s.head_dim;
            const float p = probs[j];
            for (int64_t d = 0; d < s.head_dim; ++d) out[d] += p * fp16_to_f32(vr[d]);
        }
    }
}

} // namespace vt::cpu
