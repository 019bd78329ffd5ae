// The mixture-of-experts ops of core/ops.def on the CPU backend
// (backends/cpu/ops-moe.cpp), through the real path (a vt::Graph, plan(),
// bind(), graph_compute on the backend's vtable):
//  - MUL_MAT_ID against MUL_MAT's double reference (ops-harness.h) for every
//    weight type, and bit for bit against itself in other batches and
//    against MUL_MAT of the chosen expert's matrix, plain and _X16;
//  - MOE_TOPK and MOE_WEIGHTS against a reference written from transformers'
//    routers (Mixtral and Qwen3-MoE: softmax; DeepseekV3TopkRouter: sigmoid,
//    selection bias, group-limited choice; GptOssTopKRouter: chosen on the
//    logits, a softmax over the chosen), ties included;
//  - MOE_SUM against the double sum; what supports_op refuses.
// Every case runs on 1, 2 and 3 threads, which must agree bit for bit, with
// the output poisoned before each run so that a run that writes nothing
// cannot pass for one that agrees.
#include "common/skip.h"
#include "unit/ops-harness.h"

namespace {

// ---- MUL_MAT_ID ------------------------------------------------------------------

// The expert ids of m tokens of n_slot slots each (n_slot * m, slot fastest),
// distinct within a token as the router makes them, drawn with weights
// 16, 8, 4, 2, 1, 1, ... so that expert 0 is chosen by many tokens and the
// later ones by few; the last two experts by none. Token 0's first two
// slots then name the same expert: the router never does so, but the op
// must still compute both rows.
std::vector<int32_t> draw_ids(int64_t n_slot, int64_t m, int64_t n_expert, std::mt19937 &rng) {
    REQUIRE(n_slot + 2 <= n_expert);
    std::vector<int32_t> ids((size_t)(n_slot * m));
    for (int64_t t = 0; t < m; ++t) {
        std::vector<double> wt((size_t)n_expert, 0.0);
        for (int64_t e = 0; e + 2 < n_expert; ++e) wt[(size_t)e] = e < 4 ? (double)(16 >> e) : 1.0;
        for (int64_t j = 0; j < n_slot; ++j) {
            std::discrete_distribution<int> pick(wt.begin(), wt.end());
            const int e = pick(rng);
            ids[(size_t)(t * n_slot + j)] = e;
            wt[(size_t)e] = 0.0;
        }
    }
    if (n_slot >= 2) ids[1] = ids[0];
    return ids;
}

// Rows per expert.
std::vector<int64_t> expert_counts(const std::vector<int32_t> &ids, int64_t n_expert) {
    std::vector<int64_t> c((size_t)n_expert, 0);
    for (int32_t e : ids) ++c[(size_t)e];
    return c;
}

// MUL_MAT_ID of w (k, n_out, n_expert) with activations x (k, x_slots, m)
// and ids (n_slot, m), on 1, 2 and 3 threads.
std::vector<float> run_mul_mat_id(Tensor &w, const std::vector<float> &x, int64_t x_slots,
                                  const std::vector<int32_t> &ids, int64_t n_slot) {
    const int64_t k = w.ne[0], n_out = w.ne[1], m = (int64_t)ids.size() / n_slot;
    Graph g;
    Tensor *xt = g.input(DType::F32, {k, x_slots, m}), *it = g.input(DType::I32, {n_slot, m});
    Tensor *y = g.op<Op::MUL_MAT_ID>(DType::F32, {n_out, n_slot, m}, {&w, xt, it});
    g.mark_output(y);
    REQUIRE(supports(g.nodes()[0]));
    Bound bound(g);
    return run_123(g, y, [&] {
        put(xt, x);
        put(it, ids);
    });
}

// MUL_MAT of the 2-D w with m activation rows x, on 1, 2 and 3 threads.
std::vector<float> run_mul_mat(Tensor &w, const std::vector<float> &x) {
    const int64_t k = w.ne[0], n_out = w.ne[1], m = (int64_t)x.size() / k;
    Graph g;
    Tensor *xt = g.input(DType::F32, {k, m});
    Tensor *y = g.op<Op::MUL_MAT>(DType::F32, {n_out, m}, {&w, xt});
    g.mark_output(y);
    REQUIRE(supports(g.nodes()[0]));
    Bound bound(g);
    return run_123(g, y, [&] { put(xt, x); });
}

// Expert e's matrix of the 3-D w, as MUL_MAT's 2-D weight (same layout).
Tensor expert_matrix(const Tensor &w, int64_t e) {
    Tensor m;
    tensor_init(m, w.type, w.ne[0], w.ne[1], 1, 1, static_cast<uint8_t *>(w.data) + (size_t)e * w.nb[2]);
    m.layout = w.layout;
    return m;
}

// Activations for MUL_MAT_ID: n_rows rows of k, ~N(0, 0.7), row 0 with
// outliers (blocks with a large amax), as MUL_MAT's test draws them.
std::vector<float> draw_acts(int64_t k, int64_t n_rows, std::mt19937 &rng) {
    std::vector<float> x = normal((size_t)(k * n_rows), rng, 0.7f);
    for (int64_t i = 0; i < k; i += 37) x[(size_t)i] *= 40.f;
    return x;
}

TEST_CASE("MUL_MAT_ID for every weight type against double dots of the chosen experts", "[ops][moe]") {
    // Each row (j, t) of dst is MUL_MAT's product of expert ids[j, t]'s
    // matrix with activation row (j, t), or (0, t) when the activations are
    // one row per token (k, 1, m): the same reference and bound as MUL_MAT
    // (matmul_ref, ops-harness.h), the activations rounded to the weight's
    // vec_dot_type within act_error.
    std::mt19937 rng(2718);
    struct Case {
        int64_t m, n_slot, n_expert;
        bool broadcast;  // src1 (k, 1, m), else (k, n_slot, m)
    };
    const Case cases[] = {{1, 1, 4, true},   {1, 8, 10, false}, {3, 2, 4, true},   {3, 2, 6, false},
                          {17, 8, 16, true}, {17, 2, 16, false}, {64, 8, 12, false}, {64, 1, 7, true}};
    const int64_t n_out = 37;  // odd: uneven thread split and a partial 16-row block
    for (DType t : kMatmulTypes) {
        const int64_t k = matmul_k(t);
        const DType vdt = vec_dot_type(t);
        for (const Case &c : cases) {
            INFO("weight " << dtype_name(t) << " (acts " << dtype_name(vdt) << "), k " << k << ", n " << n_out
                           << ", experts " << c.n_expert << ", slots " << c.n_slot << ", tokens " << c.m
                           << (c.broadcast ? ", one activation row per token" : ", one per slot"));
            Bytes w = random_weights(t, k, n_out * c.n_expert, rng);
            Tensor wt;
            tensor_init(wt, t, k, n_out, c.n_expert, 1, w.data(), "experts");
            const std::vector<int32_t> ids = draw_ids(c.n_slot, c.m, c.n_expert, rng);
            const std::vector<int64_t> count = expert_counts(ids, c.n_expert);
            REQUIRE(count[(size_t)c.n_expert - 1] == 0);  // experts no row chose
            if (c.m * c.n_slot >= 16) REQUIRE(*std::max_element(count.begin(), count.end()) >= 8);  // and one many did
            const int64_t x_slots = c.broadcast ? 1 : c.n_slot;
            const std::vector<float> x = draw_acts(k, x_slots * c.m, rng);
            const std::vector<float> got = run_mul_mat_id(wt, x, x_slots, ids, c.n_slot);

            std::vector<RefRow> rows((size_t)(n_out * c.n_expert));  // only the chosen experts' filled
            for (int64_t e = 0; e < c.n_expert; ++e)
                for (int64_t r = 0; count[(size_t)e] > 0 && r < n_out; ++r)
                    rows[(size_t)(e * n_out + r)] = ref_row(t, w.data() + (size_t)(e * n_out + r) * row_bytes(t, k), k);
            std::vector<double> ref(got.size()), tol(got.size()), e1, emin;
            for (int64_t a = 0; a < x_slots * c.m; ++a) {  // each activation row, then the slots that read it
                const std::vector<float> xa(x.begin() + a * k, x.begin() + (a + 1) * k);
                act_error(vdt, xa, e1, emin);
                const int64_t tok = a / x_slots, j0 = c.broadcast ? 0 : a % x_slots;
                for (int64_t j = j0; j < (c.broadcast ? c.n_slot : j0 + 1); ++j) {
                    const int64_t dr = tok * c.n_slot + j, ex = ids[(size_t)dr];
                    for (int64_t r = 0; r < n_out; ++r) {
                        const RefDot d = matmul_ref(rows[(size_t)(ex * n_out + r)], xa.data(), e1, emin, k);
                        ref[(size_t)(dr * n_out + r)] = d.ref;
                        tol[(size_t)(dr * n_out + r)] = d.tol;
                    }
                }
            }
            check_close(got, ref, tol, std::string("MUL_MAT_ID ") + dtype_name(t));
        }
    }
}

TEST_CASE("MUL_MAT_ID: ids outside the experts give zero rows", "[ops][moe]") {
    // ops-moe.cpp leaves such rows out of the products and zeroes them (the
    // router never makes one); the output is poisoned before each run, so
    // the zeros are written, not left over.
    std::mt19937 rng(5);
    const int64_t k = 64, n_out = 20, n_expert = 4, n_slot = 3, m = 5;
    Bytes w = random_weights(DType::Q8_0, k, n_out * n_expert, rng);
    Tensor wt;
    tensor_init(wt, DType::Q8_0, k, n_out, n_expert, 1, w.data());
    std::vector<int32_t> ids = draw_ids(n_slot, m, n_expert + 2, rng);  // experts 0 .. n_expert - 1
    ids[2] = -1;
    ids[7] = (int32_t)n_expert;
    const std::vector<float> x = draw_acts(k, n_slot * m, rng);
    const std::vector<float> got = run_mul_mat_id(wt, x, n_slot, ids, n_slot);
    for (size_t r = 0; r < ids.size(); ++r) {
        INFO("row " << r << ", expert " << ids[r]);
        const bool outside = ids[r] < 0 || ids[r] >= n_expert;
        bool all_zero = true, all_finite = true;
        for (int64_t i = 0; i < n_out; ++i) {
            all_zero = all_zero && got[r * n_out + i] == 0.0f;
            all_finite = all_finite && std::isfinite(got[r * n_out + i]);
        }
        CHECK(all_finite);
        CHECK(all_zero == outside);
    }
}

TEST_CASE("MUL_MAT_ID: a token's rows are the same bits alone, in a batch, and as MUL_MAT of its expert",
          "[ops][moe]") {
    // matmul::dot_rows' outputs do not depend on how many rows share a
    // product, so a token must not get other bits because of the tokens
    // batched with it (decode vs prefill, one request vs many), nor differ
    // from the dense product of its expert's matrix: MUL_MAT of it with all
    // the rows that chose it (the gemm tiles when there are 4 or more), and
    // with that row alone (the row dot).
    std::mt19937 rng(1618);
    const int64_t n_out = 37, n_expert = 16, n_slot = 4, m = 17;
    for (DType t : kMatmulTypes) {
        const int64_t k = matmul_k(t);
        Bytes w = random_weights(t, k, n_out * n_expert, rng);
        Tensor wt;
        tensor_init(wt, t, k, n_out, n_expert, 1, w.data(), "experts");
        for (bool broadcast : {false, true}) {
            INFO("weight " << dtype_name(t) << (broadcast ? ", one activation row per token" : ", one per slot"));
            const int64_t x_slots = broadcast ? 1 : n_slot, xs = x_slots * k, ys = n_slot * n_out;
            const std::vector<int32_t> ids = draw_ids(n_slot, m, n_expert, rng);
            const std::vector<int64_t> count = expert_counts(ids, n_expert);
            // Both of dot_rows' paths are taken: an expert with >= 4 rows, one with fewer.
            REQUIRE(std::any_of(count.begin(), count.end(), [](int64_t c) { return c >= 4; }));
            REQUIRE(std::any_of(count.begin(), count.end(), [](int64_t c) { return c > 0 && c < 4; }));
            const std::vector<float> x = draw_acts(k, x_slots * m, rng);
            const std::vector<float> batch = run_mul_mat_id(wt, x, x_slots, ids, n_slot);

            for (int64_t tok = 0; tok < m; ++tok) {
                INFO("token " << tok << " alone");
                const std::vector<float> xt(x.begin() + tok * xs, x.begin() + (tok + 1) * xs);
                const std::vector<int32_t> it(ids.begin() + tok * n_slot, ids.begin() + (tok + 1) * n_slot);
                const std::vector<float> alone = run_mul_mat_id(wt, xt, x_slots, it, n_slot);
                CHECK(same_bits(alone.data(), &batch[(size_t)(tok * ys)], (size_t)ys * sizeof(float)));
            }
            for (int64_t e = 0; e < n_expert; ++e) {
                if (count[(size_t)e] == 0) continue;
                INFO("expert " << e << ", chosen by " << count[(size_t)e] << " rows");
                Tensor we = expert_matrix(wt, e);
                std::vector<int64_t> rows;  // dst rows (slot fastest) that chose e
                std::vector<float> xe;
                for (int64_t r = 0; r < n_slot * m; ++r) {
                    if (ids[(size_t)r] != e) continue;
                    const int64_t a = broadcast ? r / n_slot : r;
                    rows.push_back(r);
                    xe.insert(xe.end(), x.begin() + a * k, x.begin() + (a + 1) * k);
                }
                const std::vector<float> dense = run_mul_mat(we, xe);
                for (size_t i = 0; i < rows.size(); ++i) {
                    INFO("dst row " << rows[i]);
                    const float *want = &batch[(size_t)(rows[i] * n_out)];
                    CHECK(same_bits(&dense[i * n_out], want, (size_t)n_out * sizeof(float)));
                    const std::vector<float> one(xe.begin() + (int64_t)i * k, xe.begin() + (int64_t)(i + 1) * k);
                    CHECK(same_bits(run_mul_mat(we, one).data(), want, (size_t)n_out * sizeof(float)));
                }
            }
        }
    }
}

// ---- MUL_MAT_ID over _X16 experts -------------------------------------------------------

// What MUL_MAT_ID over w's experts in the _X16 layout must give, bit for
// bit: the plain layout's result (got_plain), except for F16 and BF16,
// whose _X16 kernels follow their own orders (pair_order_matmul), as
// MUL_MAT's _X16 test in test-ops.cpp expects.
std::vector<float> x16_expected(DType base, const Bytes &w, int64_t k, int64_t n_out, const std::vector<float> &x,
                                int64_t x_slots, const std::vector<int32_t> &ids, int64_t n_slot,
                                const std::vector<float> &got_plain) {
    if (base != DType::F16 && base != DType::BF16) return got_plain;
    std::vector<float> out(got_plain.size());
    const size_t expert_bytes = row_bytes(base, k) * (size_t)n_out;
    for (size_t r = 0; r < ids.size(); ++r) {
        const int64_t a = x_slots == 1 ? (int64_t)r / n_slot : (int64_t)r;
        const std::vector<float> xa(x.begin() + a * k, x.begin() + (a + 1) * k);
        const std::vector<float> o =
            pair_order_matmul(base, w.data() + (size_t)ids[r] * expert_bytes, k, n_out, xa, 1);
        std::copy(o.begin(), o.end(), out.begin() + (int64_t)r * n_out);
    }
    return out;
}

TEST_CASE("MUL_MAT_ID over _X16 experts equals the plain layout bit for bit", "[ops][moe]") {
    // Twice per type: experts repacked here as one matrix of n_expert * n_out
    // rows (n_out a multiple of 16, so no 16-row group crosses two experts),
    // which is what the kernels read; and through the CPU buffer type's
    // prepare_weight, which the loader calls, where it repacks a 3-D weight.
    std::mt19937 rng(314);
    vt_device *dev = cpu_device();
    vt_buffer_type *bt = dev->iface->get_buffer_type(dev);
    REQUIRE(bt->iface->prepare_weight != nullptr);
    const int64_t n_out = 48, n_expert = 6, n_slot = 2;
    for (DType base : kX16Types) {
        INFO(dtype_name(base) << "_X16 experts");
        const int slot = quant::x16_slot(base);
        REQUIRE(slot >= 0);
        // Whole blocks, and for the 256-element types 3 super-blocks (an odd pair).
        const int64_t be = dtype_info(base).block_elems;
        const int64_t k = be == 256 ? 768 : be > 32 ? 10 * be : 320; // Q1_0, NVFP4: 10 whole blocks
        const Bytes w = random_weights(base, k, n_out * n_expert, rng);
        if (!quant::active_kernels().gemm[slot]) {
            // No kernel for the layout in this table (IQ4_NL_X16 and
            // IQ4_XS_X16 on AVX2, IQ4_XS_X16 without VNNI): the loader must
            // keep the weight as stored, which the dot and gemm read.
            Bytes kept = w;
            Tensor t;
            tensor_init(t, base, k, n_out, n_expert, 1, kept.data());
            vt_buffer *none = nullptr;
            REQUIRE(bt->iface->prepare_weight(bt, &t, &none) == VT_OK);
            CHECK(none == nullptr);
            CHECK(t.layout == 0);
            CHECK(t.data == kept.data());
            continue;
        }
        Bytes w_copy = w, wx(w.size());
        Tensor plain, packed;
        tensor_init(plain, base, k, n_out, n_expert, 1, w_copy.data());
        quant::repack_x16(base, w.data(), row_bytes(base, k), wx.data(), k, n_out * n_expert);
        tensor_init(packed, base, k, n_out, n_expert, 1, wx.data());
        packed.layout = quant::kLayoutX16;

        // prepare_weight on a copy; it must repack a matrix of the type (so a
        // skip below is about 3-D weights, not a hook that repacks nothing).
        Bytes w2 = w;
        Tensor mat;
        tensor_init(mat, base, k, n_out, 1, 1, w2.data());
        vt_buffer *out = nullptr;
        REQUIRE(bt->iface->prepare_weight(bt, &mat, &out) == VT_OK);
        const BufferPtr mat_buffer(out);
        REQUIRE(mat.layout != 0);
        Bytes w3 = w;
        Tensor prepared;
        tensor_init(prepared, base, k, n_out, n_expert, 1, w3.data());
        REQUIRE(bt->iface->prepare_weight(bt, &prepared, &out) == VT_OK);
        const BufferPtr prepared_buffer(out);
        const bool prepared_3d = out != nullptr;
        if (!prepared_3d) {
            CHECK(prepared.layout == 0);  // left as it was, as the hook's contract says
            VT_NOTE_SKIP("prepare_weight leaves 3-D " << dtype_name(base) << " weights as stored");
        } else {
            CHECK(prepared.layout != 0);
            CHECK(prepared.ne[2] == n_expert);
        }

        for (int64_t m : {1, 9}) {  // decode (the _X16 gemm even for one row) and a batch
            for (bool broadcast : {false, true}) {
                INFO("tokens " << m << (broadcast ? ", one activation row per token" : ", one per slot"));
                const int64_t x_slots = broadcast ? 1 : n_slot;
                const std::vector<int32_t> ids = draw_ids(n_slot, m, n_expert, rng);
                const std::vector<float> x = draw_acts(k, x_slots * m, rng);
                const std::vector<float> got_plain = run_mul_mat_id(plain, x, x_slots, ids, n_slot);
                const std::vector<float> want = x16_expected(base, w, k, n_out, x, x_slots, ids, n_slot, got_plain);
                const size_t bytes = want.size() * sizeof(float);
                const std::vector<float> got_packed = run_mul_mat_id(packed, x, x_slots, ids, n_slot);
                CHECK(same_bits(got_packed.data(), want.data(), bytes));
                if (prepared_3d) {
                    const std::vector<float> got_prepared = run_mul_mat_id(prepared, x, x_slots, ids, n_slot);
                    CHECK(same_bits(got_prepared.data(), want.data(), bytes));
                }
                // And MUL_MAT of one _X16 expert gives its rows' bits too.
                Tensor we = expert_matrix(packed, ids[0]);
                const std::vector<float> x0(x.begin(), x.begin() + k);
                CHECK(same_bits(run_mul_mat(we, x0).data(), want.data(), (size_t)n_out * sizeof(float)));
            }
        }
    }
}

// ---- MOE_TOPK, MOE_WEIGHTS ------------------------------------------------------------
//
// The reference follows transformers' routers. Mixtral and Qwen3-MoE: scores
// = softmax(logits), the top k. DeepseekV3TopkRouter: scores =
// sigmoid(logits); choice = scores + e_score_correction_bias; with n_group
// groups, a group's score is the sum of its two best choices, the topk_group
// best groups are kept and the other groups' experts' choice becomes
// kMaskedChoice; the top k of choice. Weights: the chosen experts' scores
// (never the bias), divided by their sum when norm (transformers adds 1e-20
// to the sum: nothing at these magnitudes), times scale.
//
// kMaskedChoice is -inf, as transformers 5.24's DeepseekV3TopkRouter (the
// oracle of the tiny gates) and DeepSeek-V3's own inference code mask;
// DeepSeek's published Hugging Face code (modeling_deepseek.py) uses 0.0,
// which differs only where a kept group's choice is negative (a bias below
// -score), see "masked experts are never chosen" below.
constexpr double kMaskedChoice = -INFINITY;

// f32 rounding moves a score or a choice by far less than 1e-5 here (softmax
// over 64 experts: <= ~90 u relative, sigmoid: ~5 u; a group sum adds two),
// so the reference draws logits again until every decision it makes is
// between values at least kMinGap apart. Exact ties are kept: equal logits
// (and biases) give equal values in f32 too, and both sides pick the lower
// index.
constexpr double kMinGap = 1e-4;

std::vector<double> ref_scores(const float *logits, int64_t n, int32_t gating) {
    std::vector<double> s((size_t)n);
    if (gating == kMoeSoftmaxTopk) {  // transformers' GptOssTopKRouter: topk of the logits themselves
        for (int64_t e = 0; e < n; ++e) s[(size_t)e] = logits[e];
        return s;
    }
    if (gating == kMoeSigmoid) {
        for (int64_t e = 0; e < n; ++e) s[(size_t)e] = 1.0 / (1.0 + std::exp(-(double)logits[e]));
        return s;
    }
    const double mx = *std::max_element(logits, logits + n);
    double sum = 0;
    for (int64_t e = 0; e < n; ++e) sum += s[(size_t)e] = std::exp((double)logits[e] - mx);
    for (double &v : s) v /= sum;
    return s;
}

// Indices of v best first, ties to the lower index.
std::vector<int64_t> best_first(const std::vector<double> &v) {
    std::vector<int64_t> o(v.size());
    for (size_t i = 0; i < o.size(); ++i) o[i] = (int64_t)i;
    std::stable_sort(o.begin(), o.end(), [&](int64_t a, int64_t b) { return v[(size_t)a] > v[(size_t)b]; });
    return o;
}

struct RouteRef {
    std::vector<int32_t> ids;  // best first
    double gap;                // the closest call between unequal values
    bool groups_mattered;      // the top k of all experts would differ
};

RouteRef route_ref(const float *logits, const float *bias, int64_t n_expert, const MoeRouteParams &p) {
    const std::vector<double> s = ref_scores(logits, n_expert, p.gating);
    std::vector<double> choice(s);
    if (bias)
        for (int64_t e = 0; e < n_expert; ++e) choice[(size_t)e] += bias[e];
    RouteRef r{{}, INFINITY, false};
    const std::vector<int64_t> o_all = best_first(choice);
    auto closest = [&](const std::vector<double> &v, const std::vector<int64_t> &o, size_t i) {
        if (i + 1 < o.size() && v[(size_t)o[i]] != v[(size_t)o[i + 1]])
            r.gap = std::min(r.gap, v[(size_t)o[i]] - v[(size_t)o[i + 1]]);
    };
    if (p.n_group > 1) {
        const int64_t gs = n_expert / p.n_group;
        std::vector<double> group((size_t)p.n_group);
        for (int64_t g = 0; g < p.n_group; ++g) {
            std::vector<double> v(choice.begin() + g * gs, choice.begin() + (g + 1) * gs);
            std::sort(v.begin(), v.end(), std::greater<double>());
            group[(size_t)g] = v[0] + v[1];
        }
        const std::vector<int64_t> og = best_first(group);
        closest(group, og, (size_t)p.topk_group - 1);  // only the set of kept groups matters
        for (size_t i = (size_t)p.topk_group; i < og.size(); ++i)
            std::fill(choice.begin() + og[i] * gs, choice.begin() + (og[i] + 1) * gs, kMaskedChoice);
    }
    const std::vector<int64_t> o = best_first(choice);
    for (int32_t i = 0; i < p.k; ++i) {
        r.ids.push_back((int32_t)o[(size_t)i]);
        closest(choice, o, (size_t)i);  // the order of the k matters, and the k-th against the next
        r.groups_mattered = r.groups_mattered || o[(size_t)i] != o_all[(size_t)i];
    }
    return r;
}

std::vector<double> weights_ref(const float *logits, const int32_t *ids, int64_t n_expert, const MoeRouteParams &p) {
    const std::vector<double> s = ref_scores(logits, n_expert, p.gating);
    std::vector<double> w((size_t)p.k);
    double sum = 0;
    if (p.gating == kMoeSoftmaxTopk) {  // then softmax(topk values): over the chosen only
        double mx = -INFINITY, z = 0;
        for (int32_t i = 0; i < p.k; ++i) mx = std::max(mx, s[(size_t)ids[i]]);
        for (int32_t i = 0; i < p.k; ++i) z += w[(size_t)i] = std::exp(s[(size_t)ids[i]] - mx);
        for (double &v : w) v /= z;
        for (double v : w) sum += v;
        for (double &v : w) v = (p.norm ? v / sum : v) * (double)p.scale;
        return w;
    }
    for (int32_t i = 0; i < p.k; ++i) sum += w[(size_t)i] = s[(size_t)ids[i]];
    for (double &v : w) v = (p.norm ? v / sum : v) * (double)p.scale;
    return w;
}

MoeRouteParams route(int32_t k, int32_t gating, int32_t n_group = 0, int32_t topk_group = 0, int32_t norm = 0,
                     float scale = 1.0f) {
    return MoeRouteParams{k, gating, n_group, topk_group, norm, scale};
}

std::vector<int32_t> run_topk(const std::vector<float> &logits, const std::vector<float> *bias, int64_t n_expert,
                              const MoeRouteParams &p) {
    const int64_t m = (int64_t)logits.size() / n_expert;
    Graph g;
    Tensor *lt = g.input(DType::F32, {n_expert, m}), *bt = bias ? g.input(DType::F32, {n_expert}) : nullptr;
    Tensor *y = g.op<Op::MOE_TOPK>(DType::I32, {p.k, m}, {lt, bt}, p);
    g.mark_output(y);
    REQUIRE(supports(g.nodes()[0]));
    Bound bound(g);
    return run_123<int32_t>(g, y, [&] {
        put(lt, logits);
        if (bias) put(bt, *bias);
    });
}

struct RouteCase {
    const char *what;
    int64_t n_expert;
    MoeRouteParams p;
    float logit_sigma, bias_sigma;  // bias_sigma 0: no bias
};

const RouteCase kRouteCases[] = {
    {"Mixtral: softmax, top 2 of 8", 8, route(2, kMoeSoftmax), 1.0f, 0.0f},
    {"Qwen3-MoE: softmax, top 8 of 64", 64, route(8, kMoeSoftmax), 1.0f, 0.0f},
    {"softmax with a bias", 16, route(4, kMoeSoftmax), 1.0f, 0.05f},
    {"sigmoid, no bias", 16, route(3, kMoeSigmoid), 2.0f, 0.0f},
    {"sigmoid with a bias, no groups", 32, route(6, kMoeSigmoid), 2.0f, 0.3f},
    {"DeepSeek-V3: 4 groups, keep 2", 16, route(4, kMoeSigmoid, 4, 2), 2.0f, 0.3f},
    {"4 groups, keep 1", 16, route(3, kMoeSigmoid, 4, 1), 2.0f, 0.3f},
    {"2 groups, keep 1", 16, route(6, kMoeSigmoid, 2, 1), 2.0f, 0.3f},
    {"8 groups of 4, keep 2", 32, route(8, kMoeSigmoid, 8, 2), 2.0f, 0.3f},
    {"groups of 2, no bias", 8, route(2, kMoeSigmoid, 4, 2), 2.0f, 0.0f},
    {"softmax with groups", 16, route(4, kMoeSoftmax, 4, 2), 1.0f, 0.05f},
    {"gpt-oss: top 4 of 32 on the logits, softmax over the chosen", 32, route(4, kMoeSoftmaxTopk), 1.0f, 0.0f},
    {"softmax over the chosen, wide logits", 8, route(3, kMoeSoftmaxTopk), 30.0f, 0.0f},
};

// m tokens' logits whose every decision the reference makes is clear
// (kMinGap), with the reference's choice of each; the bias is drawn first.
struct Routed {
    std::vector<float> logits, bias;
    std::vector<int32_t> ids;
    int64_t groups_mattered = 0;  // tokens whose choice the group limit changed
};
Routed draw_routed(const RouteCase &c, int64_t m, std::mt19937 &rng) {
    Routed r;
    if (c.bias_sigma > 0) r.bias = normal((size_t)c.n_expert, rng, c.bias_sigma);
    int redraws = 0;
    for (int64_t t = 0; t < m; ++t) {
        for (;;) {
            const std::vector<float> l = normal((size_t)c.n_expert, rng, c.logit_sigma);
            const RouteRef ref = route_ref(l.data(), r.bias.empty() ? nullptr : r.bias.data(), c.n_expert, c.p);
            if (ref.gap >= kMinGap) {
                r.logits.insert(r.logits.end(), l.begin(), l.end());
                r.ids.insert(r.ids.end(), ref.ids.begin(), ref.ids.end());
                r.groups_mattered += ref.groups_mattered;
                break;
            }
            REQUIRE(++redraws < 4 * m);  // close calls are rare; many would mean a broken reference
        }
    }
    return r;
}

TEST_CASE("MOE_TOPK: softmax and sigmoid, bias, group-limited choice, against the routers' reference",
          "[ops][moe]") {
    std::mt19937 rng(8128);
    const int64_t m = 33;  // an uneven split over 2 and 3 threads
    for (const RouteCase &c : kRouteCases) {
        INFO(c.what << ": " << c.n_expert << " experts, k " << c.p.k << ", groups " << c.p.n_group << " keep "
                    << c.p.topk_group);
        const Routed r = draw_routed(c, m, rng);
        // The group limit is exercised, not idle: it changed some tokens' experts.
        if (c.p.n_group > 1) CHECK(r.groups_mattered > 0);
        CHECK(run_topk(r.logits, r.bias.empty() ? nullptr : &r.bias, c.n_expert, c.p) == r.ids);
    }
}

TEST_CASE("MOE_TOPK: exact ties go to the lower index; best first", "[ops][moe]") {
    // Each expectation is written out by hand and checked against the
    // reference too (which the random cases trust).
    struct Case {
        const char *what;
        std::vector<float> logits, bias;
        MoeRouteParams p;
        std::vector<int32_t> want;
    };
    const std::vector<Case> cases = {
        {"all equal", {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, {}, route(3, kMoeSoftmax), {0, 1, 2}},
        {"all equal", {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, {}, route(3, kMoeSigmoid), {0, 1, 2}},
        {"three-way tie first", {1, 3, 3, 0, 3, -1, 2, 2}, {}, route(4, kMoeSoftmax), {1, 2, 4, 6}},
        {"three-way tie first", {1, 3, 3, 0, 3, -1, 2, 2}, {}, route(5, kMoeSigmoid), {1, 2, 4, 6, 7}},
        {"best first", {0, 5, 1, 4, -2, 3}, {}, route(4, kMoeSoftmax), {1, 3, 5, 2}},
        {"best first", {0, 5, 1, 4, -2, 3}, {}, route(4, kMoeSoftmaxTopk), {1, 3, 5, 2}},
        {"three-way tie first", {1, 3, 3, 0, 3, -1, 2, 2}, {}, route(4, kMoeSoftmaxTopk), {1, 2, 4, 6}},
        // Chosen on the logits: softmax over all would underflow experts 0,
        // 1 and 3 to 0 in f32 (exp(-150) < the least subnormal) and take
        // 0 then 1 by index; their logits order them 1, 0.
        {"chosen on logits, not underflowed scores", {-200, -150, 0, -300}, {}, route(3, kMoeSoftmaxTopk), {2, 1, 0}},
        // Ties made by the bias: choice 0.5 + 0.25 for experts 1 and 3.
        {"a bias ties two", {0, 0, 0, 0}, {0.0f, 0.25f, -0.25f, 0.25f}, route(3, kMoeSigmoid), {1, 3, 0}},
        // Groups of 2: sums g0 2 s(2), g1 s(1) + s(0), g2 s(0) + s(-1), g3
        // s(0) + s(1): g1 and g3 tie for the second kept group, g1 wins.
        {"tied groups", {2, 2, 1, 0, 0, -1, 0, 1}, {}, route(3, kMoeSigmoid, 4, 2), {0, 1, 2}},
        // Within a group, its two best tie with each other and with a third.
        {"ties inside groups", {1, 1, 1, 0, 2, 0, 0, 0}, {}, route(3, kMoeSigmoid, 2, 1), {0, 1, 2}},
        // Logits 0 (scores 0.5) and a bias make the choices 0.9, 0.8, -0.4,
        // -0.4 | 0.5 x 4: group 0 (sum 1.7) is kept, group 1 (1.0) is masked
        // to -inf: the third is 2 (the lower of the tied -0.4s), never a
        // masked expert (a 0.0 mask would have made it 4).
        {"masked experts are never chosen", {0, 0, 0, 0, 0, 0, 0, 0}, {0.4f, 0.3f, -0.9f, -0.9f, 0, 0, 0, 0},
         route(3, kMoeSigmoid, 2, 1), {0, 1, 2}},
    };
    for (const Case &c : cases) {
        INFO(c.what << (c.p.gating == kMoeSigmoid ? ", sigmoid" : c.p.gating == kMoeSoftmax ? ", softmax" : ", on logits")
                    << ", k " << c.p.k);
        const int64_t n = (int64_t)c.logits.size();
        const float *bias = c.bias.empty() ? nullptr : c.bias.data();
        CHECK(route_ref(c.logits.data(), bias, n, c.p).ids == c.want);
        // Three tokens of the same logits: each must get the same experts.
        std::vector<float> logits;
        std::vector<int32_t> want;
        for (int t = 0; t < 3; ++t) {
            logits.insert(logits.end(), c.logits.begin(), c.logits.end());
            want.insert(want.end(), c.want.begin(), c.want.end());
        }
        CHECK(run_topk(logits, c.bias.empty() ? nullptr : &c.bias, n, c.p) == want);
    }
}

TEST_CASE("MOE_WEIGHTS: the chosen experts' scores, normalized or not, scaled", "[ops][moe]") {
    // Tolerance, relative to each weight. A sigmoid score rounds expf (< 1
    // ulp, 2u), 1 + e (u, and 1 + e >= 1 keeps e's error from growing) and
    // the division (u): s = 5u. A softmax score: the shift l - max (u |l -
    // max| in the exponent), expf (2u), a sum of n terms (n u) and the
    // division (u): s = u (2 (R + 2) + n + 1), R the logits' range. The
    // weight is then a score times scale (u), or with norm divided by the
    // sum of k scores (s + (k - 1) u) through scale / sum (u):
    // tol = |w| (s + u), or |w| (2 s + (k + 2) u) with norm.
    std::mt19937 rng(6174);
    const int64_t m = 17;
    for (const RouteCase &c : kRouteCases) {
        const Routed r = draw_routed(c, m, rng);
        for (int32_t norm : {0, 1}) {
            for (float scale : {1.0f, 2.5f}) {
                MoeRouteParams p = c.p;
                p.norm = norm;
                p.scale = scale;
                INFO(c.what << ": " << c.n_expert << " experts, k " << p.k << (norm ? ", normalized" : "")
                            << ", scale " << scale);
                Graph g;
                Tensor *lt = g.input(DType::F32, {c.n_expert, m}), *it = g.input(DType::I32, {p.k, m});
                Tensor *y = g.op<Op::MOE_WEIGHTS>(DType::F32, {p.k, m}, {lt, it}, p);
                g.mark_output(y);
                REQUIRE(supports(g.nodes()[0]));
                Bound bound(g);
                const std::vector<float> got = run_123(g, y, [&] {
                    put(lt, r.logits);
                    put(it, r.ids);
                });
                std::vector<double> ref, tol;
                for (int64_t t = 0; t < m; ++t) {
                    const float *l = &r.logits[(size_t)(t * c.n_expert)];
                    const std::vector<double> w = weights_ref(l, &r.ids[(size_t)(t * p.k)], c.n_expert, p);
                    const double range = *std::max_element(l, l + c.n_expert) - *std::min_element(l, l + c.n_expert);
                    // kMoeSoftmaxTopk: the same softmax over the k chosen (range: all logits', an upper bound).
                    const double n_sum = p.gating == kMoeSoftmaxTopk ? (double)p.k : (double)c.n_expert;
                    const double s = p.gating == kMoeSigmoid ? 5 * kU : kU * (2 * (range + 2) + n_sum + 1);
                    for (double v : w) {
                        ref.push_back(v);
                        tol.push_back(std::fabs(v) * (norm ? 2 * s + (p.k + 2) * kU : s + kU) + 1e-30);
                    }
                }
                check_close(got, ref, tol, std::string("MOE_WEIGHTS ") + c.what);
            }
        }
    }
}

// ---- MOE_SUM ------------------------------------------------------------------------

TEST_CASE("MOE_SUM: the experts' outputs weighed and added", "[ops][moe]") {
    // k products and k - 1 additions in f32, in order: first order, each
    // rounds by u of at most sum_j |x_j w_j|, so tol = k u sum_j |x_j w_j|;
    // with k = 1 the one product is correctly rounded: exact.
    std::mt19937 rng(496);
    struct Case {
        int64_t n, k, m;
    };
    for (const Case &c : {Case{37, 1, 3}, Case{37, 2, 1}, Case{64, 8, 17}, Case{5, 6, 33}}) {
        INFO("n " << c.n << ", k " << c.k << ", tokens " << c.m);
        const std::vector<float> x = normal((size_t)(c.n * c.k * c.m), rng, 2.f), w = normal((size_t)(c.k * c.m), rng);
        Graph g;
        Tensor *xt = g.input(DType::F32, {c.n, c.k, c.m}), *wt = g.input(DType::F32, {c.k, c.m});
        Tensor *y = g.op<Op::MOE_SUM>(DType::F32, {c.n, c.m}, {xt, wt});
        g.mark_output(y);
        REQUIRE(supports(g.nodes()[0]));
        Bound bound(g);
        const std::vector<float> got = run_123(g, y, [&] {
            put(xt, x);
            put(wt, w);
        });
        std::vector<double> ref((size_t)(c.n * c.m)), tol(ref.size());
        for (int64_t t = 0; t < c.m; ++t)
            for (int64_t i = 0; i < c.n; ++i) {
                double sum = 0, mag = 0;
                for (int64_t j = 0; j < c.k; ++j) {
                    const double p = (double)x[(size_t)((t * c.k + j) * c.n + i)] * w[(size_t)(t * c.k + j)];
                    sum += p;
                    mag += std::fabs(p);
                }
                ref[(size_t)(t * c.n + i)] = c.k == 1 ? (double)(float)sum : sum;
                tol[(size_t)(t * c.n + i)] = c.k == 1 ? 0.0 : (double)c.k * kU * mag + 1e-30;
            }
        check_close(got, ref, tol, "MOE_SUM");
    }
}

// ---- supports_op ---------------------------------------------------------------------

TEST_CASE("supports_op refuses malformed MoE nodes", "[ops][moe]") {
    // Each malformed node differs from a well-formed one, which is checked
    // first, in one thing.
    std::vector<uint8_t> wq(row_bytes(DType::Q8_K, 256) * 16 * 4 * 2);
    auto weight = [&](DType t, int64_t k, int64_t n, int64_t e, int64_t e3 = 1, uint32_t layout = 0) {
        Tensor w;
        tensor_init(w, t, k, n, e, e3, wq.data());
        w.layout = layout;
        return w;
    };
    SECTION("MUL_MAT_ID") {
        auto node = [](Tensor w, Shape x, DType id_type, Shape ids, Shape dst) {
            Graph g;
            Tensor *xt = g.input(DType::F32, x), *it = g.input(id_type, ids);
            g.op<Op::MUL_MAT_ID>(DType::F32, dst, {&w, xt, it});
            return supports(g.nodes()[0]);
        };
        const Tensor w = weight(DType::Q8_0, 128, 16, 4);
        CHECK(node(w, {128, 2, 3}, DType::I32, {2, 3}, {16, 2, 3}));
        CHECK(node(w, {128, 1, 3}, DType::I32, {2, 3}, {16, 2, 3}));  // broadcast
        CHECK_FALSE(node(w, {128, 2, 3}, DType::F32, {2, 3}, {16, 2, 3}));  // f32 ids
        CHECK_FALSE(node(w, {128, 2, 3}, DType::I32, {2, 4}, {16, 2, 3}));  // ids of another token count
        CHECK_FALSE(node(w, {128, 2, 3}, DType::I32, {3, 3}, {16, 2, 3}));  // ids of another slot count
        CHECK_FALSE(node(w, {128, 2, 3}, DType::I32, {2, 3, 2}, {16, 2, 3}));  // 3-D ids
        CHECK_FALSE(node(w, {128, 3, 3}, DType::I32, {2, 3}, {16, 2, 3}));  // src1 neither 1 nor n_slot rows
        CHECK_FALSE(node(w, {96, 2, 3}, DType::I32, {2, 3}, {16, 2, 3}));   // src1 rows of another k
        CHECK_FALSE(node(w, {128, 2, 4}, DType::I32, {2, 3}, {16, 2, 3}));  // src1 of another token count
        CHECK_FALSE(node(w, {128, 2, 3}, DType::I32, {2, 3}, {17, 2, 3}));  // dst rows of another n
        CHECK_FALSE(node(w, {128, 2, 3}, DType::I32, {2, 3}, {16, 2, 4}));  // dst of another token count
        CHECK_FALSE(node(weight(DType::Q8_0, 128, 16, 2, 2), {128, 2, 3}, DType::I32, {2, 3}, {16, 2, 3}));  // 4-D
        CHECK_FALSE(node(weight(DType::Q8_K, 256, 16, 4), {256, 2, 3}, DType::I32, {2, 3}, {16, 2, 3}));  // no dot
        if (quant::active_kernels().gemm[quant::x16_slot(DType::Q8_0)]) {
            CHECK(node(weight(DType::Q8_0, 128, 16, 4, 1, quant::kLayoutX16), {128, 2, 3}, DType::I32, {2, 3},
                       {16, 2, 3}));
            // _X16 experts of 24 rows: not whole 16-row groups.
            CHECK_FALSE(node(weight(DType::Q8_0, 128, 24, 4, 1, quant::kLayoutX16), {128, 2, 3}, DType::I32, {2, 3},
                             {24, 2, 3}));
        } else {
            VT_NOTE_SKIP("this CPU's kernel table has no Q8_0_X16 kernel");
        }
    }
    SECTION("MOE_TOPK") {
        // Over logits (8 experts, 5 tokens); bias null: none.
        auto node = [](const MoeRouteParams &p, Shape dst, const Shape *bias, DType out = DType::I32,
                       DType bias_type = DType::F32) {
            Graph g;
            Tensor *lt = g.input(DType::F32, {8, 5}), *bt = bias ? g.input(bias_type, *bias) : nullptr;
            g.op<Op::MOE_TOPK>(out, dst, {lt, bt}, p);
            return supports(g.nodes()[0]);
        };
        const Shape b8 = {8}, b7 = {7};
        const MoeRouteParams ok = route(2, kMoeSigmoid, 2, 1);
        CHECK(node(ok, {2, 5}, &b8));
        CHECK(node(ok, {2, 5}, nullptr));
        CHECK(node(route(8, kMoeSoftmax), {8, 5}, nullptr));             // k = n_expert
        CHECK_FALSE(node(route(9, kMoeSoftmax), {9, 5}, nullptr));       // k > n_expert
        CHECK_FALSE(node(ok, {3, 5}, &b8));                              // dst rows not k
        CHECK_FALSE(node(ok, {2, 4}, &b8));                              // dst of another token count
        CHECK_FALSE(node(ok, {2, 5}, &b8, DType::F32));                  // f32 ids
        CHECK_FALSE(node(ok, {2, 5}, &b7));                              // bias of another length
        CHECK_FALSE(node(ok, {2, 5}, &b8, DType::I32, DType::I32));      // i32 bias
        CHECK_FALSE(node(route(2, 3, 2, 1), {2, 5}, &b8));               // no gating 3
        CHECK_FALSE(node(route(2, kMoeSigmoid, 3, 1), {2, 5}, &b8));     // 3 groups do not divide 8
        CHECK_FALSE(node(route(2, kMoeSigmoid, 8, 2), {2, 5}, &b8));     // groups of 1
        CHECK_FALSE(node(route(2, kMoeSigmoid, 2, 3), {2, 5}, &b8));     // keep 3 of 2 groups
        CHECK_FALSE(node(route(2, kMoeSigmoid, 2, 0), {2, 5}, &b8));     // keep none
        // Keep 1 group of 2 experts: 3 cannot be chosen from it.
        CHECK(node(route(2, kMoeSigmoid, 4, 1), {2, 5}, &b8));
        CHECK_FALSE(node(route(3, kMoeSigmoid, 4, 1), {3, 5}, &b8));
        // graph_compute refuses such a node instead of running it.
        Graph g;
        Tensor *lt = g.input(DType::F32, {8, 5});
        g.op<Op::MOE_TOPK>(DType::I32, {9, 5}, {lt, nullptr}, route(9, kMoeSoftmax));
        Bound bound(g);
        CHECK(compute(1, g) == VT_ERR_UNSUPPORTED);
    }
    SECTION("MOE_WEIGHTS") {
        auto node = [](const MoeRouteParams &p, DType out, Shape dst, DType id_type, Shape ids) {
            Graph g;
            Tensor *lt = g.input(DType::F32, {8, 5}), *it = g.input(id_type, ids);
            g.op<Op::MOE_WEIGHTS>(out, dst, {lt, it}, p);
            return supports(g.nodes()[0]);
        };
        const MoeRouteParams ok = route(2, kMoeSigmoid, 0, 0, 1, 2.5f);
        CHECK(node(ok, DType::F32, {2, 5}, DType::I32, {2, 5}));
        CHECK_FALSE(node(ok, DType::F32, {2, 5}, DType::I32, {3, 5}));  // ids of another k
        CHECK_FALSE(node(ok, DType::F32, {2, 5}, DType::I32, {2, 4}));  // ids of another token count
        CHECK_FALSE(node(ok, DType::F32, {2, 5}, DType::F32, {2, 5}));  // f32 ids
        CHECK_FALSE(node(ok, DType::I32, {2, 5}, DType::I32, {2, 5}));  // i32 weights
        CHECK_FALSE(node(route(9, kMoeSigmoid), DType::F32, {9, 5}, DType::I32, {9, 5}));  // k > n_expert
    }
    SECTION("MOE_SUM") {
        auto node = [](Shape x, Shape w, Shape dst) {
            Graph g;
            Tensor *xt = g.input(DType::F32, x), *wt = g.input(DType::F32, w);
            g.op<Op::MOE_SUM>(DType::F32, dst, {xt, wt});
            return supports(g.nodes()[0]);
        };
        CHECK(node({16, 2, 5}, {2, 5}, {16, 5}));
        CHECK_FALSE(node({16, 2, 5}, {3, 5}, {16, 5}));     // weights of another k
        CHECK_FALSE(node({16, 2, 5}, {2, 4}, {16, 5}));     // weights of another token count
        CHECK_FALSE(node({16, 2, 5}, {2, 5}, {15, 5}));     // dst rows of another n
        CHECK_FALSE(node({16, 2, 5}, {2, 5}, {16, 4}));     // dst of another token count
        CHECK_FALSE(node({16, 2, 5, 2}, {2, 5}, {16, 5}));  // 4-D experts' outputs
    }
}

} // namespace
