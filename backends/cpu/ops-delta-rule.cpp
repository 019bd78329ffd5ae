// GATED_DELTA_RULE: the state recurrence of Gated DeltaNet (Qwen3-Next,
// Qwen3.5) and Kimi Delta Attention, for a batch of sequences that each
// continue from their own state slot.
//
// Per sequence and V head, the state S (dk x dv) evolves token by token:
//   S <- diag(exp(g_t)) S;  delta = beta_t (v_t - S^T k_t);  S <- S + k_t delta^T;  o_t = S^T q_t
// (g_t one log-decay per head, or one per key channel). The state is stored
// transposed, dv rows of dk (row j = column j of S), because the recurrence
// never mixes columns: row j over all tokens needs only v_t[j], k_t, q_t and
// its own dk values, so its dots and updates are contiguous and a row stays
// in L1 across a whole block of tokens.
//
// Two forms that agree to float rounding:
//  - recurrent: the recurrence as written, row by row over blocks of up to
//    64 tokens, through the kernel table's delta_rows where it has one (the
//    default for every sequence: the faster form on the CPU, see
//    kDeltaChunkedFrom);
//  - chunked (per-head gates, a sequence with at least chunked_from tokens in
//    the step): chunks of 64 tokens from the sequence's first token of the
//    step in the WY form. With gamma_t = g_1 + ... + g_t within the chunk
//    (in double), decay(t, s) = exp(gamma_t - gamma_s) (never exp(-gamma):
//    every factor is <= 1), and S0 the state before the chunk, unrolling the
//    recurrence gives for the rows t of the chunk
//      (I + L) Delta = beta V - diag(beta e^gamma) K S0,
//      L[t][s] = beta_t decay(t, s) k_t.k_s for s < t (strictly lower),
//    so Delta = U - W S0 with U = (I + L)^-1 (beta V), W = (I + L)^-1
//    (beta e^gamma K) (one forward substitution, no inverse), and
//      o_t = e^gamma_t S0^T q_t + sum_{s <= t} decay(t, s) (q_t.k_s) Delta_s
//      S  <- e^gamma_C S0 + sum_s decay(C, s) k_s Delta_s^T.
//    About the recurrence's multiply-adds (3 C dk dv in the row loop, plus
//    C^2 (dk + dv) for L, M, the substitution and the outputs), in the
//    shape of matrix products: what a device with matrix units wants. Here
//    it is portable loops, kept as the reference of that form.
// Which form a sequence takes depends only on its own token count, and a
// unit (sequence, V head) is computed by one thread from its own data, so a
// sequence's bits do not depend on the thread count or on the rest of the
// batch.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cpu-ops.h"
#include "cpu/kernels/kernels.h"
#include "recurrent-rows.h"
#include "state-index.h"

