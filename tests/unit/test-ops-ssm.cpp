// The ops of the Mamba-2 hybrids (NemotronH, Granite 4 hybrid, Falcon-H1) on
// the CPU backend, in test-ops-recurrent.cpp's style: SSM_SCAN, the grouped
// RMS_NORM_GATED in Mamba's order and UNARY's relu^2. A real vt::Graph, runs
// on 1 and 3 threads that must agree bit for bit, double-precision
// references written from the math (transformers' Mamba2 / NemotronH
// modules), tolerances derived next to each check. u = 2^-24 (kU); libm's
// expf and log1pf are taken as within 1 ulp (2u relative). (CONV1D_CAUSAL
// with a bias, Mamba-2's conv, is covered by test-ops-recurrent.cpp's
// batch test: its cases with bias and silu.)
#include "unit/state-slots-harness.h"

#include "backend/graph-exec.h"

namespace {

// ---- UNARY relu^2 ---------------------------------------------------------------------

TEST_CASE("UNARY relu^2: max(x, 0)^2 with one rounding, NaN kept", "[ops]") {
    std::mt19937 rng(22);
    const int64_t n = 1001, m = 3;
    std::vector<float> x = normal((size_t)(n * m), rng, 5.f);
    const float edges[] = {-0.f, 0.f, 1e-30f, -1e-30f, 1.8e19f, -1e30f, 2e19f, 1e-23f, NAN};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; ++i) x[i * 37] = edges[i];
    Graph g;
    Tensor *xt = g.input(DType::F32, {n, m});
    Tensor *y = g.op<Op::UNARY>(DType::F32, {n, m}, {xt}, UnaryParams{kUnaryReluSqr, 0.0f});
    g.mark_output(y);
    REQUIRE(supports(g.nodes()[0]));
    Bound bound(g);
    const std::vector<float> got = run_both(g, y, [&] { put(xt, x); });
    std::vector<double> ref(x.size()), tol(x.size());
    std::vector<float> finite = got;
    bool nan_kept = true, overflow_inf = true;
    for (size_t i = 0; i < x.size(); ++i) {
        const double r = x[i] > 0 ? (double)x[i] * x[i] : 0.0;
        // NaN in, NaN out; a square past FLT_MAX is inf: checked here, and
        // taken out of the tolerance check (which fails any non-finite error).
        if (std::isnan(x[i]) || r > 3.4028234663852886e38) {
            if (std::isnan(x[i])) nan_kept = nan_kept && std::isnan(got[i]);
            else overflow_inf = overflow_inf && got[i] == INFINITY;
            finite[i] = 0.f;
            ref[i] = 0;
            tol[i] = 0;
            continue;
        }
        ref[i] = r;
        // One rounding: half an ulp, <= u relative; 2^-150 for subnormals.
        tol[i] = kU * r + 0x1p-150;
    }
    CHECK(overflow_inf);
    CHECK(nan_kept);
    check_close(finite, ref, tol, "UNARY relu^2");
}

// ---- RMS_NORM_GATED, grouped, both orders ----------------------------------------------

