// CONV1D_CAUSAL: the short depthwise causal convolution in front of the
// linear-attention mixers (Gated DeltaNet, Kimi Delta Attention, Mamba-2),
// over a batch of sequences that each continue from their own state slot
// (the last kernel-1 inputs). Threads split the channels: each owns its
// channels in both phases (outputs from the old tail, then the new tail
// written back), so no thread reads a tail another rewrites and no barrier
// is needed; an element's arithmetic does not depend on the split.
#include <cmath>
#include <cstring>

#include "cpu-ops.h"
#include "state-index.h"

namespace vt::cpu {

namespace {
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }
} // namespace

void op_conv1d_causal(const Node &n, const OpCtx &c) {
    const Tensor *x = n.src[0], *wt = n.src[1], *bt = n.src[2], *pool = n.src[3];
    const int64_t C = x->ne[0], n_tok = x->ne[1], K = wt->ne[0], T = K - 1;  // T: the tail's inputs
    const float *w = static_cast<const float *>(wt->data);                     // (K, C): w[ch * K + j]
    const float *bias = bt ? static_cast<const float *>(bt->data) : nullptr;    // (C)
    const bool act = n.params.conv1d_causal.silu != 0;
    // Row t of x (C) and of dst; slot s of the pool (T * C: input j of channel ch at j * C + ch).
    auto xrow = [&](int64_t t) {
        return reinterpret_cast<const float *>(static_cast<const uint8_t *>(x->data) + (size_t)t * x->nb[1]);
    };
    auto drow = [&](int64_t t) { return static_cast<float *>(n.dst->data) + t * C; };
    auto slot_at = [&](int64_t s) {
        return reinterpret_cast<float *>(static_cast<uint8_t *>(pool->data) + (size_t)s * pool->nb[1]);
    };
    int64_t c0, c1;
    split(C, c.ith, c.nth, c0, c1);

    const int64_t covered = for_each_seq(n.src[4], n_tok, pool->ne[1], [&](int64_t, const SeqRun &r) {
        if (!r.valid) {
            for (int64_t t = r.t0; t < r.t0 + r.n; ++t) std::memset(drow(t) + c0, 0, (size_t)(c1 - c0) * sizeof(float));
            return;
        }
        float *st = slot_at(r.slot);
        // out[ch, t] = sum_j w[ch, j] * xin(t - T + j), j in order, then + bias:
        // xin(p) is this step's x at p >= 0, else the tail's input T + p
        // (zero when fresh). The sum builds up in dst.
        for (int64_t t = 0; t < r.n; ++t) {
            float *d = drow(r.t0 + t);
            for (int64_t ch = c0; ch < c1; ++ch) d[ch] = 0.0f;
            for (int64_t j = 0; j < K; ++j) {
                const int64_t p = t - T + j;
                if (p >= 0) {
                    const float *xs = xrow(r.t0 + p);
                    for (int64_t ch = c0; ch < c1; ++ch) d[ch] += w[ch * K + j] * xs[ch];
                } else if (r.fresh) {
                    for (int64_t ch = c0; ch < c1; ++ch) d[ch] += w[ch * K + j] * 0.0f;
                } else {
                    const float *xs = st + (T + p) * C;
                    for (int64_t ch = c0; ch < c1; ++ch) d[ch] += w[ch * K + j] * xs[ch];
                }
            }
            if (bias)
                for (int64_t ch = c0; ch < c1; ++ch) d[ch] += bias[ch];
            if (act)
                for (int64_t ch = c0; ch < c1; ++ch) d[ch] = silu(d[ch]);
        }
        // The new tail: the last T inputs of (tail, this step's x). Input j
        // comes from position p = n - T + j: x when p >= 0, else the old
        // tail's T + p = n + j > j, not yet overwritten (j ascends).
        for (int64_t j = 0; j < T; ++j) {
            const int64_t p = r.n - T + j;
            float *dst = st + j * C;
            if (p >= 0) std::memcpy(dst + c0, xrow(r.t0 + p) + c0, (size_t)(c1 - c0) * sizeof(float));
            else if (r.fresh) std::memset(dst + c0, 0, (size_t)(c1 - c0) * sizeof(float));
            else std::memcpy(dst + c0, st + (T + p) * C + c0, (size_t)(c1 - c0) * sizeof(float));
        }
    });
    // Tokens no sequence covers.
    for (int64_t t = covered; t < n_tok; ++t) std::memset(drow(t) + c0, 0, (size_t)(c1 - c0) * sizeof(float));
}

bool supports_conv1d_causal(const Node &n) {
    const Tensor *x = n.src[0], *w = n.src[1], *b = n.src[2], *pool = n.src[3];
    if (!x || !w || !pool || !state_index_ok(n.src[4])) return false;
    const int64_t C = x->ne[0], n_tok = x->ne[1], K = w->ne[0];
    return x->type == DType::F32 && x->nb[0] == sizeof(float) && x->ne[2] == 1 && x->ne[3] == 1 && is_f32(w) &&
           K >= 2 && w->ne[1] == C && w->ne[2] == 1 && w->ne[3] == 1 &&
           (!b || (is_f32(b) && b->nelements() == C)) && pool->type == DType::F32 &&
           pool->nb[0] == sizeof(float) && pool->ne[0] == (K - 1) * C && pool->ne[2] == 1 && pool->ne[3] == 1 &&
           is_f32(n.dst) && n.dst->ne[0] == C && n.dst->ne[1] == n_tok && n.dst->ne[2] == 1 && n.dst->ne[3] == 1;
}
size_t work_size_conv1d_causal(const Node &, int) { return 0; }

} // namespace vt::cpu
