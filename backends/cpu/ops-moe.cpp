// Mixture-of-experts ops: routing (MOE_TOPK, MOE_WEIGHTS), the experts'
// products (MUL_MAT_ID) and their weighted sum (MOE_SUM).
//
// MUL_MAT_ID groups the step's (token, slot) rows by expert, as llama.cpp's
// MUL_MAT_ID and vLLM's fused MoE do: phase 1 sorts the rows by expert
// (thread 0) and converts each activation row once (a row that every slot
// of a token reads: once per token) into a buffer grouped by expert; phase 2 runs, for every expert that some row chose, one product of
// its weights with only its rows, each thread taking a slice of the expert's
// weight rows (so a decode step reads just the chosen experts, each once);
// phase 3 scatters the grouped results to (slot, token) order. The product is
// matmul::dot_rows, whose outputs do not depend on how many rows share it:
// a token gets the same bits alone or in a batch.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu-ops.h"
#include "matmul.h"

namespace vt::cpu {

namespace {
constexpr size_t kAlign = 64;
size_t align_up(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }

struct IdLayout {
    int64_t k, n_slot, m, n_out, n_expert, rows;  // rows = n_slot * m
    bool broadcast;                               // src1 is (k, 1, m): one row per token for every slot
    bool convert_tokens;                          // broadcast rows converted once per token, then copied
    size_t act_bytes;                             // one grouped activation row
    size_t off_order, off_tokens, off_acts, off_outs, total;  // byte offsets into the scratch
};

IdLayout id_layout(const Node &n) {
    const Tensor &w = *n.src[0], &x = *n.src[1], *ids = n.src[2];
    IdLayout l;
    l.k = w.ne[0];
    l.n_out = w.ne[1];
    l.n_expert = w.ne[2];
    // Without ids, slot j of every token uses matrix j.
    l.n_slot = ids ? ids->ne[0] : w.ne[2];
    l.m = ids ? ids->ne[1] : x.ne[2];
    l.rows = l.n_slot * l.m;
    l.broadcast = x.ne[1] == 1;
    l.convert_tokens = l.broadcast && l.n_slot > 1 && matmul::converts_acts(w);
    l.act_bytes = matmul::converts_acts(w) ? matmul::act_row_bytes(w, l.k) : (size_t)l.k * sizeof(float);
    // Scratch: expert offsets (n_expert + 1) and fill cursors (n_expert),
    // the sorted row order, each token's converted row (convert_tokens), the
    // grouped activation rows, the grouped outputs.
    l.off_order = align_up((size_t)(2 * l.n_expert + 1) * sizeof(int64_t));
    l.off_tokens = l.off_order + align_up((size_t)l.rows * sizeof(int64_t));
    l.off_acts = l.off_tokens + (l.convert_tokens ? align_up((size_t)l.m * l.act_bytes) : 0);
    l.off_outs = l.off_acts + align_up((size_t)l.rows * l.act_bytes);
    l.total = l.off_outs + align_up((size_t)l.rows * (size_t)l.n_out * sizeof(float));
    return l;
}

// The gating scores of one token's router logits.
void gate_scores(const float *logits, int64_t n, int32_t gating, float *out) {
    if (gating == kMoeSoftmaxTopk) {  // chosen on the logits; weighed by op_moe_weights
        std::copy(logits, logits + n, out);
        return;
    }
    if (gating == kMoeSigmoid) {
        for (int64_t e = 0; e < n; ++e) out[e] = 1.0f / (1.0f + std::exp(-logits[e]));
        return;
    }
    float mx = logits[0];
    for (int64_t e = 1; e < n; ++e) mx = std::max(mx, logits[e]);
    float sum = 0.0f;
    for (int64_t e = 0; e < n; ++e) sum += out[e] = std::exp(logits[e] - mx);
    for (int64_t e = 0; e < n; ++e) out[e] /= sum;
}

// The index of the largest of v[0..n) not yet taken: the first on ties.
int64_t best_untaken(const float *v, const uint8_t *taken, int64_t n) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; ++i)
        if (!taken[i] && (best < 0 || v[i] > v[best])) best = i;
    return best;
}
} // namespace

// ---- MUL_MAT_ID --------------------------------------------------------------