TEST_CASE("RMS_NORM_GATED per group, gate before the norm (Mamba) and after (Qwen3-Next)", "[ops]") {
    std::mt19937 rng(4242);
    // A row of 96 elements: one group, or groups of 24 (4 groups, as
    // NemotronH's intermediate / n_groups).
    const int64_t n = 96, heads = 2, n_tok = 5, rows = heads * n_tok, N = n * rows;
    const float eps = 1e-5f;
    const std::vector<float> x = normal((size_t)N, rng, 1.5f), z = normal((size_t)N, rng, 2.f),
                             w = normal((size_t)n, rng);
    // One group of the first row tiny (eps dominates its sum).
    std::vector<float> xs = x;
    for (int64_t i = 24; i < 48; ++i) xs[(size_t)i] *= 1e-4f;
    Tensor wt;
    tensor_init(wt, DType::F32, n, 1, 1, 1, const_cast<float *>(w.data()), "w");
    for (int32_t order : {kGateBeforeNorm, kGateAfterNorm})
    for (int32_t gate : {kGateSilu, kGateSigmoid})
    for (int32_t group : {0, 24})
    for (bool z_view : {false, true}) {
        INFO("order " << order << ", gate " << gate << ", group " << group << (z_view ? ", z a view" : ""));
        Graph g;
        Tensor *xt = g.input(DType::F32, {n, heads, n_tok});
        Tensor *zbase = g.input(DType::F32, {z_view ? 2 * n * heads : n * heads, n_tok});
        Tensor *zt = z_view ? g.view(zbase, {n, heads, n_tok}, {(size_t)n * 4, (size_t)(2 * n * heads) * 4},
                                     (size_t)(n * heads) * 4)
                            : g.reshape(zbase, {n, heads, n_tok});
        GatedNormParams p{eps, gate, group, order};
        Tensor *y = g.op<Op::RMS_NORM_GATED>(DType::F32, {n, heads, n_tok}, {xt, &wt, zt}, p);
        g.mark_output(y);
        REQUIRE(supports(g.nodes()[0]));
        Bound bound(g);
        std::vector<float> zb(z);
        if (z_view) {
            zb.assign((size_t)(2 * N), NAN);
            for (int64_t t = 0; t < n_tok; ++t)
                std::copy_n(&z[(size_t)(t * n * heads)], n * heads, &zb[(size_t)((2 * t + 1) * n * heads)]);
        }
        const std::vector<float> got = run_both(g, y, [&] { put(xt, xs); put(zbase, zb); });
        const int64_t gs = group ? group : n;
        std::vector<double> ref((size_t)N), tol((size_t)N);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t g0 = 0; g0 < n; g0 += gs) {
                // v: what is normalized (x, or x * act(z) for the gate first).
                std::vector<double> act((size_t)gs), v((size_t)gs);
                double ss = 0;
                for (int64_t i = 0; i < gs; ++i) {
                    const size_t k = (size_t)(r * n + g0 + i);
                    const double zk = z[k], sg = 1.0 / (1.0 + std::exp(-zk));
                    act[(size_t)i] = gate == kGateSilu ? zk * sg : sg;
                    v[(size_t)i] = order == kGateBeforeNorm ? xs[k] * act[(size_t)i] : xs[k];
                    ss += v[(size_t)i] * v[(size_t)i];
                }
                const double scale = 1.0 / std::sqrt(ss / (double)gs + (double)eps);
                for (int64_t i = 0; i < gs; ++i) {
                    const size_t k = (size_t)(r * n + g0 + i);
                    const double wk = w[(size_t)(g0 + i)];
                    if (order == kGateBeforeNorm) {
                        ref[k] = v[(size_t)i] * scale * wk;
                        // g = x * act(z) in f32: act 4u, the product u: 5u
                        // per element, so <= 5u in the scale too; the scale's
                        // own 3.5u (as RMS_NORM's), g * scale, * w (u
                        // each): 15.5u; 16u.
                        tol[k] = 16 * kU * std::fabs(ref[k]) + 1e-30;
                    } else {
                        ref[k] = xs[k] * scale * wk * act[(size_t)i];
                        // As test-ops-recurrent's RMS_NORM_GATED: 10.5u; 11u.
                        tol[k] = 11 * kU * std::fabs(ref[k]) + 1e-30;
                    }
                }
            }
        check_close(got, ref, tol, "RMS_NORM_GATED grouped");
    }
    // Refused: a group that does not divide the row, an unknown order.
    for (const GatedNormParams bad : {GatedNormParams{eps, kGateSilu, 25, kGateBeforeNorm},
                                      GatedNormParams{eps, kGateSilu, 24, 2}, GatedNormParams{eps, kGateSilu, -1, 0}}) {
        Graph g;
        Tensor *xt = g.input(DType::F32, {n, 2}), *zt = g.input(DType::F32, {n, 2});
        g.op<Op::RMS_NORM_GATED>(DType::F32, {n, 2}, {xt, &wt, zt}, bad);
        CHECK_FALSE(supports(g.nodes()[0]));
    }
}

// ---- SSM_SCAN ----------------------------------------------------------------------------

struct SsmCfg {
    int64_t P, N, H, G;
    int32_t chunk;
    float dt_min, dt_max;  // the op's params (dt_max <= 0: none)
};

std::string cfg_name(const SsmCfg &c) {
    return "P " + std::to_string(c.P) + ", N " + std::to_string(c.N) + ", H " + std::to_string(c.H) + ", G " +
           std::to_string(c.G) + ", chunk " + std::to_string(c.chunk) + ", dt in [" + std::to_string(c.dt_min) +
           ", " + std::to_string(c.dt_max) + "]";
}

// One step's inputs, packed as the model's graph has them: x, B and C are
// views of one conv output row per token (x (P, H), then B and C (N, G)),
// dt its own (H, n_tok).
struct SsmIn {
    int64_t n_tok;
    std::vector<float> xbc, dt, A;  // xbc: n_tok rows of P H + 2 N G
};
int64_t xbc_row(const SsmCfg &c) { return c.P * c.H + 2 * c.N * c.G; }

SsmIn ssm_inputs(const SsmCfg &c, int64_t n_tok, std::mt19937 &rng) {
    SsmIn in;
    in.n_tok = n_tok;
    in.xbc = normal((size_t)(xbc_row(c) * n_tok), rng);
    // dt around transformers' init (dt_bias = softplus^-1 of 1e-3 .. 0.1)
    // plus the projection: a spread that crosses softplus's threshold 20
    // now and then, and hits the clamps.
    in.dt = normal((size_t)(c.H * n_tok), rng, 2.f);
    for (size_t i = 0; i < in.dt.size(); ++i) {
        in.dt[i] -= 3.f;
        if (i % 97 == 5) in.dt[i] = 21.f + (float)(i % 5);
    }
    // A = -exp(A_log), A_log in log(1 .. 16) (transformers' init).
    in.A.resize((size_t)c.H);
    std::uniform_real_distribution<float> ud(0.f, std::log(16.f));
    for (float &a : in.A) a = -std::exp(ud(rng));
    return in;
}

