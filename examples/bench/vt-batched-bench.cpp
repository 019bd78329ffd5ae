// vt-batched-bench: the serving engine's aggregate throughput with B
// sequences in one context, as llama.cpp's llama-batched-bench, through the
// public C ABI only (vt_context_submit / vt_context_step).
//
//   vt-batched-bench -m model.gguf --npp 128 --ntg 128 --npl 1,4,16,32,64 -t 2 [--json]
//
// For each B in -npl, on a fresh context (each sequence gets its own random
// prompt):
//  pp: B requests of P random ids, one output token each, submitted
//      together, prefix caching off; the time until the last one ends. B * P prompt tokens /
//      that time (the engine chunks the prompts into steps of n_batch tokens,
//      as llama-batched-bench decodes them in n_batch batches).
//  tg: B requests of P ids again, on a context with prefix caching, first
//      with one output token each (untimed: their prompts' blocks land in
//      the prefix cache), then again with the same prompts, which start at
//      once from their cached blocks. Once every one has its first token, the
//      next N steps are timed. Each of them must compute exactly B tokens
//      (one per sequence: no prompt chunk, no sequence missing), so the rate
//      B * N / time is pure batched decode at depths P+1 .. P+N (give or take
//      the few steps the starts take), as llama-batched-bench's tg phase.
// End-of-generation ignored. --sampler picks how each request samples (the
// cost of sampling is part of the step): none (the engine's own argmax, the
// default), greedy (a vt_sampler greedy chain), topk (top_k 40, top_p 0.9,
// temp 0.7, dist), penalty (repetition/frequency/presence penalties, then
// topk's chain), topp (top_p 0.9, temp 0.7, dist), temp (temp 1.0 and
// dist over the whole vocabulary: vt-server's defaults). dist seeds differ per request.
// Each (B) runs -r times after one untimed warmup of the smallest B; the
// table shows medians.
#include <CLI/CLI.hpp>

#include <algorithm>
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

struct Options {
    std::string model;
    int n_prompt = 128;
    int n_gen = 128;
    std::vector<int> n_parallel{1, 4, 16, 32, 64};
    unsigned threads = 0;
    unsigned n_batch = 512;
    int reps = 1;
    bool json = false;
    bool skip_pp = false;
    std::string sampler = "none";
    std::string quantize;  // --quantize: a vt_quant_type name, "" = keep the file's types
};

bool failed(vt_status s, const char *what) {
    if (s == VT_OK) return false;
    const char *msg = vt_last_error();
    std::fprintf(stderr, "vt-batched-bench: %s: %s\n", what, msg && *msg ? msg : vt_status_str(s));
    return true;
}

