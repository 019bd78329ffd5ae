// The Vulkan module's weight readers, GET_ROWS and MUL_MAT, for every
// weight type it takes (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K,
// Q5_K, Q6_K, IQ4_NL, IQ4_XS, NVFP4, Q1_0, Q2_0, FP8_E4M3) and both MUL_MAT paths (mat-vec up to 8 tokens, tiled above),
// against a double reference and the CPU backend (test-vulkan-harness.h),
// and over a weight larger than one storage binding.
#include <chrono>

#include "unit/test-vulkan-harness.h"

using namespace vt;
using namespace vt::vktest;

TEST_CASE("Vulkan MUL_MAT and GET_ROWS over a weight larger than one binding", "[vulkan]") {
    // 4096 x 36000 Q8_0 = 157 MB, over lavapipe's 128 MiB binding: both ops
    // go in two row ranges there (elsewhere in one).
    std::mt19937 rng(11);
    const int64_t k = 4096, n = 36000;
    Bytes w = random_weights(DType::Q8_0, k, n, rng);
    DevTensor wt(DType::Q8_0, k, n, 1, w.data(), w.size());
    const std::vector<float> x = normal((size_t)k, rng);
    const std::vector<int32_t> ids = {0, 35999, 17000, 33000, 1};
    Graph g;
    Tensor *xt = g.input(DType::F32, {k, 1});
    Tensor *it = g.input(DType::I32, {(int64_t)ids.size()});
    Tensor *y = g.op<Op::MUL_MAT>(DType::F32, {n, 1}, {&wt.t, xt});
    Tensor *e = g.op<Op::GET_ROWS>(DType::F32, {k, (int64_t)ids.size()}, {&wt.t, it});
    g.mark_output(y);
    g.mark_output(e);
    Bound b(g, vk().dev);
    b.put(xt, x);
    b.put(it, ids);
    b.compute(vk().stream);
    const std::vector<float> got = b.get(y), rows = b.get(e);
    std::vector<float> row((size_t)k);
    std::vector<double> ref((size_t)n), tol((size_t)n);
    for (int64_t r = 0; r < n; ++r) {
        ref::dequantize_row(DType::Q8_0, w.data() + (size_t)r * row_bytes(DType::Q8_0, k), row.data(), k);
        double s = 0, sa = 0;
        for (int64_t i = 0; i < k; ++i) s += (double)row[(size_t)i] * x[(size_t)i], sa += std::fabs((double)row[(size_t)i] * x[(size_t)i]);
        ref[(size_t)r] = s;
        tol[(size_t)r] = (double)(k + 3) * kU * sa + 1e-30;  // as in the MUL_MAT case
    }
    check_close(got, ref, tol, "mul_mat over one binding");
    std::vector<double> rref(rows.size()), rtol(rows.size(), 0.0);
    for (size_t j = 0; j < ids.size(); ++j) {
        ref::dequantize_row(DType::Q8_0, w.data() + (size_t)ids[j] * row_bytes(DType::Q8_0, k), row.data(), k);
        double mx = 0;
        for (int64_t i = 0; i < k; ++i) mx = std::max(mx, std::fabs((double)row[(size_t)i]));
        for (int64_t i = 0; i < k; ++i) rref[j * k + i] = row[(size_t)i], rtol[j * k + i] = 2 * kU * mx + 1e-30;
    }
    check_close(rows, rref, rtol, "get_rows over one binding");
}

// ---- GET_ROWS ---------------------------------------------------------------------

TEST_CASE("Vulkan GET_ROWS: every weight type", "[vulkan]") {
    std::mt19937 rng(1234);
    const std::vector<int32_t> ids = {0, 22, 5, 5, 13, 0, 21, 1, 22};
    const int64_t rows = 23;
    for (DType t : kWeightTypes) {
        const int64_t k = odd_k(t);
        INFO("type " << dtype_name(t) << ", k " << k);
        Bytes w = random_weights(t, k, rows, rng);
        DevTensor wt(t, k, rows, 1, w.data(), w.size());
        Graph g;
        Tensor *id = g.input(DType::I32, {(int64_t)ids.size()});
        Tensor *y = g.op<Op::GET_ROWS>(DType::F32, {k, (int64_t)ids.size()}, {&wt.t, id});
        g.mark_output(y);
        const Results got = run_both(g, {&wt}, y, [&](Bound &b) { b.put(id, ids); });
        const std::vector<float> deq = dequant(t, w, k, rows);
        std::vector<double> ref(got.vk.size()), tol(got.vk.size());
        for (size_t r = 0; r < ids.size(); ++r) {
            double mx = 0;
            for (int64_t i = 0; i < k; ++i) mx = std::max(mx, std::fabs((double)deq[(size_t)(ids[r] * k + i)]));
            for (int64_t i = 0; i < k; ++i) {
                ref[r * k + i] = deq[(size_t)(ids[r] * k + i)];
                // Floats: exact. Blocks: ggml's order of operations, but the
                // shader compiler may fuse d*q - m into one FMA (one rounding
                // less): 2u of the row's largest value.
                tol[r * k + i] = dtype_info(t).block_elems == 1 ? 1e-300 : 2 * kU * mx + 1e-30;
            }
        }
        // The CPU dequantizes as the scalar reference: the same tolerance.
        check_both(got, ref, tol, tol, std::string("get_rows ") + dtype_name(t));
    }
}

// ---- MUL_MAT ----------------------------------------------------------------------