SsmIn slice(const SsmCfg &c, const SsmIn &in, int64_t t0, int64_t n) {
    SsmIn s;
    s.n_tok = n;
    const int64_t row = xbc_row(c);
    s.xbc.assign(in.xbc.begin() + t0 * row, in.xbc.begin() + (t0 + n) * row);
    s.dt.assign(in.dt.begin() + t0 * c.H, in.dt.begin() + (t0 + n) * c.H);
    s.A = in.A;
    return s;
}

struct SsmOut {
    std::vector<float> out, pool;
};

// One SSM_SCAN step with the pool starting as pool0 (on 1 and 3 threads,
// outputs and pools bit for bit alike). views: x, B, C are views of the
// packed rows; else each is copied to its own contiguous input.
SsmOut ssm_step(const SsmCfg &c, const SsmIn &in, const StepIndex &si, const std::vector<float> &pool0,
                int64_t n_slots, int32_t chunked_from, bool views = true) {
    std::vector<float> pool = pool0;
    const int64_t P = c.P, H = c.H, N = c.N, G = c.G, n_tok = si.n_tok, row = xbc_row(c);
    Tensor pt, at;
    tensor_init(pt, DType::F32, N * P * H, n_slots, 1, 1, pool.data(), "ssm.state");
    tensor_init(at, DType::F32, H, 1, 1, 1, const_cast<float *>(in.A.data()), "ssm.A");
    Graph g;
    Tensor *xt, *bt, *ct, *base = nullptr;
    std::vector<float> xs, bs, cs;
    if (views) {
        base = g.input(DType::F32, {row, n_tok});
        xt = g.view(base, {P, H, n_tok}, {(size_t)P * 4, (size_t)row * 4});
        bt = g.view(base, {N, G, n_tok}, {(size_t)N * 4, (size_t)row * 4}, (size_t)(P * H) * 4);
        ct = g.view(base, {N, G, n_tok}, {(size_t)N * 4, (size_t)row * 4}, (size_t)(P * H + N * G) * 4);
    } else {
        xt = g.input(DType::F32, {P, H, n_tok});
        bt = g.input(DType::F32, {N, G, n_tok});
        ct = g.input(DType::F32, {N, G, n_tok});
        for (int64_t t = 0; t < n_tok; ++t) {
            const float *r = &in.xbc[(size_t)(t * row)];
            xs.insert(xs.end(), r, r + P * H);
            bs.insert(bs.end(), r + P * H, r + P * H + N * G);
            cs.insert(cs.end(), r + P * H + N * G, r + row);
        }
    }
    Tensor *dt = g.input(DType::F32, {H, n_tok});
    Tensor *it = g.input(DType::I32, {3, (int64_t)si.index.size() / 3});
    SsmScanParams p{c.chunk, c.dt_min, c.dt_max, chunked_from};
    Tensor *y = g.op<Op::SSM_SCAN>(DType::F32, {P, H, n_tok}, {xt, dt, &at, bt, ct, &pt, it}, p);
    g.mark_output(y);
    REQUIRE(supports(g.nodes()[0]));
    Bound bound(g);
    SsmOut r;
    r.out = run_both(
        g, y,
        [&] {
            if (views) {
                put(base, in.xbc);
            } else {
                put(xt, xs);
                put(bt, bs);
                put(ct, cs);
            }
            put(dt, in.dt);
            put(it, si.index);
            pool = pool0;
        },
        [&] { return bytes_of(pool); });
    r.pool = pool;
    return r;
}

// The exact recurrence of one unit (sequence, head) in double, with a bound
// on each f32 implementation's error, per state element: S the exact state,
// M its magnitude (the same recurrence over |terms|), E the bound on the
// kernel's state error.
struct UnitRef {
    std::vector<double> S, M, E;  // P x N
};

struct SsmRef {
    std::vector<double> out, tol;  // (P, H, n_tok)
};

int64_t chunk_of(const SsmCfg &c) { return c.chunk > 0 ? c.chunk : kSsmChunk; }
bool takes_chunked(int64_t n, int32_t chunked_from) {
    return n >= (chunked_from > 0 ? (int64_t)chunked_from : (int64_t)kSsmChunkedFrom);
}

UnitRef unit_start(const SsmCfg &c, const std::vector<float> &pool, int64_t slot, int64_t h, bool fresh) {
    const size_t n = (size_t)(c.P * c.N);
    UnitRef u{std::vector<double>(n, 0.0), std::vector<double>(n, 0.0), std::vector<double>(n, 0.0)};
    if (fresh) return u;
    const float *s = &pool[(size_t)(slot * c.N * c.P * c.H + h * c.P * c.N)];
    for (size_t i = 0; i < n; ++i) {
        u.S[i] = s[i];
        u.M[i] = std::fabs(s[i]);
    }
    return u;
}

