// The ops of the hybrid linear-attention models (Qwen3-Next/Qwen3.5 Gated
// DeltaNet, Kimi Delta Attention) on the CPU backend, in test-ops.cpp's
// style: a real vt::Graph, runs on 1 and 3 threads that must agree bit for
// bit, double-precision references written from the math, tolerances
// derived and stated next to each check. u = 2^-24 (kU) is the unit
// roundoff of f32; libm's expf and log1pf are taken as within 1 ulp (2u
// relative) of the exact value.
#include "unit/ops-harness.h"

#include <array>

namespace {

// ---- UNARY -----------------------------------------------------------------------

// Exact values in double, and the bound on the kernel's f32 result.
struct RefTol {
    double ref, tol;
};

RefTol unary_ref(int32_t kind, float xf) {
    const double x = xf, u = kU;
    // Where exp(-x) overflows f32 (x < -88.72), sigmoid and silu come out as
    // (-)0 while the exact value is below 3e-37: the tolerance is the value.
    const bool exp_overflows = x < -88.7;
    switch (kind) {
    case kUnarySigmoid: {
        const double r = 1.0 / (1.0 + std::exp(-x));
        // expf (2u relative in e), 1 + e (u; e's error scaled by e / (1 + e)
        // <= 1), the division (u): <= 4u relative. Results below the
        // smallest normal f32 (2^-126) are subnormal: 2^-149 absolute.
        return {r, exp_overflows ? r : 4 * u * r + 0x1p-149};
    }
    case kUnarySilu: {
        const double r = x / (1.0 + std::exp(-x));
        return {r, exp_overflows ? std::fabs(r) : 4 * u * std::fabs(r) + 0x1p-149};
    }
    case kUnarySoftplus: {
        // The exact softplus; the kernel returns x itself above 20 (torch's
        // threshold), which is off by log1p(exp(-x)) < 2.1e-9 there.
        const double r = x > 20 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
        // expf's 2u relative error in e moves log1p(e) by 2u e / (1 + e) <=
        // 2u log1p(e) (for e >= 0, e / (1 + e) <= log1p(e)), log1pf adds 2u:
        // 4u relative; subnormal results 2^-149 absolute.
        return {r, x > 20 ? std::log1p(std::exp(-x)) + u * r : 4 * u * r + 0x1p-149};
    }
    default: {
        const double r = std::exp(x);
        return {r, 2 * u * r + 0x1p-149};  // expf alone
    }
    }
}

TEST_CASE("UNARY: sigmoid, silu, softplus, exp through libm's float functions", "[ops]") {
    std::mt19937 rng(2024);
    const int64_t n = 1037, m = 3;  // odd, to split unevenly over 3 threads
    std::vector<float> x = normal((size_t)(n * m), rng, 6.f);
    // The edges: exp(-x) overflowing, softplus's threshold, subnormal results,
    // signed zeros.
    const float edges[] = {-90.f, -88.f, -87.f, -20.f, -1e-30f, -0.f, 0.f, 1e-30f, 19.99f, 20.f, 20.01f, 30.f, 88.f};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; ++i) x[i * 31] = edges[i];
    for (int32_t kind : {kUnarySigmoid, kUnarySilu, kUnarySoftplus, kUnaryExp}) {
        INFO("kind " << kind);
        Graph g;
        Tensor *xt = g.input(DType::F32, {n, m});
        Tensor *y = g.op<Op::UNARY>(DType::F32, {n, m}, {xt}, {kind});
        g.mark_output(y);
        REQUIRE(supports(g.nodes()[0]));
        Bound bound(g);
        const std::vector<float> got = run_both(g, y, [&] { put(xt, x); });
        std::vector<double> ref(x.size()), tol(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
            const RefTol r = unary_ref(kind, x[i]);
            ref[i] = r.ref;
            tol[i] = r.tol;
        }
        check_close(got, ref, tol, "UNARY " + std::to_string(kind));
    }
    // A kind the kernel does not know is refused.
    Graph g;
    Tensor *xt = g.input(DType::F32, {8});
    g.op<Op::UNARY>(DType::F32, {8}, {xt}, {99});
    CHECK_FALSE(supports(g.nodes()[0]));
}

// ---- L2_NORM ---------------------------------------------------------------------

TEST_CASE("L2_NORM: x / sqrt(sum(x^2) + eps) per row, contiguous and strided rows", "[ops]") {
    std::mt19937 rng(17);
    const int64_t dk = 128, heads = 3, n_tok = 5;
    // Rows read from a wider buffer (q, k as views of the conv output): the
    // row of head h, token t starts at (t * 3 heads + h) * 160 floats.
    const int64_t stride = 160;
    for (bool strided : {false, true}) {
        for (float eps : {1e-6f, 1e-2f}) {
            INFO((strided ? "strided" : "contiguous") << " rows, eps " << eps);
            std::vector<float> buf = normal((size_t)(stride * heads * n_tok), rng, 0.5f);
            // One row of tiny values, where eps dominates the sum.
            for (int64_t i = 0; i < dk; ++i) buf[(size_t)(stride + i)] *= 1e-4f;
            Graph g;
            Tensor *base = g.input(DType::F32, {stride * heads * n_tok});
            Tensor *x = strided ? g.view(base, {dk, heads, n_tok}, {stride * 4, stride * heads * 4})
                                : g.input(DType::F32, {dk, heads, n_tok});
            Tensor *y = g.op<Op::L2_NORM>(DType::F32, {dk, heads, n_tok}, {x}, {eps});
            g.mark_output(y);
            REQUIRE(supports(g.nodes()[0]));
            Bound bound(g);
            // The rows as the op sees them.
            std::vector<float> rows((size_t)(dk * heads * n_tok));
            for (int64_t r = 0; r < heads * n_tok; ++r)
                for (int64_t i = 0; i < dk; ++i)
                    rows[(size_t)(r * dk + i)] = buf[(size_t)((strided ? r * stride : r * dk) + i)];
            const std::vector<float> got = run_both(g, y, [&] {
                if (strided) put(base, buf);
                else put(x, rows);
            });
            std::vector<double> ref(rows.size()), tol(rows.size());
            for (int64_t r = 0; r < heads * n_tok; ++r) {
                double ss = 0;
                for (int64_t i = 0; i < dk; ++i) ss += (double)rows[(size_t)(r * dk + i)] * rows[(size_t)(r * dk + i)];
                const double inv = 1.0 / std::sqrt(ss + (double)eps);
                for (int64_t i = 0; i < dk; ++i) {
                    const size_t k = (size_t)(r * dk + i);
                    ref[k] = rows[k] * inv;
                    // x^2 (u, the double sum exact to 2^-53), the sum to f32
                    // (u), + eps (u), sqrtf (u, halving the 3u before it),
                    // 1 / (u), x * inv (u): 4.5u relative; 5u.
                    tol[k] = 5 * kU * std::fabs(ref[k]) + 1e-30;
                }
            }
            check_close(got, ref, tol, "L2_NORM");
        }
    }
}

// ---- RMS_NORM without a weight, RMS_NORM_GATED -----------------------------------------

