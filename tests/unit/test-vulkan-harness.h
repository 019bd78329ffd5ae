// Plumbing of the Vulkan op tests (test-vulkan-ops.cpp, test-vulkan-matmul.cpp,
// one binary). The module (backends/vulkan) as a user gets it: dlopen of
// the built module, vt_backend_init, device 0, its buffer type and a stream.
// Every op of core/ops.def and every weight type the module takes runs
// through a vt::Graph (plan, bind to a device buffer, graph_compute) with odd
// shapes, and is checked twice: against a reference computed here in double
// from the op's definition (weights dequantized by lib/core's scalar
// references), with a tight tolerance, and against the CPU backend running
// the same graph, with a tolerance that adds the CPU's own rounding points
// (activations quantized to the weight's vec_dot_type, f16 queries and
// probabilities in attention). Without a usable Vulkan device the binary
// exits 77 (meson: skipped).
//
// Tolerances are stated at each check, relative to the magnitude of what
// is summed or multiplied; u = 2^-24 is the f32 unit roundoff.
// VT_TEST_OPS_VERBOSE=1 prints each check's worst error/tolerance ratio
// (VT_TEST_VERBOSE=1 also the module's info lines).
#pragma once

#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "common/check-close.h"
#include "common/random-blocks.h"
#include "core/graph.h"
#include "core/quant.h"

using namespace vt;
using vt::test::check_close;

namespace vt::vktest {

using vt::DType;

constexpr double kU = 0x1p-24;
using Bytes = std::vector<uint8_t>;

// ---- the module -----------------------------------------------------------------

inline void host_log(vt_log_level level, const char *text) {
    if (level >= VT_LOG_LEVEL_WARN || std::getenv("VT_TEST_VERBOSE")) std::fprintf(stderr, "[vulkan] %s\n", text);
}

struct Vk {
    vt_backend_reg *reg = nullptr;
    vt_device *dev = nullptr;
    vt_buffer_type *buft = nullptr;
    vt_stream *stream = nullptr;
};

// Loaded once; exits 77 when the module finds no usable device.
// VT_VULKAN_MODULE overrides the module's path.
inline Vk &vk() {
    static Vk v = [] {
        Vk r;
        const char *path = std::getenv("VT_VULKAN_MODULE");
        if (!path) path = VT_VULKAN_MODULE_PATH;
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            std::fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
            std::exit(1);
        }
        auto init = reinterpret_cast<vt_backend_init_fn>(dlsym(h, VT_BACKEND_INIT_SYMBOL));
        if (!init) {
            std::fprintf(stderr, "%s exports no %s\n", path, VT_BACKEND_INIT_SYMBOL);
            std::exit(1);
        }
        static const vt_backend_host host = {VT_BACKEND_API_VERSION, host_log};
        r.reg = init(&host);
        if (!r.reg || r.reg->iface->device_count(r.reg) == 0) {
            std::fprintf(stderr, "no usable Vulkan device: skipped\n");
            std::exit(77);
        }
        // Device 0, or the one VT_TEST_DEVICE names (tests/device/vulkan-gpu-check.sh).
        r.dev = r.reg->iface->device_get(r.reg, 0);
        if (const char *want = std::getenv("VT_TEST_DEVICE")) {
            r.dev = nullptr;
            for (size_t i = 0; i < r.reg->iface->device_count(r.reg) && !r.dev; ++i) {
                vt_device *d = r.reg->iface->device_get(r.reg, i);
                vt_device_props dp{};
                d->iface->get_props(d, &dp);
                if (std::strcmp(dp.name, want) == 0) r.dev = d;
            }
            if (!r.dev) {
                std::fprintf(stderr, "VT_TEST_DEVICE=%s: no such Vulkan device\n", want);
                std::exit(1);
            }
        }
        r.buft = r.dev->iface->get_buffer_type(r.dev);
        vt_stream_params sp{};
        r.stream = r.dev->iface->stream_create(r.dev, &sp);
        if (!r.stream) {
            std::fprintf(stderr, "stream_create failed\n");
            std::exit(1);
        }
        vt_device_props props{};
        r.dev->iface->get_props(r.dev, &props);
        std::printf("device 0: %s (%s), type %d, %.0f MiB (%.0f free)\n", props.name, props.description,
                    (int)props.type, props.memory_total / 1048576.0, props.memory_free / 1048576.0);
        return r;
    }();
    return v;
}