// The exact step size of a token: softplus in double, then the clamp.
double step_exact(const SsmCfg &c, float dt) {
    double d = (double)dt > 20 ? (double)dt : std::log1p(std::exp((double)dt));
    d = std::max(d, (double)c.dt_min);
    if (c.dt_max > 0) d = std::min(d, (double)c.dt_max);
    return d;
}

// Tokens [t0, t0 + n) of the step through unit (h) u, writing the outputs
// and their bounds into r. chunked: the bound of the chunked form, chunks of
// chunk_of(c) from t0; else the recurrent form's.
//
// Errors (first order, u = 2^-24): the kernel's d is softplus in f32 (4u
// relative, or exact above 20 up to 2e-9 < 2u d) and the clamp (exact);
// a = expf(d * A): |d A| 5u + 3u relative (d's error moves the exponent by
// |d A| 4u, the product u, expf 2u); xd = d * x: 5u.
//  Recurrent: S_t = a_t S_{t-1} + xd B: E_t = a_t E_{t-1} + ea_t a_t
//  M_{t-1} + 8u M_t (xd's 5u, the product, the fma or multiply and add);
//  y_t[p] = sum_n S[p][n] C[n] with N products and additions: its error
//  <= sum_n |C_n| (E_t + (N + 2) u M_t).
//  Chunked: the decay from token s to t is exp(gamma_t - gamma_s), gamma
//  summed in double from the f32 d (5u |gamma_t - gamma_s|), the difference
//  rounded to float, or (the kernel tables) gamma_t and gamma_s each rounded
//  to float and subtracted (1.5u |gamma_t|, as |gamma_s| <= |gamma_t|), then
//  an exp within 2 ulp (4u): relative error <= 7u |gamma_t| + 4u; each y_t term is a dot of N products
//  (C.B or S0.C) times a decay times xd, summed over t + 1 terms: y_t's
//  error <= sum_n |C_n| (e^gamma_t E_0 (1 + ...) + (7u |gamma_t| + (N + t +
//  12) u) M_t); the state at the chunk's end likewise over the chunk's n
//  terms (its decays from libm, the gamma differences in double): E_end =
//  e^gamma E_0 (1 + 5u |gamma| + 3u) + (5u |gamma| + (n + 12) u) M_end.
void ref_seq(const SsmCfg &c, const SsmIn &in, int64_t h, int64_t t0, int64_t n, bool chunked, UnitRef &u,
             SsmRef &r) {
    const int64_t P = c.P, N = c.N, H = c.H, g = h / (H / c.G), row = xbc_row(c);
    const double A = in.A[(size_t)h], uu = kU;
    const int64_t Q = chunked ? chunk_of(c) : n + 1;
    std::vector<double> E0, Sn((size_t)(P * N));
    double gam = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t t = t0 + i, j = i % Q;
        if (chunked && j == 0) {
            E0 = u.E;
            gam = 0;
        }
        const float *xr = &in.xbc[(size_t)(t * row)];
        const float *x = xr + h * P, *Bt = xr + P * H + g * N, *Ct = xr + P * H + N * c.G + g * N;
        const double d = step_exact(c, in.dt[(size_t)(t * H + h)]), a = std::exp(d * A);
        const double ea = 5 * uu * std::fabs(d * A) + 3 * uu;
        gam += d * A;
        for (int64_t p = 0; p < P; ++p) {
            const double xd = d * (double)x[p];
            double y = 0, ty = 0;
            for (int64_t k = 0; k < N; ++k) {
                const size_t e = (size_t)(p * N + k);
                const double term = xd * (double)Bt[k];
                const double m_old = u.M[e];
                u.S[e] = u.S[e] * a + term;
                u.M[e] = u.M[e] * a + std::fabs(term);
                if (!chunked) {
                    u.E[e] = a * u.E[e] + ea * a * m_old + 8 * uu * u.M[e];
                    ty += std::fabs((double)Ct[k]) * (u.E[e] + (double)(N + 2) * uu * u.M[e]);
                } else {
                    const double eg = std::exp(gam);
                    ty += std::fabs((double)Ct[k]) *
                          (eg * E0[e] * (1 + 5 * uu * std::fabs(gam) + 3 * uu) +
                           (7 * uu * std::fabs(gam) + (double)(N + j + 12) * uu) * u.M[e]);
                }
                y += u.S[e] * (double)Ct[k];
            }
            const size_t o = (size_t)((t * H + h) * P + p);
            r.out[o] = y;
            r.tol[o] = ty + 1e-30;
        }
        if (chunked && (j == Q - 1 || i == n - 1)) {
            const double eg = std::exp(gam);
            for (size_t e = 0; e < u.E.size(); ++e)
                u.E[e] = eg * E0[e] * (1 + 5 * uu * std::fabs(gam) + 3 * uu) +
                         (5 * uu * std::fabs(gam) + (double)(j + 13) * uu) * u.M[e];
        }
    }
}