TEST_CASE("RMS_NORM without a weight, and RMS_NORM_GATED with silu and sigmoid gates", "[ops]") {
    std::mt19937 rng(808);
    const int64_t n = 128, heads = 4, n_tok = 6, N = n * heads * n_tok;
    const float eps = 1e-6f;
    const std::vector<float> x = normal((size_t)N, rng, 1.5f), z = normal((size_t)N, rng, 3.f),
                             w = normal((size_t)n, rng);
    // The exact row scales.
    std::vector<double> scale((size_t)(heads * n_tok));
    for (int64_t r = 0; r < heads * n_tok; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < n; ++i) ss += (double)x[(size_t)(r * n + i)] * x[(size_t)(r * n + i)];
        scale[(size_t)r] = 1.0 / std::sqrt(ss / (double)n + (double)eps);
    }
    Tensor wt;
    tensor_init(wt, DType::F32, n, 1, 1, 1, const_cast<float *>(w.data()), "w");
    {
        Graph g;
        Tensor *xt = g.input(DType::F32, {n, heads, n_tok});
        Tensor *y = g.op<Op::RMS_NORM>(DType::F32, {n, heads, n_tok}, {xt, nullptr}, {eps});
        g.mark_output(y);
        REQUIRE(supports(g.nodes()[0]));
        Bound bound(g);
        const std::vector<float> got = run_both(g, y, [&] { put(xt, x); });
        std::vector<double> ref((size_t)N), tol((size_t)N);
        for (int64_t k = 0; k < N; ++k) {
            ref[(size_t)k] = x[(size_t)k] * scale[(size_t)(k / n)];
            // x^2 (u), mean to f32 (u), + eps (u), sqrtf (u, halving the 3u
            // before it), 1 / (u), x * scale (u): 4.5u relative; 5u.
            tol[(size_t)k] = 5 * kU * std::fabs(ref[(size_t)k]) + 1e-30;
        }
        check_close(got, ref, tol, "RMS_NORM (no weight)");
    }
    for (int32_t gate : {kGateSilu, kGateSigmoid})
    for (bool z_view : {false, true}) {
        INFO("gate " << (gate == kGateSilu ? "silu" : "sigmoid") << (z_view ? ", z a view" : ""));
        // z_view: z is the second half of each token's (2 n heads) row, as a
        // gate split off a projection.
        Graph g;
        Tensor *xt = g.input(DType::F32, {n, heads, n_tok});
        Tensor *zbase = g.input(DType::F32, {z_view ? 2 * n * heads : n * heads, n_tok});
        Tensor *zt = z_view ? g.view(zbase, {n, heads, n_tok}, {(size_t)n * 4, (size_t)(2 * n * heads) * 4},
                                     (size_t)(n * heads) * 4)
                            : g.reshape(zbase, {n, heads, n_tok});
        Tensor *y = g.op<Op::RMS_NORM_GATED>(DType::F32, {n, heads, n_tok}, {xt, &wt, zt}, {eps, gate, 0, kGateAfterNorm});
        g.mark_output(y);
        REQUIRE(supports(g.nodes()[0]));
        Bound bound(g);
        std::vector<float> zb(z);
        if (z_view) {
            zb.assign((size_t)(2 * N), NAN);
            for (int64_t t = 0; t < n_tok; ++t)
                std::copy_n(&z[(size_t)(t * n * heads)], n * heads, &zb[(size_t)((2 * t + 1) * n * heads)]);
        }
        const std::vector<float> got = run_both(g, y, [&] { put(xt, x); put(zbase, zb); });
        std::vector<double> ref((size_t)N), tol((size_t)N);
        for (int64_t k = 0; k < N; ++k) {
            const double zk = z[(size_t)k], sg = 1.0 / (1.0 + std::exp(-zk));
            const double act = gate == kGateSilu ? zk * sg : sg;
            ref[(size_t)k] = x[(size_t)k] * scale[(size_t)(k / n)] * (double)w[(size_t)(k % n)] * act;
            // The scale (3.5u as above), x * scale, * w (u each), the gate
            // (4u: expf, 1 +, the division), the last product (u): 10.5u; 11u.
            tol[(size_t)k] = 11 * kU * std::fabs(ref[(size_t)k]) + 1e-30;
        }
        check_close(got, ref, tol, "RMS_NORM_GATED");
    }
    // A gate kind the kernel does not know is refused.
    Graph g;
    Tensor *xt = g.input(DType::F32, {n, 2}), *zt = g.input(DType::F32, {n, 2});
    g.op<Op::RMS_NORM_GATED>(DType::F32, {n, 2}, {xt, &wt, zt}, {eps, 7, 0, kGateAfterNorm});
    CHECK_FALSE(supports(g.nodes()[0]));
}

// ---- ROPE, partial rotation --------------------------------------------------------

TEST_CASE("ROPE NeoX rotating 64 of 256 dimensions (Qwen3.5): the rest pass through", "[ops]") {
    std::mt19937 rng(256);
    const int64_t head_dim = 256, n_head = 2, n_rot = 64;
    const float base = 10000000.f;  // Qwen3-Next's rope_theta
    const std::vector<int32_t> pos = {0, 1, 7, 4000, 131071};
    const int64_t n_tok = (int64_t)pos.size(), row = head_dim * n_head;
    const std::vector<float> x = normal((size_t)(row * n_tok), rng);
    Graph g;
    Tensor *xt = g.input(DType::F32, {head_dim, n_head, n_tok}), *pt = g.input(DType::I32, {n_tok});
    RopeParams p{};
    p.n_rot = (int32_t)n_rot;
    p.mode = kRopeNeox;
    p.freq_base = base;
    p.freq_scale = 1.0f;
    p.attn_factor = 1.0f;
    Tensor *y = g.op<Op::ROPE>(DType::F32, {head_dim, n_head, n_tok}, {xt, pt, nullptr}, p);
    g.mark_output(y);
    REQUIRE(supports(g.nodes()[0]));
    Bound bound(g);
    const std::vector<float> got = run_both(g, y, [&] { put(xt, x); put(pt, pos); });
    std::vector<double> ref(x.size()), tol(x.size());
    bool tail_same = true;
    for (int64_t t = 0; t < n_tok; ++t)
        for (int64_t h = 0; h < n_head; ++h) {
            const size_t o = (size_t)(t * row + h * head_dim);
            for (int64_t i = n_rot; i < head_dim; ++i) {
                ref[o + i] = x[o + i];
                tol[o + i] = 0;
                tail_same = tail_same && same_bits(&got[o + i], &x[o + i], 4);
            }
            for (int64_t i = 0; i < n_rot / 2; ++i) {
                const double theta = (double)pos[(size_t)t] * std::pow((double)base, -2.0 * (double)i / (double)n_rot);
                const size_t i0 = o + i, i1 = o + i + n_rot / 2;
                const double x0 = x[i0], x1 = x[i1];
                ref[i0] = x0 * std::cos(theta) - x1 * std::sin(theta);
                ref[i1] = x0 * std::sin(theta) + x1 * std::cos(theta);
                // As test-ops.cpp's ROPE: theta_i in f32 is off by <= (4i + 2)
                // u theta (pow of the base, i products); cos/sin 2u, the
                // rotation 3u of |x0| + |x1|.
                const double dth = (4.0 * (double)i + 2.0) * kU * std::fabs(theta);
                tol[i0] = tol[i1] = (std::fabs(x0) + std::fabs(x1)) * (dth + 8 * kU) + 1e-30;
            }
        }
    check_close(got, ref, tol, "ROPE partial");
    CHECK(tail_same);
}

// ---- batches of sequences with state slots (CONV1D_CAUSAL, GATED_DELTA_RULE) ----------

struct SeqSpec {
    int64_t n;   // tokens this step
    bool fresh;  // starts at position 0
};

// One step's index over a pool of n_slots slots: sequence i takes slot
// slots[i]; its tokens start at t0[i].
struct StepIndex {
    std::vector<int32_t> index;  // (3, n_seqs): slot, n_tokens, fresh
    std::vector<int64_t> t0;
    int64_t n_tok = 0;
};
StepIndex step_index(const std::vector<SeqSpec> &seqs, const std::vector<int32_t> &slots) {
    StepIndex s;
    for (size_t i = 0; i < seqs.size(); ++i) {
        s.index.insert(s.index.end(), {slots[i], (int32_t)seqs[i].n, seqs[i].fresh ? 1 : 0});
        s.t0.push_back(s.n_tok);
        s.n_tok += seqs[i].n;
    }
    return s;
}

// n distinct slots of a pool of n_slots, in shuffled order.
std::vector<int32_t> pick_slots(size_t n, int64_t n_slots, std::mt19937 &rng) {
    std::vector<int32_t> all((size_t)n_slots);
    for (int64_t i = 0; i < n_slots; ++i) all[(size_t)i] = (int32_t)i;
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(n);
    return all;
}

