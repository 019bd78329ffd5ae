// perf-attention: time of one ATTN_PAGED node (the CPU backend's paged
// attention) for a decode step of B sequences at a depth, or one prompt chunk
// of a sequence; the kernel micro-benchmark behind the attention changes of
// issue 23. It uses internal headers, so it is neither an example nor a test:
// built by `ninja -C build tests/perf/perf-attention`, never run by the suite.
//
//   perf-attention [--b 64] [--depth 192] [--chunk 1] [--heads 9] [--kv-heads 3] [--head-dim 64]
//                  [--threads 1] [--reps 200]            (VT_CPU_ISA=avx2 for the AVX2 table)
//
// Prints the median wall time per call, the thread CPU time per call (what
// matters on a loaded machine), and the rate of the QK^T and PV products in
// GFLOP/s of 2 * (queries x keys x head_dim) each.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/graph.h"
#include "core/pages.h"
#include "core/quant.h"
#include "cpu/kernels/kernels.h"
#include "perf-timing.h"

using namespace vt;

using vt::perf::arg;

int main(int argc, char **argv) {
    const int64_t B = arg(argc, argv, "--b", 64), depth = arg(argc, argv, "--depth", 192),
                  chunk = arg(argc, argv, "--chunk", 1), n_head = arg(argc, argv, "--heads", 9),
                  n_head_kv = arg(argc, argv, "--kv-heads", 3), hd = arg(argc, argv, "--head-dim", 64),
                  bs = 16;
    const int threads = arg(argc, argv, "--threads", 1), reps = arg(argc, argv, "--reps", 200);
    if (B < 1 || depth < 0 || chunk < 1 || n_head < 1 || n_head_kv < 1 || n_head % n_head_kv || hd < 1 ||
        threads < 1 || reps < 1) {
        std::fprintf(stderr, "perf-attention: bad arguments\n");
        return 2;
    }
    // Each sequence: depth tokens in its blocks already, chunk new ones.
    const int64_t n_tok = B * chunk, seq_len = depth + chunk, seq_blocks = (seq_len + bs - 1) / bs;
    const int64_t n_blocks = B * seq_blocks, kv_row = hd * n_head_kv;
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.f, 1.f);

    // The pools in memory as the engine's are (the CPU buffer type's large
    // buffers: PageBuffer, huge pages where the kernel gives them).
    const size_t pool = (size_t)(bs * kv_row * n_blocks);
    std::unique_ptr<PageBuffer> kp = PageBuffer::allocate(pool * 2), vp = PageBuffer::allocate(pool * 2);
    if (!kp || !vp) {
        std::fprintf(stderr, "perf-attention: cannot map %zu bytes of pool\n", pool * 4);
        return 1;
    }
    uint16_t *kc = (uint16_t *)kp->data(), *vc = (uint16_t *)vp->data();
    for (size_t i = 0; i < pool; ++i) kc[i] = f32_to_fp16(nd(rng));
    for (size_t i = 0; i < pool; ++i) vc[i] = f32_to_fp16(nd(rng));
    Tensor kct, vct;
    tensor_init(kct, DType::F16, bs, kv_row, n_blocks, 1, kc, "k_pool");
    tensor_init(vct, DType::F16, kv_row, bs * n_blocks, 1, 1, vc, "v_pool");

    // Sequence s owns blocks s, s + B, s + 2B, ... (scattered, as a pool's are).
    std::vector<int32_t> index((size_t)(3 * n_tok));
    for (int64_t s = 0; s < B; ++s) {
        const int32_t at = (int32_t)index.size();
        for (int64_t b = 0; b < seq_blocks; ++b) index.push_back((int32_t)(s + b * B));
        for (int64_t i = 0; i < chunk; ++i) {
            const int64_t t = s * chunk + i, pos = depth + i;
            index[(size_t)(3 * t)] = (int32_t)(index[(size_t)at + (size_t)(pos / bs)] * bs + pos % bs);
            index[(size_t)(3 * t + 1)] = (int32_t)(pos + 1);
            index[(size_t)(3 * t + 2)] = at;
        }
    }

    Graph g;
    Tensor *q = g.input(DType::F32, {hd, n_head, n_tok}), *k = g.input(DType::F32, {hd, n_head_kv, n_tok}),
           *v = g.input(DType::F32, {hd, n_head_kv, n_tok}), *ix = g.input(DType::I32, {(int64_t)index.size()});
    Tensor *y = g.op<Op::ATTN_PAGED>(DType::F32, {hd, n_head, n_tok}, {q, k, v, &kct, &vct, ix, nullptr},
                                     {1.0f / std::sqrt((float)hd), 0, (int32_t)(seq_blocks * bs)});
    g.mark_output(y);
    BufferPtr buf = buffer_alloc(cpu_device(), g.plan() + 64, "perf arena");
    g.bind(static_cast<uint8_t *>(buf->iface->get_base(buf.get())), buf.get());
    for (Tensor *t : {q, k, v}) {
        float *p = static_cast<float *>(t->data);
        for (int64_t i = 0; i < t->nelements(); ++i) p[i] = nd(rng);
    }
    std::memcpy(ix->data, index.data(), index.size() * sizeof(int32_t));
    const perf::Timing tm = perf::time_graph(g, threads, 5, reps);
    if (!tm.ok) {
        std::fprintf(stderr, "perf-attention: the node did not run\n");
        return 1;
    }
    const double cpu = tm.cpu, med = tm.wall_median;
    // Keys each query sees, summed: depth + 1 .. depth + chunk per sequence.
    double keys = 0;
    for (int64_t i = 0; i < chunk; ++i) keys += (double)(depth + i + 1);
    const double flops = 2.0 * 2.0 * (double)B * (double)n_head * keys * (double)hd;
    std::printf("isa %s, B %lld, depth %lld, chunk %lld, heads %lld/%lld x %lld, %d thread(s): "
                "%.1f us wall (median), %.1f us CPU per call, %.2f GFLOP/s per CPU-second\n",
                quant::active_kernels().isa, (long long)B, (long long)depth, (long long)chunk, (long long)n_head,
                (long long)n_head_kv, (long long)hd, threads, med * 1e6, cpu * 1e6, flops / cpu * 1e-9);
    return 0;
}
