// perf-delta-rule: time of one GATED_DELTA_RULE node (the CPU backend's
// gated delta rule) for a step of B sequences of `tokens` tokens each: a
// decode step (tokens 1) or prompt chunks. Built by `ninja -C build
// tests/perf/perf-delta-rule`, never run by the suite.
//
//   perf-delta-rule [--b 1] [--tokens 1] [--dk 128] [--dv 128] [--hv 16] [--hk 16] [--per-channel 0]
//                   [--chunked-from 0] [--threads 1] [--reps 200]
//
// Prints the median wall time per call and the thread CPU time per call,
// and the rate in GFLOP/s counting the recurrence's 8 dk dv flops per token
// and head (decay, S^T k, the update, S^T q).
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
    const int64_t B = arg(argc, argv, "--b", 1), nt = arg(argc, argv, "--tokens", 1), dk = arg(argc, argv, "--dk", 128),
                  dv = arg(argc, argv, "--dv", 128), Hv = arg(argc, argv, "--hv", 16), Hk = arg(argc, argv, "--hk", 16);
    const int per_channel = arg(argc, argv, "--per-channel", 0), chunked_from = arg(argc, argv, "--chunked-from", 0);
    const int threads = arg(argc, argv, "--threads", 1), reps = arg(argc, argv, "--reps", 200);
    if (B < 1 || nt < 1 || dk < 1 || dv < 1 || Hk < 1 || Hv % Hk || threads < 1 || reps < 1) {
        std::fprintf(stderr, "perf-delta-rule: bad arguments\n");
        return 2;
    }
    const int64_t n_tok = B * nt;
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_real_distribution<float> ud(0.f, 1.f);
    // Unit q and k (q scaled by 1/sqrt(dk)), beta in (0, 1), log-decays in (-1, 0).
    std::vector<float> q((size_t)(dk * Hk * n_tok)), k(q.size()), v((size_t)(dv * Hv * n_tok)), beta((size_t)(Hv * n_tok));
    std::vector<float> g((size_t)((per_channel ? dk : 1) * Hv * n_tok));
    for (auto *x : {&q, &k, &v}) for (float &e : *x) e = nd(rng);
    for (int64_t r = 0; r < Hk * n_tok; ++r) {
        double sq = 0, sk = 0;
        for (int64_t i = 0; i < dk; ++i) sq += q[(size_t)(r * dk + i)] * q[(size_t)(r * dk + i)], sk += k[(size_t)(r * dk + i)] * k[(size_t)(r * dk + i)];
        for (int64_t i = 0; i < dk; ++i) {
            q[(size_t)(r * dk + i)] /= (float)(std::sqrt(sq) * std::sqrt((double)dk));
            k[(size_t)(r * dk + i)] /= (float)std::sqrt(sk);
        }
    }
    for (float &e : beta) e = ud(rng);
    for (float &e : g) e = -ud(rng);
    std::vector<float> state((size_t)(dk * dv * Hv * B));
    for (float &e : state) e = 0.01f * nd(rng);
    std::vector<int32_t> index;
    for (int64_t s = 0; s < B; ++s) index.insert(index.end(), {(int32_t)s, (int32_t)nt, 0});

    Tensor st;
    tensor_init(st, DType::F32, dk * dv * Hv, B, 1, 1, state.data(), "state");
    Graph gr;
    Tensor *qt = gr.input(DType::F32, {dk, Hk, n_tok}), *kt = gr.input(DType::F32, {dk, Hk, n_tok}),
           *vt_ = gr.input(DType::F32, {dv, Hv, n_tok}),
           *gt = per_channel ? gr.input(DType::F32, {dk, Hv, n_tok}) : gr.input(DType::F32, {Hv, n_tok}),
           *bt = gr.input(DType::F32, {Hv, n_tok}), *it = gr.input(DType::I32, {3, B});
    Tensor *o = gr.op<Op::GATED_DELTA_RULE>(DType::F32, {dv, Hv, n_tok}, {qt, kt, vt_, gt, bt, &st, it},
                                            {kDeltaHeadsInterleaved, per_channel, chunked_from});
    gr.mark_output(o);
    BufferPtr arena = buffer_alloc(cpu_device(), gr.plan() + 64, "perf arena");
    gr.bind(static_cast<uint8_t *>(arena->iface->get_base(arena.get())), arena.get());
    std::memcpy(qt->data, q.data(), q.size() * 4);
    std::memcpy(kt->data, k.data(), k.size() * 4);
    std::memcpy(vt_->data, v.data(), v.size() * 4);
    std::memcpy(gt->data, g.data(), g.size() * 4);
    std::memcpy(bt->data, beta.data(), beta.size() * 4);
    std::memcpy(it->data, index.data(), index.size() * 4);
    // Each run continues the states (decays keep them bounded).
    const perf::Timing t = perf::time_graph(gr, threads, 3, reps);
    if (!t.ok) {
        std::fprintf(stderr, "perf-delta-rule: the graph did not run\n");
        return 1;
    }
    const double flops = 8.0 * (double)(dk * dv * Hv * n_tok);
    std::printf("B %lld tokens %lld dk %lld dv %lld Hv %lld Hk %lld%s threads %d: %.1f us wall, %.1f us cpu, %.2f GFLOP/s\n",
                (long long)B, (long long)nt, (long long)dk, (long long)dv, (long long)Hv, (long long)Hk,
                per_channel ? " per-channel" : "", threads, t.wall_median * 1e6, t.cpu * 1e6, flops / t.wall_median * 1e-9);
    return 0;
}
