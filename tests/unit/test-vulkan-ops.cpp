// The Vulkan module's device, buffers and the ops other than the weight
// readers (RMS_NORM, ADD, MUL, SCALE, SWIGLU, GEGLU, ROPE, ATTN_PAGED, and a
// chain of nodes), each against a double reference and the CPU backend;
// tests/unit/test-vulkan-harness.h says how. GET_ROWS and MUL_MAT are in
// test-vulkan-matmul.cpp.
#include "backend/graph-exec.h"
#include "unit/test-vulkan-harness.h"

using namespace vt;
using namespace vt::vktest;

// ---- device, buffers -------------------------------------------------------------

TEST_CASE("Vulkan device 0: props, buffer type, set/get/clear", "[vulkan]") {
    vt_device_props p{};
    vk().dev->iface->get_props(vk().dev, &p);
    CHECK(std::string(p.name).rfind("vulkan", 0) == 0);
    CHECK(p.description != nullptr);
    CHECK(p.memory_total > 0);
    CHECK(p.memory_free <= p.memory_total);
    vt_buffer_type *bt = vk().buft;
    CHECK(vk().dev->iface->supports_buft(vk().dev, bt));
    CHECK_FALSE(bt->iface->is_host(bt));
    CHECK(bt->iface->get_alignment(bt) >= 16);
    CHECK(bt->iface->get_max_size(bt) > (64u << 20));

    // Bases: non-null, distinct, aligned; contents round-trip.
    DevBuf a(1000), b(40 << 20);  // over two 16 MiB staging chunks
    CHECK(a.base() != nullptr);
    CHECK(a.base() != b.base());
    CHECK(((uintptr_t)b.base() & (bt->iface->get_alignment(bt) - 1)) == 0);
    std::mt19937 rng(7);
    Bytes src(40 << 20);
    for (auto &x : src) x = (uint8_t)rng();
    REQUIRE(b.b->iface->set(b.b, src.data(), 0, src.size()) == VT_OK);
    Bytes back(src.size());
    REQUIRE(b.b->iface->get(b.b, back.data(), 0, back.size()) == VT_OK);
    CHECK(back == src);
    REQUIRE(b.b->iface->get(b.b, back.data(), 12345, 999) == VT_OK);
    CHECK(std::memcmp(back.data(), src.data() + 12345, 999) == 0);
    CHECK(b.b->iface->set(b.b, src.data(), src.size() - 10, 11) != VT_OK);  // past the end: refused
    REQUIRE(a.b->iface->clear(a.b, 0xab) == VT_OK);
    Bytes c(1000);
    REQUIRE(a.b->iface->get(a.b, c.data(), 0, c.size()) == VT_OK);
    CHECK(std::all_of(c.begin(), c.end(), [](uint8_t x) { return x == 0xab; }));
}

TEST_CASE("Vulkan supports_op refuses the CPU's _X16 layouts, MXFP4 and tensors over one binding", "[vulkan]") {
    Tensor w, x, y;
    tensor_init(w, DType::Q4_0, 64, 32);
    w.layout = 1;  // the CPU's _X16: private to the CPU backend
    tensor_init(x, DType::F32, 64, 1);
    tensor_init(y, DType::F32, 32, 1);
    Node n{};
    n.op = Op::MUL_MAT;
    n.src[0] = &w;
    n.src[1] = &x;
    n.dst = &y;
    CHECK_FALSE(vk().dev->iface->supports_op(vk().dev, &n));
    w.layout = 0;
    CHECK(vk().dev->iface->supports_op(vk().dev, &n));
    // MXFP4 has no shader: its matmuls and row gathers are the CPU's (the
    // executor's counted fallback), gpt-oss's experts among them.
    tensor_init(w, DType::MXFP4, 64, 32);
    CHECK_FALSE(vk().dev->iface->supports_op(vk().dev, &n));
    Tensor ids, rows;
    tensor_init(ids, DType::I32, 3, 1);
    tensor_init(rows, DType::F32, 64, 3);
    Node gr{};
    gr.op = Op::GET_ROWS;
    gr.src[0] = &w;
    gr.src[1] = &ids;
    gr.dst = &rows;
    CHECK_FALSE(vk().dev->iface->supports_op(vk().dev, &gr));
    tensor_init(w, DType::Q4_0, 64, 32);
    CHECK(vk().dev->iface->supports_op(vk().dev, &gr));
    // 4096 x 131072 f32 weights = 2 GiB: over any binding we make (at most
    // 2^31 bytes; lavapipe 128 MiB), taken in row ranges.
    tensor_init(w, DType::F32, 4096, 65536 * 2);
    tensor_init(x, DType::F32, 4096, 1);
    tensor_init(y, DType::F32, 65536 * 2, 1);
    CHECK(vk().dev->iface->supports_op(vk().dev, &n));
    // An ADD of two such tensors has no split: refused.
    Tensor a, b, c;
    tensor_init(a, DType::F32, 4096, 65536 * 2);
    tensor_init(b, DType::F32, 4096, 65536 * 2);
    tensor_init(c, DType::F32, 4096, 65536 * 2);
    Node add{};
    add.op = Op::ADD;
    add.src[0] = &a;
    add.src[1] = &b;
    add.dst = &c;
    CHECK_FALSE(vk().dev->iface->supports_op(vk().dev, &add));
}


