// LORA (core/ops.def) on the CPU backend (backends/cpu/ops-lora.cpp), through
// the real path (a vt::Graph, plan(), bind(), graph_compute on the backend's
// vtable):
//  - against a double reference of y + s * (B . (A . x)) for F32 and F16
//    adapters of ranks 1 to 64, odd and typical projection shapes, 1 to 64
//    tokens, none, one, some (scrambled) or all rows listed, scales varied,
//    zero and negative; then BF16, quantized and mixed adapters;
//  - bit for bit: a row's output alone, among other rows, in a step of one
//    token, through a strided x and through a padded row list; the order of
//    the last two operations (y + (s * z)); rows not listed are y's bits;
//  - _X16 adapters (the loader may repack A and B as it does any weight);
//  - what supports_op refuses.
// Every case runs on 1, 2 and 3 threads, which must agree bit for bit, with
// the output poisoned before each run (run_123, ops-harness.h).
#include "common/skip.h"
#include "unit/ops-harness.h"

namespace {

// An adapter: A (k, r) and B (r, n_out), with the reference's rows of each.
// Not copyable: the tensors point into the adapter's own bytes.
struct Adapter {
    Adapter(DType ta, DType tb, int64_t k_, int64_t r_, int64_t n_out_, std::mt19937 &rng)
        : k(k_), r(r_), n_out(n_out_), a(random_weights(ta, k, r, rng)), b(random_weights(tb, r, n_out, rng)) {
        tensor_init(at, ta, k, r, 1, 1, a.data(), "lora_a");
        tensor_init(bt, tb, r, n_out, 1, 1, b.data(), "lora_b");
        for (int64_t j = 0; j < r; ++j) a_rows.push_back(ref_row(ta, a.data() + (size_t)j * row_bytes(ta, k), k));
        for (int64_t o = 0; o < n_out; ++o) b_rows.push_back(ref_row(tb, b.data() + (size_t)o * row_bytes(tb, r), r));
    }
    Adapter(const Adapter &) = delete;
    Adapter &operator=(const Adapter &) = delete;

