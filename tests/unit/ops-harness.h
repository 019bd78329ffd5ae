// Plumbing shared by the op tests (test-ops.cpp, test-ops-layers.cpp,
// test-ops-moe.cpp, test-ops-lora.cpp): a CPU backend per thread count,
// graphs bound to host buffers, runs on 1 and 3 (or 1, 2 and 3) threads that
// must agree bit for bit, tolerance checks, MUL_MAT's double reference, and
// the attention tests' batches, runs and double reference. Test-only: each
// test binary includes it once.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/graph.h"
#include "core/quant.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/repack.h"
#include "common/check-close.h"
#include "common/random-blocks.h"

using namespace vt;
using vt::test::check_close;


using vt::test::fp16_fields;
using vt::test::put_f16;

namespace {

using Bytes = std::vector<uint8_t>;
constexpr double kU = 0x1p-24;
constexpr int kThreads[2] = {1, 3};

// ---- backend and graph plumbing ----------------------------------------------

// One CPU stream per thread count (1 to 4), created at first use, freed at
// exit: each count its own, so a run asked for on 2 threads does not reuse a
// 3-thread stream.
inline vt_stream *cpu(int nth) {
    static StreamPtr s[4];
    REQUIRE(nth >= 1);
    REQUIRE(nth <= 4);
    if (!s[nth - 1]) s[nth - 1] = stream_create(cpu_device(), (uint32_t)nth);
    return s[nth - 1].get();
}

// Plans g and binds it to an arena buffer of the CPU device.
struct Bound {
    explicit Bound(Graph &g) {
        buffer = buffer_alloc(cpu_device(), g.plan() + 64, "test arena");
        arena = static_cast<uint8_t *>(buffer->iface->get_base(buffer.get()));
        g.bind(arena, buffer.get());
    }
    BufferPtr buffer;
    uint8_t *arena = nullptr;
};

inline vt_status compute(int nth, const Graph &g) {
    vt_stream *s = cpu(nth);
    return s->iface->graph_compute(s, g.nodes().data(), (int)g.nodes().size());
}

inline bool supports(const Node &n) {
    vt_device *d = cpu_device();
    return d->iface->supports_op(d, &n);
}

template <class T> void put(Tensor *t, const std::vector<T> &v) {
    REQUIRE(v.size() * sizeof(T) == t->nbytes());
    std::memcpy(t->data, v.data(), t->nbytes());
}

inline std::vector<float> get(const Tensor *t) {
    std::vector<float> v((size_t)t->nelements());
    std::memcpy(v.data(), t->data, v.size() * sizeof(float));
    return v;
}

inline bool same_bits(const void *a, const void *b, size_t n) { return std::memcmp(a, b, n) == 0; }

// Runs the graph with 1 and 3 threads (fill() rewrites every input and any
// borrowed tensor the op mutates before each run); checks that both results
// agree bit for bit; returns the 1-thread result of `out`. snap(), if given,
// captures extra state (e.g. caches) after each run, compared bitwise too.
inline std::vector<float> run_both(Graph &g, Tensor *out, const std::function<void()> &fill,
                            const std::function<Bytes()> &snap = nullptr) {
    std::vector<float> res[2];
    Bytes extra[2];
    for (int r = 0; r < 2; ++r) {
        fill();
        REQUIRE(compute(kThreads[r], g) == VT_OK);
        res[r] = get(out);
        if (snap) extra[r] = snap();
    }
    INFO("1 thread vs 3 threads");
    CHECK(same_bits(res[0].data(), res[1].data(), res[0].size() * sizeof(float)));
    if (snap) CHECK(extra[0] == extra[1]);
    return res[0];
}



// Runs g on 1, 2 and 3 threads (fill() rewrites the inputs first, out is
// set to all-ones bytes: NaN as f32, -1 as i32, so that a run that writes
// nothing cannot pass for one that agrees); the runs must agree bit for
// bit. Returns out's contents as T.
template <class T = float> std::vector<T> run_123(Graph &g, const Tensor *out, const std::function<void()> &fill) {
    constexpr int kNth[] = {1, 2, 3};
    std::vector<T> res[3];
    for (int r = 0; r < 3; ++r) {
        fill();
        std::memset(out->data, 0xff, out->nbytes());
        REQUIRE(compute(kNth[r], g) == VT_OK);
        res[r].resize(out->nbytes() / sizeof(T));
        std::memcpy(res[r].data(), out->data, out->nbytes());
    }
    for (int r = 1; r < 3; ++r) {
        INFO("1 thread vs " << kNth[r]);
        CHECK(same_bits(res[0].data(), res[r].data(), out->nbytes()));
    }
    return res[0];
}

// ---- random data -------------------------------------------------------------


// A weight matrix of `rows` rows of n elements: floats ~ N(0, 1); block types
// random bytes with finite, moderate fp16 scales and mins.
inline Bytes random_weights(DType t, int64_t n, int64_t rows, std::mt19937 &rng) {
    const int64_t total = n * rows;
    Bytes b(row_bytes(t, n) * (size_t)rows);
    std::normal_distribution<float> nd(0.f, 1.f);
    if (t == DType::F32 || t == DType::F16 || t == DType::BF16) {
        for (int64_t i = 0; i < total; ++i) {
            const float v = nd(rng);
            if (t == DType::F32) {
                std::memcpy(&b[4 * i], &v, 4);
            } else {
                const uint16_t h = t == DType::F16 ? f32_to_fp16(v) : f32_to_bf16(v);
                std::memcpy(&b[2 * i], &h, 2);
            }
        }
        return b;
    }
    vt::test::randomize_blocks(t, b, rng);
    return b;
}

inline std::vector<float> normal(size_t n, std::mt19937 &rng, float sigma = 1.f) {
    std::normal_distribution<float> nd(0.f, sigma);
    std::vector<float> v(n);
    for (auto &x : v) x = nd(rng);
    return v;
}

// ---- MUL_MAT's reference ---------------------------------------------------------
//
// Shared by MUL_MAT (test-ops.cpp) and MUL_MAT_ID (test-ops-moe.cpp), whose
// experts' products are the same kernels (backends/cpu/matmul.h).

// Every weight type the matmul kernels read in the GGUF row layout.
constexpr DType kMatmulTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,
                                  DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                                  DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::MXFP4,
                                  DType::IQ4_NL, DType::IQ4_XS, DType::NVFP4, DType::Q1_0, DType::Q2_0,
                                  DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S,
                                  DType::IQ1_S, DType::IQ1_M,
                                  DType::FP8_E4M3, DType::TQ1_0, DType::TQ2_0};