bool supports_mul_mat_id(const Node &n) {
    const Tensor *w = n.src[0], *x = n.src[1], *ids = n.src[2], *d = n.dst;
    // Activations: f32 rows, any row and token strides.
    if (!(x->type == DType::F32 && x->nb[0] == sizeof(float) && is_f32(d))) return false;
    if (ids && !(ids->type == DType::I32 && ids->is_contiguous() && ids->ne[2] == 1 && ids->ne[3] == 1)) return false;
    const int64_t n_slot = ids ? ids->ne[0] : w->ne[2], m = ids ? ids->ne[1] : x->ne[2];
    return w->ne[3] == 1 && matmul::weight_ok(*w) && x->ne[0] == w->ne[0] &&
           (x->ne[1] == 1 || x->ne[1] == n_slot) && x->ne[2] == m && x->ne[3] == 1 && d->ne[0] == w->ne[1] &&
           d->ne[1] == n_slot && d->ne[2] == m && d->ne[3] == 1;
}

size_t work_size_mul_mat_id(const Node &n, int) { return id_layout(n).total; }

void op_mul_mat_id(const Node &n, const OpCtx &c) {
    const Tensor &w = *n.src[0], &x = *n.src[1];
    const int32_t *ids = n.src[2] ? static_cast<const int32_t *>(n.src[2]->data) : nullptr;
    const IdLayout l = id_layout(n);
    auto id_of = [&](int64_t r) { return ids ? (int64_t)ids[r] : r % l.n_slot; };
    int64_t *offsets = reinterpret_cast<int64_t *>(c.wdata);  // expert e's rows: [offsets[e], offsets[e + 1])
    int64_t *order = reinterpret_cast<int64_t *>(c.wdata + l.off_order);  // grouped row g -> dst row
    uint8_t *tokens = c.wdata + l.off_tokens;
    uint8_t *acts = c.wdata + l.off_acts;
    float *outs = reinterpret_cast<float *>(c.wdata + l.off_outs);
    auto x_row = [&](int64_t t, int64_t j) {
        return reinterpret_cast<const float *>(static_cast<const uint8_t *>(x.data) + (size_t)t * x.nb[2] +
                                               (size_t)j * x.nb[1]);
    };

    // Phase 1: a counting sort of the rows by expert, stable (token order
    // within an expert). A row with an id outside the experts is left out
    // (its output is zero): the router never makes one.
    if (c.ith == 0) {
        std::fill(offsets, offsets + l.n_expert + 1, 0);
        for (int64_t r = 0; r < l.rows; ++r)
            if (id_of(r) >= 0 && id_of(r) < l.n_expert) ++offsets[id_of(r) + 1];
        for (int64_t e = 0; e < l.n_expert; ++e) offsets[e + 1] += offsets[e];
        int64_t *cursor = offsets + l.n_expert + 1;
        std::copy(offsets, offsets + l.n_expert, cursor);
        for (int64_t r = 0; r < l.rows; ++r)
            if (id_of(r) >= 0 && id_of(r) < l.n_expert) order[cursor[id_of(r)]++] = r;
    }
    int64_t b, e;
    if (l.convert_tokens) {  // beside the sort: each token's row once, not once per slot
        split(l.m, c.ith, c.nth, b, e);
        for (int64_t t = b; t < e; ++t) matmul::convert_act_row(w, x_row(t, 0), tokens + (size_t)t * l.act_bytes, l.k);
    }
    c.barrier();
    const int64_t used = offsets[l.n_expert];
    split(used, c.ith, c.nth, b, e);
    for (int64_t g = b; g < e; ++g) {
        const int64_t r = order[g], t = r / l.n_slot, j = l.broadcast ? 0 : r % l.n_slot;
        uint8_t *dst = acts + (size_t)g * l.act_bytes;
        if (l.convert_tokens) std::memcpy(dst, tokens + (size_t)t * l.act_bytes, l.act_bytes);
        else if (matmul::converts_acts(w)) matmul::convert_act_row(w, x_row(t, j), dst, l.k);
        else std::memcpy(dst, x_row(t, j), (size_t)l.k * sizeof(float));
    }
    c.barrier();

    // Phase 2: each chosen expert's weights with its rows.
    int64_t rb, re;
    matmul::split_rows(w, l.n_out, c.ith, c.nth, rb, re);
    for (int64_t ex = 0; ex < l.n_expert; ++ex) {
        const int64_t g0 = offsets[ex], cnt = offsets[ex + 1] - g0;
        if (cnt == 0) continue;
        matmul::dot_rows(w, static_cast<const uint8_t *>(w.data) + (size_t)ex * w.nb[2], acts + (size_t)g0 * l.act_bytes,
                         l.act_bytes, cnt, outs + (size_t)g0 * l.n_out, (size_t)l.n_out, rb, re);
    }
    c.barrier();

    // Phase 3: grouped rows to their (slot, token) rows of dst.
    float *dst = static_cast<float *>(n.dst->data);
    split(l.rows, c.ith, c.nth, b, e);
    if (used < l.rows)  // rows left out: zeros
        for (int64_t r = b; r < e; ++r)
            if (id_of(r) < 0 || id_of(r) >= l.n_expert) std::memset(dst + r * l.n_out, 0, (size_t)l.n_out * sizeof(float));
    split(used, c.ith, c.nth, b, e);
    for (int64_t g = b; g < e; ++g)
        std::memcpy(dst + order[g] * l.n_out, outs + g * l.n_out, (size_t)l.n_out * sizeof(float));
}