// Bytes of a float vector (run_both's snapshots).
Bytes bytes_of(const std::vector<float> &v) {
    Bytes b(v.size() * sizeof(float));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// The batch every recurrent test runs: decode tokens, short and long prompt
// chunks around the chunk size of 64 (63, 64, 65, 130), fresh and
// continuing, and a continuing sequence with no tokens this step.
const std::vector<SeqSpec> kBatch = {{1, false}, {2, true},  {63, false}, {64, true},
                                     {65, false}, {0, false}, {130, false}, {1, true}};

// ---- CONV1D_CAUSAL --------------------------------------------------------------------

struct ConvCase {
    int64_t C, K;
    bool bias, silu;
};
struct ConvOut {
    std::vector<float> out, pool;
};

// One CONV1D_CAUSAL step over x (C, n_tok) with the pool starting as pool0;
// run on 1 and 3 threads (outputs and pools bit for bit alike).
// x_view: x is read as a view of the first C values of rows of C + 5.
ConvOut conv_step(const ConvCase &cc, const std::vector<float> &w, const std::vector<float> &bias,
                  const std::vector<float> &pool0, int64_t n_slots, const StepIndex &si, const std::vector<float> &x,
                  bool x_view = false) {
    std::vector<float> pool = pool0;
    Tensor wt, bt, pt;
    tensor_init(wt, DType::F32, cc.K, cc.C, 1, 1, const_cast<float *>(w.data()), "conv.w");
    tensor_init(bt, DType::F32, cc.C, 1, 1, 1, const_cast<float *>(bias.data()), "conv.b");
    tensor_init(pt, DType::F32, (cc.K - 1) * cc.C, n_slots, 1, 1, pool.data(), "conv.state");
    Graph g;
    const int64_t wide = cc.C + 5;
    Tensor *xbase = g.input(DType::F32, {x_view ? wide : cc.C, si.n_tok});
    Tensor *xt = x_view ? g.view(xbase, {cc.C, si.n_tok}, {(size_t)wide * 4}) : xbase;
    std::vector<float> xb = x;
    if (x_view) {
        xb.assign((size_t)(wide * si.n_tok), NAN);
        for (int64_t t = 0; t < si.n_tok; ++t) std::copy_n(&x[(size_t)(t * cc.C)], cc.C, &xb[(size_t)(t * wide)]);
    }
    Tensor *it = g.input(DType::I32, {3, (int64_t)si.index.size() / 3});
    Tensor *y = g.op<Op::CONV1D_CAUSAL>(DType::F32, {cc.C, si.n_tok}, {xt, &wt, cc.bias ? &bt : nullptr, &pt, it},
                                        {cc.silu ? 1 : 0});
    g.mark_output(y);
    REQUIRE(supports(g.nodes()[0]));
    Bound bound(g);
    ConvOut r;
    r.out = run_both(
        g, y,
        [&] {
            put(xbase, xb);
            put(it, si.index);
            pool = pool0;
        },
        [&] { return bytes_of(pool); });
    r.pool = pool;
    return r;
}

TEST_CASE("CONV1D_CAUSAL: a batch of sequences through their state slots", "[ops]") {
    std::mt19937 rng(4096);
    const int64_t n_slots = 11;
    for (const ConvCase cc : {ConvCase{40, 4, true, true}, ConvCase{40, 4, false, false}, ConvCase{19, 2, true, false}}) {
        INFO("channels " << cc.C << ", kernel " << cc.K << (cc.bias ? ", bias" : "") << (cc.silu ? ", silu" : ""));
        const int64_t C = cc.C, K = cc.K, T = K - 1;
        const std::vector<float> w = normal((size_t)(K * C), rng, 0.5f), bias = normal((size_t)C, rng, 0.3f);
        const std::vector<int32_t> slots = pick_slots(kBatch.size(), n_slots, rng);
        const StepIndex si = step_index(kBatch, slots);
        const std::vector<float> x = normal((size_t)(C * si.n_tok), rng);
        // Continuing and unused slots hold values; fresh ones NaN, which
        // must not be read.
        std::vector<float> pool0 = normal((size_t)(T * C * n_slots), rng);
        for (size_t i = 0; i < kBatch.size(); ++i)
            if (kBatch[i].fresh)
                std::fill_n(&pool0[(size_t)(slots[i] * T * C)], T * C, NAN);
        const ConvOut got = conv_step(cc, w, bias, pool0, n_slots, si, x);

        std::vector<double> ref((size_t)(C * si.n_tok)), tol(ref.size());
        std::vector<float> pool_exp = pool0;
        for (size_t i = 0; i < kBatch.size(); ++i) {
            const SeqSpec &sq = kBatch[i];
            const float *tail = &pool0[(size_t)(slots[i] * T * C)];
            // xin(p) for p in [-T, n): the tail (zeros when fresh), then x.
            auto xin = [&](int64_t p, int64_t ch) -> double {
                if (p >= 0) return x[(size_t)((si.t0[i] + p) * C + ch)];
                return sq.fresh ? 0.0 : tail[(T + p) * C + ch];
            };
            for (int64_t t = 0; t < sq.n; ++t)
                for (int64_t ch = 0; ch < C; ++ch) {
                    double v = cc.bias ? (double)bias[(size_t)ch] : 0.0, mag = std::fabs(v);
                    for (int64_t j = 0; j < K; ++j) {
                        const double term = (double)w[(size_t)(ch * K + j)] * xin(t - T + j, ch);
                        v += term;
                        mag += std::fabs(term);
                    }
                    // K products and K additions (bias included), any order:
                    // <= gamma_{K+1} sum |terms|.
                    const double g = (double)(K + 1) * kU / (1 - (double)(K + 1) * kU);
                    double e = g * mag;
                    if (cc.silu) {
                        // silu' lies in [-0.1, 1.1]: the sum's error passes at
                        // most 1.1 times; silu's own rounding 4u (UNARY's).
                        const double sv = v / (1.0 + std::exp(-v));
                        e = 1.1 * e + 4 * kU * std::fabs(sv);
                        v = sv;
                    }
                    const size_t k = (size_t)((si.t0[i] + t) * C + ch);
                    ref[k] = v;
                    tol[k] = e + 1e-30;
                }
            // The new tail: the last T inputs, copied exactly.
            for (int64_t j = 0; j < T; ++j)
                for (int64_t ch = 0; ch < C; ++ch)
                    pool_exp[(size_t)((slots[i] * T + j) * C + ch)] = (float)xin(sq.n - T + j, ch);
        }
        check_close(got.out, ref, tol, "CONV1D_CAUSAL");
        // Every slot the step touches holds its exact tail; the others are
        // untouched (bit for bit).
        CHECK(same_bits(got.pool.data(), pool_exp.data(), pool_exp.size() * sizeof(float)));

        // x read through a view of wider rows: the same bits.
        const ConvOut viewed = conv_step(cc, w, bias, pool0, n_slots, si, x, true);
        CHECK(same_bits(viewed.out.data(), got.out.data(), got.out.size() * sizeof(float)));
        CHECK(same_bits(viewed.pool.data(), got.pool.data(), got.pool.size() * sizeof(float)));

        // (ii) Each sequence alone in its step: the same bits, output and slot.
        for (size_t i = 0; i < kBatch.size(); ++i) {
            if (kBatch[i].n == 0) continue;
            INFO("sequence " << i << " alone");
            const StepIndex one = step_index({kBatch[i]}, {slots[i]});
            const std::vector<float> xi(x.begin() + si.t0[i] * C, x.begin() + (si.t0[i] + kBatch[i].n) * C);
            const ConvOut alone = conv_step(cc, w, bias, pool0, n_slots, one, xi);
            CHECK(same_bits(alone.out.data(), &got.out[(size_t)(si.t0[i] * C)], alone.out.size() * sizeof(float)));
            CHECK(same_bits(&alone.pool[(size_t)(slots[i] * T * C)], &got.pool[(size_t)(slots[i] * T * C)],
                            (size_t)(T * C) * sizeof(float)));
        }
    }
}

TEST_CASE("CONV1D_CAUSAL: one step or many (chunked prefill, then decode) give the same bits", "[ops]") {
    // The tail holds exact copies of the inputs, so every output is the same
    // arithmetic on the same values however the tokens are split into steps.
    std::mt19937 rng(77);
    const ConvCase cc{24, 4, true, true};
    const int64_t C = cc.C, T = cc.K - 1, n_slots = 3, n_all = 133;
    const std::vector<float> w = normal((size_t)(cc.K * C), rng, 0.5f), bias = normal((size_t)C, rng, 0.3f);
    const std::vector<float> x = normal((size_t)(C * n_all), rng);
    std::vector<float> pool_nan((size_t)(T * C * n_slots), NAN);
    auto run = [&](const std::vector<int64_t> &steps) {
        std::vector<float> pool = pool_nan, out;
        int64_t done = 0;
        for (int64_t n : steps) {
            const StepIndex si = step_index({{n, done == 0}}, {1});
            const std::vector<float> xs(x.begin() + done * C, x.begin() + (done + n) * C);
            const ConvOut r = conv_step(cc, w, bias, pool, n_slots, si, xs);
            out.insert(out.end(), r.out.begin(), r.out.end());
            pool = r.pool;
            done += n;
        }
        REQUIRE(done == n_all);
        out.insert(out.end(), pool.begin() + T * C, pool.begin() + 2 * T * C);  // slot 1's final tail
        return out;
    };
    const std::vector<float> one = run({n_all});
    for (const std::vector<int64_t> &steps : {std::vector<int64_t>{64, 64, 1, 1, 1, 1, 1}, {2, 1, 63, 65, 1, 1},
                                              std::vector<int64_t>(n_all, 1)}) {
        INFO(steps.size() << " steps");
        const std::vector<float> many = run(steps);
        REQUIRE(many.size() == one.size());
        CHECK(same_bits(one.data(), many.data(), one.size() * sizeof(float)));
    }
}

TEST_CASE("CONV1D_CAUSAL: a malformed index reads and writes no slot out of range", "[ops]") {
    std::mt19937 rng(3);
    const ConvCase cc{16, 4, false, false};
    const int64_t C = cc.C, T = cc.K - 1, n_slots = 4;
    const std::vector<float> w = normal((size_t)(cc.K * C), rng), bias((size_t)C, 0.f);
    const std::vector<float> pool0 = normal((size_t)(T * C * n_slots), rng);
    // Sequence 0: slot 9 (outside the pool): zero outputs; sequence 1 is
    // fine; the index covers 5 of the step's 7 tokens: the rest are zeros.
    StepIndex si = step_index({{2, false}, {3, false}}, {9, 2});
    si.n_tok = 7;
    const std::vector<float> x = normal((size_t)(C * si.n_tok), rng);
    const ConvOut got = conv_step(cc, w, bias, pool0, n_slots, si, x);
    bool zeros = true;
    for (int64_t t : {0, 1, 5, 6})
        for (int64_t ch = 0; ch < C; ++ch) zeros = zeros && got.out[(size_t)(t * C + ch)] == 0.f;
    CHECK(zeros);
    // Only slot 2 changed: its tail is now tokens 2..4 of x.
    std::vector<float> pool_exp = pool0;
    for (int64_t j = 0; j < T; ++j)
        for (int64_t ch = 0; ch < C; ++ch) pool_exp[(size_t)((2 * T + j) * C + ch)] = x[(size_t)((2 + j) * C + ch)];
    CHECK(same_bits(got.pool.data(), pool_exp.data(), pool_exp.size() * sizeof(float)));
    // Shapes the kernel refuses: a kernel of 1, a pool of the wrong width.
    std::vector<float> wbuf(64), pbuf(256);
    Tensor w1, p1;
    tensor_init(w1, DType::F32, 1, C, 1, 1, wbuf.data());
    tensor_init(p1, DType::F32, 2 * C, 2, 1, 1, pbuf.data());
    for (int bad = 0; bad < 2; ++bad) {
        Tensor wk, pk;
        tensor_init(wk, DType::F32, 4, C, 1, 1, wbuf.data());
        tensor_init(pk, DType::F32, 3 * C, 2, 1, 1, pbuf.data());
        Graph g;
        Tensor *xt = g.input(DType::F32, {C, 2}), *it = g.input(DType::I32, {3, 1});
        g.op<Op::CONV1D_CAUSAL>(DType::F32, {C, 2}, {xt, bad == 0 ? &w1 : &wk, nullptr, bad == 0 ? &pk : &p1, it}, {0});
        CHECK_FALSE(supports(g.nodes()[0]));
    }
}

// ---- GATED_DELTA_RULE ------------------------------------------------------------------
//
// The reference runs the recurrence in double and bounds the kernel's error
// by a first-order running error analysis of the form the kernel takes for
// each sequence (recurrent or chunked), evaluated on the exact values:
//  - an f32 product or sum rounds once (<= u relative); a dot or sum of n
//    terms in any order is within gamma_n = n u / (1 - n u) of sum |terms|
//    (so the bounds hold for any vectorization); expf is within 2u, and
//    exp((float)x) of a double x adds u |x| (the rounding of its argument);
//  - a step's local errors are those of the step computed from the exact
//    state; errors already in the state pass through the exact map of later
//    tokens, which on a state row j (a column of S) is r -> (I - beta k k^T)
//    D r + beta v_j k: with |k| = 1, 0 < beta < 1 and 0 < D <= 1 its norm is
//    <= 1. So the 2-norm of a row's error grows by at most each step's local
//    error (B[j] below), and an output o_t[j] = row_j . q_t takes at most
//    B[j] |q_t| from it.
// Second-order terms (relative (n u)^2 with n < 300) are covered by a factor
// 1 + 2^-10 on every tolerance.

struct DeltaCfg {
    int64_t dk, dv, Hk, Hv;
    int32_t mode;      // kDeltaHeadsInterleaved or kDeltaHeadsTiled
    bool per_channel;  // Kimi's gates, one per key channel
};

// One step's inputs, packed: q, k (dk, Hk, n_tok), v (dv, Hv, n_tok), g
// (Hv, n_tok) or (dk, Hv, n_tok), beta (Hv, n_tok).
struct DeltaIn {
    int64_t n_tok = 0;
    std::vector<float> q, k, v, g, beta;
};

double gamma_n(double n) { return n * kU / (1 - n * kU); }
constexpr double kSecondOrder = 1 + 0x1p-10;

// Rows l2-normalized in f32 as L2_NORM computes them (eps 1e-6), times s.
void l2_rows(std::vector<float> &x, int64_t n, float s) {
    for (size_t r = 0; r < x.size() / (size_t)n; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < n; ++i) ss += (double)(x[r * n + i] * x[r * n + i]);
        const float inv = 1.0f / std::sqrt((float)ss + 1e-6f);
        for (int64_t i = 0; i < n; ++i) x[r * n + i] = x[r * n + i] * inv * s;
    }
}