// The types with an _X16 layout (x16-layout.h).
constexpr DType kX16Types[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                               DType::Q4_K, DType::Q6_K, DType::F16,  DType::BF16, DType::MXFP4,
                               DType::IQ4_NL, DType::IQ4_XS, DType::NVFP4, DType::Q1_0, DType::Q2_0, DType::TQ1_0, DType::TQ2_0};

// A row length for t's tests: odd for plain floats, an odd number of blocks
// otherwise.
inline int64_t matmul_k(DType t) {
    const int64_t be = dtype_info(t).block_elems;
    return be == 1 ? 301 : be == 32 ? 32 * 13 : 256 * 3;
}

// Per-element bounds on the activation conversion error (|x_eff - x| where
// x_eff is what the kernel's integer or f16 dot effectively multiplies):
// e[i] for the terms multiplied by the weight's scale part, emin[i] for those
// multiplied by its min part (Q4_1/Q5_1 use the block sum s instead).
//  F32: 0.   F16: |x| 2^-11.   BF16: |x| 2^-8 (round to nearest).
//  Q8_0 (per 32-block, amax): d = amax/127, q = round(x/d), stored d16 = fp16(d):
//    |q d16 - x| <= d/2 + |q| |d16 - d| <= amax/254 + amax 2^-11.
//  Q8_1: as Q8_0 for the scale part; the min part uses s16 = fp16(d sum q):
//    |s16 - sum x| <= 2^-11 (sum|x| + 16 d) + 16 d, i.e. per element
//    d/2 + 2^-11 (|x| + d/2).
//  Q8_K (per 256-block): d = amax/127 kept in f32, |q| <= 127: amax/254.
// Each gets a slack of amax 2^-20 for the f32 rounding of x * (1/d) before
// round-to-nearest (a tie can round either way by one f32 ulp).
inline void act_error(DType vdt, const std::vector<float> &x, std::vector<double> &e, std::vector<double> &emin) {
    const size_t n = x.size();
    e.assign(n, 0.0);
    emin.assign(n, 0.0);
    if (vdt == DType::F32) return;
    if (vdt == DType::F16 || vdt == DType::BF16) {
        const double r = vdt == DType::F16 ? 0x1p-11 : 0x1p-8;
        for (size_t i = 0; i < n; ++i) e[i] = emin[i] = std::fabs((double)x[i]) * r;
        return;
    }
    const size_t blk = (size_t)dtype_info(vdt).block_elems;
    for (size_t b0 = 0; b0 < n; b0 += blk) {
        double amax = 0;
        for (size_t i = b0; i < b0 + blk; ++i) amax = std::max(amax, std::fabs((double)x[i]));
        const double d = amax / 127.0, slack = amax * 0x1p-20;
        for (size_t i = b0; i < b0 + blk; ++i) {
            if (vdt == DType::Q8_K) {
                e[i] = emin[i] = d / 2 + slack;
            } else {
                e[i] = d / 2 + amax * 0x1p-11 + slack;
                emin[i] = vdt == DType::Q8_1 ? d / 2 + 0x1p-11 * (std::fabs((double)x[i]) + d / 2) + slack : e[i];
            }
        }
    }
}

