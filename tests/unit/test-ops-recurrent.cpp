// The elementwise, norm and convolution ops of the hybrid linear-attention
// models (Qwen3-Next/Qwen3.5 Gated DeltaNet, Kimi Delta Attention) on the
// CPU backend, in test-ops.cpp's style: a real vt::Graph, runs on 1 and 3
// threads that must agree bit for bit, double-precision references written
// from the math, tolerances derived and stated next to each check. u = 2^-24
// (kU) is the unit roundoff of f32; libm's expf and log1pf are taken as within
// 1 ulp (2u relative) of the exact value. GATED_DELTA_RULE: test-ops-delta-rule.cpp.
#include "unit/state-slots-harness.h"

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
        Tensor *y = g.op<Op::UNARY>(DType::F32, {n, m}, {xt}, UnaryParams{kind, 0.0f});
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
    g.op<Op::UNARY>(DType::F32, {8}, {xt}, UnaryParams{99, 0.0f});
    CHECK_FALSE(supports(g.nodes()[0]));
}

TEST_CASE("UNARY softcap: c * tanh(x / c), and a cap <= 0 refused", "[ops]") {
    std::mt19937 rng(23);
    const int64_t n = 96, m = 3;
    std::vector<float> x((size_t)(n * m));
    std::uniform_real_distribution<float> dist(-80.f, 80.f);
    for (float &v : x) v = dist(rng);
    const float edges[] = {-1e4f, -30.f, -1e-30f, -0.f, 0.f, 1e-30f, 29.99f, 30.f, 1e4f};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; ++i) x[i * 29] = edges[i];
    for (float cap : {30.f, 15.f, 1.f}) {
        INFO("cap " << cap);
        Graph g;
        Tensor *xt = g.input(DType::F32, {n, m});
        Tensor *y = g.op<Op::UNARY>(DType::F32, {n, m}, {xt}, UnaryParams{kUnarySoftcap, cap});
        g.mark_output(y);
        REQUIRE(supports(g.nodes()[0]));
        Bound bound(g);
        const std::vector<float> got = run_both(g, y, [&] { put(xt, x); });
        std::vector<double> ref(x.size()), tol(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
            ref[i] = cap * std::tanh((double)x[i] / cap);
            // x / c rounds (u relative in t = x / c), which moves tanh(t) by
            // sech^2(t) t u <= |tanh(t)| u (sech^2 falls, so t sech^2(t) <=
            // tanh(t)); tanhf within 2 ulp (4u relative), the product with c
            // u: 6u relative, 8u stated; subnormal quotients 2^-149 times c.
            tol[i] = 8 * kU * std::fabs(ref[i]) + 0x1p-149 * cap;
        }
        check_close(got, ref, tol, "UNARY softcap");
    }
    for (float cap : {0.f, -1.f}) {
        Graph g;
        Tensor *xt = g.input(DType::F32, {8});
        g.op<Op::UNARY>(DType::F32, {8}, {xt}, UnaryParams{kUnarySoftcap, cap});
        CHECK_FALSE(supports(g.nodes()[0]));
    }
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

} // namespace