// ---- norms and element-wise ops ------------------------------------------------

TEST_CASE("Vulkan RMS_NORM", "[vulkan]") {
    std::mt19937 rng(99);
    struct Case {
        int64_t n, m;
        float eps;
    };
    const Case cases[] = {{4096, 1, 1e-5f}, {1001, 7, 1e-6f}, {37, 33, 1e-5f}, {3, 5, 1e-2f}};
    for (const Case &c : cases) {
        INFO("n " << c.n << ", rows " << c.m);
        std::vector<float> x = normal((size_t)(c.n * c.m), rng, 2.f), w = normal((size_t)c.n, rng);
        DevTensor wt(DType::F32, c.n, 1, 1, w.data(), w.size() * 4);
        Graph g;
        Tensor *xt = g.input(DType::F32, {c.n, c.m});
        Tensor *y = g.op<Op::RMS_NORM>(DType::F32, {c.n, c.m}, {xt, &wt.t}, {c.eps});
        g.mark_output(y);
        const Results got = run_both(g, {&wt}, y, [&](Bound &b) { b.put(xt, x); });
        std::vector<double> ref(x.size()), tol(x.size());
        for (int64_t r = 0; r < c.m; ++r) {
            double ss = 0;
            for (int64_t i = 0; i < c.n; ++i) ss += (double)x[r * c.n + i] * x[r * c.n + i];
            const double s = 1.0 / std::sqrt(ss / (double)c.n + (double)c.eps);
            for (int64_t i = 0; i < c.n; ++i) {
                const size_t q = (size_t)(r * c.n + i);
                ref[q] = (double)x[q] * s * (double)w[(size_t)i];
                // Sum of squares: a chain of n/256 per thread, then 8 tree
                // levels; then mean, sqrt, divide, two multiplies: under 40u
                // relative here; 1e-5 leaves room for sqrt's allowed 3 ulp.
                tol[q] = 1e-5 * std::fabs(ref[q]) + 1e-30;
            }
        }
        // The CPU (a double sum) is within a few u of the reference: twice the bound.
        check_both(got, ref, tol, twice(tol), "rms_norm n" + std::to_string(c.n));
    }
}

