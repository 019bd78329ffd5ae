// LORA (core/ops.def) on the CPU backend (backends/cpu/ops-lora.cpp), through
// the real path (a vt::Graph, plan(), bind(), graph_compute on the backend's
// vtable). B is always f32 and transposed, (n_out, r): r rows of n_out.
//  - against a double reference of y + s * (Bt^T . (A . x)) for F32 and F16
//    A of ranks 1 to 64, odd and typical projection shapes, 1 to 64 tokens,
//    none, one, some (scrambled) or all rows listed, scales varied, zero and
//    negative; then BF16 and quantized A (Q8_0, Q4_0, Q4_K, Q6_K);
//  - bit for bit against the op's stated f32 order: u taken from MUL_MAT
//    over the same A (the same kernels), then z = u[0] * Bt[0] + u[1] *
//    Bt[1] + ... with every product rounded, then y + (s * z);
//  - bit for bit: a row's output alone, among other rows, in a step of one
//    token, through a strided x and through a padded row list; rows not
//    listed are y's bits;
//  - _X16 A (the loader may repack A as it does any weight);
//  - what supports_op refuses, B's type, shape and strides among it.
// Every case runs on 1, 2 and 3 threads, which must agree bit for bit, with
// the output poisoned before each run (run_123, ops-harness.h).
//
// Gone with B (r, n_out) of any weight type: quantized, F16 and BF16 B, mixed
// adapters (A and B of different types), _X16 B, and the reference's term
// for u rounded to B's vec_dot_type. B is f32 now, which the loader writes.
#include "common/skip.h"
#include "unit/ops-harness.h"

namespace {

// An adapter: A (k, r) of type ta and B transposed, f32 (n_out, r), with
// the reference's rows of A. Not copyable: the tensors point into the
// adapter's own bytes.
struct Adapter {
    Adapter(DType ta, int64_t k_, int64_t r_, int64_t n_out_, std::mt19937 &rng)
        : k(k_), r(r_), n_out(n_out_), a(random_weights(ta, k, r, rng)), b(normal((size_t)(n_out * r), rng)) {
        tensor_init(at, ta, k, r, 1, 1, a.data(), "lora_a");
        tensor_init(bt, DType::F32, n_out, r, 1, 1, b.data(), "lora_b_t");
        for (int64_t j = 0; j < r; ++j) a_rows.push_back(ref_row(ta, a.data() + (size_t)j * row_bytes(ta, k), k));
    }
    Adapter(const Adapter &) = delete;
    Adapter &operator=(const Adapter &) = delete;

