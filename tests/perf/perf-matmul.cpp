// perf-matmul: time of one MUL_MAT node of the CPU backend, weights of one
// type in the load-time _X16 layout (as the loader keeps them) or as in the
// GGUF, for M tokens: the decode (M = 1), small-batch (M = 2..64) and
// prefill shapes whose rates issue 23 asks about. Internal headers: built,
// never run by the suite.
//
//   perf-matmul [--type Q4_K] [--k 2048] [--n 8192] [--m 1] [--threads 1] [--reps 50] [--gguf-layout]
//              (VT_CPU_ISA=avx2 for the AVX2 table; --type any GGUF type name
//              vt reads, e.g. Q4_0 or MXFP4, whose _X16 layouts are the default)
//
// MXFP4 against Q4_0 at gpt-oss-20b's expert shape (2880 x 8192 rows ~ its
// gate_up of 5760 rows), 2 threads: perf-matmul --type MXFP4 --k 2880 --n 8192
// --threads 2 (and --type Q4_0).
//
// --cold: one graph of as many MUL_MAT nodes as it takes for their weights
// (copies of the same matrix, one per node, same activations) to fill 96 MB,
// three times this CPU's L3, so every node reads its weights from memory as
// a model's step does; the times are per node. Without it a matrix that fits
// the caches (SmolLM2's 576 x 576 in BF16: 0.66 MB) is timed from L2 or L3,
// faster than any decode step reads it.
//
// Prints the median wall time per call and the thread CPU time per call,
// the weight bytes read per CPU-second (decode's bound is the read
// bandwidth: compare vt-membw) and the multiply-adds per CPU-second as
// GFLOP/s (2 per weight per token: compare vt-flops for F16/BF16).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "common/random-blocks.h"
#include "core/graph.h"
#include "core/quant.h"
#include "cpu/kernels/kernels.h"
#include "perf-timing.h"
#include "cpu/kernels/repack.h"

using namespace vt;

namespace {

const char *arg(int argc, char **argv, const char *name, const char *def) {
    for (int i = 1; i + 1 < argc; ++i)
        if (!std::strcmp(argv[i], name)) return argv[i + 1];
    return def;
}
bool flag(int argc, char **argv, const char *name) {
    for (int i = 1; i < argc; ++i)
        if (!std::strcmp(argv[i], name)) return true;
    return false;
}

} // namespace

int main(int argc, char **argv) {
    const std::string type_name = arg(argc, argv, "--type", "Q4_K");
    const int64_t k = std::atoll(arg(argc, argv, "--k", "2048")), n = std::atoll(arg(argc, argv, "--n", "8192")),
                  m = std::atoll(arg(argc, argv, "--m", "1"));
    const int threads = std::atoi(arg(argc, argv, "--threads", "1")), reps = std::atoi(arg(argc, argv, "--reps", "50"));
    const bool gguf_layout = flag(argc, argv, "--gguf-layout"), cold = flag(argc, argv, "--cold");
    DType t = DType::F32;
    bool found = false;
#define VT_PERF_DTYPE_(name, id, be, bb) \
    if (!found && type_name == #name) {      \
        t = DType::name;                     \
        found = true;                        \
    }
    VT_DTYPE_LIST(VT_PERF_DTYPE_)
#undef VT_PERF_DTYPE_
    if (!found || k < 1 || n < 1 || m < 1 || threads < 1 || reps < 1 || k % dtype_info(t).block_elems) {
        std::fprintf(stderr, "perf-matmul: bad arguments (a GGUF type name, k a multiple of its block)\n");
        return 2;
    }
    std::mt19937 rng(1);
    std::vector<uint8_t> w(row_bytes(t, k) * (size_t)n);
    if (t == DType::F16 || t == DType::BF16) {
        std::normal_distribution<float> nd(0.f, 1.f);
        for (size_t i = 0; i < w.size() / 2; ++i) {
            const uint16_t h = t == DType::F16 ? f32_to_fp16(nd(rng)) : f32_to_bf16(nd(rng));
            std::memcpy(&w[2 * i], &h, 2);
        }
    } else {
        vt::test::randomize_blocks(t, w, rng);
    }
    const bool x16 = !gguf_layout && quant::x16_slot(t) >= 0 && quant::x16_fits(t, k, n);
    const size_t kColdBytes = (size_t)96 << 20;
    const int copies = cold ? (int)std::max<size_t>(1, (kColdBytes + w.size() - 1) / w.size()) : 1;
    std::vector<uint8_t> store(w.size() * copies); // copy c at c * w.size()
    std::vector<Tensor> wts(copies);
    for (int c = 0; c < copies; ++c) {
        uint8_t *dst = store.data() + c * w.size();
        if (x16) quant::repack_x16(t, w.data(), row_bytes(t, k), dst, k, n);
        else std::memcpy(dst, w.data(), w.size());
        tensor_init(wts[c], t, k, n, 1, 1, dst, "w");
        if (x16) wts[c].layout = quant::kLayoutX16;
    }
    Graph g;
    Tensor *x = g.input(DType::F32, {k, m});
    for (int c = 0; c < copies; ++c) g.mark_output(g.op<Op::MUL_MAT>(DType::F32, {n, m}, {&wts[c], x}));
    BufferPtr buf = buffer_alloc(cpu_device(), g.plan() + 64, "perf arena");
    g.bind(static_cast<uint8_t *>(buf->iface->get_base(buf.get())), buf.get());
    std::normal_distribution<float> nd(0.f, 1.f);
    for (int64_t i = 0; i < x->nelements(); ++i) static_cast<float *>(x->data)[i] = nd(rng);
    const perf::Timing tm = perf::time_graph(g, threads, 3, reps);
    if (!tm.ok) {
        std::fprintf(stderr, "perf-matmul: the node did not run (no kernel for this type and layout?)\n");
        return 1;
    }
    const double cpu = tm.cpu / copies, med = tm.wall_median / copies;
    std::printf("isa %s, %s%s%s %lld x %lld, %lld token(s), %d thread(s): %.1f us wall (median), %.1f us CPU per call; "
                "%.2f GB/s of weights, %.1f GFLOP/s per CPU-second\n",
                quant::active_kernels().isa, type_name.c_str(), x16 ? "_X16" : "", cold ? " (cold)" : "", (long long)n, (long long)k,
                (long long)m, threads, med * 1e6, cpu * 1e6, (double)w.size() / cpu * 1e-9,
                2.0 * (double)k * (double)n * (double)m / cpu * 1e-9);
    return 0;
}