// The kernel's final state of unit (slot, h) against the exact one, element
// by element within E.
void check_state(const SsmCfg &c, const std::vector<float> &pool, int64_t slot, int64_t h, const UnitRef &u,
                 const std::string &what) {
    const float *s = &pool[(size_t)(slot * c.N * c.P * c.H + h * c.P * c.N)];
    std::vector<double> tol(u.E.size());
    for (size_t i = 0; i < tol.size(); ++i) tol[i] = u.E[i] + 1e-30;
    check_close(std::vector<float>(s, s + u.S.size()), u.S, tol, what);
}

void check_pair(const std::vector<float> &a, const std::vector<float> &b, const std::vector<double> &ta,
                const std::vector<double> &tb, const std::string &what) {
    std::vector<double> ref(b.begin(), b.end()), tol(ta.size());
    for (size_t i = 0; i < tol.size(); ++i) tol[i] = ta[i] + tb[i];
    check_close(a, ref, tol, what);
}

// A warm state: what a few hundred tokens leave (magnitude ~ |xd B| / (1 -
// a)), random.
std::vector<float> warm_pool(const SsmCfg &c, int64_t n_slots, std::mt19937 &rng) {
    return normal((size_t)(c.N * c.P * c.H * n_slots), rng, 0.3f);
}

const SsmCfg kSsmCfgs[] = {
    {16, 32, 4, 2, 64, 0.f, 0.f},       // H / G = 2, no clamp
    {12, 20, 3, 1, 32, 0.01f, 2.5f},    // N not a multiple of 8; one group; both clamps
    {8, 16, 4, 4, 16, 0.f, 0.5f},       // a group per head; short chunks, an upper clamp
};

// Decode tokens and prompts around the chunk sizes, fresh and continuing, and
// a sequence with no tokens this step.
const std::vector<SeqSpec> kBatch = {{1, false}, {2, true},  {31, false}, {64, true},
                                     {65, false}, {0, false}, {130, false}, {1, true}};

TEST_CASE("SSM_SCAN: a batch of sequences against the double recurrence, in both forms", "[ops]") {
    std::mt19937 rng(2718);
    const int64_t n_slots = 11;
    for (const SsmCfg &c : kSsmCfgs) {
        INFO(cfg_name(c));
        const std::vector<int32_t> slots = pick_slots(kBatch.size(), n_slots, rng);
        const StepIndex si = step_index(kBatch, slots);
        const SsmIn in = ssm_inputs(c, si.n_tok, rng);
        const size_t slot_n = (size_t)(c.N * c.P * c.H);
        std::vector<float> pool0 = warm_pool(c, n_slots, rng);
        // Fresh slots hold NaN, which must not be read.
        for (size_t i = 0; i < kBatch.size(); ++i)
            if (kBatch[i].fresh) std::fill_n(&pool0[(size_t)slots[i] * slot_n], slot_n, NAN);
        // The default, never chunked, always chunked, from 64 tokens.
        const std::vector<int32_t> modes = {0, INT32_MAX, 1, 64};
        std::vector<SsmOut> got;
        std::vector<SsmRef> refs;
        for (int32_t cf : modes) {
            INFO("chunked_from " << cf);
            got.push_back(ssm_step(c, in, si, pool0, n_slots, cf));
            SsmRef r{std::vector<double>((size_t)(c.P * c.H * si.n_tok), 0.0),
                     std::vector<double>((size_t)(c.P * c.H * si.n_tok), 1e-30)};
            std::vector<float> pool_exp = pool0;
            for (size_t i = 0; i < kBatch.size(); ++i) {
                const bool ch = takes_chunked(kBatch[i].n, cf);
                for (int64_t h = 0; h < c.H; ++h) {
                    UnitRef u = unit_start(c, pool0, slots[i], h, kBatch[i].fresh);
                    ref_seq(c, in, h, si.t0[i], kBatch[i].n, ch, u, r);
                    check_state(c, got.back().pool, slots[i], h, u,
                                "SSM_SCAN state, sequence " + std::to_string(i) + (ch ? " (chunked)" : " (recurrent)"));
                }
                std::copy_n(&got.back().pool[(size_t)slots[i] * slot_n], slot_n, &pool_exp[(size_t)slots[i] * slot_n]);
            }
            check_close(got.back().out, r.out, r.tol, "SSM_SCAN " + cfg_name(c) + " chunked_from " + std::to_string(cf));
            // Slots outside the index are untouched, bit for bit.
            CHECK(same_bits(got.back().pool.data(), pool_exp.data(), pool_exp.size() * sizeof(float)));
            refs.push_back(r);
        }
        // The forms against each other: each within its bound of the same
        // exact values.
        for (size_t m = 1; m < got.size(); ++m)
            check_pair(got[m].out, got[0].out, refs[m].tol, refs[0].tol, "SSM_SCAN forms");

        // x, B, C as contiguous inputs rather than views: the same bits.
        const SsmOut flat = ssm_step(c, in, si, pool0, n_slots, 64, false);
        CHECK(same_bits(flat.out.data(), got[3].out.data(), flat.out.size() * sizeof(float)));
        CHECK(same_bits(flat.pool.data(), got[3].pool.data(), flat.pool.size() * sizeof(float)));

        // Each sequence alone in its step: the same bits, output and slot,
        // in the default form and with prompts chunked.
        for (size_t m : {(size_t)0, (size_t)3})
        for (size_t i = 0; i < kBatch.size(); ++i) {
            if (kBatch[i].n == 0) continue;
            INFO("sequence " << i << " alone, chunked_from " << modes[m]);
            const SsmOut alone = ssm_step(c, slice(c, in, si.t0[i], kBatch[i].n),
                                          step_index({kBatch[i]}, {slots[i]}), pool0, n_slots, modes[m]);
            const size_t o0 = (size_t)(si.t0[i] * c.H * c.P);
            CHECK(same_bits(alone.out.data(), &got[m].out[o0], alone.out.size() * sizeof(float)));
            CHECK(same_bits(&alone.pool[(size_t)slots[i] * slot_n], &got[m].pool[(size_t)slots[i] * slot_n],
                            slot_n * sizeof(float)));
        }
    }
}