// A device buffer, freed at scope exit.
struct DevBuf {
    explicit DevBuf(size_t size) {
        b = vk().buft->iface->alloc(vk().buft, size);
        REQUIRE(b != nullptr);
    }
    ~DevBuf() { b->iface->free(b); }
    DevBuf(const DevBuf &) = delete;
    DevBuf &operator=(const DevBuf &) = delete;
    uint8_t *base() const { return static_cast<uint8_t *>(b->iface->get_base(b)); }
    vt_buffer *b = nullptr;
};

// A borrowed tensor (weights, KV pools) in a Vulkan buffer of its own, and
// the bytes it started with, from which a CPU run gets a fresh host copy.
struct DevTensor {
    DevTensor(DType type, int64_t ne0, int64_t ne1, int64_t ne2, const void *bytes, size_t n)
        : buf(n), init(static_cast<const uint8_t *>(bytes), static_cast<const uint8_t *>(bytes) + n) {
        tensor_init(t, type, ne0, ne1, ne2, 1, nullptr, "borrowed");
        REQUIRE(t.nbytes() == n);
        on_vulkan();
        REQUIRE(buf.b->iface->set(buf.b, bytes, 0, n) == VT_OK);
    }
    void on_vulkan() {
        t.data = buf.base();
        t.buffer = buf.b;
    }
    void on_cpu() {
        host = init;
        t.data = host.data();
        t.buffer = nullptr;
    }
    Bytes read() const {
        Bytes out(t.nbytes());
        REQUIRE(buf.b->iface->get(buf.b, out.data(), 0, out.size()) == VT_OK);
        return out;
    }
    DevBuf buf;
    Bytes init, host;  // host: the CPU run's copy (its contents after that run)
    Tensor t{};
};

// A graph planned and bound to an arena buffer of dev (Vulkan or the CPU).
struct Bound {
    Bound(Graph &graph, vt_device *d) : g(graph), dev(d) {
        vt_buffer_type *bt = dev->iface->get_buffer_type(dev);
        arena = bt->iface->alloc(bt, std::max<size_t>(graph.plan(), 64));
        REQUIRE(arena != nullptr);
        g.bind(static_cast<uint8_t *>(arena->iface->get_base(arena)), arena);
    }
    ~Bound() { arena->iface->free(arena); }
    Bound(const Bound &) = delete;
    Bound &operator=(const Bound &) = delete;
    size_t offset_of(const Tensor *t) const {
        return (size_t)(static_cast<uint8_t *>(t->data) - static_cast<uint8_t *>(arena->iface->get_base(arena)));
    }
    template <class T> void put(Tensor *t, const std::vector<T> &v) {
        REQUIRE(v.size() * sizeof(T) == t->nbytes());
        REQUIRE(arena->iface->set(arena, v.data(), offset_of(t), t->nbytes()) == VT_OK);
    }
    std::vector<float> get(const Tensor *t) {
        std::vector<float> v((size_t)t->nelements());
        REQUIRE(arena->iface->get(arena, v.data(), offset_of(t), v.size() * sizeof(float)) == VT_OK);
        return v;
    }
    void compute(vt_stream *s) {
        for (const Node &n : g.nodes()) REQUIRE(dev->iface->supports_op(dev, &n));
        REQUIRE(s->iface->graph_compute(s, g.nodes().data(), (int)g.nodes().size()) == VT_OK);
    }
    Graph &g;
    vt_device *dev;
    vt_buffer *arena = nullptr;
};