TEST_CASE("Vulkan ADD, MUL, SCALE, SWIGLU, GEGLU", "[vulkan]") {
    std::mt19937 rng(5);
    const int64_t ne0 = 333, rows = 7;
    const std::vector<float> a = normal((size_t)(ne0 * rows), rng, 3.f), bfull = normal(a.size(), rng),
                             brow = normal((size_t)ne0, rng);
    auto run2 = [&](auto tag, const std::vector<float> &bv, bool one_row) {
        constexpr Op O = decltype(tag)::value;
        Graph g;
        Tensor *at = g.input(DType::F32, {ne0, rows});
        Tensor *bt = g.input(DType::F32, {ne0, one_row ? 1 : rows});
        Tensor *y = g.op<O>(DType::F32, {ne0, rows}, {at, bt});
        g.mark_output(y);
        return run_both(g, {}, y, [&](Bound &b) {
            b.put(at, a);
            b.put(bt, bv);
        });
    };
    std::vector<double> ref(a.size()), tol(a.size());
    for (bool one_row : {false, true}) {
        const std::vector<float> &bv = one_row ? brow : bfull;
        auto bat = [&](size_t i) { return (double)bv[one_row ? i % (size_t)ne0 : i]; };
        // One correctly rounded f32 operation: exact against the f32 result.
        // The CPU too: both equal.
        Results got = run2(std::integral_constant<Op, Op::ADD>{}, bv, one_row);
        for (size_t i = 0; i < a.size(); ++i) ref[i] = (float)(a[i] + (float)bat(i)), tol[i] = 1e-300;
        check_both(got, ref, tol, tol, one_row ? "add (row)" : "add");
        got = run2(std::integral_constant<Op, Op::MUL>{}, bv, one_row);
        for (size_t i = 0; i < a.size(); ++i) ref[i] = (float)(a[i] * (float)bat(i)), tol[i] = 1e-300;
        check_both(got, ref, tol, tol, one_row ? "mul (row)" : "mul");
    }
    {
        Graph g;
        Tensor *at = g.input(DType::F32, {ne0, rows});
        Tensor *y = g.op<Op::SCALE>(DType::F32, {ne0, rows}, {at}, {0.37f});
        g.mark_output(y);
        const Results got = run_both(g, {}, y, [&](Bound &b) { b.put(at, a); });
        for (size_t i = 0; i < a.size(); ++i) ref[i] = (float)(a[i] * 0.37f), tol[i] = 1e-300;
        check_both(got, ref, tol, tol, "scale");
    }
    {
        const Results got = run2(std::integral_constant<Op, Op::SWIGLU>{}, bfull, false);
        for (size_t i = 0; i < a.size(); ++i) {
            const double g = a[i];
            ref[i] = g / (1.0 + std::exp(-g)) * bfull[i];
            // exp is allowed 3 + 2|x| ulp and division 2.5 ulp in Vulkan:
            // 1e-5 of |g * u| (silu(g) <= |g|) covers |g| up to ~20.
            tol[i] = 1e-5 * std::fabs(g * bfull[i]) + 1e-30;
        }
        // The CPU's vectorised expf has an error bound of its own: twice.
        check_both(got, ref, tol, twice(tol), "swiglu");
    }
    {
        const Results got = run2(std::integral_constant<Op, Op::GEGLU>{}, bfull, false);
        for (size_t i = 0; i < a.size(); ++i) {
            const float x = a[i];
            double y;
            if (x <= -10.f) y = 0;
            else if (x >= 10.f) y = x;
            else {
                const float h = fp16_to_f32(f32_to_fp16(x));
                const float ge = 0.5f * h * (1.0f + std::tanh(0.79788456080286535587989211986876f * h * (1.0f + 0.044715f * h * h)));
                y = fp16_to_f32(f32_to_fp16(ge));  // ggml's f16 table entry
            }
            ref[i] = y * bfull[i];
            // The result is an f16 rounding: a GPU tanh an ulp off, or the
            // input's rounding to f16, may move it one f16 ulp (2^-10
            // relative to |x|, gelu's slope being under 1.13).
            tol[i] = (0x1p-10 * 1.13 * std::max(std::fabs((double)x), std::fabs(y)) + 1e-7) * std::fabs(bfull[i]);
        }
        // The reference is the CPU's own table entry: the same tolerance.
        check_both(got, ref, tol, tol, "geglu");
    }
}

// ---- ROPE ---------------------------------------------------------------------------

