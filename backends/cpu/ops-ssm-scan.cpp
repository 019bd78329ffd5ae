// SSM_SCAN: Mamba-2's selective state-space scan (NemotronH, Granite 4
// hybrid, Falcon-H1), for a batch of sequences that each continue from their
// own state slot.
//
// Per sequence and head h the state S (P x N, row p of N floats, as the
// slot stores it) evolves token by token:
//   d_t = clamp(softplus(dt_t));  S <- S * a_t + xd_t B_t^T;  y_t = S C_t
// with a_t = expf(d_t A_h) one decay per head and token and xd_t = d_t x_t.
// Rows never mix: row p over all tokens needs only xd_t[p], a_t, B_t and
// C_t, so a row stays in L1 across a block of tokens and its update and dot
// are contiguous.
//
// Two forms that agree to float rounding:
//  - recurrent: the recurrence as written, row by row over blocks of up to
//    kBlock tokens, through the kernel table's ssm_rows where it has one;
//  - chunked (state-space duality, a sequence with at least chunked_from
//    tokens in the step): chunks of chunk_size tokens from the sequence's
//    first token of the step. With gamma_t = (d_1 + ... + d_t) A_h within
//    the chunk (in double) and decay(t, s) = exp(gamma_t - gamma_s) <= 1,
//    unrolling the recurrence from S0, the state before the chunk:
//      y_t = e^gamma_t S0 C_t + sum_{s <= t} decay(t, s) (C_t.B_s) xd_s
//      S  <- e^gamma_last S0 + sum_s decay(last, s) xd_s B_s^T
//    (transformers' torch_forward: Y_diag + Y_off and the chunk states), in
//    the shape of matrix products.
// By default (kSsmChunkedFrom) every sequence takes the recurrent form: on
// the CPU it measured faster at NemotronH's shape (perf-ssm-scan, H 64, P
// 64, N 128, G 8, one 512-token prompt, 1 thread, CPU time on a loaded
// 2-core AMD EPYC with AVX-512: recurrent 25-26 ms, chunked 31-32 ms with
// chunks of 128 and 40-43 ms with 256; one decode token 59 us). Both do
// about the same arithmetic per token and head (recurrent 3 P N; chunked
// P N twice for S0 C and the state, plus Q N / 2 for C B^T and Q P / 2 for
// the outputs), and the recurrent form also gives a sequence the same bits
// however its tokens are split into steps. The chunked form stays for
// devices where matrix units pay (chunked_from selects it).
// Which form a sequence takes depends only on its own token count, and a
// unit (sequence, head) is computed by one thread from its own data, so a
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

constexpr int64_t kBlock = 64;  // tokens per block of the recurrent form

struct SsmShape {
    int64_t P, H, N, G, n_tok, n_slots;
    int64_t chunk, chunked_from;
    float dt_min, dt_max;  // dt_max <= 0: none
};

SsmShape ssm_shape(const Node &n) {
    const SsmScanParams &p = n.params.ssm_scan;
    const Tensor *x = n.src[0], *B = n.src[3];
    return {x->ne[0],
            x->ne[1],
            B->ne[0],
            B->ne[1],
            x->ne[2],
            n.src[5]->ne[1],
            p.chunk_size > 0 ? (int64_t)p.chunk_size : (int64_t)kSsmChunk,
            p.chunked_from > 0 ? (int64_t)p.chunked_from : (int64_t)kSsmChunkedFrom,
            p.dt_min,
            p.dt_max};
}

// softplus (torch's, threshold 20, as kUnarySoftplus) then the clamp.
inline float step_size(float dt, const SsmShape &s) {
    float d = dt > 20.0f ? dt : std::log1p(std::exp(dt));
    d = std::max(d, s.dt_min);
    if (s.dt_max > 0.0f) d = std::min(d, s.dt_max);
    return d;
}

// ---- scratch ------------------------------------------------------------------------

size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

// One thread's buffers, each 16-float aligned.
struct Bufs {
    float *d;       // per token of a block or chunk: the step size
    float *a;       // recurrent: the decay expf(d A)
    float *xd;      // Q x P: d_t x_t
    float *M;       // chunked: Q x Q, decay(t, s) (C_t.B_s) (row t, column s <= t)
    float *QS;      // chunked: Q x P, S0 C_t
    float *eg;      // chunked: Q, e^gamma_t
    float *w;       // chunked: Q, decay(last, s) for the state update
    double *gam;    // chunked: Q
    float *gf;      // chunked, the kernel table's form: gamma_t in float (padded to 16)
    float *ks;      // chunked, the kernel table's form: its scratch
};