float softplus_f(float x) { return x > 20.f ? x : std::log1p(std::exp(x)); }

// Realistic magnitudes: q and k unit rows (q also scaled by 1/sqrt(dk)),
// beta = sigmoid(N(0, 1)) in (0, 1), g = -softplus(N(-1, 1.5)) * A with A
// per head (or per key channel) spread over [0.5, 8] (exp(A_log)), so some
// heads forget within a few tokens and some remember a whole chunk.
DeltaIn delta_inputs(const DeltaCfg &c, int64_t n_tok, std::mt19937 &rng) {
    DeltaIn in;
    in.n_tok = n_tok;
    in.q = normal((size_t)(c.dk * c.Hk * n_tok), rng);
    in.k = normal(in.q.size(), rng);
    in.v = normal((size_t)(c.dv * c.Hv * n_tok), rng);
    l2_rows(in.q, c.dk, 1.0f / std::sqrt((float)c.dk));
    l2_rows(in.k, c.dk, 1.0f);
    std::normal_distribution<float> nd(-1.f, 1.5f), nb(0.f, 1.f);
    const int64_t per = c.per_channel ? c.dk : 1;
    in.g.resize((size_t)(per * c.Hv * n_tok));
    for (size_t e = 0; e < in.g.size(); ++e) {
        const int64_t a = (int64_t)e % (per * c.Hv);  // (channel, head) of the element
        const float A = 0.5f * std::pow(16.f, (float)(a % 7) / 6.f);
        in.g[e] = -softplus_f(nd(rng)) * A;
    }
    in.beta.resize((size_t)(c.Hv * n_tok));
    for (float &b : in.beta) b = 1.0f / (1.0f + std::exp(-nb(rng)));
    return in;
}

// Tokens [t0, t0 + n) of a: the inputs of a step of their own.
DeltaIn slice(const DeltaCfg &c, const DeltaIn &a, int64_t t0, int64_t n) {
    DeltaIn r;
    r.n_tok = n;
    auto cut = [&](const std::vector<float> &v, int64_t per_tok) {
        return std::vector<float>(v.begin() + t0 * per_tok, v.begin() + (t0 + n) * per_tok);
    };
    r.q = cut(a.q, c.dk * c.Hk);
    r.k = cut(a.k, c.dk * c.Hk);
    r.v = cut(a.v, c.dv * c.Hv);
    r.g = cut(a.g, (c.per_channel ? c.dk : 1) * c.Hv);
    r.beta = cut(a.beta, c.Hv);
    return r;
}

// The exact state of one unit (dv rows of dk, the kernel's layout) and B,
// the bound on the 2-norm of the kernel's error in each row.
struct UnitState {
    std::vector<double> S, B;
};

// The reference outputs of a step and their tolerances, (dv, Hv, n_tok).
struct DeltaRef {
    std::vector<double> out, tol;
};

struct UnitView {
    const DeltaCfg &c;
    const DeltaIn &in;
    int64_t h, hk;
    UnitView(const DeltaCfg &c_, const DeltaIn &in_, int64_t h_)
        : c(c_), in(in_), h(h_), hk(c_.mode == kDeltaHeadsInterleaved ? h_ / (c_.Hv / c_.Hk) : h_ % c_.Hk) {}
    double q(int64_t t, int64_t i) const { return in.q[(size_t)((t * c.Hk + hk) * c.dk + i)]; }
    double k(int64_t t, int64_t i) const { return in.k[(size_t)((t * c.Hk + hk) * c.dk + i)]; }
    double v(int64_t t, int64_t j) const { return in.v[(size_t)((t * c.Hv + h) * c.dv + j)]; }
    double g(int64_t t, int64_t i) const {
        return c.per_channel ? in.g[(size_t)((t * c.Hv + h) * c.dk + i)] : in.g[(size_t)(t * c.Hv + h)];
    }
    double beta(int64_t t) const { return in.beta[(size_t)(t * c.Hv + h)]; }
    size_t o(int64_t t, int64_t j) const { return (size_t)((t * c.Hv + h) * c.dv + j); }
    double qnorm(int64_t t) const {
        double s = 0;
        for (int64_t i = 0; i < c.dk; ++i) s += q(t, i) * q(t, i);
        return std::sqrt(s);
    }
};