struct ModelDel { void operator()(vt_model *m) const { vt_model_destroy(m); } };
struct ContextDel { void operator()(vt_context *c) const { vt_context_destroy(c); } };
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct Bench {
    const Options &o;
    vt_model *model;
    uint32_t n_vocab;
    std::mt19937 rng{1234};

    std::unique_ptr<vt_context, ContextDel> context(int B, bool prefix_caching) {
        vt_context_params cp;
        vt_context_params_init(&cp);
        cp.n_threads = o.threads;
        cp.n_batch = o.n_batch;
        cp.max_num_seqs = (uint32_t)B;
        cp.no_prefix_caching = !prefix_caching;
        // Room for every sequence's whole run, with the tg phase's slack.
        cp.max_model_len = (uint32_t)(o.n_prompt + o.n_gen + slack(B) + 16);
        // kv_cache_bytes 0: the engine sizes the pool for max_num_seqs * max_model_len.
        vt_context *c = nullptr;
        if (failed(vt_context_create(model, &cp, &c), "vt_context_create")) return nullptr;
        return std::unique_ptr<vt_context, ContextDel>(c);
    }

    // Tokens a sequence of the tg phase may generate before the last one has
    // its first: the prompts go through at most n_batch tokens a step, fewer
    // once the early sequences decode beside them; twice that bound, checked.
    int slack(int B) const { return 2 * (int)(((int64_t)B * o.n_prompt + o.n_batch - 1) / o.n_batch + B) + 4; }

    std::vector<std::vector<vt_token>> prompts(int B) {
        std::uniform_int_distribution<int32_t> d(0, (int32_t)n_vocab - 1);
        std::vector<std::vector<vt_token>> ps((size_t)B, std::vector<vt_token>((size_t)o.n_prompt));
        for (auto &p : ps)
            for (vt_token &t : p) t = d(rng);
        return ps;
    }

    // The chain --sampler names (null for none); out is owned by the caller
    // until a submit succeeds.
    bool make_sampler(uint32_t seed, vt_sampler *&out) {
        out = nullptr;
        if (o.sampler == "none") return true;
        out = vt_examples::make_bench_sampler("vt-batched-bench", o.sampler, seed);
        return out != nullptr;
    }

    bool submit(vt_context *ctx, const std::vector<std::vector<vt_token>> &ps, uint32_t max_tokens,
                std::vector<uint64_t> &ids) {
        ids.clear();
        for (const std::vector<vt_token> &p : ps) {
            vt_request_params rp;
            vt_request_params_init(&rp);
            rp.prompt = p.data();
            rp.n_prompt = p.size();
            rp.max_tokens = max_tokens;
            rp.ignore_eos = true;
            if (!make_sampler((uint32_t)ids.size(), rp.sampler)) return false;
            uint64_t id = 0;
            if (failed(vt_context_submit(ctx, &rp, &id), "vt_context_submit")) {
                vt_sampler_destroy(rp.sampler);
                return false;
            }
            ids.push_back(id);
        }
        return true;
    }

    // Drains the poll queue; counts the requests that produced a token and
    // those that ended. Returns false on an error event.
    bool drain(vt_context *ctx, std::vector<char> &started, size_t &n_started, size_t &n_done, uint64_t first_id) {
        const vt_request_output *ev = nullptr;
        for (;;) {
            if (failed(vt_context_poll(ctx, &ev), "vt_context_poll")) return false;
            if (!ev) return true;
            if (ev->finish_reason == VT_FINISH_ERROR) {
                std::fprintf(stderr, "vt-batched-bench: request failed: %s\n", vt_status_str(ev->status));
                return false;
            }
            const size_t i = (size_t)(ev->request_id - first_id);
            if (ev->token >= 0 && i < started.size() && !started[i]) {
                started[i] = 1;
                ++n_started;
            }
            if (ev->finish_reason != VT_FINISH_NONE) ++n_done;
        }
    }

    // Submits the prompts for one token each and steps until all are done.
    bool prefill(vt_context *ctx, const std::vector<std::vector<vt_token>> &ps) {
        std::vector<uint64_t> ids;
        if (!submit(ctx, ps, 1, ids)) return false;
        std::vector<char> started(ps.size(), 0);
        size_t n_started = 0, n_done = 0;
        while (n_done < ps.size()) {
            if (failed(vt_context_step(ctx, 0, nullptr), "vt_context_step")) return false;
            if (!drain(ctx, started, n_started, n_done, ids[0])) return false;
        }
        return true;
    }

    bool pp(int B, double &tps) {
        auto ctx = context(B, false);
        if (!ctx) return false;
        const std::vector<std::vector<vt_token>> ps = prompts(B);
        const auto t0 = Clock::now();
        if (!prefill(ctx.get(), ps)) return false;
        tps = (double)B * o.n_prompt / seconds_since(t0);
        return true;
    }

    bool tg(int B, double &tps) {
        auto ctx = context(B, true);
        if (!ctx) return false;
        const std::vector<std::vector<vt_token>> ps = prompts(B);
        if (!prefill(ctx.get(), ps)) return false;  // into the prefix cache
        std::vector<uint64_t> ids;
        if (!submit(ctx.get(), ps, (uint32_t)(o.n_gen + slack(B)), ids)) return false;
        std::vector<char> started((size_t)B, 0);
        size_t n_started = 0, n_done = 0;
        for (int steps = 0; n_started < (size_t)B; ++steps) {
            if (steps >= slack(B)) {
                std::fprintf(stderr, "vt-batched-bench: %d sequences started after %d steps\n", (int)n_started, steps);
                return false;
            }
            if (failed(vt_context_step(ctx.get(), 0, nullptr), "vt_context_step")) return false;
            if (!drain(ctx.get(), started, n_started, n_done, ids[0])) return false;
            if (n_done) {
                std::fprintf(stderr, "vt-batched-bench: a request ended before every one started\n");
                return false;
            }
        }
        const auto t0 = Clock::now();
        for (int i = 0; i < o.n_gen; ++i) {
            size_t n = 0;
            if (failed(vt_context_step(ctx.get(), 0, &n), "vt_context_step")) return false;
            if (!drain(ctx.get(), started, n_started, n_done, ids[0])) return false;
            if (n != (size_t)B || n_done) {
                std::fprintf(stderr, "vt-batched-bench: decode step %d computed %zu tokens for %d sequences\n", i, n, B);
                return false;
            }
        }
        tps = (double)B * o.n_gen / seconds_since(t0);
        return true;
    }
};

std::string join(const std::vector<double> &v) {
    std::string s;
    char b[32];
    for (size_t i = 0; i < v.size(); ++i) {
        std::snprintf(b, sizeof b, "%s%.2f", i ? ", " : "", v[i]);
        s += b;
    }
    return s;
}