// ---- routing -----------------------------------------------------------------

namespace {
bool route_ok(const Node &n, DType out) {
    const Tensor *lg = n.src[0], *d = n.dst;
    const MoeRouteParams &p = n.op == Op::MOE_TOPK ? n.params.moe_topk : n.params.moe_weights;
    const int64_t n_expert = lg->ne[0];
    if (!(is_f32(lg) && d->type == out && d->is_contiguous() && d->ne[0] == p.k && d->ne[1] == lg->nrows() &&
          d->nrows() == lg->nrows() && p.k > 0 && p.k <= n_expert &&
          (p.gating == kMoeSoftmax || p.gating == kMoeSigmoid || p.gating == kMoeSoftmaxTopk)))
        return false;
    if (p.n_group > 1 && (n_expert % p.n_group != 0 || n_expert / p.n_group < 2 || p.topk_group < 1 ||
                          p.topk_group > p.n_group || (int64_t)p.topk_group * (n_expert / p.n_group) < p.k))
        return false;
    return true;
}
// Per-thread scratch of the routing ops: scores, choices and group sums
// (n_group <= n_expert) as floats, then a taken flag per expert.
size_t route_scratch(int64_t n_expert) { return align_up((size_t)n_expert * (3 * sizeof(float) + 1)); }
} // namespace

bool supports_moe_topk(const Node &n) {
    const Tensor *bias = n.src[1];
    return route_ok(n, DType::I32) && (!bias || (is_f32(bias) && bias->nelements() == n.src[0]->ne[0]));
}

size_t work_size_moe_topk(const Node &n, int nth) { return (size_t)nth * route_scratch(n.src[0]->ne[0]); }

void op_moe_topk(const Node &n, const OpCtx &c) {
    const MoeRouteParams &p = n.params.moe_topk;
    const int64_t E = n.src[0]->ne[0], m = n.src[0]->nrows();
    const float *bias = n.src[1] ? static_cast<const float *>(n.src[1]->data) : nullptr;
    uint8_t *s = c.wdata + (size_t)c.ith * route_scratch(E);
    float *scores = reinterpret_cast<float *>(s), *choice = scores + E, *group_sum = choice + E;
    uint8_t *taken = reinterpret_cast<uint8_t *>(group_sum + E);
    int64_t b, e;
    split(m, c.ith, c.nth, b, e);
    for (int64_t t = b; t < e; ++t) {
        gate_scores(static_cast<const float *>(n.src[0]->data) + t * E, E, p.gating, scores);
        for (int64_t i = 0; i < E; ++i) choice[i] = bias ? scores[i] + bias[i] : scores[i];
        if (p.n_group > 1) {
            // A group's score: the sum of its two best choices. Experts of
            // groups not among the topk_group best cannot be chosen
            // (transformers' DeepseekV3TopkRouter masks them with -inf).
            const int64_t gs = E / p.n_group;
            for (int64_t g = 0; g < p.n_group; ++g) {
                const float *v = choice + g * gs;
                int64_t a = 0, b2 = -1;
                for (int64_t i = 1; i < gs; ++i)
                    if (v[i] > v[a]) a = i;
                for (int64_t i = 0; i < gs; ++i)
                    if (i != a && (b2 < 0 || v[i] > v[b2])) b2 = i;
                group_sum[g] = v[a] + v[b2];
            }
            std::fill(taken, taken + p.n_group, 0);
            for (int32_t i = 0; i < p.topk_group; ++i) taken[best_untaken(group_sum, taken, p.n_group)] = 1;
            for (int64_t g = 0; g < p.n_group; ++g)
                if (!taken[g]) std::fill(choice + g * gs, choice + (g + 1) * gs, -INFINITY);
        }
        std::fill(taken, taken + E, 0);
        int32_t *out = static_cast<int32_t *>(n.dst->data) + t * p.k;
        for (int32_t i = 0; i < p.k; ++i) {
            const int64_t best = best_untaken(choice, taken, E);
            taken[best] = 1;
            out[i] = (int32_t)best;
        }
    }
}

