// The ops that the architectures beyond Llama added (broadcast ADD/MUL, SCALE,
// GEGLU, ROPE with frequency factors and YaRN, attention with a sliding window),
// against double-precision references, through the backend vtable; the
// plumbing is ops-harness.h.
#include <catch2/catch.hpp>

#include <array>

#include "unit/ops-harness.h"

namespace {

// ---- ADD and MUL broadcasting, MUL, SCALE ------------------------------------------

// One f32 add or multiply is correctly rounded, and a double holds the product
// of two floats exactly and their sum exactly or (far apart magnitudes)
// rounded innocuously (53 >= 2 * 24 + 2 bits), so the double result rounded
// to f32 is the one right answer: these ops are checked bit for bit (tol 0).

TEST_CASE("ADD and MUL broadcast src1 over any dimension of extent 1", "[ops]") {
    std::mt19937 rng(5150);
    struct Case {
        std::array<int64_t, 4> a, b;
    };
    // Same shape, one row (the fast paths; 7 rows: an uneven split over 3
    // threads), one value per head, per token, per (head, token) pair of a
    // 4-D tensor, a row per token, a scalar.
    const Case cases[] = {
        {{77, 7, 1, 1}, {77, 1, 1, 1}}, {{16, 3, 5, 1}, {16, 1, 1, 1}}, {{77, 7, 1, 1}, {77, 7, 1, 1}},
        {{4099, 1, 1, 1}, {4099, 1, 1, 1}},
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
    // An extent that is neither src0's nor 1 is refused: several rows that
    // are not all of src0's, a row of another length, a partial head count.
    const std::array<int64_t, 3> refused[][2] = {{{77, 7, 1}, {77, 2, 1}}, {{77, 7, 1}, {76, 1, 1}},
                                                 {{8, 4, 3}, {1, 2, 3}}};
    for (const auto &r : refused) {
        INFO("src1 " << r[1][0] << " x " << r[1][1] << " x " << r[1][2] << " against " << r[0][0] << " x " << r[0][1]
                     << " x " << r[0][2]);
        Graph g;
        Tensor *at = g.input(DType::F32, {r[0][0], r[0][1], r[0][2]});
        Tensor *bt = g.input(DType::F32, {r[1][0], r[1][1], r[1][2]});
        g.op<Op::ADD>(DType::F32, {r[0][0], r[0][1], r[0][2]}, {at, bt});
        g.op<Op::MUL>(DType::F32, {r[0][0], r[0][1], r[0][2]}, {at, bt});
        for (const Node &nd : g.nodes()) CHECK_FALSE(supports(nd));
    }
}

TEST_CASE("SCALE multiplies every element by one f32", "[ops]") {
    std::mt19937 rng(12);
    for (auto [n, m] : {std::pair<int64_t, int64_t>{4099, 1}, {16, 15}}) {
        for (float s : {0.125f, 0.0883883476f, -3.7f, 0.f}) {  // exact, 1/sqrt(128), arbitrary, zero
            INFO("shape " << n << " x " << m << ", scale " << s);
            const size_t N = (size_t)(n * m);
            const std::vector<float> a = normal(N, rng, 3.f);
            Graph g;
            Tensor *at = g.input(DType::F32, {n, m});
            Tensor *y = g.op<Op::SCALE>(DType::F32, {n, m}, {at}, ScaleParams{s});
            g.mark_output(y);
            CHECK(supports(g.nodes()[0]));
            Bound bound(g);
            const std::vector<float> got = run_both(g, y, [&] { put(at, a); });
            std::vector<double> ref(N);
            for (size_t i = 0; i < N; ++i) ref[i] = (float)((double)a[i] * (double)s);
            check_close(got, ref, std::vector<double>(N, 0.0), "SCALE");
        }
    }
}

// ---- GEGLU -----------------------------------------------------------------------

// The spacing of f16 values in the binade of x (2^-24 below the normal range),
// from the format's definition: 10 fraction bits, exponents down to -14.
double ulp_f16(double x) {
    if (x == 0) return 0x1p-24;
    int e;
    std::frexp(x, &e);  // |x| = m 2^e, m in [0.5, 1)
    return std::ldexp(1.0, std::max(e - 11, -24));
}
// x rounded to the nearest f16, ties to even (the default rounding mode of
// nearbyint); used for |x| < 10 only, so it never overflows.
double round_f16(double x) { return x == 0 ? x : std::nearbyint(x / ulp_f16(x)) * ulp_f16(x); }

TEST_CASE("GEGLU: gelu_tanh through ggml's f16 table, times src1", "[ops]") {
    // The inputs: every f16 value but NaN (the whole table, and the zero and
    // linear branches out to +-inf), the points where the branches change,
    // ties of the input rounding (1 + 2^-11 -> 1, 1 + 3 2^-11 -> 1 + 2^-9,
    // 2^-25 -> 0, 3 2^-25 -> 2^-23), then normals that are not f16 values.
    std::mt19937 rng(13);
    std::vector<float> x;
    for (uint32_t h = 0; h < 65536; ++h)
        if ((h & 0x7c00) != 0x7c00 || (h & 0x3ff) == 0) x.push_back(fp16_to_f32((uint16_t)h));
    for (float v : {-10.f, 10.f, std::nextafter(-10.f, 0.f), std::nextafter(10.f, 0.f), -10.001f, 10.001f, 1e6f,
                    -1e6f, 3e38f, -3e38f, 0.f, -0.f, 1.f + 0x1p-11f, 1.f + 3 * 0x1p-11f, -1.f - 0x1p-11f, 0x1p-25f,
                    3 * 0x1p-25f, 0x1p-26f})
        x.push_back(v);
    for (float v : normal(4096, rng, 3.f)) x.push_back(v);
    std::uniform_real_distribution<float> wide(-12.f, 12.f);
    for (int i = 0; i < 1024; ++i) x.push_back(wide(rng));
    const int64_t n = (int64_t)x.size();
    std::vector<float> u = normal((size_t)n, rng), ones((size_t)n, 1.f);
    for (float &v : u)
        if (v == 0.f) v = 1.f;  // inf * 0 would be NaN

    // Two nodes on the same x: times ones (the table entry itself, exact) and
    // times u.
    Graph g;
    Tensor *xt = g.input(DType::F32, {n}), *ot = g.input(DType::F32, {n}), *ut = g.input(DType::F32, {n});
    Tensor *gate = g.op<Op::GEGLU>(DType::F32, {n}, {xt, ot});
    Tensor *y = g.op<Op::GEGLU>(DType::F32, {n}, {xt, ut});
    g.mark_output(gate);
    g.mark_output(y);
    for (const Node &nd : g.nodes()) CHECK(supports(nd));
    Bound bound(g);
    std::vector<float> got_gate;
    const std::vector<float> got = run_both(
        g, y,
        [&] {
            put(xt, x);
            put(ot, ones);
            put(ut, u);
        },
        [&] {
            got_gate = get(gate);
            Bytes s(got_gate.size() * 4);
            std::memcpy(s.data(), got_gate.data(), s.size());
            return s;
        });

    // The gate. x <= -10: 0; x >= 10: x itself (exact checks). Otherwise the
    // table entry for f16(x): ggml evaluates gelu in f32 and rounds it to f16.
    // Against y = gelu(f16(x)) in double, its f32 value is off by at most
    //   E = |x|/2 (8u sech^2(z) |z| + 5u |t|) + 3u |y|,  z = sqrt(2/pi) x (1 + 0.044715 x^2), t = tanh(z):
    // z's five f32 roundings and two f32 constants (<= 7u relative) move t by
    // sech^2(z) |z| 7u; tanhf is within 2 ulp (<= 4u |t|); 1 + t and the
    // product with x/2 round once each (2u |y|); coefficients rounded up for
    // second-order terms. The f16 rounding then adds half a spacing, so
    //   |entry - y| <= ulp_f16(|y| + E) / 2 + E,
    // and the entry must be an f16 value (tight at x = 2^-24: 1 + t rounds to
    // 1, and y_f32 = 2^-25 ties to 0). Where E is far below a spacing this
    // is "the nearest f16, or its neighbour when y is within E of a midpoint";
    // a flat one-ulp bound would not do for x < 0, where 1 + t cancels and
    // tanhf's error near -1 is a large part of the result (ggml's table is 2
    // f16 subnormal spacings off at x = -4.73 with glibc).
    size_t bad = 0, worst = 0;
    double worst_ratio = -1;
    for (size_t i = 0; i < x.size(); ++i) {
        const double xi = x[i], gi = got_gate[i];
        double ratio;
        if (xi <= -10) {
            ratio = gi == 0 ? 0 : INFINITY;
        } else if (xi >= 10) {
            ratio = gi == xi ? 0 : INFINITY;
        } else {
            const double xh = round_f16(xi), z = std::sqrt(2 / M_PI) * xh * (1 + 0.044715 * xh * xh);
            const double t = std::tanh(z), yd = 0.5 * xh * (1 + t);
            const double E = std::fabs(xh) / 2 * (8 * kU * (1 - t * t) * std::fabs(z) + 5 * kU * std::fabs(t)) +
                             3 * kU * std::fabs(yd);
            const double tol = ulp_f16(std::fabs(yd) + E) / 2 + E;
            const bool is_f16 = fp16_to_f32(f32_to_fp16((float)gi)) == (float)gi;
            ratio = is_f16 ? std::fabs(gi - yd) / tol : INFINITY;
        }
        if (!(ratio <= 1.0)) ++bad;
        if (!(ratio <= worst_ratio)) {
            worst_ratio = ratio;
            worst = i;
        }
    }
    if (std::getenv("VT_TEST_OPS_VERBOSE"))
        std::printf("%-28s worst err/tol %.3g (n=%zu)\n", "GEGLU gate", worst_ratio, x.size());
    {
        INFO("GEGLU gate: " << bad << " of " << x.size() << " out of bounds; worst at x = " << x[worst] << ": got "
                            << got_gate[worst] << " (err/tol " << worst_ratio << ")");
        CHECK(bad == 0);
    }
    // dst = gate * src1: one f32 product of the entry (exact check, as MUL;
    // inf * u stays inf, 0 * u is a zero).
    size_t bad_y = 0, first = 0;
    for (size_t i = 0; i < x.size(); ++i)
        if (!(got[i] == (float)((double)got_gate[i] * (double)u[i])) && bad_y++ == 0) first = i;
    INFO("GEGLU: " << bad_y << " products differ; first at x = " << x[first] << ", u = " << u[first] << ": got "
                   << got[first] << ", gate " << got_gate[first]);
    CHECK(bad_y == 0);
}

// ---- ROPE: frequency factors and YaRN --------------------------------------------

// ROPE in double from ggml's definition (core/op-params.h): pair i of a token
// at position pos turns by theta = pos base^(-2i/n_rot) / factor_i (the
// extrapolated angle), or freq_scale times that (interpolated); with YaRN
// (ext_factor != 0) by a ramp between the two over the correction dims of
// beta_fast and beta_slow, and cos and sin times attn_factor (1 + 0.1 ln(1 /
// freq_scale)). Also the tolerances, from the ROPE test above: the kernel's
// f32 angle is off by <= (4i + 3) u of itself (the factor's division adds u).
// With YaRN, the two angles (<= (4i + 4) u) are weighed by the ramp, whose
// three roundings (division, 1 -, ext_factor) put <= 3u on each weight, and
// the mix rounds 3 times: <= (4i + 13) u of the larger angle, taken as
// (4i + 16) u for second-order terms. The magnitude (logf, the f32 0.1, 1 +,
// the products with cos and sin) adds <= 6u to the 8u of cos, sin and the
// rotation.
void rope_reference(const RopeParams &p, const std::vector<int32_t> &pos, const std::vector<float> &factors,
                    int64_t head_dim, int64_t n_head, const std::vector<float> &x, std::vector<double> &ref,
                    std::vector<double> &tol) {
    const bool yarn = p.ext_factor != 0;
    double corr[2] = {0, 0}, mscale = p.attn_factor;
    if (yarn) {
        auto corr_dim = [&](double beta) {
            return p.n_rot * std::log(p.n_ctx_orig / (beta * 2 * M_PI)) / (2 * std::log((double)p.freq_base));
        };
        const double fast = corr_dim(p.beta_fast), slow = corr_dim(p.beta_slow);
        // The kernel finds these in f32; away from integers its floor and
        // ceil are the same as the double ones here.
        REQUIRE(std::fabs(fast - std::round(fast)) > 1e-3);
        REQUIRE(std::fabs(slow - std::round(slow)) > 1e-3);
        corr[0] = std::max(0.0, std::floor(fast));
        corr[1] = std::min(p.n_rot - 1.0, std::ceil(slow));
        mscale *= 1 + 0.1 * std::log(1.0 / p.freq_scale);
    }
    const int64_t row = head_dim * n_head;
    ref.assign(x.size(), 0.0);
    tol.assign(x.size(), 0.0);
    for (size_t t = 0; t < pos.size(); ++t) {
        for (int64_t h = 0; h < n_head; ++h) {
            const size_t o = (size_t)((int64_t)t * row + h * head_dim);
            for (int64_t i = p.n_rot; i < head_dim; ++i) ref[o + i] = x[o + i];  // the tail: unchanged
            for (int i = 0; i < p.n_rot / 2; ++i) {
                const double extrap = (double)pos[t] * std::pow((double)p.freq_base, -2.0 * i / p.n_rot) /
                                      (factors.empty() ? 1.0 : (double)factors[(size_t)i]);
                const double interp = (double)p.freq_scale * extrap;
                double theta = interp;
                if (yarn) {
                    const double y = (i - corr[0]) / std::max(0.001, corr[1] - corr[0]);
                    const double ramp = (1 - std::clamp(y, 0.0, 1.0)) * p.ext_factor;
                    theta = interp * (1 - ramp) + extrap * ramp;
                }
                const size_t i0 = o + (p.mode == kRopeAdjacent ? 2 * i : i);
                const size_t i1 = o + (p.mode == kRopeAdjacent ? 2 * i + 1 : i + p.n_rot / 2);
                const double x0 = x[i0], x1 = x[i1], c = mscale * std::cos(theta), s = mscale * std::sin(theta);
                ref[i0] = x0 * c - x1 * s;
                ref[i1] = x0 * s + x1 * c;
                const double dth = yarn ? (4.0 * i + 16) * kU * std::max(extrap, interp) : (4.0 * i + 3) * kU * theta;
                tol[i0] = tol[i1] = std::fabs(mscale) * (std::fabs(x0) + std::fabs(x1)) * (dth + 14 * kU) + 1e-30;
            }
        }
    }
}

// Runs ROPE of x (head_dim, n_head, n_tok) at pos with optional factors;
// checks it against rope_reference and its tail (past n_rot) bit for bit.
void check_rope(const RopeParams &p, const std::vector<int32_t> &pos, const std::vector<float> &factors,
                int64_t head_dim, int64_t n_head, std::mt19937 &rng, const char *what) {
    const int64_t n_tok = (int64_t)pos.size(), half = p.n_rot / 2;
    const std::vector<float> x = normal((size_t)(head_dim * n_head * n_tok), rng);
    Graph g;
    Tensor *xt = g.input(DType::F32, {head_dim, n_head, n_tok}), *pt = g.input(DType::I32, {n_tok});
    Tensor *ft = factors.empty() ? nullptr : g.input(DType::F32, {half});
    Tensor *y = g.op<Op::ROPE>(DType::F32, {head_dim, n_head, n_tok}, {xt, pt, ft}, p);
    g.mark_output(y);
    CHECK(supports(g.nodes()[0]));
    Bound bound(g);
    const std::vector<float> got = run_both(g, y, [&] {
        put(xt, x);
        put(pt, pos);
        if (ft) put(ft, factors);
    });
    std::vector<double> ref, tol;
    rope_reference(p, pos, factors, head_dim, n_head, x, ref, tol);
    check_close(got, ref, tol, what);
    bool tail_same = true;
    for (int64_t r = 0; r < n_head * n_tok; ++r)
        for (int64_t i = p.n_rot; i < head_dim; ++i) {
            const size_t k = (size_t)(r * head_dim + i);
            tail_same = tail_same && same_bits(&got[k], &x[k], 4);
        }
    CHECK(tail_same);
}

TEST_CASE("ROPE with frequency factors (src2) in modes 0 and 2", "[ops]") {
    // Factors as Llama 3.1's rope_freqs and LongRoPE give them: per pair,
    // between 1 (no change) and 8, some below 1.
    std::mt19937 rng(4711);
    const std::vector<int32_t> pos = {0, 5, 1000, 37};
    struct Case {
        int mode, n_rot;
        float base, freq_scale;
    };
    const Case cases[] = {{kRopeAdjacent, 64, 500000.f, 1.f}, {kRopeNeox, 64, 10000.f, 0.5f},
                          {kRopeAdjacent, 32, 10000.f, 1.f}, {kRopeNeox, 48, 1000000.f, 1.f}};
    std::uniform_real_distribution<float> fd(0.5f, 8.f);
    for (const Case &c : cases) {
        INFO("mode " << c.mode << ", n_rot " << c.n_rot << " of 64, base " << c.base << ", freq_scale "
                     << c.freq_scale);
        std::vector<float> factors((size_t)(c.n_rot / 2));
        for (size_t i = 0; i < factors.size(); ++i) factors[i] = i % 3 == 0 ? 1.f : fd(rng);
        RopeParams p{};
        p.n_rot = c.n_rot;
        p.mode = c.mode;
        p.freq_base = c.base;
        p.freq_scale = c.freq_scale;
        p.attn_factor = 1.f;
        check_rope(p, pos, factors, 64, 3, rng, "ROPE (factors)");
    }
    // A factor tensor of the wrong length is refused.
    Graph g;
    Tensor *x = g.input(DType::F32, {64, 1, 2}), *pt = g.input(DType::I32, {2}), *f = g.input(DType::F32, {31});
    RopeParams p{};
    p.n_rot = 64;
    p.freq_base = 10000.f;
    p.freq_scale = 1.f;
    p.attn_factor = 1.f;
    g.op<Op::ROPE>(DType::F32, {64, 1, 2}, {x, pt, f}, p);
    CHECK_FALSE(supports(g.nodes()[0]));
}

TEST_CASE("ROPE with YaRN (ext_factor 1, freq_scale 1/4, n_ctx_orig 4096)", "[ops]") {
    // Positions past n_ctx_orig are what YaRN is for.
    std::mt19937 rng(4712);
    const std::vector<int32_t> pos = {0, 5, 1000, 37, 5000};
    struct Case {
        int mode, n_rot, head_dim;
        float base;
    };
    // Correction dims (fast, slow): (10.47, 22.5), (13.96, 30.02), (5.24, 11.26).
    const Case cases[] = {{kRopeAdjacent, 64, 64, 10000.f}, {kRopeNeox, 64, 64, 10000.f},
                          {kRopeNeox, 128, 128, 1000000.f}, {kRopeAdjacent, 32, 64, 10000.f}};
    for (const Case &c : cases) {
        INFO("mode " << c.mode << ", n_rot " << c.n_rot << " of " << c.head_dim << ", base " << c.base);
        RopeParams p{};
        p.n_rot = c.n_rot;
        p.mode = c.mode;
        p.freq_base = c.base;
        p.freq_scale = 0.25f;
        p.ext_factor = 1.f;
        p.attn_factor = 1.f;
        p.beta_fast = 32.f;
        p.beta_slow = 1.f;
        p.n_ctx_orig = 4096;
        check_rope(p, pos, {}, c.head_dim, 2, rng, "ROPE (YaRN)");
    }
    // With factors, a partial ramp (ext_factor 0.5) and attn_factor 0.8 too.
    std::vector<float> factors(32);
    for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.f + 0.25f * (float)i;
    RopeParams p{};
    p.n_rot = 64;
    p.mode = kRopeNeox;
    p.freq_base = 10000.f;
    p.freq_scale = 0.25f;
    p.ext_factor = 0.5f;
    p.attn_factor = 0.8f;
    p.beta_fast = 32.f;
    p.beta_slow = 1.f;
    p.n_ctx_orig = 4096;
    INFO("factors, ext_factor 0.5, attn_factor 0.8");
    check_rope(p, pos, factors, 64, 2, rng, "ROPE (YaRN, factors)");
}

// ---- sliding-window attention ----------------------------------------------------

TEST_CASE("ATTN_PAGED with a sliding window: blocks before it are not read", "[ops]") {
    // The batch of the ATTN_PAGED test (decode at 37, a 5-token chunk after
    // 20, a fresh 3-token prompt; blocks shuffled over the pool, NaN wherever
    // no table reaches). For each window, the blocks of a sequence that lie
    // wholly before its first token's window are NaN as well: the kernel
    // starts each query at the block holding its window's first position, so
    // any read of them poisons the output.
    std::mt19937 rng(78);
    const AttnShape sh{6, 2, 32};
    const int64_t kv_row = sh.kv_row();
    const std::vector<SeqCase> seqs = {{37, 1}, {20, 5}, {0, 3}};
    for (int64_t bs : {16, 4}) {
        INFO("block size " << bs);
        const PagedBatch b = make_paged_batch(sh, 24, bs, seqs, rng);
        for (int32_t window : {5, 17}) {
            INFO("window " << window);
            std::vector<uint16_t> kp = b.k0, vp = b.v0;
            int64_t poisoned = 0;
            for (size_t si = 0; si < b.tables.size(); ++si) {
                const int64_t lo = window_start(seqs[si].n_past + 1, window);  // its first token's
                for (int64_t blk = 0; blk < lo / bs; ++blk, ++poisoned) {
                    const size_t s0 = (size_t)(b.tables[si][(size_t)blk] * bs * kv_row);
                    std::fill_n(&kp[s0], bs * kv_row, kNaN16);
                    std::fill_n(&vp[s0], bs * kv_row, kNaN16);
                }
            }
            CHECK(poisoned > 0);
            const std::vector<float> got = run_paged(b, window, kp, vp);
            // The reference reads the unpoisoned pool, with the softmax and
            // the tolerance's sums over the window's n_w keys.
            const AttnRef r = attn_ref(b, window);
            check_close(got, r.out, r.tol, "ATTN_PAGED (window)");
        }
        // A window no query outgrows (the longest sees 38 positions) is no
        // window: the same bits as 0.
        const std::vector<float> all = run_paged(b, 0, b.k0, b.v0);
        for (int32_t window : {38, 1000}) {
            INFO("window " << window << " against 0");
            const std::vector<float> w = run_paged(b, window, b.k0, b.v0);
            CHECK(same_bits(w.data(), all.data(), all.size() * sizeof(float)));
        }
    }
}

// ---- attention sinks ---------------------------------------------------------------

TEST_CASE("ATTN_PAGED with sinks: a logit per head in the denominator, GQA, windows, many sequences", "[ops]") {
    // gpt-oss's sinks (src6): per query head, exp(sink) joins the softmax's
    // denominator with no value. Four sequences in one step (decode at 37, a
    // chunk after 20, a fresh prompt, a decode at 130 past a block size of
    // windows), 8 query heads over 2 KV heads, with and without a window,
    // against the double reference (ops-harness.h) with the same tolerance
    // as without sinks; 1 and 3 threads bit for bit (run_paged). The sinks
    // span a head the sink dominates (+6: its outputs shrink toward 0), ones
    // beside the scores, one far below them (no effect within the
    // tolerance) and -inf (exactly none: the same bits as no sinks).
    std::mt19937 rng(4242);
    const AttnShape sh{8, 2, 32};
    const std::vector<SeqCase> seqs = {{37, 1}, {20, 5}, {0, 3}, {130, 1}};
    const std::vector<float> sinks = {0.0f, 6.0f, -1.5f, 0.7f, -30.0f, 2.5f, -INFINITY, 0.25f};
    const std::vector<float> none(8, -INFINITY);
    for (int64_t bs : {16, 4}) {
        const PagedBatch b = make_paged_batch(sh, 64, bs, seqs, rng);
        for (int32_t window : {0, 5, 17}) {
            INFO("block size " << bs << ", window " << window);
            const std::vector<float> got = run_paged(b, window, b.k0, b.v0, &sinks);
            const AttnRef r = attn_ref(b, window, true, &sinks);
            check_close(got, r.out, r.tol, "ATTN_PAGED (sinks)");
            // The sinks matter: the reference without them is far off for
            // the heads they weigh (head 1's outputs at least halve).
            const AttnRef plain = attn_ref(b, window, true);
            int64_t off = 0;
            for (size_t i = 0; i < got.size(); ++i) off += std::fabs(got[i] - plain.out[i]) > 10 * plain.tol[i];
            CHECK(off > (int64_t)got.size() / 8);
            // Sinks of -inf add an exact 0: the bits of a node without them.
            const std::vector<float> no_sinks = run_paged(b, window, b.k0, b.v0);
            const std::vector<float> inf_sinks = run_paged(b, window, b.k0, b.v0, &none);
            CHECK(same_bits(no_sinks.data(), inf_sinks.data(), no_sinks.size() * sizeof(float)));
        }
    }
}

TEST_CASE("ATTN_PAGED sinks: supports_op wants n_head f32 values, no latent mode", "[ops]") {
    std::vector<uint16_t> kpool(16 * 64 * 2), vpool(64 * 32);
    std::vector<float> sv(8);
    Tensor kct, vct;
    tensor_init(kct, DType::F16, 16, 64, 2, 1, kpool.data(), "k");
    tensor_init(vct, DType::F16, 64, 32, 1, 1, vpool.data(), "v");
    auto node = [&](DType type, int64_t n, bool latent) {
        Tensor st;
        tensor_init(st, type, n, 1, 1, 1, sv.data(), "sinks");
        Graph g;
        Tensor *q = g.input(DType::F32, {32, 8, 2}), *k = g.input(DType::F32, {32, 2, 2}),
               *v = latent ? nullptr : g.input(DType::F32, {32, 2, 2}), *ix = g.input(DType::I32, {8});
        g.op<Op::ATTN_PAGED>(DType::F32, {32, 8, 2}, {q, k, v, &kct, latent ? nullptr : &vct, ix, &st},
                             {0.125f, 0, 32});
        return supports(g.nodes()[0]);
    };
    CHECK(node(DType::F32, 8, false));
    CHECK_FALSE(node(DType::F32, 4, false));  // one per KV head is not one per head
    CHECK_FALSE(node(DType::F16, 8, false));
    CHECK_FALSE(node(DType::F32, 8, true));   // latent mode takes none
}

} // namespace
