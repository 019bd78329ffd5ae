// vt-sample-bench: what sampling costs per engine step, through the public
// ABI (vt_sampler_sample + vt_sampler_accept), one sequence after another as
// the engine's step does it.
//
//   vt-sample-bench -m model.gguf --npl 16,64 [-n 50]
//
// B rows of real logits (one per sequence: the model's next-token logits
// after a random 16-token prompt each) are sampled by B chains of each
// config, N steps in a row (a step samples every row once, and each chain
// accepts its token, so penalty histories grow as in a decode); the table
// shows ms per step, and a checksum of the tokens drawn, equal between
// builds that sample the same tokens. cpu ms/step is the thread's CPU time
// (clock_gettime), steadier than the wall time on a shared machine. Configs: greedy; topk (top_k 40,
// top_p 0.9, temp 0.7, dist); penalty (repetition 1.1, frequency and
// presence 0.2, then topk's chain); topp (top_p 0.9, temp 0.7, dist: the
// nucleus over the whole vocabulary); temp (temp 1.0 and dist over the
// whole vocabulary: vt-server's defaults).
#include <CLI/CLI.hpp>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "vt/vt.h"
#include "bench-samplers.h"

namespace {

double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

bool failed(vt_status s, const char *what) {
    if (s == VT_OK) return false;
    const char *msg = vt_last_error();
    std::fprintf(stderr, "vt-sample-bench: %s: %s\n", what, msg && *msg ? msg : vt_status_str(s));
    return true;
}

vt_sampler *make(const std::string &kind, uint32_t seed) {
    return vt_examples::make_bench_sampler("vt-sample-bench", kind, seed);
}

} // namespace

int main(int argc, char **argv) {
    std::string model_path;
    std::vector<int> n_parallel{16, 64};
    int n_steps = 50;
    unsigned threads = 0;
    CLI::App app{"vt-sample-bench: ms per engine step spent sampling B sequences, serially"};
    app.add_option("-m,--model", model_path, "GGUF model file")->required();
    app.add_option("--npl", n_parallel, "sequences per step (comma-separated)")->delimiter(',')->capture_default_str();
    app.add_option("-n,--steps", n_steps, "steps timed per config")->capture_default_str()->check(CLI::Range(1, 100000));
    app.add_option("-t,--threads", threads, "threads of the forward passes that make the logits")->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }
    vt_model_params mp;
    vt_model_params_init_v2(&mp, sizeof mp);
    vt_model *model = nullptr;
    if (failed(vt_model_load(model_path.c_str(), &mp, &model), "vt_model_load")) return 1;
    vt_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (failed(vt_model_get_info(model, &info), "vt_model_get_info")) return 1;
    const size_t n_vocab = info.n_vocab;
    vt_context_params cp;
    vt_context_params_init(&cp);
    cp.n_threads = threads;
    vt_context *ctx = nullptr;
    if (failed(vt_context_create(model, &cp, &ctx), "vt_context_create")) return 1;

    int max_b = 0;
    for (int b : n_parallel) max_b = std::max(max_b, b);
    std::vector<float> rows((size_t)max_b * n_vocab);
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> tok(0, (int32_t)n_vocab - 1);
    for (int i = 0; i < max_b; ++i) {
        vt_seq_params sp;
        vt_seq_params_init(&sp);
        sp.n_ctx = 64;
        vt_seq *seq = nullptr;
        if (failed(vt_seq_create(ctx, &sp, &seq), "vt_seq_create")) return 1;
        std::vector<vt_token> p(16);
        for (vt_token &t : p) t = tok(rng);
        const float *lg = nullptr;
        size_t n = 0;
        if (failed(vt_seq_feed(seq, p.data(), p.size()), "vt_seq_feed") || failed(vt_seq_step(seq), "vt_seq_step") ||
            failed(vt_seq_logits(seq, -1, &lg, &n), "vt_seq_logits"))
            return 1;
        std::memcpy(rows.data() + (size_t)i * n_vocab, lg, n_vocab * sizeof(float));
        vt_seq_destroy(seq);
    }

    std::printf("| %4s | %-8s | %12s | %12s | %16s |\n", "B", "sampler", "ms/step", "cpu ms/step", "checksum");
    std::printf("| ---: | :--- | ---: | ---: | ---: |\n");
    for (int B : n_parallel) {
        for (const char *kind : {"greedy", "topk", "penalty", "topp", "temp"}) {
            std::vector<vt_sampler *> s((size_t)B);
            for (int i = 0; i < B; ++i)
                if (!(s[(size_t)i] = make(kind, (uint32_t)i))) return 1;
            uint64_t checksum = 0;
            const auto t0 = std::chrono::steady_clock::now();
            const double c0 = thread_cpu_ms();
            for (int step = 0; step < n_steps; ++step)
                for (int i = 0; i < B; ++i) {
                    vt_token t = -1;
                    if (failed(vt_sampler_sample(s[(size_t)i], rows.data() + (size_t)i * n_vocab, n_vocab, &t),
                               "vt_sampler_sample") ||
                        failed(vt_sampler_accept(s[(size_t)i], t), "vt_sampler_accept"))
                        return 1;
                    checksum = checksum * 1000003u + (uint64_t)t;
                }
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            const double cpu = thread_cpu_ms() - c0;
            std::printf("| %4d | %-8s | %12.3f | %12.3f | %016llx |\n", B, kind, ms / n_steps, cpu / n_steps,
                        (unsigned long long)checksum);
            std::fflush(stdout);
            for (vt_sampler *x : s) vt_sampler_destroy(x);
        }
    }
    vt_context_destroy(ctx);
    vt_model_destroy(model);
    return 0;
}