TEST_CASE("Vulkan ROPE: adjacent, neox, partial, frequency factors, YaRN", "[vulkan]") {
    std::mt19937 rng(77);
    struct Case {
        int64_t head_dim;
        int32_t n_rot, mode;
        bool factors;
        float ext_factor, freq_scale;
    };
    const Case cases[] = {{64, 64, kRopeAdjacent, false, 0.f, 1.f}, {128, 128, kRopeNeox, false, 0.f, 1.f},
                          {80, 32, kRopeNeox, false, 0.f, 1.f},     {64, 64, kRopeAdjacent, true, 0.f, 1.f},
                          {96, 64, kRopeNeox, true, 1.f, 0.25f},    {3, 2, kRopeAdjacent, false, 0.f, 0.5f}};
    const int64_t n_head = 3, n_tok = 7;
    const std::vector<int32_t> pos = {0, 1, 17, 300, 1023, 4095, 5000};
    for (const Case &c : cases) {
        INFO("head_dim " << c.head_dim << ", n_rot " << c.n_rot << ", mode " << c.mode);
        RopeParams p{c.n_rot, c.mode, 10000.f, c.freq_scale, c.ext_factor, 1.f, 32.f, 1.f, 4096};
        const std::vector<float> x = normal((size_t)(c.head_dim * n_head * n_tok), rng);
        std::vector<float> ff((size_t)c.n_rot / 2);
        for (auto &f : ff) f = 1.f + 3.f * (float)(rng() % 1000) / 1000.f;
        DevTensor fft(DType::F32, c.n_rot / 2, 1, 1, ff.data(), ff.size() * 4);
        Graph g;
        Tensor *xt = g.input(DType::F32, {c.head_dim, n_head, n_tok});
        Tensor *pt = g.input(DType::I32, {n_tok});
        Tensor *y = g.op<Op::ROPE>(DType::F32, {c.head_dim, n_head, n_tok}, {xt, pt, c.factors ? &fft.t : nullptr}, p);
        g.mark_output(y);
        const Results got = run_both(g, {&fft}, y, [&](Bound &b) {
            b.put(xt, x);
            b.put(pt, pos);
        });
        // Angles as the CPU's rope cache makes them (float, the same order),
        // then cos/sin and the rotation in double.
        std::vector<double> ref(x.size()), tol(x.size());
        const float theta_scale = std::pow(p.freq_base, -2.0f / (float)p.n_rot);
        float corr0 = 0, corr1 = 0, mscale = p.attn_factor;
        auto corr_dim = [&](float beta) {
            return (float)p.n_rot * std::log((float)p.n_ctx_orig / (beta * 2.0f * (float)M_PI)) / (2.0f * std::log(p.freq_base));
        };
        if (p.ext_factor != 0.f) {
            corr0 = std::max(0.0f, std::floor(corr_dim(p.beta_fast)));
            corr1 = std::min((float)(p.n_rot - 1), std::ceil(corr_dim(p.beta_slow)));
            mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
        }
        for (int64_t t = 0; t < n_tok; ++t) {
            float theta = (float)pos[(size_t)t];
            std::vector<double> cs((size_t)c.n_rot / 2), sn(cs.size());
            for (int i = 0; i < c.n_rot / 2; ++i) {
                const float extrap = c.factors ? theta / ff[(size_t)i] : theta, interp = p.freq_scale * extrap;
                float th = interp;
                if (p.ext_factor != 0.f) {
                    const float yv = ((float)i - corr0) / std::max(0.001f, corr1 - corr0);
                    const float ramp = (1.0f - std::min(1.0f, std::max(0.0f, yv))) * p.ext_factor;
                    th = interp * (1.0f - ramp) + extrap * ramp;
                }
                cs[(size_t)i] = std::cos((double)th) * mscale;
                sn[(size_t)i] = std::sin((double)th) * mscale;
                theta *= theta_scale;
            }
            for (int64_t h = 0; h < n_head; ++h) {
                const size_t base = (size_t)((t * n_head + h) * c.head_dim);
                for (int64_t e = 0; e < c.head_dim; ++e) ref[base + e] = x[base + e], tol[base + e] = 1e-300;
                for (int i = 0; i < c.n_rot / 2; ++i) {
                    const size_t i0 = base + (c.mode == kRopeNeox ? i : 2 * i);
                    const size_t i1 = base + (c.mode == kRopeNeox ? i + c.n_rot / 2 : 2 * i + 1);
                    ref[i0] = x[i0] * cs[(size_t)i] - x[i1] * sn[(size_t)i];
                    ref[i1] = x[i0] * sn[(size_t)i] + x[i1] * cs[(size_t)i];
                    // Vulkan lets sin/cos err by 2^-11 absolute, and one
                    // divide by a factor is 2.5 ulp of an angle up to 5000
                    // rad: 1e-3 of the pair's magnitude.
                    tol[i0] = tol[i1] = 1e-3 * mscale * (std::fabs(x[i0]) + std::fabs(x[i1])) + 1e-30;
                }
            }
        }
        // The CPU's float sin/cos are within the same bound: twice.
        check_both(got, ref, tol, twice(tol), "rope hd" + std::to_string(c.head_dim) + " rot" + std::to_string(c.n_rot));
    }
}

// ---- ATTN_PAGED ------------------------------------------------------------------