inline vt_stream *cpu_stream() {
    static StreamPtr s = stream_create(cpu_device(), 2);
    return s.get();
}

struct Results {
    std::vector<float> vk, cpu;
};

// Runs g on Vulkan, then on the CPU backend with the borrowed tensors
// switched to host copies of their initial bytes (they stay there: read
// DevTensor::host for the CPU's pools); fill(bound) sets the inputs.
template <class F>
inline Results run_both(Graph &g, std::initializer_list<DevTensor *> borrowed, const Tensor *out, F fill) {
    Results r;
    {
        Bound b(g, vk().dev);
        fill(b);
        b.compute(vk().stream);
        r.vk = b.get(out);
    }
    for (DevTensor *d : borrowed) d->on_cpu();
    {
        Bound b(g, cpu_device());
        fill(b);
        b.compute(cpu_stream());
        r.cpu = b.get(out);
    }
    for (DevTensor *d : borrowed) d->on_vulkan();
    return r;
}


// The Vulkan result against the exact reference (tol) and against the CPU
// backend's result (tol_cpu).
inline void check_both(const Results &r, const std::vector<double> &ref, const std::vector<double> &tol,
                const std::vector<double> &tol_cpu, const std::string &what) {
    check_close(r.vk, ref, tol, what);
    check_close(r.vk, std::vector<double>(r.cpu.begin(), r.cpu.end()), tol_cpu, what + " vs cpu");
}

// Vulkan and the CPU each within tol of the exact value: within 2 tol of each other.
inline std::vector<double> twice(std::vector<double> tol) {
    for (double &t : tol) t *= 2;
    return tol;
}

inline std::vector<float> normal(size_t n, std::mt19937 &rng, float sigma = 1.f) {
    std::normal_distribution<float> nd(0.f, sigma);
    std::vector<float> v(n);
    for (auto &x : v) x = nd(rng);
    return v;
}

// A (k, rows) weight matrix: floats ~ N(0, 1); blocks random bytes with
// moderate fp16 scales (tests/common/random-blocks.h).
inline Bytes random_weights(DType t, int64_t k, int64_t rows, std::mt19937 &rng) {
    Bytes b(row_bytes(t, k) * (size_t)rows);
    if (t == DType::F32 || t == DType::F16 || t == DType::BF16) {
        const std::vector<float> v = normal((size_t)(k * rows), rng);
        for (size_t i = 0; i < v.size(); ++i) {
            if (t == DType::F32) {
                std::memcpy(&b[4 * i], &v[i], 4);
            } else {
                const uint16_t h = t == DType::F16 ? f32_to_fp16(v[i]) : f32_to_bf16(v[i]);
                std::memcpy(&b[2 * i], &h, 2);
            }
        }
        return b;
    }
    test::randomize_blocks(t, b, rng);
    return b;
}

inline std::vector<float> dequant(DType t, const Bytes &w, int64_t k, int64_t rows) {
    std::vector<float> out((size_t)(k * rows));
    for (int64_t r = 0; r < rows; ++r)
        ref::dequantize_row(t, w.data() + (size_t)r * row_bytes(t, k), out.data() + r * k, k);
    return out;
}

inline constexpr DType kWeightTypes[] = {DType::F32,  DType::F16,    DType::BF16,   DType::Q4_0,  DType::Q4_1,
                                         DType::Q5_0, DType::Q5_1,   DType::Q8_0,   DType::Q4_K,  DType::Q5_K,
                                         DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::NVFP4, DType::Q1_0,
                                         DType::Q2_0, DType::FP8_E4M3};

// A row length of whole blocks, not a multiple of 64 where the type allows.
inline int64_t odd_k(DType t) {
    const int64_t be = dtype_info(t).block_elems;
    return be == 1 ? 77 : be == 32 ? 32 * 5 : be == 64 ? 64 * 5 : be == 128 ? 128 * 3 : 256 * 3;
}

} // namespace vt::vktest