    int64_t k, r, n_out;
    Bytes a, b;
    Tensor at, bt;  // may be switched to _X16 copies (x16 test)
    std::vector<RefRow> a_rows, b_rows;
};

// One step's inputs: y (n_out, m), x (k, m), the listed rows and their scales.
struct Step {
    int64_t m;
    std::vector<float> y, x;
    std::vector<int32_t> rows;
    std::vector<float> scales;
};

Step draw_step(const Adapter &ad, int64_t m, std::mt19937 &rng) {
    return {m, normal((size_t)(ad.n_out * m), rng), normal((size_t)(ad.k * m), rng), {}, {}};
}

// Scales of n listed rows: every fifth (from the second) zero, the rest
// ~N(0, 1.5), so about half negative.
std::vector<float> draw_scales(size_t n, std::mt19937 &rng) {
    std::vector<float> s = normal(n, rng, 1.5f);
    for (size_t i = 1; i < n; i += 5) s[i] = 0.0f;
    return s;
}

// LORA of ad over the step, on 1, 2 and 3 threads. x_pad > 0: x is a view
// of a (k + x_pad, m) input, 3 floats in, the rest of it NaN (a stray read
// poisons the output). No listed rows: the list and scales are borrowed
// tensors of length 0 (a graph input has no empty dimension).
std::vector<float> run_lora(const Adapter &ad, const Step &s, int64_t x_pad = 0) {
    const int64_t k = ad.k, m = s.m;
    Graph g;
    Tensor *yt = g.input(DType::F32, {ad.n_out, m}, "y");
    Tensor *xb = g.input(DType::F32, {k + x_pad, m}, "x");
    Tensor *xt = x_pad ? g.view(xb, {k, m}, {(size_t)(k + x_pad) * sizeof(float)}, 3 * sizeof(float)) : xb;
    Tensor no_rows, no_scales;
    tensor_init(no_rows, DType::I32, 0);
    tensor_init(no_scales, DType::F32, 0);
    const int64_t n = (int64_t)s.rows.size();
    Tensor *rt = n ? g.input(DType::I32, {n}, "rows") : &no_rows;
    Tensor *st = n ? g.input(DType::F32, {n}, "scales") : &no_scales;
    Tensor *d = g.op<Op::LORA>(DType::F32, {ad.n_out, m}, {yt, xt, const_cast<Tensor *>(&ad.at),
                                                          const_cast<Tensor *>(&ad.bt), rt, st});
    g.mark_output(d);
    REQUIRE(supports(g.nodes()[0]));
    Bound bound(g);
    std::vector<float> xfull = s.x;
    if (x_pad) {
        xfull.assign((size_t)((k + x_pad) * m), NAN);
        for (int64_t t = 0; t < m; ++t)
            std::copy_n(&s.x[(size_t)(t * k)], k, &xfull[(size_t)(t * (k + x_pad) + 3)]);
    }
    return run_123(g, d, [&] {
        put(yt, s.y);
        put(xb, xfull);
        if (n) {
            put(rt, s.rows);
            put(st, s.scales);
        }
    });
}

// ---- the reference -----------------------------------------------------------
//
// Per listed row t with scale s, in the kernel's steps (ops.def):
//  1. u = A . x_t through MUL_MAT's kernels. x_t is first rounded to A's
//     vec_dot_type. For a plain float type (F32, F16, BF16) the reference
//     rounds it the same way, so that step is exact; for a block type the
//     rounding is bounded by act_error. Then matmul_ref bounds the f32 dot:
//     |u_c - u| <= tu, where tu is matmul_ref's tol.
//  2. z = B . u_c. u_c is rounded to B's vec_dot_type, within act_error of
//     a bound |u_c| <= |u| + tu. For F16 that is 2^-11 relative; a
//     subnormal u adds up to 2^-25 absolute, which act_error leaves out, so
//     it is added here. matmul_ref gives the conversion and f32-dot terms
//     over that bound. The error carried from step 1 adds
//     sum_j (|p1_j| + |p2_j|) tu_j. Together: tz.
//  3. dst = fl(y + fl(s z_c)): |s| tz, plus one rounding of s z_c and one of
//     the sum, u (|y| + 2 |s| (|z| + tz)).
// So for F16 adapters the tolerance follows from the f16 roundings of u and
// from f32 accumulation; it is not picked by hand. Rows not listed must be
// y exactly (tol 0).
struct LoraRef {
    std::vector<double> ref, tol;
};

// x as A's kernels read it (rounded in place for a plain float vec_dot_type)
// and the conversion error bounds left (zero then).
void acts_as_read(DType vdt, std::vector<float> &x, std::vector<double> &e, std::vector<double> &emin) {
    if (dtype_info(vdt).block_elems != 1) return act_error(vdt, x, e, emin);
    if (vdt != DType::F32) {
        std::vector<uint8_t> buf(row_bytes(vdt, (int64_t)x.size()));
        quantize_row(vdt, x.data(), buf.data(), (int64_t)x.size());
        ref::dequantize_row(vdt, buf.data(), x.data(), (int64_t)x.size());
    }
    e.assign(x.size(), 0.0);
    emin.assign(x.size(), 0.0);
}

LoraRef lora_ref(const Adapter &ad, const Step &s) {
    const int64_t k = ad.k, r = ad.r, n = ad.n_out;
    LoraRef out{std::vector<double>(s.y.begin(), s.y.end()), std::vector<double>(s.y.size(), 0.0)};
    const DType va = vec_dot_type(ad.at.type), vb = vec_dot_type(ad.bt.type);
    std::vector<double> e, emin, e2, emin2, u((size_t)r), tu((size_t)r);
    std::vector<float> ub((size_t)r);
    for (size_t i = 0; i < s.rows.size(); ++i) {
        const int64_t t = s.rows[i];
        if (t < 0 || t >= s.m) continue;  // padding
        std::vector<float> xt(s.x.begin() + t * k, s.x.begin() + (t + 1) * k);
        acts_as_read(va, xt, e, emin);
        for (int64_t j = 0; j < r; ++j) {
            const RefDot d = matmul_ref(ad.a_rows[(size_t)j], xt.data(), e, emin, k);
            u[(size_t)j] = d.ref;
            tu[(size_t)j] = d.tol;
            ub[(size_t)j] = std::nextafter((float)(std::fabs(d.ref) + d.tol), INFINITY);
        }
        act_error(vb, ub, e2, emin2);
        if (vb == DType::F16)
            for (size_t j = 0; j < e2.size(); ++j) {
                e2[j] += 0x1p-25;
                emin2[j] += 0x1p-25;
            }
        for (int64_t o = 0; o < n; ++o) {
            const RefRow &w = ad.b_rows[(size_t)o];
            double z = 0, carried = 0;
            for (int64_t j = 0; j < r; ++j) {
                z += (double)w.w[(size_t)j] * u[(size_t)j];
                carried += (std::fabs((double)w.p1[(size_t)j]) + std::fabs((double)w.p2[(size_t)j])) * tu[(size_t)j];
            }
            const double tz = matmul_ref(w, ub.data(), e2, emin2, r).tol + carried;
            const double sc = s.scales[i], yv = s.y[(size_t)(t * n + o)];
            out.ref[(size_t)(t * n + o)] = yv + sc * z;
            out.tol[(size_t)(t * n + o)] =
                std::fabs(sc) * tz + kU * (std::fabs(yv) + 2 * std::fabs(sc) * (std::fabs(z) + tz)) + 1e-30;
        }
    }
    return out;
}

// Checks got against the reference, and rows not listed against y bit for bit.
void check_step(const Adapter &ad, const Step &s, const std::vector<float> &got, const std::string &what) {
    const LoraRef r = lora_ref(ad, s);
    check_close(got, r.ref, r.tol, what);
    const size_t n = (size_t)ad.n_out;
    for (int64_t t = 0; t < s.m; ++t) {
        if (std::find(s.rows.begin(), s.rows.end(), (int32_t)t) != s.rows.end()) continue;
        INFO(what << ": row " << t << " is not listed");
        CHECK(same_bits(&got[(size_t)t * n], &s.y[(size_t)t * n], n * sizeof(float)));
    }
}

// The row lists of a step of m tokens: none, one, about half in scrambled
// order, all in scrambled order (fewer when m is too small to tell them
// apart).
std::vector<std::vector<int32_t>> row_subsets(int64_t m, std::mt19937 &rng) {
    std::vector<int32_t> all((size_t)m);
    for (int64_t t = 0; t < m; ++t) all[(size_t)t] = (int32_t)t;
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<std::vector<int32_t>> out = {{}};
    if (m > 1) out.push_back({(int32_t)(m / 2)});
    if (m > 2) out.emplace_back(all.begin(), all.begin() + (m + 1) / 2);
    out.push_back(all);
    return out;
}

// Every row subset of a step of m tokens over ad, against the reference.
void check_subsets(const Adapter &ad, int64_t m, std::mt19937 &rng, const std::string &what) {
    Step s = draw_step(ad, m, rng);
    for (const std::vector<int32_t> &rows : row_subsets(m, rng)) {
        INFO(rows.size() << " of " << m << " rows listed");
        s.rows = rows;
        s.scales = draw_scales(rows.size(), rng);
        check_step(ad, s, run_lora(ad, s), what);
    }
}

std::string adapter_name(const Adapter &ad) {
    return std::string("LORA A ") + dtype_name(ad.at.type) + " B " + dtype_name(ad.bt.type) + ", k " +
           std::to_string(ad.k) + ", r " + std::to_string(ad.r) + ", n " + std::to_string(ad.n_out);
}

TEST_CASE("LORA against a double reference: F32 and F16, ranks, shapes, row subsets, scales", "[ops][lora]") {
    std::mt19937 rng(4242);
    struct Dims {
        int64_t k, n_out;
    };
    // A typical pair, a small model's, and odd sizes (no 16-row blocks,
    // uneven thread splits).
    const Dims dims[] = {{64, 96}, {576, 192}, {37, 53}};
    for (DType t : {DType::F32, DType::F16})
        for (int64_t r : {1, 4, 16, 64})
            for (const Dims &dm : dims) {
                const Adapter ad(t, t, dm.k, r, dm.n_out, rng);
                for (int64_t m : {1, 7, 64}) {
                    INFO(adapter_name(ad) << ", tokens " << m);
                    check_subsets(ad, m, rng, adapter_name(ad));
                }
            }
}

TEST_CASE("LORA against a double reference: BF16, quantized and mixed adapters", "[ops][lora]") {
    // The same kernels as MUL_MAT's, so any weight type it reads works;
    // block types need whole blocks along k for A and along r for B.
    std::mt19937 rng(1729);
    struct Case {
        DType a, b;
        int64_t k, r, n_out;
    };
    const Case cases[] = {{DType::BF16, DType::BF16, 576, 16, 192}, {DType::Q8_0, DType::Q8_0, 576, 64, 192},
                          {DType::Q8_0, DType::F16, 576, 16, 96},   {DType::F16, DType::F32, 37, 4, 53},
                          {DType::Q4_K, DType::Q8_0, 512, 32, 96},  {DType::F32, DType::Q4_0, 64, 32, 53}};
    for (const Case &c : cases) {
        const Adapter ad(c.a, c.b, c.k, c.r, c.n_out, rng);
        for (int64_t m : {1, 9}) {
            INFO(adapter_name(ad) << ", tokens " << m);
            check_subsets(ad, m, rng, adapter_name(ad));
        }
    }
}

// ---- bit for bit ---------------------------------------------------------------

// The rows of got listed in `rows`, each compared with row rows[i] of want.
void check_rows_same(const std::vector<float> &got, const std::vector<float> &want, int64_t n,
                     const std::vector<int32_t> &got_rows, const std::vector<int32_t> &want_rows) {
    for (size_t i = 0; i < got_rows.size(); ++i) {
        INFO("row " << got_rows[i] << " vs row " << want_rows[i]);
        CHECK(same_bits(&got[(size_t)(got_rows[i] * n)], &want[(size_t)(want_rows[i] * n)], (size_t)n * sizeof(float)));
    }
}

TEST_CASE("LORA: a row's bits do not depend on the other rows, the step's size or x's strides", "[ops][lora]") {
    // vt promises a request the same tokens whatever is batched with it, so
    // a listed row must come out the same alone, among other rows and in a
    // step of one token. With 9 tokens, 6 listed, the products take the gemm
    // tiles (4 or more rows) and alone the row dot: both paths must agree.
    std::mt19937 rng(99);
    struct Case {
        DType t;
        int64_t k, r, n_out;
    };
    const Case cases[] = {{DType::F32, 576, 16, 192},
                          {DType::F16, 576, 64, 192},
                          {DType::Q8_0, 576, 32, 96},
                          {DType::F16, 37, 4, 53}};
    for (const Case &c : cases) {
        const Adapter ad(c.t, c.t, c.k, c.r, c.n_out, rng);
        INFO(adapter_name(ad));
        const int64_t m = 9, n = ad.n_out, k = ad.k;
        Step s = draw_step(ad, m, rng);
        s.rows = {7, 2, 0, 5, 8, 3};
        s.scales = draw_scales(s.rows.size(), rng);
        s.scales[0] = -0.625f;
        const std::vector<float> batch = run_lora(ad, s);
        check_step(ad, s, batch, adapter_name(ad));

        for (size_t i = 0; i < s.rows.size(); ++i) {
            const int32_t t = s.rows[i];
            INFO("row " << t << " alone among 9 tokens");
            Step alone = s;
            alone.rows = {t};
            alone.scales = {s.scales[i]};
            check_rows_same(run_lora(ad, alone), batch, n, {t}, {t});
            INFO("row " << t << " as a step of one token");
            Step one{1,
                     std::vector<float>(s.y.begin() + t * n, s.y.begin() + (t + 1) * n),
                     std::vector<float>(s.x.begin() + t * k, s.x.begin() + (t + 1) * k),
                     {0},
                     {s.scales[i]}};
            check_rows_same(run_lora(ad, one), batch, n, {0}, {t});
        }
        {
            INFO("x a strided view");
            const std::vector<float> strided = run_lora(ad, s, 5);
            CHECK(same_bits(strided.data(), batch.data(), batch.size() * sizeof(float)));
        }
        {
            // Entries outside [0, m) are skipped: a row list padded to a
            // fixed length gives the rows it names and nothing else.
            INFO("a padded row list");
            Step padded = s;
            padded.rows = {-1, 7, 2, 9, 0, 5, 8, 3, 1000};
            padded.scales = {5.f, s.scales[0], s.scales[1], 5.f, s.scales[2], s.scales[3], s.scales[4], s.scales[5], 5.f};
            const std::vector<float> got = run_lora(ad, padded);
            CHECK(same_bits(got.data(), batch.data(), batch.size() * sizeof(float)));
        }
        {
            // The last two operations are s * z, rounded, then y + that,
            // rounded: with y = 0 and s = 1 the op returns z itself
            // (0 + 1 * z = z exactly), from which the batch's bits follow.
            INFO("dst = y + (s * z) in f32");
            Step zs = s;
            std::fill(zs.y.begin(), zs.y.end(), 0.0f);
            std::fill(zs.scales.begin(), zs.scales.end(), 1.0f);
            const std::vector<float> z = run_lora(ad, zs);
            std::vector<float> want = s.y;
            for (size_t i = 0; i < s.rows.size(); ++i)
                for (int64_t o = 0; o < n; ++o) {
                    const size_t at = (size_t)(s.rows[i] * n + o);
                    const float p = s.scales[i] * z[at];
                    want[at] = s.y[at] + p;
                }
            CHECK(same_bits(want.data(), batch.data(), batch.size() * sizeof(float)));
        }
    }
}

// ---- _X16 adapters -------------------------------------------------------------------

TEST_CASE("LORA over _X16 adapters: Q8_0 equals the plain layout bit for bit, F16 within the reference",
          "[ops][lora]") {
    // Q8_0_X16 kernels give the plain layout's bits; F16_X16 follow their
    // own order (kernels.h), so they are held to the reference's bound
    // instead. r = 32 makes A two 16-row groups (split between threads) and
    // B rows of whole 32-element blocks; n_out = 48 is three groups.
    std::mt19937 rng(16);
    const int64_t k = 320, r = 32, n_out = 48;
    for (DType t : {DType::Q8_0, DType::F16}) {
        INFO(dtype_name(t) << "_X16");
        if (!quant::active_kernels().gemm[quant::x16_slot(t)]) {
            VT_NOTE_SKIP("this CPU's kernel table has no " << dtype_name(t) << "_X16 kernel");
            continue;
        }
        Adapter ad(t, t, k, r, n_out, rng);
        Bytes ax(ad.a.size()), bx(ad.b.size());
        quant::repack_x16(t, ad.a.data(), row_bytes(t, k), ax.data(), k, r);
        quant::repack_x16(t, ad.b.data(), row_bytes(t, r), bx.data(), r, n_out);
        for (int64_t m : {1, 9}) {
            INFO("tokens " << m);
            Step s = draw_step(ad, m, rng);
            s.rows = m == 1 ? std::vector<int32_t>{0} : std::vector<int32_t>{4, 0, 8, 1, 6};
            s.scales = draw_scales(s.rows.size(), rng);
            const Tensor plain_a = ad.at, plain_b = ad.bt;
            const std::vector<float> plain = run_lora(ad, s);
            ad.at.data = ax.data();
            ad.bt.data = bx.data();
            ad.at.layout = ad.bt.layout = quant::kLayoutX16;
            const std::vector<float> x16 = run_lora(ad, s);
            ad.at = plain_a;
            ad.bt = plain_b;
            check_step(ad, s, x16, std::string("LORA ") + dtype_name(t) + "_X16");
            if (t == DType::Q8_0) CHECK(same_bits(plain.data(), x16.data(), plain.size() * sizeof(float)));
        }
    }
}

// ---- supports_op ---------------------------------------------------------------------

TEST_CASE("supports_op refuses malformed LORA nodes", "[ops][lora]") {
    // Each malformed node differs from a well-formed one, checked first, in
    // one thing: y (96, 5), x (64, 5), A F16 (64, 8), B F16 (8, 96), 3 rows.
    std::vector<uint8_t> mem(row_bytes(DType::Q8_K, 256) * 64);
    struct Spec {
        DType y = DType::F32, x = DType::F32, a = DType::F16, b = DType::F16, rows = DType::I32, scales = DType::F32,
              dst = DType::F32;
        std::vector<int64_t> ys = {96, 5}, xs = {64, 5}, as = {64, 8}, bs = {8, 96}, rs = {3}, ss = {3}, ds = {96, 5};
        uint32_t a_layout = 0;
    };
    auto dims = [](Tensor &t, DType type, const std::vector<int64_t> &ne, void *data) {
        tensor_init(t, type, ne[0], ne.size() > 1 ? ne[1] : 1, ne.size() > 2 ? ne[2] : 1, 1, data);
    };
    auto shape = [](Graph &g, DType type, const std::vector<int64_t> &ne) {
        return ne.size() == 1   ? g.input(type, {ne[0]})
               : ne.size() == 2 ? g.input(type, {ne[0], ne[1]})
                                : g.input(type, {ne[0], ne[1], ne[2]});
    };
    auto node = [&](const Spec &sp) {
        Graph g;
        Tensor a, b;
        dims(a, sp.a, sp.as, mem.data());
        dims(b, sp.b, sp.bs, mem.data());
        a.layout = sp.a_layout;
        Tensor *y = shape(g, sp.y, sp.ys), *x = shape(g, sp.x, sp.xs);
        Tensor *rows = shape(g, sp.rows, sp.rs), *sc = shape(g, sp.scales, sp.ss);
        if (sp.ds.size() == 2) g.op<Op::LORA>(sp.dst, {sp.ds[0], sp.ds[1]}, {y, x, &a, &b, rows, sc});
        else g.op<Op::LORA>(sp.dst, {sp.ds[0], sp.ds[1], sp.ds[2]}, {y, x, &a, &b, rows, sc});
        return supports(g.nodes()[0]);
    };
    const Spec ok;
    CHECK(node(ok));
    auto with = [&](auto change) {
        Spec sp = ok;
        change(sp);
        return node(sp);
    };
    CHECK(with([](Spec &s) { s.a = s.b = DType::F32; }));
    CHECK(with([](Spec &s) { s.rs = s.ss = {5}; }));                      // every row listed
    CHECK(with([](Spec &s) { s.a = DType::Q8_0; s.as = {64, 8}; }));      // a block type, whole blocks
    CHECK_FALSE(with([](Spec &s) { s.as = {32, 8}; }));                   // A's rows not of x's length
    CHECK_FALSE(with([](Spec &s) { s.bs = {4, 96}; }));                   // B's rows not of rank length
    CHECK_FALSE(with([](Spec &s) { s.bs = {8, 95}; }));                   // B's rows not y's
    CHECK_FALSE(with([](Spec &s) { s.ds = {95, 5}; }));                   // dst not y's shape
    CHECK_FALSE(with([](Spec &s) { s.ds = {96, 4}; }));
    CHECK_FALSE(with([](Spec &s) { s.ds = {96, 5, 2}; s.ys = {96, 5, 2}; s.xs = {64, 5, 2}; }));  // 3-D
    CHECK_FALSE(with([](Spec &s) { s.dst = DType::F16; }));               // dst not f32
    CHECK_FALSE(with([](Spec &s) { s.y = DType::F16; }));                 // y not f32
    CHECK_FALSE(with([](Spec &s) { s.x = DType::F16; }));                 // x not f32
    CHECK_FALSE(with([](Spec &s) { s.xs = {64, 4}; }));                   // x of another token count
    CHECK_FALSE(with([](Spec &s) { s.rows = DType::F32; }));              // f32 rows
    CHECK_FALSE(with([](Spec &s) { s.scales = DType::I32; }));            // i32 scales
    CHECK_FALSE(with([](Spec &s) { s.ss = {2}; }));                       // a scale missing
    CHECK_FALSE(with([](Spec &s) { s.rs = s.ss = {6}; }));                // more rows than tokens
    CHECK_FALSE(with([](Spec &s) { s.rs = {3, 2}; s.ss = {3, 2}; }));     // 2-D row list
    CHECK_FALSE(with([](Spec &s) { s.as = {64, 8, 2}; }));                // 3-D A
    CHECK_FALSE(with([](Spec &s) { s.a = DType::Q8_0; s.as = {48, 8}; s.xs = {48, 5}; }));  // not whole blocks
    CHECK_FALSE(with([](Spec &s) { s.a = DType::Q8_K; s.as = {256, 8}; s.xs = {256, 5}; })); // no dot for it
    if (quant::active_kernels().gemm[quant::x16_slot(DType::F16)]) {
        // _X16 A of 8 rows: not whole 16-row groups; of 16 rows (of whole
        // 32-element blocks) it is read.
        CHECK_FALSE(with([](Spec &s) { s.a_layout = quant::kLayoutX16; }));
        CHECK(with([](Spec &s) { s.a_layout = quant::kLayoutX16; s.as = {64, 16}; s.bs = {16, 96}; }));
    } else {
        VT_NOTE_SKIP("this CPU's kernel table has no F16_X16 kernel");
    }
    // x a strided view with contiguous rows is read; a view with strided
    // elements is not.
    {
        Graph g;
        Tensor a, b;
        dims(a, DType::F16, ok.as, mem.data());
        dims(b, DType::F16, ok.bs, mem.data());
        Tensor *y = g.input(DType::F32, {96, 5}), *xb = g.input(DType::F32, {70, 5});
        Tensor *rows = g.input(DType::I32, {3}), *sc = g.input(DType::F32, {3});
        Tensor *x = g.view(xb, {64, 5}, {70 * sizeof(float)});
        g.op<Op::LORA>(DType::F32, {96, 5}, {y, x, &a, &b, rows, sc});
        CHECK(supports(g.nodes()[0]));
        Tensor *x2 = g.view(xb, {64, 5}, {70 * sizeof(float)});
        x2->nb[0] = 2 * sizeof(float);
        g.op<Op::LORA>(DType::F32, {96, 5}, {y, x2, &a, &b, rows, sc});
        CHECK_FALSE(supports(g.nodes()[1]));
    }
    // graph_compute refuses such a node instead of running it.
    {
        Graph g;
        Tensor a, b;
        dims(a, DType::F16, {32, 8}, mem.data());
        dims(b, DType::F16, ok.bs, mem.data());
        Tensor *y = g.input(DType::F32, {96, 5}), *x = g.input(DType::F32, {64, 5});
        Tensor *rows = g.input(DType::I32, {3}), *sc = g.input(DType::F32, {3});
        g.op<Op::LORA>(DType::F32, {96, 5}, {y, x, &a, &b, rows, sc});
        Bound bound(g);
        CHECK(compute(1, g) == VT_ERR_UNSUPPORTED);
    }
}

} // namespace