// The weight row split into its scale part and its min part (zero for types
// without a min), each dequantized by the portable reference.
inline void weight_parts(DType t, const uint8_t *row, int64_t k, std::vector<float> &p1, std::vector<float> &p2) {
    p1.assign((size_t)k, 0.f);
    p2.assign((size_t)k, 0.f);
    const vt::test::Fields f = fp16_fields(t);
    if (f.mins.empty()) {
        ref::dequantize_row(t, row, p1.data(), k);
        return;
    }
    const size_t rb = row_bytes(t, k), bb = dtype_info(t).block_bytes;
    Bytes nomin(row, row + rb), nod(row, row + rb);
    for (size_t off = 0; off < rb; off += bb) {
        for (int o : f.mins) put_f16(&nomin[off + o], 0.f);
        for (int o : f.scales) put_f16(&nod[off + o], 0.f);
    }
    ref::dequantize_row(t, nomin.data(), p1.data(), k);
    ref::dequantize_row(t, nod.data(), p2.data(), k);
}

// One weight row as the reference reads it: dequantized whole (w) and in
// its scale and min parts (weight_parts).
struct RefRow {
    std::vector<float> w, p1, p2;
};
inline RefRow ref_row(DType t, const uint8_t *row, int64_t k) {
    RefRow r;
    r.w.resize((size_t)k);
    ref::dequantize_row(t, row, r.w.data(), k);
    weight_parts(t, row, k, r.p1, r.p2);
    return r;
}

struct RefDot {
    double ref, tol;
};
// The double dot of weight row w with the f32 activation row x (k values)
// and MUL_MAT's bound on the kernels' error, given x's conversion bounds e,
// emin (act_error of x for the weight's vec_dot_type). Bound: sum_i |p1_i|
// e_i + |p2_i| emin_i (the activation conversion) plus f32 rounding of the
// kernel's per-block products and their sums: every implementation rounds a
// few times per block and adds at most k/8 + 16 partial sums, so <= 2 (k/8 +
// 64) u M with M = sum |x_i| (|p1_i| + |p2_i|) (the same first-order bound
// as tests/unit/test-quant.cpp).
inline RefDot matmul_ref(const RefRow &w, const float *x, const std::vector<double> &e, const std::vector<double> &emin,
                         int64_t k) {
    double dot = 0, act = 0, mag = 0;
    for (size_t i = 0; i < (size_t)k; ++i) {
        dot += (double)w.w[i] * x[i];
        act += std::fabs((double)w.p1[i]) * e[i] + std::fabs((double)w.p2[i]) * emin[i];
        mag += std::fabs((double)x[i]) * (std::fabs(w.p1[i]) + std::fabs(w.p2[i]));
    }
    return {dot, act + 2.0 * (double)(k / 8 + 64) * kU * mag + 1e-30};
}