TEST_CASE("SSM_SCAN: one step or many (chunked prefill, then decode) agree", "[ops]") {
    // One sequence's 150 tokens as one step, as prompt chunks then decode
    // tokens, and one token at a time: each run within its bound of the
    // exact recurrence; in the recurrent form the same bits.
    std::mt19937 rng(99);
    const SsmCfg c = kSsmCfgs[0];
    const int64_t n_all = 150, n_slots = 2;
    for (int32_t cf : {INT32_MAX, 64})
    for (bool fresh : {true, false}) {
        INFO((fresh ? "fresh" : "continuing") << ", chunked_from " << cf);
        const SsmIn in = ssm_inputs(c, n_all, rng);
        const size_t slot_n = (size_t)(c.N * c.P * c.H);
        std::vector<float> pool0 = warm_pool(c, n_slots, rng);
        if (fresh) std::fill_n(&pool0[slot_n], slot_n, NAN);
        struct Run {
            std::vector<float> out;
            std::vector<double> tol;
        };
        auto run = [&](const std::vector<int64_t> &steps) {
            Run R;
            std::vector<float> pool = pool0;
            SsmRef r{std::vector<double>((size_t)(c.P * c.H * n_all)), std::vector<double>((size_t)(c.P * c.H * n_all))};
            std::vector<UnitRef> st;
            for (int64_t h = 0; h < c.H; ++h) st.push_back(unit_start(c, pool0, 1, h, fresh));
            int64_t done = 0;
            for (int64_t n : steps) {
                const SsmOut o = ssm_step(c, slice(c, in, done, n), step_index({{n, fresh && done == 0}}, {1}), pool,
                                          n_slots, cf);
                R.out.insert(R.out.end(), o.out.begin(), o.out.end());
                pool = o.pool;
                // The reference indexes the whole sequence's tokens.
                for (int64_t h = 0; h < c.H; ++h) ref_seq(c, in, h, done, n, takes_chunked(n, cf), st[(size_t)h], r);
                done += n;
            }
            REQUIRE(done == n_all);
            check_close(R.out, r.out, r.tol, "SSM_SCAN in " + std::to_string(steps.size()) + " steps");
            for (int64_t h = 0; h < c.H; ++h) check_state(c, pool, 1, h, st[(size_t)h], "SSM_SCAN state");
            R.tol = r.tol;
            R.out.insert(R.out.end(), pool.begin() + (ptrdiff_t)slot_n, pool.end());
            for (int64_t h = 0; h < c.H; ++h) R.tol.insert(R.tol.end(), st[(size_t)h].E.begin(), st[(size_t)h].E.end());
            return R;
        };
        const Run one = run({n_all});
        for (const std::vector<int64_t> &steps :
             {std::vector<int64_t>{64, 64, 1, 1, 20}, {2, 1, 63, 65, 19}, std::vector<int64_t>(n_all, 1)}) {
            const Run many = run(steps);
            check_pair(many.out, one.out, many.tol, one.tol, "SSM_SCAN one step vs " + std::to_string(steps.size()) +
                                                                 " steps");
            if (!takes_chunked(n_all, cf)) CHECK(same_bits(many.out.data(), one.out.data(), one.out.size() * 4));
        }
    }
}