// Token t in the recurrent form: the exact update and its local bounds.
void ref_token(const UnitView &U, int64_t t, UnitState &st, DeltaRef &r) {
    const int64_t dk = U.c.dk, u_dk = dk;
    const double u = kU, beta = U.beta(t), qn = U.qnorm(t);
    std::vector<double> d((size_t)dk), rr((size_t)dk), e((size_t)dk);
    for (int64_t i = 0; i < dk; ++i) d[(size_t)i] = std::exp(U.g(t, i));
    for (int64_t j = 0; j < U.c.dv; ++j) {
        double *row = &st.S[(size_t)(j * dk)];
        // r' = D r: expf (2u) and the product (u): 3u |r'_i|.
        double kv = 0, kv_mag = 0;
        for (int64_t i = 0; i < dk; ++i) {
            rr[(size_t)i] = row[i] * d[(size_t)i];
            kv += rr[(size_t)i] * U.k(t, i);
            kv_mag += std::fabs(rr[(size_t)i] * U.k(t, i));
        }
        // kv: the r' errors through k, and the dot: (3u + gamma_dk) sum |r' k|.
        const double e_kv = (3 * u + gamma_n((double)u_dk)) * kv_mag;
        const double a = U.v(t, j) - kv, delta = beta * a;
        const double e_delta = beta * (e_kv + u * std::fabs(a)) + u * std::fabs(delta);
        double o = 0, o_mag = 0, o_err = 0, norm2 = 0;
        for (int64_t i = 0; i < dk; ++i) {
            const double ki = U.k(t, i), nr = rr[(size_t)i] + delta * ki;
            // r'' = r' + delta k: r''s own error, delta's through k, the
            // product and the sum (u each).
            e[(size_t)i] = 3 * u * std::fabs(rr[(size_t)i]) + std::fabs(ki) * e_delta + u * std::fabs(delta * ki) +
                           u * std::fabs(nr);
            norm2 += e[(size_t)i] * e[(size_t)i];
            row[i] = nr;
            o += nr * U.q(t, i);
            o_mag += std::fabs(nr * U.q(t, i));
            o_err += e[(size_t)i] * std::fabs(U.q(t, i));
        }
        // o = r''.q: the row's local error through q, the dot, and the error
        // the row carried in (B[j] |q|).
        r.out[U.o(t, j)] = o;
        r.tol[U.o(t, j)] = kSecondOrder * (o_err + gamma_n((double)dk) * o_mag + st.B[(size_t)j] * qn) + 1e-30;
        st.B[(size_t)j] += kSecondOrder * std::sqrt(norm2);
    }
}

// One chunk of tokens [t0, t0 + n) in the chunked (WY) form, per-head gates,
// mirroring the kernel's steps (ops-delta-rule.cpp) with their bounds; every
// quantity comes with e_<name>, the bound on its f32 error.
void ref_chunk(const UnitView &U, int64_t t0, int64_t n, UnitState &st, DeltaRef &r) {
    const int64_t dk = U.c.dk, dv = U.c.dv;
    const double u = kU;
    auto at = [&](std::vector<double> &m, int64_t a, int64_t b, int64_t w) -> double & { return m[(size_t)(a * w + b)]; };
    std::vector<double> gam((size_t)n), eg((size_t)n), e_eg((size_t)n);
    double acc = 0;
    for (int64_t t = 0; t < n; ++t) {
        acc += U.g(t0 + t, 0);  // the kernel's double sum: its 2^-53 rounding is negligible here
        gam[(size_t)t] = acc;
        eg[(size_t)t] = std::exp(acc);
        e_eg[(size_t)t] = eg[(size_t)t] * (u * std::fabs(acc) + 2 * u);
    }
    auto dec = [&](int64_t t, int64_t s) { return std::exp(gam[(size_t)t] - gam[(size_t)s]); };
    auto e_dec = [&](int64_t t, int64_t s) {
        return dec(t, s) * (u * std::fabs(gam[(size_t)t] - gam[(size_t)s]) + 2 * u);
    };
    auto dotk = [&](auto fa, auto fb, double &mag) {
        double d = 0;
        mag = 0;
        for (int64_t i = 0; i < dk; ++i) {
            d += fa(i) * fb(i);
            mag += std::fabs(fa(i) * fb(i));
        }
        return d;
    };
    const double g_dk = gamma_n((double)dk);
    std::vector<double> L((size_t)(n * n)), e_L(L.size()), M(L.size()), e_M(L.size());
    for (int64_t t = 0; t < n; ++t)
        for (int64_t s = 0; s <= t; ++s) {
            double mk, mq;
            const double kk = dotk([&](int64_t i) { return U.k(t0 + t, i); }, [&](int64_t i) { return U.k(t0 + s, i); }, mk);
            const double qk = dotk([&](int64_t i) { return U.q(t0 + t, i); }, [&](int64_t i) { return U.k(t0 + s, i); }, mq);
            const double dd = dec(t, s), ed = s == t ? 0.0 : e_dec(t, s);  // exp(0) is exactly 1
            if (s < t) {
                at(L, t, s, n) = U.beta(t0 + t) * dd * kk;
                at(e_L, t, s, n) = U.beta(t0 + t) * (std::fabs(kk) * ed + dd * g_dk * mk) + 2 * u * std::fabs(at(L, t, s, n));
            }
            at(M, t, s, n) = dd * qk;
            at(e_M, t, s, n) = std::fabs(qk) * ed + dd * g_dk * mq + u * std::fabs(at(M, t, s, n));
        }
    // Forward substitution: U_t = beta v_t - sum_{s<t} L U_s, W_t = beta
    // e^gamma_t k_t - sum_{s<t} L W_s (t + 1 terms each).
    std::vector<double> Uv((size_t)(n * dv)), e_U(Uv.size()), W((size_t)(n * dk)), e_W(W.size());
    for (int64_t t = 0; t < n; ++t) {
        const double bt = U.beta(t0 + t), bw = bt * eg[(size_t)t], e_bw = bt * e_eg[(size_t)t] + u * std::fabs(bw);
        const double g_t = gamma_n((double)(t + 1));
        for (int64_t j = 0; j < dv; ++j) {
            const double b0 = bt * U.v(t0 + t, j);
            double val = b0, mag = std::fabs(b0), err = u * std::fabs(b0);
            for (int64_t s = 0; s < t; ++s) {
                const double l = at(L, t, s, n), us = at(Uv, s, j, dv);
                val -= l * us;
                mag += std::fabs(l * us);
                err += at(e_L, t, s, n) * std::fabs(us) + std::fabs(l) * at(e_U, s, j, dv);
            }
            at(Uv, t, j, dv) = val;
            at(e_U, t, j, dv) = err + g_t * mag;
        }
        for (int64_t i = 0; i < dk; ++i) {
            const double b0 = bw * U.k(t0 + t, i);
            double val = b0, mag = std::fabs(b0), err = e_bw * std::fabs(U.k(t0 + t, i)) + u * std::fabs(b0);
            for (int64_t s = 0; s < t; ++s) {
                const double l = at(L, t, s, n), ws = at(W, s, i, dk);
                val -= l * ws;
                mag += std::fabs(l * ws);
                err += at(e_L, t, s, n) * std::fabs(ws) + std::fabs(l) * at(e_W, s, i, dk);
            }
            at(W, t, i, dk) = val;
            at(e_W, t, i, dk) = err + g_t * mag;
        }
    }
    // KD_s = decay(n-1, s) k_s.
    std::vector<double> KD((size_t)(n * dk)), e_KD(KD.size());
    for (int64_t s = 0; s < n; ++s) {
        const double f = dec(n - 1, s), ef = s == n - 1 ? 0.0 : e_dec(n - 1, s);
        for (int64_t i = 0; i < dk; ++i) {
            at(KD, s, i, dk) = f * U.k(t0 + s, i);
            at(e_KD, s, i, dk) = ef * std::fabs(U.k(t0 + s, i)) + u * std::fabs(at(KD, s, i, dk));
        }
    }
    // Per row j: Delta_t[j] = U_t[j] - W_t.S0[j] (dk + 1 terms), QS_t[j] =
    // q_t.S0[j], the new row el S0[j] + sum_t Delta_t[j] KD_t (n + 1 terms).
    std::vector<double> D((size_t)(n * dv)), e_D(D.size()), QS(D.size()), e_QS(D.size());
    const double el = eg[(size_t)(n - 1)], e_el = e_eg[(size_t)(n - 1)];
    for (int64_t j = 0; j < dv; ++j) {
        double *row = &st.S[(size_t)(j * dk)];
        for (int64_t t = 0; t < n; ++t) {
            double wr = 0, wr_mag = 0, wr_err = 0, qs = 0, qs_mag = 0;
            for (int64_t i = 0; i < dk; ++i) {
                wr += at(W, t, i, dk) * row[i];
                wr_mag += std::fabs(at(W, t, i, dk) * row[i]);
                wr_err += at(e_W, t, i, dk) * std::fabs(row[i]);
                qs += U.q(t0 + t, i) * row[i];
                qs_mag += std::fabs(U.q(t0 + t, i) * row[i]);
            }
            at(D, t, j, dv) = at(Uv, t, j, dv) - wr;
            at(e_D, t, j, dv) = at(e_U, t, j, dv) + wr_err + gamma_n((double)(dk + 1)) * (std::fabs(at(Uv, t, j, dv)) + wr_mag);
            at(QS, t, j, dv) = qs;
            at(e_QS, t, j, dv) = g_dk * qs_mag;
        }
        double norm2 = 0;
        for (int64_t i = 0; i < dk; ++i) {
            double val = el * row[i], mag = std::fabs(val), err = e_el * std::fabs(row[i]);
            for (int64_t t = 0; t < n; ++t) {
                const double dt = at(D, t, j, dv), kd = at(KD, t, i, dk);
                val += dt * kd;
                mag += std::fabs(dt * kd);
                err += at(e_D, t, j, dv) * std::fabs(kd) + std::fabs(dt) * at(e_KD, t, i, dk);
            }
            err += gamma_n((double)(n + 1)) * mag;
            norm2 += err * err;
            row[i] = val;
        }
        // o_t[j] = e^gamma_t QS_t[j] + sum_{s<=t} M[t][s] Delta_s[j] (t + 2
        // terms), plus what the row carried in, through q_t.
        for (int64_t t = 0; t < n; ++t) {
            const double qs = at(QS, t, j, dv);
            double val = eg[(size_t)t] * qs, mag = std::fabs(val);
            double err = e_eg[(size_t)t] * std::fabs(qs) + eg[(size_t)t] * at(e_QS, t, j, dv);
            for (int64_t s = 0; s <= t; ++s) {
                const double m = at(M, t, s, n), ds = at(D, s, j, dv);
                val += m * ds;
                mag += std::fabs(m * ds);
                err += at(e_M, t, s, n) * std::fabs(ds) + std::fabs(m) * at(e_D, s, j, dv);
            }
            r.out[U.o(t0 + t, j)] = val;
            r.tol[U.o(t0 + t, j)] =
                kSecondOrder * (err + gamma_n((double)(t + 2)) * mag + st.B[(size_t)j] * U.qnorm(t0 + t)) + 1e-30;
        }
        st.B[(size_t)j] += kSecondOrder * std::sqrt(norm2);
    }
}