// MUL_MAT over F16_X16 and BF16_X16 follows their own orders (kernels.h):
// out[t][r] is dot_f16_pairs / dot_bf16_chain or dot_bf16_pairs (as the
// active table's Kernels::bf16_chain says) of row r (of the n_out rows at w)
// and token t, rounded to the weight type as the op does.
inline std::vector<float> pair_order_matmul(DType base, const uint8_t *w, int64_t k, int64_t n_out,
                                            const std::vector<float> &x, int64_t m) {
    std::vector<float> out((size_t)(n_out * m));
    std::vector<uint16_t> a((size_t)k);
    for (int64_t t = 0; t < m; ++t) {
        quantize_row(base, &x[(size_t)(t * k)], a.data(), k);
        for (int64_t r = 0; r < n_out; ++r) {
            const uint16_t *row = (const uint16_t *)&w[(size_t)(r * 2 * k)];
            float &o = out[(size_t)(t * n_out + r)];
            if (base == DType::F16) o = quant::dot_f16_pairs(k, row, a.data());
#if defined(__x86_64__)
            else if (quant::active_kernels().bf16_chain) o = quant::dot_bf16_chain(k, row, a.data());
#endif
            else o = quant::dot_bf16_pairs(k, row, a.data());
        }
    }
    return out;
}

// ---- attention ---------------------------------------------------------------
//
// The ATTN_PAGED tests (test-ops.cpp, and with a sliding window
// test-ops-layers.cpp) share their batches, their runs and one reference.

// An f16 quiet NaN: a cache slot holding it poisons any output that reads it.
constexpr uint16_t kNaN16 = 0x7e00;

inline double h16(uint16_t h) { return (double)fp16_to_f32(h); }

// A window of w positions: a query at position pos sees keys at pos - w + 1 ..
// pos, i.e. of its n_kv = pos + 1 keys those from the returned one on. Window 0
// (or one the query has not outgrown) is all keys.
inline int64_t window_start(int64_t n_kv, int64_t window) { return window > 0 && n_kv > window ? n_kv - window : 0; }

// Softmax weights over keys j in [lo, n_kv) of scores s (the rest get 0);
// with a sink logit (gpt-oss's per head), exp(sink) joins the denominator
// as one more key that has no value (transformers concatenates it as a
// column and drops its probability).
inline std::vector<double> window_softmax(const std::vector<double> &s, int64_t lo, const double *sink = nullptr) {
    double mx = sink ? *sink : -INFINITY, sum = 0;
    for (size_t j = (size_t)lo; j < s.size(); ++j) mx = std::max(mx, s[j]);
    std::vector<double> p(s.size(), 0.0);
    for (size_t j = (size_t)lo; j < s.size(); ++j) sum += p[j] = std::exp(s[j] - mx);
    if (sink) sum += std::exp(*sink - mx);
    for (double &pj : p) pj /= sum;
    return p;
}

struct AttnShape {
    int64_t n_head, n_head_kv, head_dim;
    int64_t q_row() const { return n_head * head_dim; }
    int64_t kv_row() const { return n_head_kv * head_dim; }
};

// One step's queries, keys and values: n_tok tokens of random f32.
struct AttnInputs {
    AttnShape sh;
    int64_t n_tok;
    float scale;
    std::vector<float> q, k, v;
};

// Draws q, k, v in that order (the tests' random streams depend on it).
inline AttnInputs attn_inputs(const AttnShape &sh, int64_t n_tok, std::mt19937 &rng) {
    AttnInputs in{sh, n_tok, 1.0f / std::sqrt((float)sh.head_dim), {}, {}, {}};
    in.q = normal((size_t)(sh.q_row() * n_tok), rng);
    in.k = normal((size_t)(sh.kv_row() * n_tok), rng);
    in.v = normal((size_t)(sh.kv_row() * n_tok), rng);
    return in;
}