TEST_CASE("SSM_SCAN at NemotronH's head shape: P 64, N 128, 8 heads over 2 groups", "[ops]") {
    // The per-head shape of NemotronH / Granite 4 (head_dim 64, state 128),
    // a decode token, a short step and a prompt of two chunks and a bit
    // beside each other, recurrent and chunked (chunk 128).
    std::mt19937 rng(64);
    const SsmCfg c{64, 128, 8, 2, 128, 0.f, 0.f};
    const std::vector<SeqSpec> seqs = {{1, false}, {3, false}, {300, true}};
    const int64_t n_slots = 4;
    const std::vector<int32_t> slots = {2, 0, 3};
    const StepIndex si = step_index(seqs, slots);
    const SsmIn in = ssm_inputs(c, si.n_tok, rng);
    const std::vector<float> pool0 = warm_pool(c, n_slots, rng);
    std::vector<SsmOut> got;
    std::vector<SsmRef> refs;
    for (int32_t cf : {INT32_MAX, 128}) {
        INFO("chunked_from " << cf);
        got.push_back(ssm_step(c, in, si, pool0, n_slots, cf));
        SsmRef r{std::vector<double>((size_t)(c.P * c.H * si.n_tok)), std::vector<double>((size_t)(c.P * c.H * si.n_tok))};
        for (size_t i = 0; i < seqs.size(); ++i)
            for (int64_t h = 0; h < c.H; ++h) {
                UnitRef u = unit_start(c, pool0, slots[i], h, seqs[i].fresh);
                ref_seq(c, in, h, si.t0[i], seqs[i].n, takes_chunked(seqs[i].n, cf), u, r);
                check_state(c, got.back().pool, slots[i], h, u, "SSM_SCAN 64 x 128 state");
            }
        check_close(got.back().out, r.out, r.tol, "SSM_SCAN 64 x 128, chunked_from " + std::to_string(cf));
        refs.push_back(r);
    }
    check_pair(got[1].out, got[0].out, refs[1].tol, refs[0].tol, "SSM_SCAN 64 x 128 forms");
}

TEST_CASE("SSM_SCAN: a malformed index touches no slot; shapes it refuses", "[ops]") {
    std::mt19937 rng(5);
    const SsmCfg c{8, 16, 2, 1, 0, 0.f, 0.f};
    const int64_t n_slots = 3;
    const size_t slot_n = (size_t)(c.N * c.P * c.H);
    const std::vector<float> pool0 = warm_pool(c, n_slots, rng);
    // Sequence 0 names slot -1: zero outputs; sequence 1 runs; a slot past
    // the pool (3) is skipped too; the index covers 6 of the step's 8 tokens.
    StepIndex si = step_index({{1, false}, {3, false}, {2, true}}, {-1, 1, 3});
    si.n_tok = 8;
    const SsmIn in = ssm_inputs(c, si.n_tok, rng);
    const SsmOut got = ssm_step(c, in, si, pool0, n_slots, 0);
    bool zeros = true;
    for (int64_t t : {0, 4, 5, 6, 7})
        for (int64_t e = 0; e < c.H * c.P; ++e) zeros = zeros && got.out[(size_t)(t * c.H * c.P + e)] == 0.f;
    CHECK(zeros);
    for (int64_t s : {0, 2})
        CHECK(same_bits(&got.pool[(size_t)s * slot_n], &pool0[(size_t)s * slot_n], slot_n * sizeof(float)));
    CHECK_FALSE(same_bits(&got.pool[slot_n], &pool0[slot_n], slot_n * sizeof(float)));
    // A negative count ends the index: its tokens and all after get zeros.
    {
        StepIndex bad = step_index({{2, false}, {2, false}}, {0, 1});
        bad.index[4] = -1;
        const SsmOut o = ssm_step(c, slice(c, in, 0, 4), bad, pool0, n_slots, 0);
        bool z = true;
        for (int64_t e = 2 * c.H * c.P; e < 4 * c.H * c.P; ++e) z = z && o.out[(size_t)e] == 0.f;
        CHECK(z);
        CHECK(same_bits(&o.pool[slot_n], &pool0[slot_n], slot_n * sizeof(float)));
    }
    // Refused: H not a multiple of G, a pool of the wrong width, a chunk
    // over kSsmChunkMax, B and C of different shapes, A of the wrong size.
    std::vector<float> pbuf(8192), abuf(8);
    struct Bad {
        int64_t H, G, width, A_n, C_G;
        int32_t chunk;
    };
    for (const Bad &bad : {Bad{3, 2, 16 * 8 * 3, 3, 2, 0}, Bad{2, 1, 16 * 8, 2, 1, 0},
                           Bad{2, 1, 16 * 8 * 2, 2, 1, kSsmChunkMax + 1}, Bad{2, 1, 16 * 8 * 2, 2, 2, 0},
                           Bad{2, 1, 16 * 8 * 2, 3, 1, 0}}) {
        Tensor pt, at;
        tensor_init(pt, DType::F32, bad.width, 2, 1, 1, pbuf.data());
        tensor_init(at, DType::F32, bad.A_n, 1, 1, 1, abuf.data());
        Graph g;
        Tensor *x = g.input(DType::F32, {8, bad.H, 2}), *dt = g.input(DType::F32, {bad.H, 2}),
               *B = g.input(DType::F32, {16, bad.G, 2}), *C = g.input(DType::F32, {16, bad.C_G, 2}),
               *it = g.input(DType::I32, {3, 1});
        g.op<Op::SSM_SCAN>(DType::F32, {8, bad.H, 2}, {x, dt, &at, B, C, &pt, it}, SsmScanParams{bad.chunk, 0.f, 0.f, 0});
        CHECK_FALSE(supports(g.nodes()[0]));
    }
}

