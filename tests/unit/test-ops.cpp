// Every op of core/ops.def on the CPU backend, through the real path (a
// vt::Graph, plan(), bind(), graph_compute on the backend's vtable), against
// naive double-precision references written from each op's mathematical
// definition. Each case runs with 1 and 3 threads and the two results must be
// identical bit for bit (the kernels split work so that every output element
// is computed by the same code on the same data).
//
// Tolerances are derived, not tuned; each is stated next to its check.
// u = 2^-24 is the unit roundoff of f32. VT_TEST_OPS_VERBOSE=1 prints each
// check's worst error/tolerance ratio (how much margin a bound leaves).
#include "common/skip.h"
#include "unit/ops-harness.h"

namespace {

// ---- GET_ROWS ------------------------------------------------------------------

TEST_CASE("GET_ROWS gathers dequantized rows exactly", "[ops]") {
    std::mt19937 rng(1234);
    struct Case {
        DType t;
        int64_t n;
    };
    const Case cases[] = {{DType::F32, 77}, {DType::F16, 77}, {DType::Q8_0, 32 * 9}, {DType::Q4_K, 512}};
    const int64_t n_rows = 23;
    for (const Case &c : cases) {
        INFO("weight type " << dtype_name(c.t) << ", row length " << c.n);
        Bytes w = random_weights(c.t, c.n, n_rows, rng);
        Tensor wt;
        tensor_init(wt, c.t, c.n, n_rows, 1, 1, w.data(), "w");
        const std::vector<int32_t> ids = {0, 22, 5, 5, 13, 0, 21, 1, 22};
        Graph g;
        Tensor *id = g.input(DType::I32, {(int64_t)ids.size()}, "ids");
        Tensor *y = g.op<Op::GET_ROWS>(DType::F32, {c.n, (int64_t)ids.size()}, {&wt, id});
        g.mark_output(y);
        CHECK(supports(g.nodes()[0]));
        Bound bound(g);
        const std::vector<float> got = run_both(g, y, [&] { put(id, ids); });
        // Reference: the portable dequantizer, row by row; must match bit for bit.
        std::vector<float> ref((size_t)(c.n * (int64_t)ids.size()));
        for (size_t r = 0; r < ids.size(); ++r)
            ref::dequantize_row(c.t, w.data() + (size_t)ids[r] * row_bytes(c.t, c.n), ref.data() + r * c.n, c.n);
        CHECK(same_bits(got.data(), ref.data(), ref.size() * sizeof(float)));
    }
}

// ---- RMS_NORM ------------------------------------------------------------------

TEST_CASE("RMS_NORM: x / sqrt(mean(x^2) + eps) * w", "[ops]") {
    std::mt19937 rng(99);
    struct Case {
        int64_t n, m;
        float eps;
    };
    const Case cases[] = {{4096, 1, 1e-5f}, {1001, 7, 1e-6f}, {37, 33, 1e-5f}, {3, 5, 1e-2f}};
    for (const Case &c : cases) {
        INFO("n " << c.n << ", rows " << c.m << ", eps " << c.eps);
        std::vector<float> x = normal((size_t)(c.n * c.m), rng, 2.f), w = normal((size_t)c.n, rng);
        // One row of tiny values, where eps dominates the mean.
        if (c.m > 1)
            for (int64_t i = 0; i < c.n; ++i) x[(size_t)(c.n + i)] *= 1e-3f;
        Tensor wt;
        tensor_init(wt, DType::F32, c.n, 1, 1, 1, w.data(), "w");
        Graph g;
        Tensor *xt = g.input(DType::F32, {c.n, c.m});
        Tensor *y = g.op<Op::RMS_NORM>(DType::F32, {c.n, c.m}, {xt, &wt}, {c.eps});
        g.mark_output(y);
        CHECK(supports(g.nodes()[0]));
        Bound bound(g);
        const std::vector<float> got = run_both(g, y, [&] { put(xt, x); });
        std::vector<double> ref(x.size()), tol(x.size());
        for (int64_t r = 0; r < c.m; ++r) {
            double ss = 0;
            for (int64_t i = 0; i < c.n; ++i) ss += (double)x[r * c.n + i] * x[r * c.n + i];
            const double s = 1.0 / std::sqrt(ss / (double)c.n + (double)c.eps);
            for (int64_t i = 0; i < c.n; ++i) {
                const size_t k = (size_t)(r * c.n + i);
                ref[k] = (double)x[k] * s * (double)w[(size_t)i];
                // A handful of f32 roundings (x^2, mean, +eps, sqrt, divide,
                // two multiplies) give <= ~10u relative; 1e-5 relative leaves room.
                tol[k] = 1e-5 * std::fabs(ref[k]) + 1e-30;
            }
        }
        check_close(got, ref, tol, "RMS_NORM");
    }
}

// ---- MUL_MAT ---------------------------------------------------------------------

// The reference (act_error, weight_parts, matmul_ref) is in ops-harness.h,
// shared with MUL_MAT_ID (test-ops-moe.cpp).

TEST_CASE("MUL_MAT for every weight type against double dots", "[ops]") {
    std::mt19937 rng(4242);
    const int64_t n_out = 37;  // odd: uneven thread split and a partial 16-row block
    for (DType t : kMatmulTypes) {
        const int64_t k = matmul_k(t);
        Bytes w = random_weights(t, k, n_out, rng);
        Tensor wt;
        tensor_init(wt, t, k, n_out, 1, 1, w.data(), "w");
        const DType vdt = vec_dot_type(t);
        std::vector<RefRow> rows;
        for (int64_t r = 0; r < n_out; ++r) rows.push_back(ref_row(t, w.data() + (size_t)r * row_bytes(t, k), k));
        for (int64_t m : {1, 7, 33}) {
            INFO("weight " << dtype_name(t) << " (acts " << dtype_name(vdt) << "), k " << k << ", n " << n_out
                           << ", m " << m);
            std::vector<float> x = normal((size_t)(k * m), rng, 0.7f);
            // Row 0 carries outliers, so some blocks have a large amax.
            for (int64_t i = 0; i < k; i += 37) x[(size_t)i] *= 40.f;
            Graph g;
            Tensor *xt = g.input(DType::F32, {k, m});
            Tensor *y = g.op<Op::MUL_MAT>(DType::F32, {n_out, m}, {&wt, xt});
            g.mark_output(y);
            CHECK(supports(g.nodes()[0]));
            Bound bound(g);
            const std::vector<float> got = run_both(g, y, [&] { put(xt, x); });

            // Reference: double dot of the dequantized weight row with the f32
            // activation row, within matmul_ref's bound (ops-harness.h).
            std::vector<double> ref((size_t)(n_out * m)), tol(ref.size());
            std::vector<double> e, emin;
            for (int64_t a = 0; a < m; ++a) {
                const std::vector<float> xa(x.begin() + a * k, x.begin() + (a + 1) * k);
                act_error(vdt, xa, e, emin);
                for (int64_t r = 0; r < n_out; ++r) {
                    const RefDot d = matmul_ref(rows[(size_t)r], xa.data(), e, emin, k);
                    ref[(size_t)(a * n_out + r)] = d.ref;
                    tol[(size_t)(a * n_out + r)] = d.tol;
                }
            }
            check_close(got, ref, tol, std::string("MUL_MAT ") + dtype_name(t));
        }
    }
}

// ---- ADD, SWIGLU -------------------------------------------------------------------

TEST_CASE("ADD and SWIGLU element-wise", "[ops]") {
    std::mt19937 rng(7);
    for (auto [n, m] : {std::pair<int64_t, int64_t>{4099, 1}, {77, 7}, {1, 3}}) {
        INFO("shape " << n << " x " << m);
        const size_t N = (size_t)(n * m);
        std::vector<float> a = normal(N, rng, 3.f), b = normal(N, rng, 3.f);
        // Saturating gates: silu(-90) underflows, exp(90) overflows f32.
        const float extremes[] = {-90.f, -20.f, 20.f, 90.f, 0.f, -0.f};
        for (size_t i = 0; i < std::min<size_t>(N, 6); ++i) a[i * 13 % N] = extremes[i];
        Graph g;
        Tensor *at = g.input(DType::F32, {n, m}), *bt = g.input(DType::F32, {n, m});
        Tensor *sum = g.op<Op::ADD>(DType::F32, {n, m}, {at, bt});
        Tensor *sw = g.op<Op::SWIGLU>(DType::F32, {n, m}, {at, bt});
        g.mark_output(sum);
        g.mark_output(sw);
        for (const Node &nd : g.nodes()) CHECK(supports(nd));
        Bound bound(g);
        std::vector<float> got_sw;
        const std::vector<float> got_sum = run_both(g, sum, [&] { put(at, a); put(bt, b); },
                                                    [&] {
                                                        got_sw = get(sw);
                                                        Bytes s(N * 4);
                                                        std::memcpy(s.data(), got_sw.data(), N * 4);
                                                        return s;
                                                    });
        std::vector<double> r_sum(N), t_sum(N), r_sw(N), t_sw(N);
        for (size_t i = 0; i < N; ++i) {
            r_sum[i] = (double)a[i] + (double)b[i];
            // One f32 rounding: <= u |ref|.
            t_sum[i] = 1e-6 * std::fabs(r_sum[i]) + 1e-30;
            r_sw[i] = (double)a[i] / (1.0 + std::exp(-(double)a[i])) * (double)b[i];
            // expf (<= 1 ulp), +1, divide, multiply: a few u relative
            // (1 + exp(-g) >= 1, so exp's error does not grow); 1e-6 leaves room.
            t_sw[i] = 1e-6 * std::fabs(r_sw[i]) + 1e-30;
        }
        check_close(got_sum, r_sum, t_sum, "ADD");
        check_close(got_sw, r_sw, t_sw, "SWIGLU");
    }
}

TEST_CASE("SWIGLU clamped (gpt-oss): min(gate, L), clamp(up, -L, L) + 1, sigmoid(alpha g)", "[ops]") {
    // transformers' GptOssExperts._apply_gate / ggml's swiglu_oai against a
    // double reference. The clamps are exact; then alpha g (u), expf (1 ulp,
    // and the argument's rounding scaled by |alpha g|), 1 + e (u; >= 1, so
    // e's relative error does not grow), the division, u + 1 (correctly
    // rounded: u relative to the sum) and the product: (alpha |g| + 8) u
    // relative bounds it.
    std::mt19937 rng(1702);
    const float alpha = 1.702f, limit = 7.0f;
    const int64_t n = 301, m = 5;
    const size_t N = (size_t)(n * m);
    std::vector<float> a = normal(N, rng, 6.f), b = normal(N, rng, 6.f);  // many past +-7
    const float extremes[] = {-90.f, 90.f, 7.f, -7.f, 0.f, -0.f, 1e-30f, -1.f};
    for (size_t i = 0; i < 8; ++i) {
        a[i * 37] = extremes[i];
        b[i * 41 + 3] = extremes[7 - i];
    }
    Graph g;
    Tensor *at = g.input(DType::F32, {n, m}), *bt = g.input(DType::F32, {n, m});
    Tensor *sw = g.op<Op::SWIGLU>(DType::F32, {n, m}, {at, bt}, SwigluParams{alpha, limit});
    Tensor *plain = g.op<Op::SWIGLU>(DType::F32, {n, m}, {at, bt}, SwigluParams{});
    g.mark_output(sw);
    g.mark_output(plain);
    for (const Node &nd : g.nodes()) CHECK(supports(nd));
    Bound bound(g);
    std::vector<float> got_plain;
    const std::vector<float> got = run_both(g, sw, [&] { put(at, a); put(bt, b); },
                                            [&] {
                                                got_plain = get(plain);
                                                Bytes s(N * 4);
                                                std::memcpy(s.data(), got_plain.data(), N * 4);
                                                return s;
                                            });
    std::vector<double> ref(N), tol(N);
    int64_t clamped = 0;
    for (size_t i = 0; i < N; ++i) {
        const double x = std::min((double)a[i], (double)limit);
        const double y = std::min(std::max((double)b[i], -(double)limit), (double)limit);
        clamped += a[i] > limit || std::fabs(b[i]) > limit;
        ref[i] = x / (1.0 + std::exp(-(double)alpha * x)) * (y + 1.0);
        tol[i] = ((double)alpha * std::fabs(x) + 8) * kU * std::fabs(ref[i]) + 1e-30;
    }
    CHECK(clamped > (int64_t)N / 4);  // the clamps are exercised
    check_close(got, ref, tol, "SWIGLU (clamped)");
    // SwigluParams{} is the plain SwiGLU (its own test above): here only
    // that it differs where the clamps act.
    int64_t differ = 0;
    for (size_t i = 0; i < N; ++i) differ += got[i] != got_plain[i];
    CHECK(differ > (int64_t)N / 4);
    // supports_op: a negative or non-finite limit, a NaN alpha.
    for (SwigluParams bad : {SwigluParams{alpha, -1.0f}, SwigluParams{alpha, INFINITY}, SwigluParams{NAN, limit}}) {
        Graph g2;
        Tensor *x = g2.input(DType::F32, {n, m}), *u = g2.input(DType::F32, {n, m});
        g2.op<Op::SWIGLU>(DType::F32, {n, m}, {x, u}, bad);
        CHECK_FALSE(supports(g2.nodes()[0]));
    }
}

// ---- ROPE ----------------------------------------------------------------------

TEST_CASE("ROPE modes 0 and 2, partial rotation, scattered positions", "[ops]") {
    std::mt19937 rng(31337);
    const int64_t head_dim = 64, n_head = 3;
    const std::vector<int32_t> pos = {0, 5, 1000, 37};
    const int64_t n_tok = (int64_t)pos.size(), row = head_dim * n_head;
    struct Case {
        int mode, n_rot;
        float base, freq_scale;
    };
    const Case cases[] = {{0, 64, 10000.f, 0.5f}, {2, 64, 10000.f, 0.5f}, {0, 48, 500000.f, 0.25f},
                          {2, 32, 10000.f, 2.0f}};
    for (const Case &c : cases) {
        INFO("mode " << c.mode << ", n_rot " << c.n_rot << " of " << head_dim << ", base " << c.base
                     << ", freq_scale " << c.freq_scale);
        const std::vector<float> x = normal((size_t)(row * n_tok), rng);
        Graph g;
        Tensor *xt = g.input(DType::F32, {head_dim, n_head, n_tok}), *pt = g.input(DType::I32, {n_tok});
        RopeParams p{};
        p.n_rot = c.n_rot;
        p.mode = c.mode;
        p.freq_base = c.base;
        p.freq_scale = c.freq_scale;
        p.attn_factor = 1.0f;
        Tensor *y = g.op<Op::ROPE>(DType::F32, {head_dim, n_head, n_tok}, {xt, pt, nullptr}, p);
        g.mark_output(y);
        CHECK(supports(g.nodes()[0]));
        Bound bound(g);
        const std::vector<float> got = run_both(g, y, [&] { put(xt, x); put(pt, pos); });

        std::vector<double> ref(x.size()), tol(x.size());
        for (int64_t t = 0; t < n_tok; ++t) {
            for (int64_t h = 0; h < n_head; ++h) {
                const size_t o = (size_t)(t * row + h * head_dim);
                // The tail past n_rot is copied unchanged (tolerance 0).
                for (int64_t i = c.n_rot; i < head_dim; ++i) {
                    ref[o + i] = x[o + i];
                    tol[o + i] = 0;
                }
                for (int i = 0; i < c.n_rot / 2; ++i) {
                    const double theta = (double)pos[(size_t)t] * (double)c.freq_scale *
                                         std::pow((double)c.base, -2.0 * i / c.n_rot);
                    const size_t i0 = o + (c.mode == 0 ? 2 * i : i);
                    const size_t i1 = o + (c.mode == 0 ? 2 * i + 1 : i + c.n_rot / 2);
                    const double x0 = x[i0], x1 = x[i1];
                    ref[i0] = x0 * std::cos(theta) - x1 * std::sin(theta);
                    ref[i1] = x0 * std::sin(theta) + x1 * std::cos(theta);
                    // An f32 evaluation of theta_i (a pow of the base, i products,
                    // the freq_scale product) is off by <= (4i + 2) u relative
                    // (pow <= 3u incl. the rounding of -2/n_rot, u per product),
                    // i.e. (4i + 2) u theta absolute; f32 cos/sin add <= 2u, the
                    // rotation's two products and sum <= 3u of |x0| + |x1|.
                    // (At pos 1000 this is ~1.5e-4 for |x| ~ 1.)
                    const double dth = (4.0 * i + 2.0) * kU * std::fabs(theta);
                    tol[i0] = tol[i1] = (std::fabs(x0) + std::fabs(x1)) * (dth + 8 * kU) + 1e-30;
                }
            }
        }
        check_close(got, ref, tol, "ROPE");
        // The tail must be bit-identical.
        bool tail_same = true;
        for (int64_t t = 0; t < n_tok; ++t)
            for (int64_t h = 0; h < n_head; ++h)
                for (int64_t i = c.n_rot; i < head_dim; ++i) {
                    const size_t k = (size_t)(t * row + h * head_dim + i);
                    tail_same = tail_same && same_bits(&got[k], &x[k], 4);
                }
        CHECK(tail_same);
    }
}

// ---- _X16 (load-time repacked Q4_0, Q4_1, Q8_0, Q4_K, F16, BF16) ----------------------

// F16_X16 and BF16_X16 follow their own orders: pair_order_matmul (ops-harness.h).
TEST_CASE("MUL_MAT and GET_ROWS over the _X16 layouts equal their base type bit for bit", "[ops]") {
    std::mt19937 rng(31);
    for (DType base : kX16Types) {
        INFO(dtype_name(base) << "_X16");
        const int slot = quant::x16_slot(base);
        REQUIRE(slot >= 0);
        // A table without the layout's kernel (IQ4_NL_X16 and IQ4_XS_X16 on
        // AVX2, IQ4_XS_X16 without VNNI) has the loader keep the weight as
        // stored: test-ops-moe's _X16 case asserts that.
        if (!quant::active_kernels().gemm[slot]) continue;
        // 10 blocks (a tail past the 8-block groups; 3 super-blocks, an odd
        // pair, for the 256-element types), 3 groups of 16 rows.
        const int64_t be = dtype_info(base).block_elems;
        const int64_t k = be == 256 ? 768 : be > 32 ? 10 * be : 320, // Q1_0, NVFP4: 10 whole blocks
                      n_out = base == DType::BF16 || base == DType::F16 ? 80 : 48;
        Bytes w = random_weights(base, k, n_out, rng);
        Bytes wx(w.size());
        quant::repack_x16(base, w.data(), row_bytes(base, k), wx.data(), k, n_out);
        Tensor wt, wtx;
        tensor_init(wt, base, k, n_out, 1, 1, w.data());
        tensor_init(wtx, base, k, n_out, 1, 1, wx.data());
        wtx.layout = quant::kLayoutX16;
        for (int64_t m : {1, 2, 3, 4, 9}) { // decode, then tiles with and without edges
            INFO("tokens " << m);
            const std::vector<float> x = normal((size_t)(k * m), rng);
            std::vector<float> res[2];
            for (int v = 0; v < 2; ++v) {
                Graph g;
                Tensor *xt = g.input(DType::F32, {k, m});
                Tensor *y = g.op<Op::MUL_MAT>(DType::F32, {n_out, m}, {v ? &wtx : &wt, xt});
                g.mark_output(y);
                CHECK(supports(g.nodes()[0]));
                Bound bound(g);
                res[v] = run_both(g, y, [&] { put(xt, x); });
            }
            if (base == DType::F16 || base == DType::BF16) res[0] = pair_order_matmul(base, w.data(), k, n_out, x, m);
            CHECK(same_bits(res[0].data(), res[1].data(), res[0].size() * sizeof(float)));
        }
        const std::vector<int32_t> ids = {0, 5, 47, 2, 2, 40, 17};
        std::vector<float> rows[2];
        for (int v = 0; v < 2; ++v) {
            Graph g;
            Tensor *it = g.input(DType::I32, {(int64_t)ids.size()});
            Tensor *y = g.op<Op::GET_ROWS>(DType::F32, {k, (int64_t)ids.size()}, {v ? &wtx : &wt, it});
            g.mark_output(y);
            CHECK(supports(g.nodes()[0]));
            Bound bound(g);
            rows[v] = run_both(g, y, [&] { put(it, ids); });
        }
        CHECK(same_bits(rows[0].data(), rows[1].data(), rows[0].size() * sizeof(float)));
        // Row counts that are not whole groups are refused, not misread.
        Tensor odd;
        tensor_init(odd, base, k, 24, 1, 1, wx.data());
        odd.layout = quant::kLayoutX16;
        Graph g;
        Tensor *xt = g.input(DType::F32, {k, 1});
        g.op<Op::MUL_MAT>(DType::F32, {24, 1}, {&odd, xt});
        CHECK_FALSE(supports(g.nodes()[0]));
        if (base == DType::F16 || base == DType::BF16) { // and rows that are not whole 32-element blocks
            Tensor short_rows;
            tensor_init(short_rows, base, 48, 16, 1, 1, wx.data());
            short_rows.layout = quant::kLayoutX16;
            Graph g2;
            Tensor *x2 = g2.input(DType::F32, {48, 1});
            g2.op<Op::MUL_MAT>(DType::F32, {16, 1}, {&short_rows, x2});
            CHECK_FALSE(supports(g2.nodes()[0]));
        }
    }
}

// ---- ATTN_PAGED ------------------------------------------------------------------

TEST_CASE("ATTN_PAGED: many sequences over a block pool, through their block tables", "[ops]") {
    // Three sequences in one batch (decode, a prompt chunk after a cached
    // prefix, a fresh prompt), blocks scattered over the pool in shuffled
    // order. Every slot no table reaches holds NaN, so a stray read poisons
    // the output; slots the step writes must hold exactly f16(k), f16(v).
    // The batch, the run, the reference and its tolerances: ops-harness.h.
    std::mt19937 rng(77);
    for (int64_t head_dim : {32, 20, 256}) {  // 256: Gemma 3's, longer than the keys
        const AttnShape sh{6, 2, head_dim};
        for (int64_t bs : {16, 4}) {
            INFO("head_dim " << head_dim << ", block size " << bs);
            const PagedBatch b = make_paged_batch(sh, 24, bs, {{37, 1}, {20, 5}, {0, 3}}, rng);
            const std::vector<float> got = run_paged(b, 0, b.k0, b.v0);
            // Against the exact-math bound, then the contract bound (q rounded to f16).
            for (bool q_f16 : {false, true}) {
                const AttnRef r = attn_ref(b, 0, q_f16);
                check_close(got, r.out, r.tol, q_f16 ? "ATTN_PAGED (q rounded to f16)" : "ATTN_PAGED (exact math)");
            }
        }
    }
}

TEST_CASE("ATTN_PAGED: a token's output does not depend on its step or its batch", "[ops]") {
    // One sequence of 21 tokens: in one step, in steps of 1, 4 and 16 (run
    // and block boundaries inside a step, decode steps after it), and in one
    // step beside another sequence's 7 tokens. Every token's output must be
    // the same bits: vt_seq's chunked prefill and the engine's batches then
    // pick the same tokens.
    std::mt19937 rng(7);
    const int64_t n_head = 6, n_head_kv = 2, head_dim = 40, bs = 16, n_blocks = 4, n_all = 21, n_other = 7;
    const int64_t Q = head_dim * n_head, kv_row = head_dim * n_head_kv, n_slots = n_blocks * bs;
    const std::vector<float> q = normal((size_t)(Q * (n_all + n_other)), rng),
                             k = normal((size_t)(kv_row * (n_all + n_other)), rng),
                             v = normal((size_t)(kv_row * (n_all + n_other)), rng);
    const float scale = 1.0f / std::sqrt((float)head_dim);
    // Steps of (first token, count) of the sequence (blocks 2, 0); with_other
    // puts the other sequence (blocks 3, 1) first in the first step.
    auto run = [&](const std::vector<int64_t> &steps, bool with_other) {
        std::vector<uint16_t> kc((size_t)(kv_row * n_slots)), vc(kc.size());
        Tensor kct, vct;
        tensor_init(kct, DType::F16, bs, kv_row, n_blocks, 1, kc.data(), "k_pool");
        tensor_init(vct, DType::F16, kv_row, n_slots, 1, 1, vc.data(), "v_pool");
        const std::vector<int32_t> table = {2, 0}, other = {3, 1};
        std::vector<float> out;
        int64_t past = 0;
        for (size_t si = 0; si < steps.size(); ++si) {
            const int64_t n = steps[si], extra = with_other && si == 0 ? n_other : 0, nt = n + extra;
            std::vector<int32_t> index((size_t)(3 * nt));
            const int32_t at_other = (int32_t)index.size();
            index.insert(index.end(), other.begin(), other.end());
            const int32_t at = (int32_t)index.size();
            index.insert(index.end(), table.begin(), table.end());
            std::vector<float> qs, ks, vs;
            for (int64_t i = 0; i < nt; ++i) {
                const bool mine = i >= extra;
                const int64_t pos = mine ? past + i - extra : i, src = mine ? pos : n_all + i;
                const std::vector<int32_t> &tb = mine ? table : other;
                index[(size_t)(3 * i)] = (int32_t)(tb[(size_t)(pos / bs)] * bs + pos % bs);
                index[(size_t)(3 * i + 1)] = (int32_t)(pos + 1);
                index[(size_t)(3 * i + 2)] = mine ? at : at_other;
                qs.insert(qs.end(), q.begin() + src * Q, q.begin() + (src + 1) * Q);
                ks.insert(ks.end(), k.begin() + src * kv_row, k.begin() + (src + 1) * kv_row);
                vs.insert(vs.end(), v.begin() + src * kv_row, v.begin() + (src + 1) * kv_row);
            }
            Graph g;
            Tensor *qt = g.input(DType::F32, {head_dim, n_head, nt}), *kt = g.input(DType::F32, {head_dim, n_head_kv, nt}),
                   *vt_ = g.input(DType::F32, {head_dim, n_head_kv, nt}), *it = g.input(DType::I32, {(int64_t)index.size()});
            Tensor *y = g.op<Op::ATTN_PAGED>(DType::F32, {head_dim, n_head, nt}, {qt, kt, vt_, &kct, &vct, it, nullptr},
                                             {scale, 0, (int32_t)n_slots});
            g.mark_output(y);
            REQUIRE(supports(g.nodes()[0]));
            Bound bound(g);
            put(qt, qs);
            put(kt, ks);
            put(vt_, vs);
            put(it, index);
            REQUIRE(compute(2, g) == VT_OK);
            const std::vector<float> o = get(y);
            out.insert(out.end(), o.begin() + extra * Q, o.end());
            past += n;
        }
        return out;
    };
    const std::vector<float> one = run({n_all}, false), split = run({1, 4, 16}, false), batched = run({n_all}, true);
    REQUIRE(one.size() == split.size());
    REQUIRE(one.size() == batched.size());
    CHECK(same_bits(one.data(), split.data(), one.size() * sizeof(float)));
    CHECK(same_bits(one.data(), batched.data(), one.size() * sizeof(float)));
}

// ---- supports_op -----------------------------------------------------------------

TEST_CASE("supports_op rejects what the CPU cannot compute", "[ops]") {
    std::vector<uint8_t> w(row_bytes(DType::Q8_K, 256) * 4);
    for (DType t : {DType::Q8_K, DType::Q8_1}) {
        INFO("weight type " << dtype_name(t));
        Tensor wt;
        tensor_init(wt, t, 256, 4, 1, 1, w.data(), "w");
        Graph g;
        Tensor *x = g.input(DType::F32, {256, 2});
        Tensor *y = g.op<Op::MUL_MAT>(DType::F32, {4, 2}, {&wt, x});
        g.mark_output(y);
        CHECK_FALSE(supports(g.nodes()[0]));
        // graph_compute refuses the node instead of running it.
        Bound bound(g);
        CHECK(compute(1, g) == VT_ERR_UNSUPPORTED);
    }
    // ROPE with a mode the kernel does not implement (1 is not a mode).
    Graph g;
    Tensor *x = g.input(DType::F32, {64, 1, 2}), *pos = g.input(DType::I32, {2});
    RopeParams p{};
    p.n_rot = 64;
    p.mode = 1;
    p.freq_base = 10000.f;
    p.freq_scale = 1.f;
    p.attn_factor = 1.f;
    g.op<Op::ROPE>(DType::F32, {64, 1, 2}, {x, pos, nullptr}, p);
    CHECK_FALSE(supports(g.nodes()[0]));
    // ATTN_PAGED with an f32 K pool.
    std::vector<float> kc(64 * 16);
    std::vector<uint16_t> vc(64 * 16);
    Tensor kct, vct;
    tensor_init(kct, DType::F32, 16, 64, 1, 1, kc.data());
    tensor_init(vct, DType::F16, 64, 16, 1, 1, vc.data());
    Graph g2;
    Tensor *q = g2.input(DType::F32, {64, 1, 1}), *k = g2.input(DType::F32, {64, 1, 1}), *v = g2.input(DType::F32, {64, 1, 1}),
           *ix = g2.input(DType::I32, {4});
    g2.op<Op::ATTN_PAGED>(DType::F32, {64, 1, 1}, {q, k, v, &kct, &vct, ix, nullptr}, {0.125f, 0, 16});
    CHECK_FALSE(supports(g2.nodes()[0]));
}

// ---- a chained graph ---------------------------------------------------------------

TEST_CASE("ops chained in one graph share the arena and agree with single ops", "[ops]") {
    // RMS_NORM -> MUL_MAT (Q4_K) -> ADD to the input: intermediates are
    // planned into one arena and threads meet at barriers between nodes; the
    // result must equal the same ops run one graph at a time, bit for bit.
    std::mt19937 rng(5);
    const int64_t E = 256, m = 5;
    Bytes w = random_weights(DType::Q4_K, E, E, rng);
    std::vector<float> nw = normal((size_t)E, rng), x = normal((size_t)(E * m), rng);
    Tensor wt, nwt;
    tensor_init(wt, DType::Q4_K, E, E, 1, 1, w.data());
    tensor_init(nwt, DType::F32, E, 1, 1, 1, nw.data());

    Graph g;
    Tensor *xt = g.input(DType::F32, {E, m});
    Tensor *h = g.op<Op::RMS_NORM>(DType::F32, {E, m}, {xt, &nwt}, {1e-5f});
    Tensor *o = g.op<Op::MUL_MAT>(DType::F32, {E, m}, {&wt, h});
    Tensor *y = g.op<Op::ADD>(DType::F32, {E, m}, {xt, o});
    g.mark_output(y);
    Bound bound(g);
    const std::vector<float> chained = run_both(g, y, [&] { put(xt, x); });

    // One op per graph, results carried through host vectors.
    auto single = [&](Op op, Tensor *a_w, const std::vector<float> &a, const std::vector<float> &b) {
        Graph s;
        Tensor *at = s.input(DType::F32, {E, m});
        Tensor *bt = a_w ? nullptr : s.input(DType::F32, {E, m});
        Tensor *r = op == Op::MUL_MAT    ? s.op<Op::MUL_MAT>(DType::F32, {E, m}, {a_w, at})
                    : op == Op::RMS_NORM ? s.op<Op::RMS_NORM>(DType::F32, {E, m}, {at, a_w}, {1e-5f})
                                         : s.op<Op::ADD>(DType::F32, {E, m}, {at, bt});
        s.mark_output(r);
        Bound bs(s);
        put(at, a);
        if (bt) put(bt, b);
        REQUIRE(compute(3, s) == VT_OK);
        return get(r);
    };
    const std::vector<float> h1 = single(Op::RMS_NORM, &nwt, x, {});
    const std::vector<float> o1 = single(Op::MUL_MAT, &wt, h1, {});
    const std::vector<float> y1 = single(Op::ADD, nullptr, x, o1);
    CHECK(same_bits(chained.data(), y1.data(), y1.size() * sizeof(float)));
}

} // namespace