// Tokens [t0, t0 + n) of a unit in the form the kernel takes for them.
void ref_seq(const UnitView &U, int64_t t0, int64_t n, bool chunked, UnitState &st, DeltaRef &r) {
    if (!chunked) {
        for (int64_t t = t0; t < t0 + n; ++t) ref_token(U, t, st, r);
        return;
    }
    for (int64_t b = 0; b < n; b += kDeltaChunk) ref_chunk(U, t0 + b, std::min<int64_t>(kDeltaChunk, n - b), st, r);
}

// The form the kernel takes for a sequence of n tokens.
bool takes_chunked(const DeltaCfg &c, int64_t n, int32_t chunked_from) {
    return !c.per_channel && n >= (chunked_from > 0 ? chunked_from : kDeltaChunkedFrom);
}

struct DeltaOut {
    std::vector<float> out, pool;
};

// One GATED_DELTA_RULE step with the pool starting as pool0 (n_slots slots),
// run on 1 and 3 threads (outputs and pools bit for bit alike). packed: q,
// k and v are views of one (2 dk Hk + dv Hv, n_tok) buffer, as the
// convolution's output split into heads.
DeltaOut delta_step(const DeltaCfg &c, const DeltaIn &in, const StepIndex &si, const std::vector<float> &pool0,
                    int64_t n_slots, int32_t chunked_from, bool packed = false) {
    const int64_t n_tok = in.n_tok, qk = c.dk * c.Hk, vr = c.dv * c.Hv, wide = 2 * qk + vr;
    std::vector<float> pool = pool0;
    Tensor pt;
    tensor_init(pt, DType::F32, c.dk * c.dv * c.Hv, n_slots, 1, 1, pool.data(), "delta.state");
    Graph g;
    Tensor *qt, *kt, *vt_, *base = nullptr;
    if (packed) {
        base = g.input(DType::F32, {wide, n_tok});
        qt = g.view(base, {c.dk, c.Hk, n_tok}, {(size_t)c.dk * 4, (size_t)wide * 4}, 0);
        kt = g.view(base, {c.dk, c.Hk, n_tok}, {(size_t)c.dk * 4, (size_t)wide * 4}, (size_t)qk * 4);
        vt_ = g.view(base, {c.dv, c.Hv, n_tok}, {(size_t)c.dv * 4, (size_t)wide * 4}, (size_t)(2 * qk) * 4);
    } else {
        qt = g.input(DType::F32, {c.dk, c.Hk, n_tok});
        kt = g.input(DType::F32, {c.dk, c.Hk, n_tok});
        vt_ = g.input(DType::F32, {c.dv, c.Hv, n_tok});
    }
    Tensor *gt = c.per_channel ? g.input(DType::F32, {c.dk, c.Hv, n_tok}) : g.input(DType::F32, {c.Hv, n_tok});
    Tensor *bt = g.input(DType::F32, {c.Hv, n_tok});
    Tensor *it = g.input(DType::I32, {3, (int64_t)si.index.size() / 3});
    Tensor *y = g.op<Op::GATED_DELTA_RULE>(DType::F32, {c.dv, c.Hv, n_tok}, {qt, kt, vt_, gt, bt, &pt, it},
                                           {c.mode, c.per_channel ? 1 : 0, chunked_from});
    g.mark_output(y);
    REQUIRE(supports(g.nodes()[0]));
    Bound bound(g);
    DeltaOut r;
    r.out = run_both(
        g, y,
        [&] {
            if (packed) {
                std::vector<float> w((size_t)(wide * n_tok));
                for (int64_t t = 0; t < n_tok; ++t) {
                    std::copy_n(&in.q[(size_t)(t * qk)], qk, &w[(size_t)(t * wide)]);
                    std::copy_n(&in.k[(size_t)(t * qk)], qk, &w[(size_t)(t * wide + qk)]);
                    std::copy_n(&in.v[(size_t)(t * vr)], vr, &w[(size_t)(t * wide + 2 * qk)]);
                }
                put(base, w);
            } else {
                put(qt, in.q);
                put(kt, in.k);
                put(vt_, in.v);
            }
            put(gt, in.g);
            put(bt, in.beta);
            put(it, si.index);
            pool = pool0;
        },
        [&] { return bytes_of(pool); });
    r.pool = pool;
    return r;
}

// A unit's slot state as the reference starts it: the pool's f32 values
// (exact inputs, B = 0), or zeros when fresh.
UnitState unit_start(const DeltaCfg &c, const std::vector<float> &pool, int64_t slot, int64_t h, bool fresh) {
    const size_t n = (size_t)(c.dk * c.dv);
    UnitState st{std::vector<double>(n, 0.0), std::vector<double>((size_t)c.dv, 0.0)};
    if (!fresh)
        for (size_t e = 0; e < n; ++e) st.S[e] = pool[(size_t)(slot * c.Hv + h) * n + e];
    return st;
}

// A realistic state for a continuing slot: the exact recurrence over 24
// random tokens from zero, rounded to f32.
std::vector<float> warm_state(const DeltaCfg &c, std::mt19937 &rng) {
    const DeltaIn pre = delta_inputs(c, 24, rng);
    std::vector<float> s((size_t)(c.dk * c.dv * c.Hv));
    for (int64_t h = 0; h < c.Hv; ++h) {
        const UnitView U(c, pre, h);
        UnitState st{std::vector<double>((size_t)(c.dk * c.dv), 0.0), std::vector<double>((size_t)c.dv, 0.0)};
        DeltaRef scratch{std::vector<double>(pre.v.size()), std::vector<double>(pre.v.size())};
        for (int64_t t = 0; t < pre.n_tok; ++t) ref_token(U, t, st, scratch);
        for (size_t e = 0; e < st.S.size(); ++e) s[(size_t)h * st.S.size() + e] = (float)st.S[e];
    }
    return s;
}