TEST_CASE("SSM_SCAN on a device without it: the executor runs it on the CPU and writes the state back", "[.][fallback]") {
    // Run by the 'backends' suite with tests/backends/fake on VT_BACKEND_PATH:
    // device fake0 supports no op and its memory is reached only through
    // set/get, so the graph executor copies the node's sources to the host,
    // runs it there and copies back dst and the state pool (src5, updated in
    // place): the same bits as a plain CPU run.
    vt_device *dev = find_device("fake0");
    REQUIRE(dev != nullptr);
    REQUIRE_FALSE(device_is_host(dev));
    std::mt19937 rng(41);
    const SsmCfg c{8, 16, 4, 2, 16, 0.f, 0.f};
    const int64_t n_slots = 3;
    const StepIndex si = step_index({{1, false}, {20, true}}, {2, 0});
    const SsmIn in = ssm_inputs(c, si.n_tok, rng);
    const std::vector<float> pool0 = warm_pool(c, n_slots, rng);
    // The CPU's run (chunked from 16 tokens: both forms).
    const SsmOut want = ssm_step(c, in, si, pool0, n_slots, 16, false);

    const int64_t P = c.P, H = c.H, N = c.N, G = c.G, n_tok = si.n_tok, row = xbc_row(c);
    std::vector<float> xs, bs, cs;
    for (int64_t t = 0; t < n_tok; ++t) {
        const float *r = &in.xbc[(size_t)(t * row)];
        xs.insert(xs.end(), r, r + P * H);
        bs.insert(bs.end(), r + P * H, r + P * H + N * G);
        cs.insert(cs.end(), r + P * H + N * G, r + row);
    }
    // The pool in the device's memory; A in plain host memory.
    const size_t pool_bytes = pool0.size() * sizeof(float);
    BufferPtr pool_buf = buffer_alloc(dev, pool_bytes, "ssm pool");
    Tensor pt, at;
    tensor_init(pt, DType::F32, N * P * H, n_slots, 1, 1, pool_buf->iface->get_base(pool_buf.get()), "ssm.state");
    pt.buffer = pool_buf.get();
    tensor_set(pt, pool0.data(), 0, pool_bytes);
    tensor_init(at, DType::F32, H, 1, 1, 1, const_cast<float *>(in.A.data()), "ssm.A");
    Graph g;
    Tensor *xt = g.input(DType::F32, {P, H, n_tok}), *bt = g.input(DType::F32, {N, G, n_tok}),
           *ct = g.input(DType::F32, {N, G, n_tok}), *dt = g.input(DType::F32, {H, n_tok}),
           *it = g.input(DType::I32, {3, 2});
    Tensor *y = g.op<Op::SSM_SCAN>(DType::F32, {P, H, n_tok}, {xt, dt, &at, bt, ct, &pt, it},
                                   SsmScanParams{c.chunk, 0.f, 0.f, 16});
    g.mark_output(y);
    CHECK_FALSE(dev->iface->supports_op(dev, &g.nodes()[0]));
    BufferPtr arena = buffer_alloc(dev, g.plan() + 64, "ssm arena");
    uint8_t *base = static_cast<uint8_t *>(arena->iface->get_base(arena.get()));
    g.bind(base, arena.get());
    auto put_dev = [&](Tensor *t, const void *v) {
        REQUIRE(arena->iface->set(arena.get(), v, (size_t)(static_cast<uint8_t *>(t->data) - base), t->nbytes()) ==
                VT_OK);
    };
    put_dev(xt, xs.data());
    put_dev(bt, bs.data());
    put_dev(ct, cs.data());
    put_dev(dt, in.dt.data());
    put_dev(it, si.index.data());
    GraphExecutor ex(dev, 2);
    ex.compute(g.nodes());
    CHECK(ex.fallback_nodes() == 1);
    std::vector<float> got((size_t)y->nelements()), pool(pool0.size());
    REQUIRE(arena->iface->get(arena.get(), got.data(), (size_t)(static_cast<uint8_t *>(y->data) - base),
                              got.size() * sizeof(float)) == VT_OK);
    tensor_get(pt, pool.data(), 0, pool_bytes);
    CHECK(same_bits(got.data(), want.out.data(), got.size() * sizeof(float)));
    CHECK(same_bits(pool.data(), want.pool.data(), pool_bytes));
    CHECK_FALSE(same_bits(pool.data(), pool0.data(), pool_bytes));  // the state went back to the device
}

} // namespace
