// perf-ssm-scan: time of one SSM_SCAN node (the CPU backend's Mamba-2 scan)
// for a step of B sequences of `tokens` tokens each: a decode step (tokens
// 1) or prompts, in the recurrent or the chunked form. Built by `ninja -C
// build tests/perf/perf-ssm-scan`, never run by the suite.
//
//   perf-ssm-scan [--b 1] [--tokens 1] [--p 64] [--n 128] [--h 64] [--g 8] [--chunk 128]
//                 [--chunked-from 0] [--threads 1] [--reps 50]
//
// Defaults: NemotronH's Mamba-2 layer (64 heads of 64, state 128, 8
// groups). --chunked-from 1 runs every sequence chunked; 0 the default
// choice. Prints the median wall time per call, the thread CPU time per
// call and GFLOP/s counting the recurrence's 6 P N flops per token and head
// (decay, update, the dot with C).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "core/graph.h"
#include "perf-timing.h"

using namespace vt;

using vt::perf::arg;

int main(int argc, char **argv) {
    const int64_t B = arg(argc, argv, "--b", 1), nt = arg(argc, argv, "--tokens", 1), P = arg(argc, argv, "--p", 64),
                  N = arg(argc, argv, "--n", 128), H = arg(argc, argv, "--h", 64), G = arg(argc, argv, "--g", 8);
    const int chunk = arg(argc, argv, "--chunk", 128), chunked_from = arg(argc, argv, "--chunked-from", 0);
    const int threads = arg(argc, argv, "--threads", 1), reps = arg(argc, argv, "--reps", 50);
    if (B < 1 || nt < 1 || P < 1 || N < 1 || G < 1 || H % G || threads < 1 || reps < 1) {
        std::fprintf(stderr, "perf-ssm-scan: bad arguments\n");
        return 2;
    }
    const int64_t n_tok = B * nt;
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    std::vector<float> x((size_t)(P * H * n_tok)), bm((size_t)(N * G * n_tok)), cm(bm.size()), dt((size_t)(H * n_tok)),
        A((size_t)H);
    for (auto *v : {&x, &bm, &cm}) for (float &e : *v) e = nd(rng);
    for (float &e : dt) e = nd(rng) - 3.f;  // softplus ~ 0.05
    for (float &e : A) e = -1.f - 15.f * ud(rng);
    std::vector<float> state((size_t)(N * P * H * B));
    for (float &e : state) e = 0.1f * nd(rng);
    std::vector<int32_t> index;
    for (int64_t s = 0; s < B; ++s) index.insert(index.end(), {(int32_t)s, (int32_t)nt, 0});

    Tensor st, at;
    tensor_init(st, DType::F32, N * P * H, B, 1, 1, state.data(), "state");
    tensor_init(at, DType::F32, H, 1, 1, 1, A.data(), "A");
    Graph gr;
    Tensor *xt = gr.input(DType::F32, {P, H, n_tok}), *dtt = gr.input(DType::F32, {H, n_tok}),
           *bt = gr.input(DType::F32, {N, G, n_tok}), *ct = gr.input(DType::F32, {N, G, n_tok}),
           *it = gr.input(DType::I32, {3, B});
    Tensor *y = gr.op<Op::SSM_SCAN>(DType::F32, {P, H, n_tok}, {xt, dtt, &at, bt, ct, &st, it},
                                    SsmScanParams{chunk, 0.f, 0.f, chunked_from});
    gr.mark_output(y);
    BufferPtr arena = buffer_alloc(cpu_device(), gr.plan() + 64, "perf arena");
    gr.bind(static_cast<uint8_t *>(arena->iface->get_base(arena.get())), arena.get());
    std::memcpy(xt->data, x.data(), x.size() * 4);
    std::memcpy(dtt->data, dt.data(), dt.size() * 4);
    std::memcpy(bt->data, bm.data(), bm.size() * 4);
    std::memcpy(ct->data, cm.data(), cm.size() * 4);
    std::memcpy(it->data, index.data(), index.size() * 4);
    // Each run continues the states (the decays keep them bounded).
    const perf::Timing t = perf::time_graph(gr, threads, 2, reps);
    if (!t.ok) {
        std::fprintf(stderr, "perf-ssm-scan: the graph did not run\n");
        return 1;
    }
    const double flops = 6.0 * (double)(P * N * H * n_tok);
    std::printf("B %lld tokens %lld P %lld N %lld H %lld G %lld chunk %d chunked_from %d threads %d: %.1f us wall, "
                "%.1f us cpu, %.2f GFLOP/s\n",
                (long long)B, (long long)nt, (long long)P, (long long)N, (long long)H, (long long)G, chunk,
                chunked_from, threads, t.wall_median * 1e6, t.cpu * 1e6, flops / t.wall_median * 1e-9);
    return 0;
}
