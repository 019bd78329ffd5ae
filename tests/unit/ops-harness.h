// Plumbing shared by the op tests (test-ops.cpp, test-ops-layers.cpp): a CPU
// backend per thread count, graphs bound to host buffers, runs on 1 and 3
// threads that must agree bit for bit, and tolerance checks. Test-only: each
// test binary includes it once.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/backend-impl.h"
#include "core/graph.h"
#include "core/quant.h"
#include "core/quant/kernels.h"
#include "core/quant/repack.h"
#include "common/random-blocks.h"

using namespace vt;


using vt::test::fp16_fields;
using vt::test::put_f16;

namespace {

using Bytes = std::vector<uint8_t>;
constexpr double kU = 0x1p-24;
constexpr int kThreads[2] = {1, 3};

// ---- backend and graph plumbing ----------------------------------------------

// One backend per thread count, created at first use, freed at exit.
inline vt_backend *cpu(int nth) {
    struct Free {
        void operator()(vt_backend *b) const { backend_free(b); }
    };
    static std::unique_ptr<vt_backend, Free> b[2];
    const int i = nth == 1 ? 0 : 1;
    if (!b[i]) {
        vt_backend_params p{};
        p.n_threads = (uint32_t)nth;
        b[i].reset(backend_create("cpu", p));
    }
    return b[i].get();
}

// Plans g and binds it to an arena from the backend's allocator.
struct Bound {
    explicit Bound(Graph &g) {
        const size_t need = g.plan();
        vt_backend *be = cpu(1);
        arena = static_cast<uint8_t *>(be->iface->alloc_host(be->context, need + 64));
        REQUIRE(arena != nullptr);
        g.bind(arena);
    }
    ~Bound() {
        vt_backend *be = cpu(1);
        be->iface->free_host(be->context, arena);
    }
    Bound(const Bound &) = delete;
    Bound &operator=(const Bound &) = delete;
    uint8_t *arena = nullptr;
};

inline vt_status compute(int nth, const Graph &g) {
    vt_backend *be = cpu(nth);
    return be->iface->graph_compute(be->context, g.nodes().data(), (int)g.nodes().size());
}

inline bool supports(const Node &n) {
    vt_backend *be = cpu(1);
    return be->iface->supports_op(be->context, &n);
}

template <class T> void put(Tensor *t, const std::vector<T> &v) {
    REQUIRE(v.size() * sizeof(T) == t->nbytes());
    std::memcpy(t->data, v.data(), t->nbytes());
}

inline std::vector<float> get(const Tensor *t) {
    std::vector<float> v((size_t)t->nelements());
    std::memcpy(v.data(), t->data, v.size() * sizeof(float));
    return v;
}

inline bool same_bits(const void *a, const void *b, size_t n) { return std::memcmp(a, b, n) == 0; }

// Runs the graph with 1 and 3 threads (fill() rewrites every input and any
// borrowed tensor the op mutates before each run); checks that both results
// agree bit for bit; returns the 1-thread result of `out`. snap(), if given,
// captures extra state (e.g. caches) after each run, compared bitwise too.
inline std::vector<float> run_both(Graph &g, Tensor *out, const std::function<void()> &fill,
                            const std::function<Bytes()> &snap = nullptr) {
    std::vector<float> res[2];
    Bytes extra[2];
    for (int r = 0; r < 2; ++r) {
        fill();
        REQUIRE(compute(kThreads[r], g) == VT_OK);
        res[r] = get(out);
        if (snap) extra[r] = snap();
    }
    INFO("1 thread vs 3 threads");
    CHECK(same_bits(res[0].data(), res[1].data(), res[0].size() * sizeof(float)));
    if (snap) CHECK(extra[0] == extra[1]);
    return res[0];
}

// Checks |got - ref| <= tol elementwise; reports the worst element.
inline void check_close(const std::vector<float> &got, const std::vector<double> &ref, const std::vector<double> &tol,
                 const std::string &what) {
    REQUIRE(got.size() == ref.size());
    REQUIRE(tol.size() == ref.size());
    size_t worst = 0, bad = 0;
    double worst_ratio = -1;
    for (size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs((double)got[i] - ref[i]);
        const double ratio = !std::isfinite(err) ? INFINITY : err == 0 ? 0.0 : err / tol[i];
        if (!(ratio <= 1.0)) ++bad;
        if (!(ratio <= worst_ratio)) {
            worst_ratio = ratio;
            worst = i;
        }
    }
    if (std::getenv("VT_TEST_OPS_VERBOSE")) std::printf("%-28s worst err/tol %.17g (n=%zu)\n", what.c_str(), worst_ratio, got.size());
    INFO(what << ": " << bad << " of " << got.size() << " elements out of tolerance; worst at " << worst
              << ": got " << got[worst] << ", expected " << ref[worst] << ", tol " << tol[worst]
              << " (err/tol " << worst_ratio << ")");
    CHECK(bad == 0);
}

// ---- random data -------------------------------------------------------------


// A weight matrix of `rows` rows of n elements: floats ~ N(0, 1); block types
// random bytes with finite, moderate fp16 scales and mins.
inline Bytes random_weights(DType t, int64_t n, int64_t rows, std::mt19937 &rng) {
    const int64_t total = n * rows;
    Bytes b(row_bytes(t, n) * (size_t)rows);
    std::normal_distribution<float> nd(0.f, 1.f);
    if (t == DType::F32 || t == DType::F16 || t == DType::BF16) {
        for (int64_t i = 0; i < total; ++i) {
            const float v = nd(rng);
            if (t == DType::F32) {
                std::memcpy(&b[4 * i], &v, 4);
            } else {
                const uint16_t h = t == DType::F16 ? f32_to_fp16(v) : f32_to_bf16(v);
                std::memcpy(&b[2 * i], &h, 2);
            }
        }
        return b;
    }
    vt::test::randomize_blocks(t, b, rng);
    return b;
}

inline std::vector<float> normal(size_t n, std::mt19937 &rng, float sigma = 1.f) {
    std::normal_distribution<float> nd(0.f, sigma);
    std::vector<float> v(n);
    for (auto &x : v) x = nd(rng);
    return v;
}

} // namespace