    int64_t k, r, n_out;
    Bytes a;
    std::vector<float> b;  // (n_out, r): b[j * n_out + o] multiplies u[j] into output o
    Tensor at, bt;         // at may be switched to an _X16 copy (x16 test)
    std::vector<RefRow> a_rows;
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
// Per listed row t with scale s, in the kernel's steps (ops.def), u the
// exact (double) A . x_t and u_c the kernel's f32 u:
//  1. u = A . x_t through MUL_MAT's kernels. x_t is first rounded to A's
//     vec_dot_type. For a plain float type (F32, F16, BF16) the reference
//     rounds it the same way, so that step is exact; for a block type the
//     rounding is bounded by act_error. Then matmul_ref bounds the f32 dot:
//     |u_c[j] - u[j]| <= tu[j], where tu is matmul_ref's tol.
//  2. z_c = fl(... fl(fl(u_c[0] b_0) + fl(u_c[1] b_1)) ... + fl(u_c[r-1]
//     b_{r-1})), b_j = Bt[j][o] f32, read as stored (no rounding of u for
//     B). Term j goes through its product's rounding and at most r - 1
//     additions, r roundings in all, so |z_c - sum_j u_c[j] b_j| <= gamma_r
//     sum_j |u_c[j] b_j|, gamma_r = r u / (1 - r u), with |u_c[j]| <= |u[j]|
//     + tu[j]. The error carried from step 1 adds sum_j |b_j| tu[j].
//     Together: tz. (Underflow adds at most 2^-150 per operation, which the
//     tolerance's 1e-30 floor covers.)
//  3. dst = fl(y + fl(s z_c)): |s| tz, plus one rounding of s z_c and one of
//     the sum, u (|y| + (2 + u) |s| (|z| + tz)).
// So for F32 and F16 A the tolerance follows from f32 accumulation alone
// (and for block types from act_error); it is not picked by hand. Rows not
// listed must be y exactly (tol 0).
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
    const DType va = vec_dot_type(ad.at.type);
    const double gamma = (double)r * kU / (1 - (double)r * kU);
    std::vector<double> e, emin, u((size_t)r), tu((size_t)r);
    for (size_t i = 0; i < s.rows.size(); ++i) {
        const int64_t t = s.rows[i];
        if (t < 0 || t >= s.m) continue;  // padding
        std::vector<float> xt(s.x.begin() + t * k, s.x.begin() + (t + 1) * k);
        acts_as_read(va, xt, e, emin);
        for (int64_t j = 0; j < r; ++j) {
            const RefDot d = matmul_ref(ad.a_rows[(size_t)j], xt.data(), e, emin, k);
            u[(size_t)j] = d.ref;
            tu[(size_t)j] = d.tol;
        }
        for (int64_t o = 0; o < n; ++o) {
            double z = 0, carried = 0, mag = 0;
            for (int64_t j = 0; j < r; ++j) {
                const double b = ad.b[(size_t)(j * n + o)];
                z += b * u[(size_t)j];
                carried += std::fabs(b) * tu[(size_t)j];
                mag += std::fabs(b) * (std::fabs(u[(size_t)j]) + tu[(size_t)j]);
            }
            const double tz = carried + gamma * mag;
            const double sc = s.scales[i], yv = s.y[(size_t)(t * n + o)];
            out.ref[(size_t)(t * n + o)] = yv + sc * z;
            out.tol[(size_t)(t * n + o)] =
                std::fabs(sc) * tz + kU * (std::fabs(yv) + (2 + kU) * std::fabs(sc) * (std::fabs(z) + tz)) + 1e-30;
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
    return std::string("LORA A ") + dtype_name(ad.at.type) + " (B f32), k " + std::to_string(ad.k) + ", r " +
           std::to_string(ad.r) + ", n " + std::to_string(ad.n_out);
}

TEST_CASE("LORA against a double reference: F32 and F16 A, ranks, shapes, row subsets, scales", "[ops][lora]") {
    std::mt19937 rng(4242);
    struct Dims {
        int64_t k, n_out;
    };
    // A typical pair, a small model's, and odd sizes (no 16-row blocks,
    // n_out not whole 16-float slices, uneven thread splits).
    const Dims dims[] = {{64, 96}, {576, 192}, {37, 53}};
    for (DType t : {DType::F32, DType::F16})
        for (int64_t r : {1, 4, 16, 64})
            for (const Dims &dm : dims) {
                const Adapter ad(t, dm.k, r, dm.n_out, rng);
                for (int64_t m : {1, 7, 64}) {
                    INFO(adapter_name(ad) << ", tokens " << m);
                    check_subsets(ad, m, rng, adapter_name(ad));
                }
            }
}

TEST_CASE("LORA against a double reference: BF16 and quantized A", "[ops][lora]") {
    // The same kernels as MUL_MAT's, so any weight type it reads works for
    // A; block types need whole blocks along k.
    std::mt19937 rng(1729);
    struct Case {
        DType a;
        int64_t k, r, n_out;
    };
    const Case cases[] = {{DType::BF16, 576, 16, 192}, {DType::Q8_0, 576, 64, 192}, {DType::Q8_0, 576, 16, 96},
                          {DType::Q4_K, 512, 32, 96},  {DType::Q4_0, 64, 32, 53},   {DType::Q6_K, 256, 5, 53}};
    for (const Case &c : cases) {
        const Adapter ad(c.a, c.k, c.r, c.n_out, rng);
        for (int64_t m : {1, 9}) {
            INFO(adapter_name(ad) << ", tokens " << m);
            check_subsets(ad, m, rng, adapter_name(ad));
        }
    }
}

// ---- bit for bit ---------------------------------------------------------------

// a * b rounded to f32 and kept so: the volatile store keeps the compiler
// from contracting it with a following addition into a multiply-add.
float mul_rounded(float a, float b) {
    volatile float p = a * b;
    return p;
}

// u = A . x_t of every token, (r, m) f32, by MUL_MAT over ad's A (as it is
// laid out). LORA's shrink is the same kernels (matmul::dot_rows), whose
// outputs do not depend on how many rows share the product, so these are
// the bits of LORA's u.
std::vector<float> shrink_by_mul_mat(const Adapter &ad, const Step &s) {
    Graph g;
    Tensor *xt = g.input(DType::F32, {ad.k, s.m}, "x");
    Tensor *u = g.op<Op::MUL_MAT>(DType::F32, {ad.r, s.m}, {const_cast<Tensor *>(&ad.at), xt});
    g.mark_output(u);
    REQUIRE(supports(g.nodes()[0]));
    Bound bound(g);
    return run_123(g, u, [&] { put(xt, s.x); });
}

// LORA in f32 in the order ops.def states, from u (shrink_by_mul_mat): for
// each listed row z = fl(... fl(fl(u[0] Bt[0]) + fl(u[1] Bt[1])) ...), then
// fl(y + fl(s z)); the other rows y.
std::vector<float> lora_f32(const Adapter &ad, const Step &s, const std::vector<float> &u) {
    const int64_t n = ad.n_out, r = ad.r;
    std::vector<float> out = s.y, z((size_t)n);
    for (size_t i = 0; i < s.rows.size(); ++i) {
        const int64_t t = s.rows[i];
        if (t < 0 || t >= s.m) continue;  // padding
        const float *ut = &u[(size_t)(t * r)];
        for (int64_t o = 0; o < n; ++o) z[(size_t)o] = mul_rounded(ut[0], ad.b[(size_t)o]);
        for (int64_t j = 1; j < r; ++j)
            for (int64_t o = 0; o < n; ++o) z[(size_t)o] += mul_rounded(ut[j], ad.b[(size_t)(j * n + o)]);
        for (int64_t o = 0; o < n; ++o)
            out[(size_t)(t * n + o)] = s.y[(size_t)(t * n + o)] + mul_rounded(s.scales[i], z[(size_t)o]);
    }
    return out;
}

TEST_CASE("LORA: the expand is the stated f32 order over MUL_MAT's u, bit for bit", "[ops][lora]") {
    // ops.def fixes every rounding after the shrink, so given u the output
    // is known to the bit: a change of order, a multiply-add or a skipped
    // rank shows here even where the double reference's bound would hide it.
    std::mt19937 rng(271);
    struct Case {
        DType a;
        int64_t k, r, n_out;
    };
    const Case cases[] = {{DType::F32, 64, 1, 96},    {DType::F32, 37, 5, 53},     {DType::F16, 576, 16, 192},
                          {DType::F16, 64, 64, 53},   {DType::BF16, 576, 8, 96},   {DType::Q8_0, 576, 32, 96},
                          {DType::Q4_K, 512, 16, 53}, {DType::Q6_K, 256, 7, 40}};
    for (const Case &c : cases) {
        const Adapter ad(c.a, c.k, c.r, c.n_out, rng);
        INFO(adapter_name(ad));
        for (int64_t m : {1, 9}) {
            INFO("tokens " << m);
            Step s = draw_step(ad, m, rng);
            s.rows = m == 1 ? std::vector<int32_t>{0} : std::vector<int32_t>{-1, 7, 2, 0, 5, 9, 8, 3};
            s.scales = draw_scales(s.rows.size(), rng);
            const std::vector<float> got = run_lora(ad, s), want = lora_f32(ad, s, shrink_by_mul_mat(ad, s));
            CHECK(same_bits(got.data(), want.data(), got.size() * sizeof(float)));
        }
    }
}

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
    // step of one token. With 9 tokens, 6 listed, the shrink takes the gemm
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
        const Adapter ad(c.t, c.k, c.r, c.n_out, rng);
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
                    want[at] = s.y[at] + mul_rounded(s.scales[i], z[at]);
                }
            CHECK(same_bits(want.data(), batch.data(), batch.size() * sizeof(float)));
        }
    }
}