namespace {
// A bound on how far the CPU's copy of each activation is from x: it
// quantizes rows to vec_dot_type(t) (llama.cpp's scheme). Q8_0/Q8_1/Q8_K
// round to a step of amax/127 per block (half a step of error; a whole step
// allowed, Q8_K's scale being amax/128 with a clamp); F16 and BF16 round to
// nearest (2^-11, 2^-8 relative); F32 is exact.
std::vector<double> activation_error(DType t, const std::vector<float> &x, int64_t k, int64_t m) {
    const DType vdt = vec_dot_type(t);
    std::vector<double> e(x.size(), 0.0);
    if (vdt == DType::F16 || vdt == DType::BF16) {
        const double rel = vdt == DType::F16 ? 0x1p-11 : 0x1p-8;
        for (size_t i = 0; i < x.size(); ++i) e[i] = rel * std::fabs(x[i]);
        return e;
    }
    if (vdt == DType::F32) return e;
    const int64_t be = dtype_info(vdt).block_elems;
    for (int64_t j = 0; j < m; ++j)
        for (int64_t b0 = 0; b0 < k; b0 += be) {
            double amax = 0;
            for (int64_t i = b0; i < b0 + be && i < k; ++i) amax = std::max(amax, std::fabs((double)x[(size_t)(j * k + i)]));
            for (int64_t i = b0; i < b0 + be && i < k; ++i) e[(size_t)(j * k + i)] = amax / 127.0;
        }
    return e;
}
} // namespace

TEST_CASE("Vulkan MUL_MAT: every weight type, mat-vec and tiled", "[vulkan]") {
    std::mt19937 rng(42);
    const int64_t ns[] = {1, 3, 17, 70};
    const int64_t ms[] = {1, 2, 7, 8, 9, 33};
    for (DType t : kWeightTypes) {
        const int64_t k = odd_k(t);
        for (int64_t n : ns) {
            Bytes w = random_weights(t, k, n, rng);
            DevTensor wt(t, k, n, 1, w.data(), w.size());
            const std::vector<float> deq = dequant(t, w, k, n);
            for (int64_t m : ms) {
                INFO("type " << dtype_name(t) << ", k " << k << ", n " << n << ", m " << m);
                const std::vector<float> x = normal((size_t)(k * m), rng);
                Graph g;
                Tensor *xt = g.input(DType::F32, {k, m});
                Tensor *y = g.op<Op::MUL_MAT>(DType::F32, {n, m}, {&wt.t, xt});
                g.mark_output(y);
                const Results got = run_both(g, {&wt}, y, [&](Bound &b) { b.put(xt, x); });
                const std::vector<double> act_err = activation_error(t, x, k, m);
                std::vector<double> ref((size_t)(n * m)), tol(ref.size()), tol_cpu(ref.size());
                for (int64_t j = 0; j < m; ++j)
                    for (int64_t r = 0; r < n; ++r) {
                        double s = 0, sa = 0, se = 0;
                        for (int64_t i = 0; i < k; ++i) {
                            const double w_ri = deq[(size_t)(r * k + i)], p = w_ri * x[(size_t)(j * k + i)];
                            s += p;
                            sa += std::fabs(p);
                            se += std::fabs(w_ri) * act_err[(size_t)(j * k + i)];
                        }
                        ref[(size_t)(j * n + r)] = s;
                        // An f32 sum of k products in any order is within
                        // (k + 1) u of the sum of their magnitudes; the weights
                        // themselves may carry one FMA-fused rounding (2u).
                        tol[(size_t)(j * n + r)] = (double)(k + 3) * kU * sa + 1e-30;
                        // The CPU dots the activations rounded to vec_dot_type:
                        // plus |w| times their rounding bound, and its own sum.
                        tol_cpu[(size_t)(j * n + r)] = se + 2 * tol[(size_t)(j * n + r)];
                    }
                check_both(got, ref, tol, tol_cpu,
                           std::string("mul_mat ") + dtype_name(t) + " n" + std::to_string(n) + " m" + std::to_string(m));
            }
        }
    }
}


// Not run by the suite (hidden tag; tests assert no wall-clock time):
// test-vulkan-ops "[.bench]" prints MUL_MAT times on Vulkan and on the CPU
// backend (2 threads) for a 2048 x 2048 weight, decode (m = 1) and a prefill
// chunk (m = 64), after one warm-up run each.
TEST_CASE("Vulkan MUL_MAT timing against the CPU backend", "[.bench]") {
    std::mt19937 rng(1);
    const int64_t k = 2048, n = 2048;
    for (DType t : {DType::F16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K}) {
        Bytes w = random_weights(t, k, n, rng);
        DevTensor wt(t, k, n, 1, w.data(), w.size());
        for (int64_t m : {1, 64}) {
            const std::vector<float> x = normal((size_t)(k * m), rng);
            Graph g;
            Tensor *xt = g.input(DType::F32, {k, m});
            Tensor *y = g.op<Op::MUL_MAT>(DType::F32, {n, m}, {&wt.t, xt});
            g.mark_output(y);
            double ms[2] = {0, 0};
            for (int side = 0; side < 2; ++side) {
                if (side == 1) wt.on_cpu();
                Bound b(g, side == 0 ? vk().dev : cpu_device());
                b.put(xt, x);
                vt_stream *s = side == 0 ? vk().stream : cpu_stream();
                b.compute(s);
                const int reps = m == 1 ? 20 : 3;
                const auto t0 = std::chrono::steady_clock::now();
                for (int r = 0; r < reps; ++r) b.compute(s);
                ms[side] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
                if (side == 1) wt.on_vulkan();
            }
            std::printf("mul_mat %-5s k %lld n %lld m %-3lld  vulkan %8.3f ms  cpu %8.3f ms  (%.2f GFLOP/s on vulkan)\n",
                        dtype_name(t), (long long)k, (long long)n, (long long)m, ms[0], ms[1],
                        2.0 * k * n * m / (ms[0] * 1e6));
        }
    }
}