size_t carve(const SsmShape &s, float *base, Bufs *b) {
    const size_t Q = (size_t)std::max(s.chunk, kBlock), P = (size_t)s.P;
    size_t at = 0;
    auto take = [&](float *&p, size_t n) {
        p = base ? base + at : nullptr;
        at += round16(n);
    };
    Bufs t{};
    take(t.d, Q);
    take(t.a, Q);
    take(t.xd, Q * P);
    const bool chunked = s.chunked_from < INT32_MAX;
    if (chunked) {
        take(t.M, Q * Q);
        take(t.QS, Q * P);
        take(t.eg, Q);
        take(t.w, Q);
        float *g = nullptr;
        take(g, 2 * Q);
        t.gam = reinterpret_cast<double *>(g);
        take(t.gf, Q);
        take(t.ks, quant::ssm_chunk_floats((int64_t)Q, s.N, s.P));
    }
    if (b) *b = t;
    return at;
}

// A block or chunk of a unit's tokens: pointers to each token's vectors.
struct Span {
    int64_t n;
    const float *x[kSsmChunkMax], *B[kSsmChunkMax], *C[kSsmChunkMax];
    float dt[kSsmChunkMax];
    float *y[kSsmChunkMax];
};

// ---- the two forms --------------------------------------------------------------------

void recurrent_block(float *S, const SsmShape &s, float A, const Span &sp, const Bufs &b) {
    const int64_t P = s.P, N = s.N, n = sp.n;
    for (int64_t t = 0; t < n; ++t) {
        const float d = step_size(sp.dt[t], s);
        b.a[t] = std::exp(d * A);
        for (int64_t p = 0; p < P; ++p) b.xd[t * P + p] = d * sp.x[t][p];
    }
    const quant::Kernels &kern = quant::active_kernels();
    if (kern.ssm_rows) {
        const quant::SsmRows rows{n, N, P, b.a, b.xd, sp.B, sp.C, sp.y};
        kern.ssm_rows(S, 0, P, rows);
        return;
    }
    for (int64_t p = 0; p < P; ++p) {
        float *r = S + p * N;
        for (int64_t t = 0; t < n; ++t) {
            const float a = b.a[t], u = b.xd[t * P + p];
            const float *Bt = sp.B[t], *Ct = sp.C[t];
            float acc[kRowLanes] = {};
            int64_t i = 0;
            for (; i + kRowLanes <= N; i += kRowLanes)
                for (int l = 0; l < kRowLanes; ++l) {
                    r[i + l] = r[i + l] * a + u * Bt[i + l];
                    acc[l] += r[i + l] * Ct[i + l];
                }
            for (int l = 0; i < N; ++i, ++l) {
                r[i] = r[i] * a + u * Bt[i];
                acc[l] += r[i] * Ct[i];
            }
            sp.y[t][p] = fold_lanes(acc);
        }
    }
}

void chunked_block(float *S, const SsmShape &s, float A, const Span &sp, const Bufs &b) {
    const int64_t P = s.P, N = s.N, n = sp.n, Q = std::max(s.chunk, kBlock);
    // gamma_t in double: a float running sum would lose |gamma| u per token.
    double acc = 0;
    for (int64_t t = 0; t < n; ++t) {
        const float d = b.d[t] = step_size(sp.dt[t], s);
        for (int64_t p = 0; p < P; ++p) b.xd[t * P + p] = d * sp.x[t][p];
        acc += (double)d * (double)A;
        b.gam[t] = acc;
        b.eg[t] = std::exp((float)acc);
    }
    for (int64_t u = 0; u < n; ++u) b.w[u] = std::exp((float)(b.gam[n - 1] - b.gam[u]));
    const quant::Kernels &kern = quant::active_kernels();
    if (kern.ssm_chunk) {
        // The decays from gamma in float: exp(g_t - g_u) is off by <= 1.5u
        // |gamma_t| more than from the double (|gamma_u| <= |gamma_t|).
        for (int64_t t = 0; t < n; ++t) b.gf[t] = (float)b.gam[t];
        for (int64_t t = n; t < (int64_t)round16((size_t)n); ++t) b.gf[t] = 0.0f;
        const quant::SsmChunk ch{n, N, P, b.gf, b.eg, b.w, b.xd, sp.B, sp.C, sp.y, b.ks};
        kern.ssm_chunk(S, ch);
        return;
    }
    for (int64_t t = 0; t < n; ++t)
        for (int64_t u = 0; u <= t; ++u)
            b.M[t * Q + u] = std::exp((float)(b.gam[t] - b.gam[u])) * row_dot(sp.C[t], sp.B[u], N);
    // Per state row p: S0[p].C_t for every token from the old row, then the
    // row's update.
    const float el = b.eg[n - 1];
    for (int64_t p = 0; p < P; ++p) {
        float *r = S + p * N;
        for (int64_t t = 0; t < n; ++t) b.QS[t * P + p] = row_dot(r, sp.C[t], N);
        for (int64_t i = 0; i < N; ++i) r[i] *= el;
        for (int64_t u = 0; u < n; ++u) row_axpy(r, b.w[u] * b.xd[u * P + p], sp.B[u], N);
    }
    for (int64_t t = 0; t < n; ++t) {
        float *y = sp.y[t];
        const float e = b.eg[t];
        for (int64_t p = 0; p < P; ++p) y[p] = e * b.QS[t * P + p];
        for (int64_t u = 0; u <= t; ++u) row_axpy(y, b.M[t * Q + u], b.xd + u * P, P);
    }
}