namespace {

// One sequence of a batch: its block table, the positions it holds already
// (pool contents) and the new tokens at positions past them.
struct Seq {
    std::vector<int32_t> table;
    int64_t n_past, n_new;
};

void attn_case(int64_t n_head, int64_t n_head_kv, int64_t head_dim, int64_t bs, int32_t window,
               const std::vector<Seq> &seqs, std::mt19937 &rng) {
    const int64_t n_blocks = 24, kv_row = head_dim * n_head_kv, n_slots = n_blocks * bs;
    int64_t n_tok = 0, max_kv = 0;
    for (const Seq &s : seqs) n_tok += s.n_new, max_kv = std::max(max_kv, s.n_past + s.n_new);
    INFO("heads " << n_head << "/" << n_head_kv << ", head_dim " << head_dim << ", block " << bs << ", window "
                  << window << ", tokens " << n_tok);
    // The index: per token [slot, visible positions, table offset], then tables.
    std::vector<int32_t> idx((size_t)(3 * n_tok));
    std::vector<int64_t> tok_seq;
    int64_t t = 0;
    for (size_t si = 0; si < seqs.size(); ++si) {
        const int32_t table_at = (int32_t)idx.size();
        for (int64_t j = 0; j < seqs[si].n_new; ++j, ++t) {
            const int64_t pos = seqs[si].n_past + j;
            idx[(size_t)(3 * t)] = seqs[si].table[(size_t)(pos / bs)] * (int32_t)bs + (int32_t)(pos % bs);
            idx[(size_t)(3 * t + 1)] = (int32_t)(pos + 1);
            idx[(size_t)(3 * t + 2)] = table_at;
            tok_seq.push_back((int64_t)si);
        }
        idx.insert(idx.end(), seqs[si].table.begin(), seqs[si].table.end());
    }
    // Pools of random f16 (the cached positions); blocks nobody reads hold NaN.
    std::vector<uint16_t> kpool((size_t)(bs * kv_row * n_blocks), 0x7e00), vpool((size_t)(kv_row * n_slots), 0x7e00);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (const Seq &s : seqs)
        for (int32_t blk : s.table) {
            if (blk < 0) continue;
            for (int64_t o = 0; o < bs; ++o)
                for (int64_t d = 0; d < kv_row; ++d) {
                    kpool[(size_t)((blk * kv_row + d) * bs + o)] = f32_to_fp16(nd(rng));
                    vpool[(size_t)((blk * bs + o) * kv_row + d)] = f32_to_fp16(nd(rng));
                }
        }
    DevTensor kp(DType::F16, bs, kv_row, n_blocks, kpool.data(), kpool.size() * 2);
    DevTensor vp(DType::F16, kv_row, n_slots, 1, vpool.data(), vpool.size() * 2);
    const std::vector<float> q = normal((size_t)(head_dim * n_head * n_tok), rng),
                             k = normal((size_t)(kv_row * n_tok), rng), v = normal((size_t)(kv_row * n_tok), rng);
    const float scale = 1.0f / std::sqrt((float)head_dim);
    Graph g;
    Tensor *qt = g.input(DType::F32, {head_dim, n_head, n_tok});
    Tensor *kt = g.input(DType::F32, {head_dim, n_head_kv, n_tok});
    Tensor *vt = g.input(DType::F32, {head_dim, n_head_kv, n_tok});
    Tensor *it = g.input(DType::I32, {(int64_t)idx.size()});
    Tensor *y = g.op<Op::ATTN_PAGED>(DType::F32, {head_dim, n_head, n_tok}, {qt, kt, vt, &kp.t, &vp.t, it, nullptr},
                                     {scale, window, (int32_t)max_kv});
    g.mark_output(y);
    const Results got = run_both(g, {&kp, &vp}, y, [&](Bound &b) {
        b.put(qt, q);
        b.put(kt, k);
        b.put(vt, v);
        b.put(it, idx);
    });

    // The pools now hold the new K/V at their slots, f16-rounded (to nearest;
    // the GPU's rounding mode may differ by one f16 ulp), the rest untouched.
    Bytes kb = kp.read(), vb = vp.read();
    std::vector<uint16_t> kgot(kpool.size()), vgot(vpool.size());
    std::memcpy(kgot.data(), kb.data(), kb.size());
    std::memcpy(vgot.data(), vb.data(), vb.size());
    std::vector<uint16_t> kwant = kpool, vwant = vpool;
    for (int64_t tt = 0; tt < n_tok; ++tt) {
        const int64_t slot = idx[(size_t)(3 * tt)];
        for (int64_t d = 0; d < kv_row; ++d) {
            kwant[(size_t)(((slot / bs) * kv_row + d) * bs + slot % bs)] = f32_to_fp16(k[(size_t)(tt * kv_row + d)]);
            vwant[(size_t)(slot * kv_row + d)] = f32_to_fp16(v[(size_t)(tt * kv_row + d)]);
        }
    }
    size_t pool_bad = 0;
    for (size_t i = 0; i < kwant.size(); ++i) pool_bad += std::abs((int)kgot[i] - (int)kwant[i]) > 1;
    for (size_t i = 0; i < vwant.size(); ++i) pool_bad += std::abs((int)vgot[i] - (int)vwant[i]) > 1;
    CHECK(pool_bad == 0);
    // The CPU's pools: the same values rounded to nearest-even, exactly.
    CHECK(std::memcmp(kp.host.data(), kwant.data(), kp.host.size()) == 0);
    CHECK(std::memcmp(vp.host.data(), vwant.data(), vp.host.size()) == 0);

    // Reference in double over the pools as the GPU wrote them.
    std::vector<double> ref(got.vk.size()), tol(ref.size()), tol_cpu(ref.size());
    const int64_t G = n_head / n_head_kv;
    for (int64_t tt = 0; tt < n_tok; ++tt) {
        const int64_t n_kv = idx[(size_t)(3 * tt + 1)];
        const int32_t *table = idx.data() + idx[(size_t)(3 * tt + 2)];
        const int64_t lo = window > 0 && n_kv > window ? n_kv - window : 0;
        for (int64_t h = 0; h < n_head; ++h) {
            const int64_t hk = h / G;
            const float *qr = q.data() + (tt * n_head + h) * head_dim;
            std::vector<double> s((size_t)n_kv, -INFINITY);
            double mx = -INFINITY, smag = 0;
            for (int64_t j = lo; j < n_kv; ++j) {
                const int64_t blk = table[j / bs], o = j % bs;
                double dot = 0, mag = 0;
                for (int64_t d = 0; d < head_dim; ++d) {
                    const double p = (double)qr[d] * fp16_to_f32(kgot[(size_t)((blk * kv_row + hk * head_dim + d) * bs + o)]);
                    dot += p;
                    mag += std::fabs(p);
                }
                s[(size_t)j] = dot * scale;
                mx = std::max(mx, s[(size_t)j]);
                smag = std::max(smag, mag * scale);
            }
            double sum = 0;
            for (int64_t j = lo; j < n_kv; ++j) sum += s[(size_t)j] = std::exp(s[(size_t)j] - mx);
            for (int64_t d = 0; d < head_dim; ++d) {
                double o = 0, vmax = 0;
                for (int64_t j = lo; j < n_kv; ++j) {
                    const int64_t slot = table[j / bs] * bs + j % bs;
                    const double vv = fp16_to_f32(vgot[(size_t)(slot * kv_row + hk * head_dim + d)]);
                    o += s[(size_t)j] / sum * vv;
                    vmax = std::max(vmax, std::fabs(vv));
                }
                const size_t at = (size_t)((tt * n_head + h) * head_dim + d);
                ref[at] = o;
                // f32 scores (head_dim products) and exp (Vulkan: 3 + 2|x|
                // ulp), an online softmax over the keys: 1e-4 of the largest
                // |V| the query sees.
                tol[at] = 1e-4 * vmax + 1e-30;
                // The CPU rounds q to f16 (each score off by up to 2^-11 of
                // its magnitude smag, a weight by twice that through the
                // normaliser) and the probabilities to f16 (2^-11): under
                // 2^-9 (1 + smag) of the largest |V|.
                tol_cpu[at] = 0x1p-9 * (1 + smag) * vmax + tol[at];
            }
        }
    }
    check_both(got, ref, tol, tol_cpu, "attn_paged hd" + std::to_string(head_dim) + " w" + std::to_string(window));
}

} // namespace