namespace vt::cpu {

namespace {

constexpr int64_t kChunk = kDeltaChunk;

struct DeltaShape {
    int64_t dk, dv, Hk, Hv, n_tok, n_slots;
    bool per_channel, interleaved;
    int64_t chunked_from;
};

DeltaShape delta_shape(const Node &n) {
    const DeltaRuleParams &p = n.params.gated_delta_rule;
    const Tensor *q = n.src[0], *v = n.src[2];
    return {q->ne[0],
            v->ne[0],
            q->ne[1],
            v->ne[1],
            q->ne[2],
            n.src[5]->ne[1],
            p.gate_per_channel != 0,
            p.k_head_mode == kDeltaHeadsInterleaved,
            p.chunked_from > 0 ? (int64_t)p.chunked_from : (int64_t)kDeltaChunkedFrom};
}

// ---- row primitives (dk values; kRowLanes partial sums, a fixed tree) ----------------------

// r = r d + a k (d one decay, or one per element when dvec), then returns r.q.
inline float update_dot(float *__restrict r, float d, const float *__restrict dvec, float a,
                        const float *__restrict k, const float *__restrict q, int64_t n) {
    float acc[kRowLanes] = {};
    int64_t i = 0;
    if (dvec) {
        for (; i + kRowLanes <= n; i += kRowLanes)
            for (int l = 0; l < kRowLanes; ++l) {
                r[i + l] = r[i + l] * dvec[i + l] + a * k[i + l];
                acc[l] += r[i + l] * q[i + l];
            }
    } else {
        for (; i + kRowLanes <= n; i += kRowLanes)
            for (int l = 0; l < kRowLanes; ++l) {
                r[i + l] = r[i + l] * d + a * k[i + l];
                acc[l] += r[i + l] * q[i + l];
            }
    }
    for (int l = 0; i < n; ++i, ++l) {
        r[i] = r[i] * (dvec ? dvec[i] : d) + a * k[i];
        acc[l] += r[i] * q[i];
    }
    return fold_lanes(acc);
}

// ---- scratch ------------------------------------------------------------------------

// One thread's buffers, each 16-float aligned.
struct Bufs {
    float *dec;         // recurrent: decay per token (kChunk), or per token and key channel (kChunk x dk)
    float *kdec;        // recurrent: the decayed keys dec_t k_t (kChunk x dk)
    float *L, *M;       // chunked: kChunk x kChunk (row t, column s)
    float *U, *D, *QS;  // kChunk x dv
    float *W, *KD;      // kChunk x dk
    float *eg;          // kChunk
    double *gam;        // kChunk
};

size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

// Carves a thread's buffers from base (nullptr: sizes only); returns the
// floats they take.
size_t carve(const DeltaShape &s, float *base, Bufs *b) {
    const size_t C = (size_t)kChunk, dk = (size_t)s.dk, dv = (size_t)s.dv;
    size_t at = 0;
    auto take = [&](float *&p, size_t n) {
        p = base ? base + at : nullptr;
        at += round16(n);
    };
    Bufs t{};
    take(t.dec, s.per_channel ? C * dk : C);
    take(t.kdec, C * dk);
    if (!s.per_channel) {
        take(t.L, C * C);
        take(t.M, C * C);
        take(t.U, C * dv);
        take(t.D, C * dv);
        take(t.QS, C * dv);
        take(t.W, C * dk);
        take(t.KD, C * dk);
        take(t.eg, C);
        float *g = nullptr;
        take(g, 2 * C);
        t.gam = reinterpret_cast<double *>(g);
    }
    if (b) *b = t;
    return at;
}

// One block of up to kChunk tokens of a unit: pointers to each token's
// vectors, its gate(s) and beta.
struct Block {
    int64_t n;
    const float *q[kChunk], *k[kChunk], *v[kChunk], *g[kChunk];
    float beta[kChunk];
    float *o[kChunk];
};

// ---- the two forms --------------------------------------------------------------------

// S (dv rows of dk) through the block's tokens, one token at a time. The
// decayed row's dot with k is taken as r.(d k), the decayed key shared by
// every row, so a row is written once per token.
void recurrent_block(float *S, const DeltaShape &s, const Block &blk, const Bufs &b) {
    const int64_t dk = s.dk, n = blk.n;
    // The decays (exp of the log-decays, once per token and key channel) and
    // the decayed keys.
    for (int64_t t = 0; t < n; ++t) {
        float *kd = b.kdec + t * dk;
        if (s.per_channel) {
            float *d = b.dec + t * dk;
            for (int64_t i = 0; i < dk; ++i) d[i] = std::exp(blk.g[t][i]);
            for (int64_t i = 0; i < dk; ++i) kd[i] = d[i] * blk.k[t][i];
        } else {
            const float d = b.dec[t] = std::exp(blk.g[t][0]);
            for (int64_t i = 0; i < dk; ++i) kd[i] = d * blk.k[t][i];
        }
    }
    const quant::Kernels &kern = quant::active_kernels();
    if (kern.delta_rows) {
        const quant::DeltaRows rows{n, dk, s.per_channel, blk.q, blk.k, blk.v, b.dec, b.kdec, blk.beta, blk.o};
        kern.delta_rows(S, 0, s.dv, rows);
        return;
    }
    for (int64_t j = 0; j < s.dv; ++j) {
        float *r = S + j * dk;
        for (int64_t t = 0; t < n; ++t) {
            const float kv = row_dot(r, b.kdec + t * dk, dk);
            const float d = blk.beta[t] * (blk.v[t][j] - kv);
            blk.o[t][j] = s.per_channel ? update_dot(r, 0.0f, b.dec + t * dk, d, blk.k[t], blk.q[t], dk)
                                        : update_dot(r, b.dec[t], nullptr, d, blk.k[t], blk.q[t], dk);
        }
    }
}

// S through one chunk of tokens in the WY form (per-head gates).
void chunked_block(float *S, const DeltaShape &s, const Block &blk, const Bufs &b) {
    const int64_t dk = s.dk, dv = s.dv, n = blk.n, C = kChunk;
    // Cumulative log-decays in double: a float sum would lose |gamma| u per
    // token, and gamma reaches hundreds within a chunk of strong decays.
    double acc = 0;
    for (int64_t t = 0; t < n; ++t) {
        acc += (double)blk.g[t][0];
        b.gam[t] = acc;
        b.eg[t] = std::exp((float)acc);
    }
    // decay(t, s) = exp(gamma_t - gamma_s) <= 1; L (strictly lower) and M
    // (lower with the diagonal).
    for (int64_t t = 0; t < n; ++t)
        for (int64_t u = 0; u <= t; ++u) {
            const float e = std::exp((float)(b.gam[t] - b.gam[u]));
            if (u < t) b.L[t * C + u] = blk.beta[t] * (e * row_dot(blk.k[t], blk.k[u], dk));
            b.M[t * C + u] = e * row_dot(blk.q[t], blk.k[u], dk);
        }
    // Forward substitution: U_t = beta_t v_t - sum_{s<t} L[t][s] U_s, W_t =
    // beta_t e^gamma_t k_t - sum_{s<t} L[t][s] W_s.
    for (int64_t t = 0; t < n; ++t) {
        float *u = b.U + t * dv, *w = b.W + t * dk;
        const float bt = blk.beta[t], bw = blk.beta[t] * b.eg[t];
        for (int64_t j = 0; j < dv; ++j) u[j] = bt * blk.v[t][j];
        for (int64_t i = 0; i < dk; ++i) w[i] = bw * blk.k[t][i];
        for (int64_t u0 = 0; u0 < t; ++u0) {
            const float l = -b.L[t * C + u0];
            row_axpy(u, l, b.U + u0 * dv, dv);
            row_axpy(w, l, b.W + u0 * dk, dk);
        }
    }
    // The keys as they reach the chunk's end: decay(n-1, s) k_s.
    for (int64_t t = 0; t < n; ++t) {
        const float f = std::exp((float)(b.gam[n - 1] - b.gam[t]));
        for (int64_t i = 0; i < dk; ++i) b.KD[t * dk + i] = f * blk.k[t][i];
    }
    // Per state row j: Delta_t[j] = U_t[j] - W_t.S0[j] and S0[j].q_t from the
    // old row, then the row's update.
    const float el = b.eg[n - 1];
    for (int64_t j = 0; j < dv; ++j) {
        float *r = S + j * dk;
        for (int64_t t = 0; t < n; ++t) {
            b.D[t * dv + j] = b.U[t * dv + j] - row_dot(b.W + t * dk, r, dk);
            b.QS[t * dv + j] = row_dot(blk.q[t], r, dk);
        }
        for (int64_t i = 0; i < dk; ++i) r[i] *= el;
        for (int64_t t = 0; t < n; ++t) row_axpy(r, b.D[t * dv + j], b.KD + t * dk, dk);
    }
    // o_t = e^gamma_t S0^T q_t + sum_{s <= t} M[t][s] Delta_s.
    for (int64_t t = 0; t < n; ++t) {
        float *o = blk.o[t];
        const float e = b.eg[t];
        for (int64_t j = 0; j < dv; ++j) o[j] = e * b.QS[t * dv + j];
        for (int64_t u = 0; u <= t; ++u) row_axpy(o, b.M[t * C + u], b.D + u * dv, dv);
    }
}

// ---- a unit: one sequence, one V head ----------------------------------------------------

void delta_unit(const Node &n, const DeltaShape &s, const SeqRun &r, int64_t h, const Bufs &b) {
    const Tensor *q = n.src[0], *k = n.src[1], *v = n.src[2], *g = n.src[3], *beta = n.src[4], *pool = n.src[5];
    const int64_t hk = s.interleaved ? h / (s.Hv / s.Hk) : h % s.Hk, dk = s.dk, dv = s.dv;
    float *S = reinterpret_cast<float *>(static_cast<uint8_t *>(pool->data) + (size_t)r.slot * pool->nb[1]) +
               h * dv * dk;
    if (r.fresh) std::memset(S, 0, (size_t)(dv * dk) * sizeof(float));
    const bool chunked = !s.per_channel && r.n >= s.chunked_from;
    Block blk;
    for (int64_t b0 = 0; b0 < r.n; b0 += kChunk) {
        blk.n = std::min(kChunk, r.n - b0);
        for (int64_t i = 0; i < blk.n; ++i) {
            const int64_t t = r.t0 + b0 + i;
            blk.q[i] = row_at<float>(q, hk, t);
            blk.k[i] = row_at<float>(k, hk, t);
            blk.v[i] = row_at<float>(v, h, t);
            // g: (Hv, n_tok), or (dk, Hv, n_tok) per key channel.
            blk.g[i] = s.per_channel ? row_at<float>(g, h, t) : row_at<float>(g, t, 0) + h;
            blk.beta[i] = row_at<float>(beta, t, 0)[h];
            blk.o[i] = static_cast<float *>(n.dst->data) + (t * s.Hv + h) * dv;
        }
        if (chunked) chunked_block(S, s, blk, b);
        else recurrent_block(S, s, blk, b);
    }
}

} // namespace

void op_gated_delta_rule(const Node &n, const OpCtx &c) {
    const DeltaShape s = delta_shape(n);
    Bufs b;
    const size_t per_thread = carve(s, nullptr, nullptr);
    carve(s, reinterpret_cast<float *>(c.wdata) + (size_t)c.ith * per_thread, &b);
    for_each_head_unit(n.src[6], s.n_tok, s.n_slots, s.Hv, s.dv, static_cast<float *>(n.dst->data), c.ith, c.nth,
                       [&](const SeqRun &r, int64_t h) { delta_unit(n, s, r, h, b); });
}

bool supports_gated_delta_rule(const Node &n) {
    const Tensor *q = n.src[0], *k = n.src[1], *v = n.src[2], *g = n.src[3], *beta = n.src[4], *pool = n.src[5];
    const DeltaRuleParams &p = n.params.gated_delta_rule;
    if (!q || !k || !v || !g || !beta || !pool || !state_index_ok(n.src[6])) return false;
    // f32 with contiguous rows (ne[0]); q, k, v, g, beta may be views.
    for (const Tensor *t : {q, k, v, g, beta, pool})
        if (t->type != DType::F32 || t->nb[0] != sizeof(float) || t->ne[3] != 1) return false;
    const int64_t dk = q->ne[0], Hk = q->ne[1], n_tok = q->ne[2], dv = v->ne[0], Hv = v->ne[1];
    const bool per_channel = p.gate_per_channel != 0;
    return same_shape(q, k) && v->ne[2] == n_tok && Hk > 0 && Hv % Hk == 0 &&
           (p.k_head_mode == kDeltaHeadsInterleaved || p.k_head_mode == kDeltaHeadsTiled) &&
           (per_channel ? g->ne[0] == dk && g->ne[1] == Hv && g->ne[2] == n_tok
                        : g->ne[0] == Hv && g->ne[1] == n_tok && g->ne[2] == 1) &&
           beta->ne[0] == Hv && beta->ne[1] == n_tok && beta->ne[2] == 1 && pool->ne[0] == dk * dv * Hv &&
           pool->ne[2] == 1 && is_f32(n.dst) && n.dst->ne[0] == dv && n.dst->ne[1] == Hv && n.dst->ne[2] == n_tok &&
           n.dst->ne[3] == 1;
}

size_t work_size_gated_delta_rule(const Node &n, int nth) {
    return (size_t)nth * carve(delta_shape(n), nullptr, nullptr) * sizeof(float);
}

} // namespace vt::cpu