// ---- a unit: one sequence, one head --------------------------------------------------------

void ssm_unit(const Node &n, const SsmShape &s, const SeqRun &r, int64_t h, const Bufs &b) {
    const Tensor *x = n.src[0], *dt = n.src[1], *B = n.src[3], *C = n.src[4], *pool = n.src[5];
    const int64_t g = h / (s.H / s.G), P = s.P, N = s.N;
    const float A = static_cast<const float *>(n.src[2]->data)[h];
    float *S = reinterpret_cast<float *>(static_cast<uint8_t *>(pool->data) + (size_t)r.slot * pool->nb[1]) +
               h * P * N;
    if (r.fresh) std::memset(S, 0, (size_t)(P * N) * sizeof(float));
    const bool chunked = r.n >= s.chunked_from;
    const int64_t step = chunked ? s.chunk : kBlock;
    Span sp;
    for (int64_t b0 = 0; b0 < r.n; b0 += step) {
        sp.n = std::min(step, r.n - b0);
        for (int64_t i = 0; i < sp.n; ++i) {
            const int64_t t = r.t0 + b0 + i;
            sp.x[i] = row_at<float>(x, h, t);
            sp.B[i] = row_at<float>(B, g, t);
            sp.C[i] = row_at<float>(C, g, t);
            sp.dt[i] = row_at<float>(dt, t, 0)[h];
            sp.y[i] = static_cast<float *>(n.dst->data) + (t * s.H + h) * P;
        }
        if (chunked) chunked_block(S, s, A, sp, b);
        else recurrent_block(S, s, A, sp, b);
    }
}

} // namespace

void op_ssm_scan(const Node &n, const OpCtx &c) {
    const SsmShape s = ssm_shape(n);
    Bufs b;
    const size_t per_thread = carve(s, nullptr, nullptr);
    carve(s, reinterpret_cast<float *>(c.wdata) + (size_t)c.ith * per_thread, &b);
    for_each_head_unit(n.src[6], s.n_tok, s.n_slots, s.H, s.P, static_cast<float *>(n.dst->data), c.ith, c.nth,
                       [&](const SeqRun &r, int64_t h) { ssm_unit(n, s, r, h, b); });
}

bool supports_ssm_scan(const Node &n) {
    const Tensor *x = n.src[0], *dt = n.src[1], *A = n.src[2], *B = n.src[3], *C = n.src[4], *pool = n.src[5];
    const SsmScanParams &p = n.params.ssm_scan;
    if (!x || !dt || !A || !B || !C || !pool || !state_index_ok(n.src[6])) return false;
    for (const Tensor *t : {x, dt, B, C, pool})
        if (t->type != DType::F32 || t->nb[0] != sizeof(float) || t->ne[3] != 1) return false;
    const int64_t P = x->ne[0], H = x->ne[1], n_tok = x->ne[2], N = B->ne[0], G = B->ne[1];
    return P > 0 && N > 0 && G > 0 && H % G == 0 && is_f32(A) && A->nelements() == H && dt->ne[0] == H &&
           dt->ne[1] == n_tok && dt->ne[2] == 1 && same_shape(B, C) && B->ne[2] == n_tok &&
           pool->ne[0] == N * P * H && pool->ne[2] == 1 && p.chunk_size >= 0 && p.chunk_size <= kSsmChunkMax &&
           p.chunked_from >= 0 && !std::isnan(p.dt_min) && !std::isnan(p.dt_max) && is_f32(n.dst) &&
           n.dst->ne[0] == P && n.dst->ne[1] == H && n.dst->ne[2] == n_tok && n.dst->ne[3] == 1;
}

size_t work_size_ssm_scan(const Node &n, int nth) {
    return (size_t)nth * carve(ssm_shape(n), nullptr, nullptr) * sizeof(float);
}

} // namespace vt::cpu