TEST_CASE("Vulkan ATTN_PAGED: GQA, block tables, prefill and decode in one batch", "[vulkan]") {
    std::mt19937 rng(2024);
    // A prefill chunk of 5 past 37 cached positions, a decode token, and a
    // fresh sequence of 3: blocks shuffled across the pool.
    attn_case(4, 2, 64, 16, 0, {{{3, 7, 1}, 37, 5}, {{2, 5}, 20, 1}, {{11}, 0, 3}}, rng);
    // Heads of 80 (not a power of two), MHA, blocks of 8.
    attn_case(3, 3, 80, 8, 0, {{{0, 9, 4, 6}, 25, 2}}, rng);
    // Gemma-like: 256-wide heads, 8 query heads on 1 KV head, a long context
    // over several key tiles of the shader.
    attn_case(8, 1, 256, 16, 0, {{{5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, 150, 2}}, rng);
}

TEST_CASE("Vulkan ATTN_PAGED: sliding window, blocks before it given back", "[vulkan]") {
    std::mt19937 rng(7);
    // Window 8 over blocks of 4: positions 30..33 see 23..33 at most; blocks
    // 0..4 are gone (kNoBlock = -1 in the table).
    attn_case(2, 1, 32, 4, 8, {{{-1, -1, -1, -1, -1, 3, 8, 2, 17}, 30, 4}, {{1, 4}, 5, 2}}, rng);
}

TEST_CASE("Vulkan ATTN_PAGED latent mode: refused, then run on the CPU by the graph executor", "[vulkan]") {
    // DeepSeek MLA's latent mode (src2 and src4 null: values from the K
    // pool) has no shader. The graph executor copies the node's sources to
    // the host, runs it on the CPU and writes back dst and the K pool: both
    // must come back as a plain CPU run leaves them.
    std::mt19937 rng(11);
    const int64_t dk = 40, dv = 32, n_head = 4, bs = 16, n_blocks = 3, n_tok = 2;
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<uint16_t> pool((size_t)(bs * dk * n_blocks));
    for (uint16_t &h : pool) h = f32_to_fp16(nd(rng));
    DevTensor kp(DType::F16, bs, dk, n_blocks, pool.data(), pool.size() * 2);
    // One sequence at positions 20, 21 (slots 4, 5 of block 0, its second).
    const std::vector<int32_t> index = {4, 21, 6, 5, 22, 6, 2, 0};
    const std::vector<float> q = normal((size_t)(dk * n_head * n_tok), rng), k = normal((size_t)(dk * n_tok), rng);
    Graph g;
    Tensor *qt = g.input(DType::F32, {dk, n_head, n_tok}), *kt = g.input(DType::F32, {dk, 1, n_tok}),
           *it = g.input(DType::I32, {(int64_t)index.size()});
    Tensor *y = g.op<Op::ATTN_PAGED>(DType::F32, {dv, n_head, n_tok}, {qt, kt, nullptr, &kp.t, nullptr, it, nullptr},
                                     {0.125f, 0, (int32_t)(bs * n_blocks)});
    g.mark_output(y);
    CHECK_FALSE(vk().dev->iface->supports_op(vk().dev, &g.nodes()[0]));
    std::vector<float> got, want;
    Bytes pool_vk;
    {
        Bound b(g, vk().dev);
        b.put(qt, q);
        b.put(kt, k);
        b.put(it, index);
        GraphExecutor ex(vk().dev, 2);
        ex.compute(g.nodes());
        CHECK(ex.fallback_nodes() == 1);
        got = b.get(y);
        pool_vk = kp.read();
    }
    kp.on_cpu();
    {
        Bound b(g, cpu_device());
        b.put(qt, q);
        b.put(kt, k);
        b.put(it, index);
        b.compute(cpu_stream());
        want = b.get(y);
    }
    const Bytes pool_cpu = kp.host;
    kp.on_vulkan();
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    CHECK(pool_vk == pool_cpu);
    CHECK(pool_vk != kp.init);  // the step's keys were written back
}

TEST_CASE("Vulkan LORA: refused, then run on the CPU by the graph executor", "[vulkan]") {
    // LoRA adapters' update has no shader yet: the graph executor copies its
    // six sources (adapter weights in device memory among them) to the host
    // and runs it on the CPU, which must give a plain CPU run's bits.
    std::mt19937 rng(12);
    const int64_t k = 96, r = 8, n = 80, m = 5;
    // A F16 (k, r); B transposed, f32 (n, r): r rows of n (ops.def).
    const Bytes a = random_weights(DType::F16, k, r, rng), b = random_weights(DType::F32, n, r, rng);
    DevTensor at(DType::F16, k, r, 1, a.data(), a.size()), bt(DType::F32, n, r, 1, b.data(), b.size());
    const std::vector<float> y = normal((size_t)(n * m), rng), x = normal((size_t)(k * m), rng);
    const std::vector<int32_t> rows = {3, 0, 4};
    const std::vector<float> scales = {0.5f, -2.0f, 1.25f};
    Graph g;
    Tensor *yt = g.input(DType::F32, {n, m}), *xt = g.input(DType::F32, {k, m});
    Tensor *rt = g.input(DType::I32, {3}), *st = g.input(DType::F32, {3});
    Tensor *out = g.op<Op::LORA>(DType::F32, {n, m}, {yt, xt, &at.t, &bt.t, rt, st});
    g.mark_output(out);
    CHECK_FALSE(vk().dev->iface->supports_op(vk().dev, &g.nodes()[0]));
    auto fill = [&](Bound &bd) {
        bd.put(yt, y);
        bd.put(xt, x);
        bd.put(rt, rows);
        bd.put(st, scales);
    };
    std::vector<float> got, want;
    {
        Bound bd(g, vk().dev);
        fill(bd);
        GraphExecutor ex(vk().dev, 2);
        ex.compute(g.nodes());
        CHECK(ex.fallback_nodes() == 1);
        got = bd.get(out);
    }
    at.on_cpu();
    bt.on_cpu();
    {
        Bound bd(g, cpu_device());
        fill(bd);
        bd.compute(cpu_stream());
        want = bd.get(out);
    }
    at.on_vulkan();
    bt.on_vulkan();
    REQUIRE(got.size() == want.size());
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(&got[1 * n], &y[1 * n], (size_t)n * sizeof(float)) == 0);  // a row not listed: y's
}