// What the tolerance of one output element depends on, over the n_w keys of
// its query's window: D = max_j scale sum_i |q_i K_ji|, the scores' max and
// min, A = sum_j p_j |V_jd| and max_j |V_jd|.
struct AttnTerms {
    int64_t n_w;
    double D, mx, mn, A, vmax;
};

// ATTN_PAGED's tolerance.
//
// Exact-math bound. Let D = max_j scale sum_i |q_i||K_ji|, A =
// sum_j p_j |V_jd|. The kernel rounds q to f16 (2^-11 relative)
// and dots in f32 (<= (hd + 2) u of the same magnitude), so each
// score is off by <= es = D (2^-11 + (hd + 2) u); exp of the
// shifted score (f32 subtraction and expf, <= 2u (range + 2)
// relative) gives unnormalized weights off by <= ew = expm1(2 es)
// + 2u (range + 2) relative (the max shift moves too), and
// normalizing doubles that: ep = 2 ew / (1 - ew) + 4u. The
// probabilities are then rounded to f16 (2^-11 relative, or 2^-25
// absolute when subnormal) and dotted with V in f32 ((n_kv + 2) u):
//   tol = A (ep + 2^-11 + (n_kv + 2) u) + n_kv 2^-25 max|V_d|.
// For hd = 64, |q|, |K| ~ N(0, 1): D ~ 5, so tol ~ 1e-2 A worst case.
// A sink adds one term exp(sink - mx) to the denominator, off by no more
// than the max's shift (the kernel adds it in double): within ew, so the
// bound holds with A over the sink-scaled probabilities.
// Contract bound (q_f16): the same with q rounded to f16 in the reference
// (the kernel's documented numerics, as llama.cpp); es drops to
// D (hd + 2) u, and tol ~ 5e-4 A, dominated by the f16 probabilities.
// With a window, n_kv is the window's n_w keys: the scores before it are
// computed but their probabilities are exact zeros, adding nothing.
inline double attn_tol(const AttnTerms &a, int64_t head_dim, bool q_f16) {
    const double es = a.D * ((q_f16 ? 0.0 : 0x1p-11) + (double)(head_dim + 2) * kU);
    const double ew = std::expm1(2 * es) + 2 * kU * (a.mx - a.mn + 2);
    const double ep = 2 * ew / (1 - ew) + 4 * kU;
    return a.A * (ep + 0x1p-11 + (double)(a.n_w + 2) * kU) + (double)a.n_w * 0x1p-25 * a.vmax + 1e-30;
}

struct AttnRef {
    std::vector<double> out, tol;
};

// Element e = hk * head_dim + d (kv head hk, dimension d) of the f16 K or V
// row at position j, as token t's cache or block table holds it.
using KvAt = std::function<uint16_t(int64_t t, int64_t j, int64_t e)>;