// ---- _X16 A -------------------------------------------------------------------------

TEST_CASE("LORA over _X16 A: Q8_0 equals the plain layout bit for bit, F16 within the reference", "[ops][lora]") {
    // Q8_0_X16 kernels give the plain layout's bits; F16_X16 follow their
    // own order (kernels.h), so they are held to the reference's bound
    // instead. Both must give the stated expand over MUL_MAT's u from the
    // same _X16 A. r = 32 makes A two 16-row groups (split between threads);
    // n_out = 53 leaves a partial 16-float slice.
    std::mt19937 rng(16);
    const int64_t k = 320, r = 32, n_out = 53;
    for (DType t : {DType::Q8_0, DType::F16}) {
        INFO(dtype_name(t) << "_X16");
        if (!quant::active_kernels().gemm[quant::x16_slot(t)]) {
            VT_NOTE_SKIP("this CPU's kernel table has no " << dtype_name(t) << "_X16 kernel");
            continue;
        }
        Adapter ad(t, k, r, n_out, rng);
        Bytes ax(ad.a.size());
        quant::repack_x16(t, ad.a.data(), row_bytes(t, k), ax.data(), k, r);
        for (int64_t m : {1, 9}) {
            INFO("tokens " << m);
            Step s = draw_step(ad, m, rng);
            s.rows = m == 1 ? std::vector<int32_t>{0} : std::vector<int32_t>{4, 0, 8, 1, 6};
            s.scales = draw_scales(s.rows.size(), rng);
            const Tensor plain_a = ad.at;
            const std::vector<float> plain = run_lora(ad, s);
            ad.at.data = ax.data();
            ad.at.layout = quant::kLayoutX16;
            const std::vector<float> x16 = run_lora(ad, s), want = lora_f32(ad, s, shrink_by_mul_mat(ad, s));
            ad.at = plain_a;
            check_step(ad, s, x16, std::string("LORA ") + dtype_name(t) + "_X16");
            CHECK(same_bits(want.data(), x16.data(), x16.size() * sizeof(float)));
            if (t == DType::Q8_0) CHECK(same_bits(plain.data(), x16.data(), plain.size() * sizeof(float)));
        }
    }
}