// Checks a unit's final slot against its reference state: the 2-norm of
// each row's error within B[j].
void check_state(const DeltaCfg &c, const std::vector<float> &pool, int64_t slot, int64_t h, const UnitState &st,
                 const std::string &what) {
    const size_t n = (size_t)(c.dk * c.dv);
    std::vector<float> err((size_t)c.dv);
    std::vector<double> zero((size_t)c.dv, 0.0), tol((size_t)c.dv);
    for (int64_t j = 0; j < c.dv; ++j) {
        double e2 = 0;
        for (int64_t i = 0; i < c.dk; ++i) {
            const double d = pool[(size_t)(slot * c.Hv + h) * n + (size_t)(j * c.dk + i)] - st.S[(size_t)(j * c.dk + i)];
            e2 += d * d;
        }
        err[(size_t)j] = (float)std::sqrt(e2);
        tol[(size_t)j] = st.B[(size_t)j] * (1 + 0x1p-20) + 1e-30;  // the f32 rounding of the norm itself
    }
    check_close(err, zero, tol, what);
}

// |a - b| <= ta + tb element-wise: two results that each meet their bound
// against the same exact value.
void check_pair(const std::vector<float> &a, const std::vector<float> &b, const std::vector<double> &ta,
                const std::vector<double> &tb, const std::string &what) {
    std::vector<double> ref(b.begin(), b.end()), tol(ta.size());
    for (size_t i = 0; i < tol.size(); ++i) tol[i] = ta[i] + tb[i];
    check_close(a, ref, tol, what);
}

const DeltaCfg kDeltaCfgs[] = {
    {32, 24, 2, 4, kDeltaHeadsInterleaved, false},  // Hv / Hk = 2, transformers' head order
    {20, 16, 2, 2, kDeltaHeadsTiled, false},        // Hv / Hk = 1, dk not a multiple of 8
    {24, 16, 2, 4, kDeltaHeadsTiled, false},        // Hv / Hk = 2, llama.cpp's head order
    {32, 16, 1, 2, kDeltaHeadsInterleaved, true},   // Kimi: gates per key channel
    {24, 12, 2, 4, kDeltaHeadsTiled, true},
};

std::string cfg_name(const DeltaCfg &c) {
    return "dk " + std::to_string(c.dk) + ", dv " + std::to_string(c.dv) + ", Hk " + std::to_string(c.Hk) + ", Hv " +
           std::to_string(c.Hv) + (c.mode == kDeltaHeadsInterleaved ? ", interleaved" : ", tiled") +
           (c.per_channel ? ", gates per channel" : ", gates per head");
}

TEST_CASE("GATED_DELTA_RULE: the chunked form's algebra equals the recurrence (in double)", "[ops]") {
    // The derivation in the kernel's header, checked where rounding cannot
    // hide a mistake: the double chunked reference against the double
    // recurrence over 130 tokens (chunks of 64, 64, 2) from a warm state.
    std::mt19937 rng(1);
    const DeltaCfg c{16, 8, 1, 2, kDeltaHeadsInterleaved, false};
    const DeltaIn in = delta_inputs(c, 130, rng);
    const std::vector<float> s0 = warm_state(c, rng);
    for (int64_t h = 0; h < c.Hv; ++h) {
        const UnitView U(c, in, h);
        UnitState a = unit_start(c, s0, 0, h, false), b = a;
        DeltaRef ra{std::vector<double>(in.v.size()), std::vector<double>(in.v.size())}, rb = ra;
        ref_seq(U, 0, in.n_tok, false, a, ra);
        ref_seq(U, 0, in.n_tok, true, b, rb);
        double worst = 0, mag = 0;
        for (int64_t t = 0; t < in.n_tok; ++t)
            for (int64_t j = 0; j < c.dv; ++j) {
                worst = std::max(worst, std::fabs(ra.out[U.o(t, j)] - rb.out[U.o(t, j)]));
                mag = std::max(mag, std::fabs(ra.out[U.o(t, j)]));
            }
        for (size_t e = 0; e < a.S.size(); ++e) {
            worst = std::max(worst, std::fabs(a.S[e] - b.S[e]));
            mag = std::max(mag, std::fabs(a.S[e]));
        }
        INFO("head " << h << ": worst difference " << worst << " of magnitudes up to " << mag);
        // Double rounding over ~10^4 operations per value: far below 1e-12.
        CHECK(worst <= 1e-12 * mag);
    }
}

TEST_CASE("GATED_DELTA_RULE: a batch of sequences against the double recurrence, in both forms", "[ops]") {
    std::mt19937 rng(31415);
    const int64_t n_slots = 13;
    for (const DeltaCfg &c : kDeltaCfgs) {
        INFO(cfg_name(c));
        const std::vector<int32_t> slots = pick_slots(kBatch.size(), n_slots, rng);
        const StepIndex si = step_index(kBatch, slots);
        const DeltaIn in = delta_inputs(c, si.n_tok, rng);
        // Continuing and unused slots hold warm states; fresh ones NaN, which
        // must not be read.
        const size_t slot_n = (size_t)(c.dk * c.dv * c.Hv);
        std::vector<float> pool0((size_t)n_slots * slot_n);
        for (int64_t s = 0; s < n_slots; ++s) {
            const std::vector<float> w = warm_state(c, rng);
            std::copy(w.begin(), w.end(), pool0.begin() + (ptrdiff_t)((size_t)s * slot_n));
        }
        for (size_t i = 0; i < kBatch.size(); ++i)
            if (kBatch[i].fresh) std::fill_n(&pool0[(size_t)slots[i] * slot_n], slot_n, NAN);

        // The default (recurrent), everything chunked, 64 tokens and more
        // chunked (gates per channel: always recurrent).
        const std::vector<int32_t> modes = c.per_channel ? std::vector<int32_t>{0}
                                                         : std::vector<int32_t>{0, 1, 64};
        std::vector<DeltaOut> got;
        std::vector<DeltaRef> refs;
        for (int32_t cf : modes) {
            INFO("chunked_from " << cf);
            got.push_back(delta_step(c, in, si, pool0, n_slots, cf));
            DeltaRef r{std::vector<double>(in.v.size(), 0.0), std::vector<double>(in.v.size(), 1e-30)};
            std::vector<float> pool_exp = pool0;
            for (size_t i = 0; i < kBatch.size(); ++i) {
                const bool ch = takes_chunked(c, kBatch[i].n, cf);
                for (int64_t h = 0; h < c.Hv; ++h) {
                    UnitState st = unit_start(c, pool0, slots[i], h, kBatch[i].fresh);
                    ref_seq(UnitView(c, in, h), si.t0[i], kBatch[i].n, ch, st, r);
                    check_state(c, got.back().pool, slots[i], h, st,
                                "GATED_DELTA_RULE state, sequence " + std::to_string(i) + (ch ? " (chunked)" : " (recurrent)"));
                    // Mark the slot's bytes as the kernel's, for the check of the others.
                    std::copy_n(&got.back().pool[(size_t)slots[i] * slot_n + (size_t)h * (size_t)(c.dk * c.dv)],
                                c.dk * c.dv, &pool_exp[(size_t)slots[i] * slot_n + (size_t)h * (size_t)(c.dk * c.dv)]);
                }
            }
            check_close(got.back().out, r.out, r.tol, "GATED_DELTA_RULE " + cfg_name(c) + " chunked_from " + std::to_string(cf));
            // (iv) Slots outside the index are untouched, bit for bit.
            CHECK(same_bits(got.back().pool.data(), pool_exp.data(), pool_exp.size() * sizeof(float)));
            refs.push_back(r);
        }
        // (iii) The forms against each other: each within its bound of the
        // same exact values.
        for (size_t m = 1; m < got.size(); ++m)
            check_pair(got[m].out, got[0].out, refs[m].tol, refs[0].tol, "GATED_DELTA_RULE forms");

        // (ii) Each sequence alone in its step: the same bits, output and slot.
        for (size_t i = 0; i < kBatch.size(); ++i) {
            if (kBatch[i].n == 0) continue;
            INFO("sequence " << i << " alone");
            const DeltaIn one_in = slice(c, in, si.t0[i], kBatch[i].n);
            const DeltaOut alone = delta_step(c, one_in, step_index({kBatch[i]}, {slots[i]}), pool0, n_slots, 0);
            const size_t o0 = (size_t)(si.t0[i] * c.Hv * c.dv);
            CHECK(same_bits(alone.out.data(), &got[0].out[o0], alone.out.size() * sizeof(float)));
            CHECK(same_bits(&alone.pool[(size_t)slots[i] * slot_n], &got[0].pool[(size_t)slots[i] * slot_n],
                            slot_n * sizeof(float)));
        }
    }
}