// Reference in double over the f16 cache contents: for token t, which sees
// n_kv_of(t) positions, out = sum_j softmax_j(scale q.K_j) V_j over the j of
// its window (all of them for window 0), with kv head h / (n_head /
// n_head_kv); q rounded to f16 first if q_f16. tol_of bounds each element.
// Outputs dv values per head (0: head_dim), V_j's elements hk * head_dim ..
// hk * head_dim + dv - 1 (the latent mode's values, read through v_at).
inline AttnRef attention_reference(const AttnInputs &in, int32_t window, bool q_f16,
                                   const std::function<int64_t(int64_t)> &n_kv_of, const KvAt &k_at,
                                   const KvAt &v_at, const std::function<double(const AttnTerms &)> &tol_of,
                                   int64_t dv = 0, const std::vector<float> *sinks = nullptr) {
    const int64_t n_head = in.sh.n_head, head_dim = in.sh.head_dim, group = n_head / in.sh.n_head_kv;
    if (dv == 0) dv = head_dim;
    const size_t n = (size_t)(in.n_tok * n_head * dv);
    AttnRef r{std::vector<double>(n), std::vector<double>(n)};
    for (int64_t t = 0; t < in.n_tok; ++t) {
        const int64_t n_kv = n_kv_of(t), lo = window_start(n_kv, window);
        for (int64_t h = 0; h < n_head; ++h) {
            const int64_t hk = h / group;
            const float *qh = &in.q[(size_t)((t * n_head + h) * head_dim)];
            std::vector<double> s((size_t)n_kv, 0.0);
            AttnTerms a{n_kv - lo, 0, -INFINITY, INFINITY, 0, 0};
            for (int64_t j = lo; j < n_kv; ++j) {
                double dot = 0, mag = 0;
                for (int64_t i = 0; i < head_dim; ++i) {
                    const double qi = q_f16 ? h16(f32_to_fp16(qh[i])) : (double)qh[i];
                    const double kj = h16(k_at(t, j, hk * head_dim + i));
                    dot += qi * kj;
                    mag += std::fabs(qi * kj);
                }
                s[(size_t)j] = (double)in.scale * dot;
                a.D = std::max(a.D, (double)in.scale * mag);
                a.mx = std::max(a.mx, s[(size_t)j]);
                a.mn = std::min(a.mn, s[(size_t)j]);
            }
            const double sink = sinks ? (double)(*sinks)[(size_t)h] : 0.0;
            const std::vector<double> pr = window_softmax(s, lo, sinks ? &sink : nullptr);
            for (int64_t d = 0; d < dv; ++d) {
                double o = 0;
                a.A = a.vmax = 0;
                for (int64_t j = lo; j < n_kv; ++j) {
                    const double vj = h16(v_at(t, j, hk * head_dim + d));
                    o += pr[(size_t)j] * vj;
                    a.A += pr[(size_t)j] * std::fabs(vj);
                    a.vmax = std::max(a.vmax, std::fabs(vj));
                }
                const size_t idx = (size_t)((t * n_head + h) * dv + d);
                r.out[idx] = o;
                r.tol[idx] = tol_of(a);
            }
        }
    }
    return r;
}

inline Bytes cache_bytes(const std::vector<uint16_t> &kc, const std::vector<uint16_t> &vc) {
    Bytes s(kc.size() * 2 + vc.size() * 2);
    std::memcpy(s.data(), kc.data(), kc.size() * 2);
    std::memcpy(s.data() + kc.size() * 2, vc.data(), vc.size() * 2);
    return s;
}

// The node that make_node adds over the inputs for q, k, v (and the index),
// run on 1 and 3 threads; the caches kc, vc, which the node's K and V cache
// tensors point at, restart as k_start, v_start before each run and must
// agree bit for bit between runs.
using AttnNode = std::function<Tensor *(Graph &g, Tensor *q, Tensor *k, Tensor *v, Tensor *index)>;
inline std::vector<float> run_attn_node(const AttnInputs &in, const std::vector<int32_t> *index,
                                        std::vector<uint16_t> &kc, std::vector<uint16_t> &vc,
                                        const std::vector<uint16_t> &k_start, const std::vector<uint16_t> &v_start,
                                        const AttnNode &make_node) {
    const AttnShape &sh = in.sh;
    Graph g;
    Tensor *qt = g.input(DType::F32, {sh.head_dim, sh.n_head, in.n_tok}),
           *kt = g.input(DType::F32, {sh.head_dim, sh.n_head_kv, in.n_tok}),
           *vt_ = g.input(DType::F32, {sh.head_dim, sh.n_head_kv, in.n_tok}),
           *it = index ? g.input(DType::I32, {(int64_t)index->size()}) : nullptr;
    Tensor *y = make_node(g, qt, kt, vt_, it);
    g.mark_output(y);
    CHECK(supports(g.nodes()[0]));
    Bound bound(g);
    return run_both(
        g, y,
        [&] {
            put(qt, in.q);
            put(kt, in.k);
            put(vt_, in.v);
            if (index) put(it, *index);
            kc = k_start;
            vc = v_start;
        },
        [&] { return cache_bytes(kc, vc); });
}

struct SeqCase {
    int64_t n_past, n_tok;
};