// ---- a graph of several nodes --------------------------------------------------

TEST_CASE("Vulkan: a chain of nodes in one graph (norm, matmuls, swiglu, add)", "[vulkan]") {
    std::mt19937 rng(3);
    const int64_t e = 96, f = 160, m = 5;
    const std::vector<float> x = normal((size_t)(e * m), rng), nw = normal((size_t)e, rng);
    Bytes wg = random_weights(DType::Q8_0, e, f, rng), wu = random_weights(DType::Q8_0, e, f, rng),
          wd = random_weights(DType::F16, f, e, rng);
    DevTensor nwt(DType::F32, e, 1, 1, nw.data(), nw.size() * 4), wgt(DType::Q8_0, e, f, 1, wg.data(), wg.size()),
        wut(DType::Q8_0, e, f, 1, wu.data(), wu.size()), wdt(DType::F16, f, e, 1, wd.data(), wd.size());
    Graph g;
    Tensor *xt = g.input(DType::F32, {e, m});
    Tensor *h = g.op<Op::RMS_NORM>(DType::F32, {e, m}, {xt, &nwt.t}, {1e-5f});
    Tensor *gate = g.op<Op::MUL_MAT>(DType::F32, {f, m}, {&wgt.t, h});
    Tensor *up = g.op<Op::MUL_MAT>(DType::F32, {f, m}, {&wut.t, h});
    Tensor *act = g.op<Op::SWIGLU>(DType::F32, {f, m}, {gate, up});
    Tensor *down = g.op<Op::MUL_MAT>(DType::F32, {e, m}, {&wdt.t, act});
    Tensor *y = g.op<Op::ADD>(DType::F32, {e, m}, {down, xt});
    g.mark_output(y);
    const Results got = run_both(g, {&nwt, &wgt, &wut, &wdt}, y, [&](Bound &b) { b.put(xt, x); });
    // Reference in double through the same steps.
    const std::vector<float> dg = dequant(DType::Q8_0, wg, e, f), du = dequant(DType::Q8_0, wu, e, f),
                             dd = dequant(DType::F16, wd, f, e);
    std::vector<double> ref(got.vk.size()), tol(ref.size()), tol_cpu(ref.size());
    for (int64_t j = 0; j < m; ++j) {
        double ss = 0;
        for (int64_t i = 0; i < e; ++i) ss += (double)x[j * e + i] * x[j * e + i];
        const double sc = 1.0 / std::sqrt(ss / (double)e + 1e-5);
        std::vector<double> hn((size_t)e), a((size_t)f), amag((size_t)f);
        for (int64_t i = 0; i < e; ++i) hn[(size_t)i] = x[j * e + i] * sc * nw[(size_t)i];
        for (int64_t r = 0; r < f; ++r) {
            double sg = 0, su = 0, mg = 0, mu = 0;
            for (int64_t i = 0; i < e; ++i) {
                sg += dg[r * e + i] * hn[(size_t)i], su += du[r * e + i] * hn[(size_t)i];
                mg += std::fabs(dg[r * e + i] * hn[(size_t)i]), mu += std::fabs(du[r * e + i] * hn[(size_t)i]);
            }
            a[(size_t)r] = sg / (1.0 + std::exp(-sg)) * su;
            amag[(size_t)r] = mg * mu;  // bounds |gate| * |up|
        }
        for (int64_t r = 0; r < e; ++r) {
            double s = 0, mag = 0;
            for (int64_t i = 0; i < f; ++i) s += dd[r * f + i] * a[(size_t)i], mag += std::fabs(dd[r * f + i]) * amag[(size_t)i];
            ref[(size_t)(j * e + r)] = s + x[j * e + r];
            // Each stage's relative bound (norm 1e-5, matmuls (k + 3) u,
            // swiglu 1e-5) carried through the sums of magnitudes.
            tol[(size_t)(j * e + r)] = 5e-5 * mag + 2 * kU * std::fabs(x[j * e + r]) + 1e-30;
            // The CPU's Q8_0 activations (1/127 of a block's largest, in
            // gate and up) and f16 ones (2^-11, in down).
            tol_cpu[(size_t)(j * e + r)] = (2.0 / 127 + 0x1p-10) * mag + tol[(size_t)(j * e + r)];
        }
    }
    check_both(got, ref, tol, tol_cpu, "chain");
}