// ---- supports_op ---------------------------------------------------------------------

TEST_CASE("supports_op refuses malformed LORA nodes", "[ops][lora]") {
    // Each malformed node differs from a well-formed one, checked first, in
    // one thing: y (96, 5), x (64, 5), A F16 (64, 8), B transposed F32
    // (96, 8), 3 rows.
    std::vector<uint8_t> mem(row_bytes(DType::Q8_K, 256) * 64);
    struct Spec {
        DType y = DType::F32, x = DType::F32, a = DType::F16, b = DType::F32, rows = DType::I32, scales = DType::F32,
              dst = DType::F32;
        std::vector<int64_t> ys = {96, 5}, xs = {64, 5}, as = {64, 8}, bs = {96, 8}, rs = {3}, ss = {3}, ds = {96, 5};
        uint32_t a_layout = 0;
        size_t b_row_pad = 0;  // bytes after each of B's rows: not contiguous
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
        if (sp.b_row_pad) {
            b.nb[1] += sp.b_row_pad;
            for (int d = 2; d < kMaxDims; ++d) b.nb[d] = b.nb[d - 1] * (size_t)b.ne[d - 1];
        }
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
    CHECK(with([](Spec &s) { s.a = DType::F32; }));
    CHECK(with([](Spec &s) { s.rs = s.ss = {5}; }));                      // every row listed
    CHECK(with([](Spec &s) { s.a = DType::Q8_0; s.as = {64, 8}; }));      // a block type, whole blocks
    CHECK(with([](Spec &s) { s.as = {64, 1}; s.bs = {96, 1}; }));         // rank 1
    CHECK_FALSE(with([](Spec &s) { s.as = {32, 8}; }));                   // A's rows not of x's length
    CHECK_FALSE(with([](Spec &s) { s.bs = {96, 4}; }));                   // B of another rank than A
    CHECK_FALSE(with([](Spec &s) { s.bs = {95, 8}; }));                   // B's rows not y's length
    CHECK_FALSE(with([](Spec &s) { s.bs = {8, 96}; }));                   // B not transposed: (r, n_out)
    CHECK_FALSE(with([](Spec &s) { s.bs = {96, 8, 2}; }));                // 3-D B
    CHECK_FALSE(with([](Spec &s) { s.b = DType::F16; }));                 // B not f32
    CHECK_FALSE(with([](Spec &s) { s.b = DType::BF16; }));
    CHECK_FALSE(with([](Spec &s) { s.b = DType::Q8_0; }));                // (96 = 3 whole blocks)
    CHECK_FALSE(with([](Spec &s) { s.b_row_pad = 4 * sizeof(float); }));  // B's rows not contiguous
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
        CHECK(with([](Spec &s) { s.a_layout = quant::kLayoutX16; s.as = {64, 16}; s.bs = {96, 16}; }));
    } else {
        VT_NOTE_SKIP("this CPU's kernel table has no F16_X16 kernel");
    }
    // x a strided view with contiguous rows is read; a view with strided
    // elements is not.
    {
        Graph g;
        Tensor a, b;
        dims(a, DType::F16, ok.as, mem.data());
        dims(b, DType::F32, ok.bs, mem.data());
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
        dims(b, DType::F32, ok.bs, mem.data());
        Tensor *y = g.input(DType::F32, {96, 5}), *x = g.input(DType::F32, {64, 5});
        Tensor *rows = g.input(DType::I32, {3}), *sc = g.input(DType::F32, {3});
        g.op<Op::LORA>(DType::F32, {96, 5}, {y, x, &a, &b, rows, sc});
        Bound bound(g);
        CHECK(compute(1, g) == VT_ERR_UNSUPPORTED);
    }
}

} // namespace