TEST_CASE("GATED_DELTA_RULE: one step or many (chunked prefill, then decode) agree", "[ops]") {
    // (i) One sequence's 150 tokens as one step, as prompt chunks then
    // decode tokens, and one token at a time; each run against the exact
    // recurrence within the bound of the forms it took, and so within the
    // sum of two bounds of each other, outputs and final state. In the
    // recurrent form (the default) the runs are the same bits: a state row
    // goes through the same operations token by token whatever the steps.
    std::mt19937 rng(2718);
    const int64_t n_all = 150, n_slots = 2;
    for (const DeltaCfg &c : {kDeltaCfgs[0], kDeltaCfgs[3]})
    for (int32_t cf : {0, 64}) {
        if (c.per_channel && cf != 0) continue;  // always recurrent
        for (bool fresh : {true, false}) {
            INFO(cfg_name(c) << (fresh ? ", fresh" : ", continuing") << ", chunked_from " << cf);
            const DeltaIn in = delta_inputs(c, n_all, rng);
            const size_t slot_n = (size_t)(c.dk * c.dv * c.Hv);
            std::vector<float> pool0((size_t)n_slots * slot_n, NAN);
            if (!fresh) {
                const std::vector<float> w = warm_state(c, rng);
                std::copy(w.begin(), w.end(), pool0.begin() + (ptrdiff_t)slot_n);
            }
            struct Run {
                std::vector<float> out, state;
                std::vector<double> tol;
            };
            auto run = [&](const std::vector<int64_t> &steps) {
                Run R;
                std::vector<float> pool = pool0;
                DeltaRef r{std::vector<double>(in.v.size()), std::vector<double>(in.v.size())};
                std::vector<UnitState> st;
                for (int64_t h = 0; h < c.Hv; ++h) st.push_back(unit_start(c, pool0, 1, h, fresh));
                int64_t done = 0;
                for (int64_t n : steps) {
                    const DeltaOut o = delta_step(c, slice(c, in, done, n), step_index({{n, fresh && done == 0}}, {1}),
                                                  pool, n_slots, cf);
                    R.out.insert(R.out.end(), o.out.begin(), o.out.end());
                    pool = o.pool;
                    for (int64_t h = 0; h < c.Hv; ++h)
                        ref_seq(UnitView(c, in, h), done, n, takes_chunked(c, n, cf), st[(size_t)h], r);
                    done += n;
                }
                REQUIRE(done == n_all);
                check_close(R.out, r.out, r.tol, "GATED_DELTA_RULE in " + std::to_string(steps.size()) + " steps");
                for (int64_t h = 0; h < c.Hv; ++h) check_state(c, pool, 1, h, st[(size_t)h], "GATED_DELTA_RULE state");
                R.state.assign(pool.begin() + (ptrdiff_t)slot_n, pool.end());
                R.tol = r.tol;
                // The state's bound as a tolerance per element (a row's 2-norm
                // bounds each of its elements).
                for (int64_t h = 0; h < c.Hv; ++h)
                    for (int64_t j = 0; j < c.dv; ++j)
                        for (int64_t i = 0; i < c.dk; ++i) R.tol.push_back(st[(size_t)h].B[(size_t)j] + 1e-30);
                R.out.insert(R.out.end(), R.state.begin(), R.state.end());
                return R;
            };
            const Run one = run({n_all});
            for (const std::vector<int64_t> &steps :
                 {std::vector<int64_t>{64, 64, 1, 1, 20}, {2, 1, 63, 65, 19}, std::vector<int64_t>(n_all, 1)}) {
                const Run many = run(steps);
                check_pair(many.out, one.out, many.tol, one.tol, "GATED_DELTA_RULE one step vs " +
                                                                     std::to_string(steps.size()) + " steps");
                if (!takes_chunked(c, n_all, cf)) CHECK(same_bits(many.out.data(), one.out.data(), one.out.size() * 4));
            }
        }
    }
}

TEST_CASE("GATED_DELTA_RULE at Qwen3-Next's shape: q, k, v as views of the convolution's output", "[ops]") {
    // dk = dv = 128, 16 K heads and 32 V heads (Qwen3-Next-80B's), read as
    // views of one packed buffer; a decode token, a short step and a prompt
    // chunk beside each other.
    std::mt19937 rng(128);
    const DeltaCfg c{128, 128, 16, 32, kDeltaHeadsInterleaved, false};
    const std::vector<SeqSpec> seqs = {{1, false}, {3, false}, {70, true}};
    const int64_t n_slots = 4;
    const std::vector<int32_t> slots = {2, 0, 3};
    const StepIndex si = step_index(seqs, slots);
    const DeltaIn in = delta_inputs(c, si.n_tok, rng);
    const size_t slot_n = (size_t)(c.dk * c.dv * c.Hv);
    std::vector<float> pool0((size_t)n_slots * slot_n);
    for (int64_t s = 0; s < n_slots; ++s) {
        const std::vector<float> w = warm_state(c, rng);
        std::copy(w.begin(), w.end(), pool0.begin() + (ptrdiff_t)((size_t)s * slot_n));
    }
    // The default (recurrent), and the prompt chunk in the chunked form.
    for (int32_t cf : {0, 64}) {
        INFO("chunked_from " << cf);
        const DeltaOut got = delta_step(c, in, si, pool0, n_slots, cf, true);
        DeltaRef r{std::vector<double>(in.v.size()), std::vector<double>(in.v.size())};
        for (size_t i = 0; i < seqs.size(); ++i)
            for (int64_t h = 0; h < c.Hv; ++h) {
                UnitState st = unit_start(c, pool0, slots[i], h, seqs[i].fresh);
                ref_seq(UnitView(c, in, h), si.t0[i], seqs[i].n, takes_chunked(c, seqs[i].n, cf), st, r);
                check_state(c, got.pool, slots[i], h, st, "GATED_DELTA_RULE 128 x 128 state");
            }
        check_close(got.out, r.out, r.tol, "GATED_DELTA_RULE 128 x 128, chunked_from " + std::to_string(cf));
        // The same step from contiguous q, k, v: the same bits.
        const DeltaOut flat = delta_step(c, in, si, pool0, n_slots, cf, false);
        CHECK(same_bits(flat.out.data(), got.out.data(), got.out.size() * sizeof(float)));
        CHECK(same_bits(flat.pool.data(), got.pool.data(), got.pool.size() * sizeof(float)));
    }
}

TEST_CASE("GATED_DELTA_RULE: a malformed index touches no slot; shapes it refuses", "[ops]") {
    std::mt19937 rng(9);
    const DeltaCfg c{16, 8, 1, 2, kDeltaHeadsInterleaved, false};
    const int64_t n_slots = 3;
    const size_t slot_n = (size_t)(c.dk * c.dv * c.Hv);
    const std::vector<float> pool0 = normal((size_t)n_slots * slot_n, rng, 0.1f);
    // Sequence 0 names slot -1: zero outputs; sequence 1 runs; the index
    // covers 4 of the step's 6 tokens: the rest are zeros.
    StepIndex si = step_index({{1, false}, {3, false}}, {-1, 1});
    si.n_tok = 6;
    const DeltaIn in = delta_inputs(c, si.n_tok, rng);
    const DeltaOut got = delta_step(c, in, si, pool0, n_slots, 0);
    bool zeros = true;
    for (int64_t t : {0, 4, 5})
        for (int64_t e = 0; e < c.Hv * c.dv; ++e) zeros = zeros && got.out[(size_t)(t * c.Hv * c.dv + e)] == 0.f;
    CHECK(zeros);
    for (int64_t s : {0, 2})
        CHECK(same_bits(&got.pool[(size_t)s * slot_n], &pool0[(size_t)s * slot_n], slot_n * sizeof(float)));
    CHECK_FALSE(same_bits(&got.pool[slot_n], &pool0[slot_n], slot_n * sizeof(float)));
    // Refused: Hv not a multiple of Hk, an unknown head mode, a pool of the
    // wrong width.
    std::vector<float> pbuf(4096);
    struct Bad {
        int64_t Hk, Hv, width;
        int32_t mode;
    };
    for (const Bad &bad : {Bad{2, 3, 16 * 8 * 3, 0}, Bad{1, 2, 16 * 8 * 2, 5}, Bad{1, 2, 16 * 8, 0}}) {
        Tensor pt;
        tensor_init(pt, DType::F32, bad.width, 2, 1, 1, pbuf.data());
        Graph g;
        Tensor *q = g.input(DType::F32, {16, bad.Hk, 2}), *k = g.input(DType::F32, {16, bad.Hk, 2}),
               *v = g.input(DType::F32, {8, bad.Hv, 2}), *gg = g.input(DType::F32, {bad.Hv, 2}),
               *b = g.input(DType::F32, {bad.Hv, 2}), *it = g.input(DType::I32, {3, 1});
        g.op<Op::GATED_DELTA_RULE>(DType::F32, {8, bad.Hv, 2}, {q, k, v, gg, b, &pt, it}, {bad.mode, 0, 0});
        CHECK_FALSE(supports(g.nodes()[0]));
    }
}

} // namespace