bool supports_moe_weights(const Node &n) {
    const Tensor *ids = n.src[1];
    return route_ok(n, DType::F32) && ids && ids->type == DType::I32 && ids->is_contiguous() &&
           ids->ne[0] == n.dst->ne[0] && ids->nrows() == n.dst->nrows();
}

size_t work_size_moe_weights(const Node &n, int nth) { return (size_t)nth * route_scratch(n.src[0]->ne[0]); }

void op_moe_weights(const Node &n, const OpCtx &c) {
    const MoeRouteParams &p = n.params.moe_weights;
    const int64_t E = n.src[0]->ne[0], m = n.src[0]->nrows();
    float *scores = reinterpret_cast<float *>(c.wdata + (size_t)c.ith * route_scratch(E));
    int64_t b, e;
    split(m, c.ith, c.nth, b, e);
    for (int64_t t = b; t < e; ++t) {
        gate_scores(static_cast<const float *>(n.src[0]->data) + t * E, E, p.gating, scores);
        const int32_t *id = static_cast<const int32_t *>(n.src[1]->data) + t * p.k;
        float *out = static_cast<float *>(n.dst->data) + t * p.k;
        float sum = 0.0f;
        if (p.gating == kMoeSoftmaxTopk) {
            // A softmax over the chosen experts' logits alone (transformers'
            // softmax of topk's values); an id outside the experts weighs 0.
            float mx = -INFINITY;
            for (int32_t i = 0; i < p.k; ++i)
                if (id[i] >= 0 && id[i] < E) mx = std::max(mx, scores[id[i]]);
            float z = 0.0f;
            for (int32_t i = 0; i < p.k; ++i) z += out[i] = id[i] >= 0 && id[i] < E ? std::exp(scores[id[i]] - mx) : 0.0f;
            for (int32_t i = 0; i < p.k; ++i) sum += out[i] = z > 0.0f ? out[i] / z : 0.0f;
        } else {
            for (int32_t i = 0; i < p.k; ++i) sum += out[i] = id[i] >= 0 && id[i] < E ? scores[id[i]] : 0.0f;
        }
        const float f = p.norm && sum > 0.0f ? p.scale / sum : p.scale;
        for (int32_t i = 0; i < p.k; ++i) out[i] *= f;
    }
}

// ---- MOE_SUM -----------------------------------------------------------------

bool supports_moe_sum(const Node &n) {
    const Tensor *x = n.src[0], *w = n.src[1], *d = n.dst;
    return is_f32(x) && is_f32(w) && is_f32(d) && w->ne[0] == x->ne[1] && w->ne[1] == x->ne[2] && w->nrows() == x->ne[2] &&
           x->ne[3] == 1 && d->ne[0] == x->ne[0] && d->ne[1] == x->ne[2] && d->nrows() == x->ne[2];
}

size_t work_size_moe_sum(const Node &, int) { return 0; }

void op_moe_sum(const Node &n, const OpCtx &c) {
    const int64_t E = n.src[0]->ne[0], k = n.src[0]->ne[1], m = n.src[0]->ne[2];
    const float *x = static_cast<const float *>(n.src[0]->data), *w = static_cast<const float *>(n.src[1]->data);
    float *dst = static_cast<float *>(n.dst->data);
    int64_t b, e;
    split(m, c.ith, c.nth, b, e);
    for (int64_t t = b; t < e; ++t) {
        float *o = dst + t * E;
        const float *xt = x + t * k * E;
        for (int64_t i = 0; i < E; ++i) o[i] = xt[i] * w[t * k];
        for (int64_t j = 1; j < k; ++j) {
            const float wj = w[t * k + j];
            const float *xj = xt + j * E;
            for (int64_t i = 0; i < E; ++i) o[i] += xj[i] * wj;
        }
    }
}

} // namespace vt::cpu
