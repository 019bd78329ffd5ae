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

// ---- ADD and MUL with broadcasting -------------------------------------------------

TEST_CASE("ADD and MUL broadcast src1 over any dimension of extent 1", "[ops]") {
    std::mt19937 rng(5150);
    struct Case {
        std::array<int64_t, 4> a, b;
    };
    // Same shape, one row (the fast paths), one value per head, per token,
    // per (head, token) pair of a 4-D tensor, a row per token, a scalar.
    const Case cases[] = {
        {{64, 4, 7, 1}, {64, 4, 7, 1}}, {{64, 4, 7, 1}, {64, 1, 1, 1}}, {{64, 4, 7, 1}, {1, 4, 7, 1}},
        {{64, 4, 7, 1}, {1, 1, 7, 1}},  {{16, 3, 5, 2}, {1, 3, 1, 2}},  {{64, 4, 7, 1}, {64, 1, 7, 1}},
        {{33, 5, 1, 1}, {1, 1, 1, 1}},  {{16, 3, 5, 2}, {16, 3, 1, 1}},
    };
    for (const Case &c : cases) {
        INFO("a (" << c.a[0] << ", " << c.a[1] << ", " << c.a[2] << ", " << c.a[3] << "), b (" << c.b[0] << ", "
                   << c.b[1] << ", " << c.b[2] << ", " << c.b[3] << ")");
        const int64_t na = c.a[0] * c.a[1] * c.a[2] * c.a[3], nb = c.b[0] * c.b[1] * c.b[2] * c.b[3];
        const std::vector<float> a = normal((size_t)na, rng, 2.f), b = normal((size_t)nb, rng, 2.f);
        Graph g;
        Tensor *at = g.input(DType::F32, {c.a[0], c.a[1], c.a[2], c.a[3]});
        Tensor *bt = g.input(DType::F32, {c.b[0], c.b[1], c.b[2], c.b[3]});
        Tensor *sum = g.op<Op::ADD>(DType::F32, {c.a[0], c.a[1], c.a[2], c.a[3]}, {at, bt});
        Tensor *prod = g.op<Op::MUL>(DType::F32, {c.a[0], c.a[1], c.a[2], c.a[3]}, {at, bt});
        g.mark_output(sum);
        g.mark_output(prod);
        for (const Node &nd : g.nodes()) REQUIRE(supports(nd));
        Bound bound(g);
        std::vector<float> got_prod;
        const std::vector<float> got_sum = run_both(
            g, sum, [&] { put(at, a); put(bt, b); },
            [&] {
                got_prod = get(prod);
                Bytes s(got_prod.size() * 4);
                std::memcpy(s.data(), got_prod.data(), s.size());
                return s;
            });
        std::vector<double> r_sum((size_t)na), r_prod((size_t)na), t_sum((size_t)na), t_prod((size_t)na);
        for (int64_t i3 = 0; i3 < c.a[3]; ++i3)
            for (int64_t i2 = 0; i2 < c.a[2]; ++i2)
                for (int64_t i1 = 0; i1 < c.a[1]; ++i1)
                    for (int64_t i0 = 0; i0 < c.a[0]; ++i0) {
                        const int64_t ia = ((i3 * c.a[2] + i2) * c.a[1] + i1) * c.a[0] + i0;
                        const int64_t ib = (((c.b[3] == 1 ? 0 : i3) * c.b[2] + (c.b[2] == 1 ? 0 : i2)) * c.b[1] +
                                            (c.b[1] == 1 ? 0 : i1)) * c.b[0] + (c.b[0] == 1 ? 0 : i0);
                        // One f32 operation per element, whatever the path:
                        // the double result rounded to f32 is the one right
                        // answer (double rounding is innocuous, 53 >= 2 * 24
                        // + 2 bits), so bit for bit (tol 0).
                        r_sum[(size_t)ia] = (float)((double)a[(size_t)ia] + b[(size_t)ib]);
                        r_prod[(size_t)ia] = (float)((double)a[(size_t)ia] * b[(size_t)ib]);
                        t_sum[(size_t)ia] = t_prod[(size_t)ia] = 0;
                    }
        check_close(got_sum, r_sum, t_sum, "ADD");
        check_close(got_prod, r_prod, t_prod, "MUL");
    }
    // An extent that is neither src0's nor 1 is refused.
    Graph g;
    Tensor *at = g.input(DType::F32, {8, 4, 3}), *bt = g.input(DType::F32, {1, 2, 3});
    g.op<Op::ADD>(DType::F32, {8, 4, 3}, {at, bt});
    g.op<Op::MUL>(DType::F32, {8, 4, 3}, {at, bt});
    for (const Node &nd : g.nodes()) CHECK_FALSE(supports(nd));
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
    for (int32_t gate : {kGateSilu, kGateSigmoid}) {
        INFO("gate " << (gate == kGateSilu ? "silu" : "sigmoid"));
        Graph g;
        Tensor *xt = g.input(DType::F32, {n, heads, n_tok}), *zt = g.input(DType::F32, {n, heads, n_tok});
        Tensor *y = g.op<Op::RMS_NORM_GATED>(DType::F32, {n, heads, n_tok}, {xt, &wt, zt}, {eps, gate});
        g.mark_output(y);
        REQUIRE(supports(g.nodes()[0]));
        Bound bound(g);
        const std::vector<float> got = run_both(g, y, [&] { put(xt, x); put(zt, z); });
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
    g.op<Op::RMS_NORM_GATED>(DType::F32, {n, 2}, {xt, &wt, zt}, {eps, 7});
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

} // namespace