// One ATTN_PAGED step of several sequences over a pool of n_blocks blocks of
// bs slots, handed out in shuffled order; a sequence's table covers its past
// and this step. The index holds, per token, the slot it writes, the
// positions it sees and where its sequence's table starts in the index; the
// tables follow. The cached prefixes hold random f16; every slot no table
// reaches holds NaN, so a stray read poisons the output.
struct PagedBatch : AttnInputs {
    int64_t bs, n_slots;
    std::vector<std::vector<int32_t>> tables;  // per sequence
    std::vector<int32_t> index;
    std::vector<uint16_t> k0, v0;          // the pool before the step
    std::vector<uint16_t> k_full, v_full;  // after the step's writes, f16(k) and f16(v)
    // The slot of token t's position j.
    int64_t slot(int64_t t, int64_t j) const {
        const int32_t *table = &index[(size_t)index[(size_t)(3 * t + 2)]];
        return table[j / bs] * bs + j % bs;
    }
};

// Draws the block order, the prefixes, then q, k, v.
inline PagedBatch make_paged_batch(const AttnShape &sh, int64_t n_blocks, int64_t bs,
                                   const std::vector<SeqCase> &seqs, std::mt19937 &rng) {
    const int64_t kv_row = sh.kv_row(), n_slots = n_blocks * bs;
    std::vector<int32_t> perm((size_t)n_blocks);
    for (int64_t b = 0; b < n_blocks; ++b) perm[(size_t)b] = (int32_t)b;
    std::shuffle(perm.begin(), perm.end(), rng);
    size_t next_block = 0;
    int64_t n_tok = 0;
    for (const SeqCase &sc : seqs) n_tok += sc.n_tok;
    std::vector<int32_t> index((size_t)(3 * n_tok));
    std::vector<std::vector<int32_t>> tables;
    std::vector<uint16_t> k0((size_t)(kv_row * n_slots), kNaN16), v0 = k0;
    std::normal_distribution<float> nd(0.f, 1.f);
    int64_t t0 = 0;
    for (const SeqCase &sc : seqs) {
        std::vector<int32_t> table;
        for (int64_t b = 0; b < (sc.n_past + sc.n_tok + bs - 1) / bs; ++b) table.push_back(perm[next_block++]);
        const int32_t at = (int32_t)index.size();
        index.insert(index.end(), table.begin(), table.end());
        for (int64_t j = 0; j < sc.n_past; ++j) {  // the cached prefix
            const int64_t slot = table[(size_t)(j / bs)] * bs + j % bs;
            for (int64_t d = 0; d < kv_row; ++d) {
                k0[(size_t)(slot * kv_row + d)] = f32_to_fp16(nd(rng));
                v0[(size_t)(slot * kv_row + d)] = f32_to_fp16(nd(rng));
            }
        }
        for (int64_t i = 0; i < sc.n_tok; ++i) {
            const int64_t pos = sc.n_past + i, t = t0 + i;
            index[(size_t)(3 * t)] = (int32_t)(table[(size_t)(pos / bs)] * bs + pos % bs);
            index[(size_t)(3 * t + 1)] = (int32_t)(pos + 1);
            index[(size_t)(3 * t + 2)] = at;
        }
        tables.push_back(table);
        t0 += sc.n_tok;
    }
    PagedBatch p{attn_inputs(sh, n_tok, rng), bs, n_slots, std::move(tables), std::move(index), k0, v0, k0, v0};
    for (int64_t t = 0; t < n_tok; ++t)
        for (int64_t d = 0; d < kv_row; ++d) {
            const int64_t slot = p.index[(size_t)(3 * t)];
            p.k_full[(size_t)(slot * kv_row + d)] = f32_to_fp16(p.k[(size_t)(t * kv_row + d)]);
            p.v_full[(size_t)(slot * kv_row + d)] = f32_to_fp16(p.v[(size_t)(t * kv_row + d)]);
        }
    return p;
}