int run(const Options &o) {
    vt_model_params mp;
    vt_model_params_init_v2(&mp, sizeof mp);
    vt_quant_type quantize = VT_QUANT_NONE;
    if (failed(vt_quant_type_from_name(o.quantize.c_str(), &quantize), "--quantize")) return 1;
    mp.quantize = quantize;
    vt_model *mraw = nullptr;
    if (failed(vt_model_load(o.model.c_str(), &mp, &mraw), "vt_model_load")) return 1;
    std::unique_ptr<vt_model, ModelDel> model(mraw);
    vt_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (failed(vt_model_get_info(model.get(), &info), "vt_model_get_info")) return 1;
    Bench b{o, model.get(), info.n_vocab};

    // Warmup: page the weights in, spin the pool up.
    double ignored = 0;
    if (!b.pp(o.n_parallel.front(), ignored)) return 1;

    struct Row {
        int B;
        std::vector<double> pp, tg;
    };
    std::vector<Row> rows;
    for (int B : o.n_parallel) {
        Row r{B, {}, {}};
        for (int rep = 0; rep < o.reps; ++rep) {
            double t = 0;
            if (!o.skip_pp) {
                if (!b.pp(B, t)) return 1;
                r.pp.push_back(t);
            }
            if (o.n_gen > 0) {
                if (!b.tg(B, t)) return 1;
                r.tg.push_back(t);
            }
        }
        if (!o.json)
            std::printf("| %4d | %5d | %5d | %10.2f | %10.2f |\n", B, o.n_prompt, o.n_gen, median(r.pp), median(r.tg));
        std::fflush(stdout);
        rows.push_back(std::move(r));
    }
    if (o.json) {
        std::printf("{\"model\": \"%s\", \"sampler\": \"%s\", \"threads\": %u, \"n_batch\": %u, \"n_prompt\": %d, \"n_gen\": %d, \"rows\": [",
                    o.model.c_str(), o.sampler.c_str(), o.threads, o.n_batch, o.n_prompt, o.n_gen);
        for (size_t i = 0; i < rows.size(); ++i)
            std::printf("%s{\"B\": %d, \"pp_tps\": %.3f, \"tg_tps\": %.3f, \"pp_samples\": [%s], \"tg_samples\": [%s]}",
                        i ? ", " : "", rows[i].B, median(rows[i].pp), median(rows[i].tg), join(rows[i].pp).c_str(),
                        join(rows[i].tg).c_str());
        std::printf("]}\n");
    }
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    Options o;
    CLI::App app{"vt-batched-bench: aggregate prefill and decode tokens/s of B sequences in one context "
                 "(llama-batched-bench's pp and tg), through the serving engine"};
    app.add_option("-m,--model", o.model, "GGUF model file or Hugging Face model folder")->required();
    app.add_option("--npp,--n-prompt", o.n_prompt, "prompt tokens per sequence")->capture_default_str()->check(CLI::Range(1, 1 << 20));
    app.add_option("--ntg,--n-gen", o.n_gen, "decode steps timed (tokens per sequence)")->capture_default_str()->check(CLI::Range(0, 1 << 20));
    app.add_option("--npl,--n-parallel", o.n_parallel, "sequences in the batch (comma-separated)")
        ->delimiter(',')->capture_default_str()->check(CLI::Range(1, 4096));
    app.add_option("-t,--threads", o.threads, "compute threads, 0 = physical cores")->capture_default_str();
    app.add_option("--quantize", o.quantize,
                   "quantize F32/F16/BF16/FP8 matmul weights at load: Q8_0, Q6_K, Q5_0, Q5_1, Q4_K, Q4_0, Q4_1 or MXFP4");
    app.add_option("-b,--batch", o.n_batch, "most tokens per step (n_batch)")->capture_default_str()->check(CLI::Range(1, 1 << 20));
    app.add_option("-r,--repetitions", o.reps, "timed repetitions of each B (the median is shown)")
        ->capture_default_str()->check(CLI::Range(1, 1000));
    app.add_option("--sampler", o.sampler, "each request's sampler: none, greedy, topk, penalty, topp, temp")
        ->capture_default_str()->check(CLI::IsMember({"none", "greedy", "topk", "penalty", "topp", "temp"}));
    app.add_flag("--skip-pp", o.skip_pp, "run only the tg phase (for profiling decode)");
    app.add_flag("--json", o.json, "print one JSON object instead of the table");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }
    if (!o.json) {
        std::printf("| %4s | %5s | %5s | %10s | %10s |\n", "B", "P", "N", "pp t/s", "tg t/s");
        std::printf("| ---: | ---: | ---: | ---: | ---: |\n");
    }
    return run(o);
}