// The pool's K layout (Op::ATTN_PAGED): each block's keys transposed, so
// element e of slot s is at (s / bs, e, s % bs). The batches keep K as V, a
// row per slot; these convert.
inline size_t k_blocked_at(int64_t s, int64_t e, int64_t kv_row, int64_t bs) {
    return (size_t)((s / bs) * kv_row * bs + e * bs + s % bs);
}
// Rows to the blocked layout (to_blocked) or back.
inline std::vector<uint16_t> k_convert(const std::vector<uint16_t> &from, int64_t kv_row, int64_t bs, bool to_blocked) {
    std::vector<uint16_t> out(from.size());
    const int64_t n_slots = (int64_t)from.size() / kv_row;
    for (int64_t s = 0; s < n_slots; ++s)
        for (int64_t e = 0; e < kv_row; ++e) {
            const size_t row = (size_t)(s * kv_row + e), blocked = k_blocked_at(s, e, kv_row, bs);
            out[to_blocked ? blocked : row] = from[to_blocked ? row : blocked];
        }
    return out;
}

// The pool tensors of a batch over k (blocked) and v.
inline void pool_tensors(const PagedBatch &b, std::vector<uint16_t> &k, std::vector<uint16_t> &v, Tensor &kt,
                         Tensor &vt) {
    tensor_init(kt, DType::F16, b.bs, b.sh.kv_row(), b.n_slots / b.bs, 1, k.data(), "k_pool");
    tensor_init(vt, DType::F16, b.sh.kv_row(), b.n_slots, 1, 1, v.data(), "v_pool");
}

// Runs b's step with the window, the pool starting as kp, vp (K as rows);
// checks that the step's slots then hold f16(k), f16(v) and every other slot
// is as it was; returns the output.
inline std::vector<float> run_paged(const PagedBatch &b, int32_t window, const std::vector<uint16_t> &kp,
                                    const std::vector<uint16_t> &vp, const std::vector<float> *sinks = nullptr) {
    const int64_t kv_row = b.sh.kv_row();
    const std::vector<uint16_t> kp_blocked = k_convert(kp, kv_row, b.bs, true);
    std::vector<uint16_t> kc = kp_blocked, vc = vp;
    Tensor kct, vct, st;
    pool_tensors(b, kc, vc, kct, vct);
    if (sinks) tensor_init(st, DType::F32, b.sh.n_head, 1, 1, 1, const_cast<float *>(sinks->data()), "sinks");
    const std::vector<float> got =
        run_attn_node(b, &b.index, kc, vc, kp_blocked, vp, [&](Graph &g, Tensor *q, Tensor *k, Tensor *v, Tensor *it) {
            return g.op<Op::ATTN_PAGED>(DType::F32, {b.sh.head_dim, b.sh.n_head, b.n_tok},
                                        {q, k, v, &kct, &vct, it, sinks ? &st : nullptr},
                                        {b.scale, window, (int32_t)b.n_slots});
        });
    std::vector<uint16_t> k_exp = kp, v_exp = vp;
    for (int64_t t = 0; t < b.n_tok; ++t) {
        const size_t slot = (size_t)b.index[(size_t)(3 * t)];
        std::copy_n(&b.k_full[slot * kv_row], kv_row, &k_exp[slot * kv_row]);
        std::copy_n(&b.v_full[slot * kv_row], kv_row, &v_exp[slot * kv_row]);
    }
    CHECK(k_convert(kc, kv_row, b.bs, false) == k_exp);
    CHECK(vc == v_exp);
    return got;
}

// The reference of b's step (over k_full, v_full; q rounded to f16 when
// q_f16, the kernel's contract) with ATTN_PAGED's tolerance.
inline AttnRef attn_ref(const PagedBatch &b, int32_t window, bool q_f16 = true,
                        const std::vector<float> *sinks = nullptr) {
    const int64_t kv_row = b.sh.kv_row();
    return attention_reference(
        b, window, q_f16, [&](int64_t t) { return (int64_t)b.index[(size_t)(3 * t + 1)]; },
        [&](int64_t t, int64_t j, int64_t e) { return b.k_full[(size_t)(b.slot(t, j) * kv_row + e)]; },
        [&](int64_t t, int64_t j, int64_t e) { return b.v_full[(size_t)(b.slot(t, j) * kv_row + e)]; },
        [&](const AttnTerms &a) { return attn_tol(a, b.sh.head_dim, q_f16); }, 0, sinks);
}

} // namespace
