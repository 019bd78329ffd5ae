// vt-bench: prefill and decode throughput, llama-bench style, through the
// public C ABI only.
//
//   vt-bench -m model.gguf -p 512 -n 128 -t 4 [-d 4096] [-r 5] [--json]
//
// pp<P>: time of vt_seq_feed + vt_seq_step of P random token ids (fixed
//        seed) on a freshly reset sequence, i.e. one prefill of P tokens.
// tg<N>: N single-token feed + step calls after a one-token warmup step on a
//        reset sequence, i.e. decode with a context growing from 1 to N.
// -d D (llama-bench's --n-depth): before each timed test, an untimed prefill
//        of D tokens, so pp and tg run on a context already D deep (the
//        cost of attention and of reading the KV cache at that length).
// Each test runs once untimed (warmup), then -r times. The table shows the
// mean and sample standard deviation of tokens/s over the repetitions, like
// llama-bench; --json prints one object whose pp_tps/tg_tps are the MEAN
// (the per-repetition samples are included).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "vt/vt.h"
#include "../common/devices.h"

namespace {

struct Options {
    std::string model;
    std::string device;  // --device: a vt_device_info name, "" = the CPU
    int n_gpu_layers = -1;  // --n-gpu-layers
    uint64_t weights_memory = 0;  // --weights-memory
    int n_prompt = 512;
    int n_gen = 128;
    int n_depth = 0;
    unsigned threads = 0;
    int reps = 5;
    unsigned n_batch = 512;
    std::string quantize;  // --quantize: a vt_quant_type name, "" = keep the file's types
    bool json = false;
};

bool failed(vt_status s) {
    if (s == VT_OK) return false;
    const char *msg = vt_last_error();
    std::fprintf(stderr, "vt-bench: %s\n", msg && *msg ? msg : vt_status_str(s));
    return true;
}

struct ModelDel { void operator()(vt_model *m) const { vt_model_destroy(m); } };
struct ContextDel { void operator()(vt_context *c) const { vt_context_destroy(c); } };
struct SeqDel { void operator()(vt_seq *s) const { vt_seq_destroy(s); } };

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Stats {
    double mean = 0, stddev = 0;
};

Stats stats(const std::vector<double> &v) {
    Stats s;
    if (v.empty()) return s;
    for (double x : v) s.mean += x;
    s.mean /= (double)v.size();
    if (v.size() > 1) {
        double ss = 0;
        for (double x : v) ss += (x - s.mean) * (x - s.mean);
        s.stddev = std::sqrt(ss / (double)(v.size() - 1));
    }
    return s;
}

std::string meta(const vt_model *m, const char *key) {
    char buf[256];
    size_t needed = 0;
    if (vt_model_meta_get(m, key, buf, sizeof buf, &needed) != VT_OK) return {};
    return buf;
}

std::string arch(const vt_model *m) {
    char buf[64];
    size_t needed = 0;
    if (vt_model_arch(m, buf, sizeof buf, &needed) != VT_OK) return "?";
    return buf;
}

std::string json_escape(const std::string &s) {
    std::string o;
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            o += '\\';
            o += (char)c;
        } else if (c < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\u%04x", c);
            o += b;
        } else {
            o += (char)c;
        }
    }
    return o;
}

std::string join(const std::vector<double> &v) {
    std::string o;
    char b[32];
    for (size_t i = 0; i < v.size(); ++i) {
        std::snprintf(b, sizeof b, "%s%.3f", i ? ", " : "", v[i]);
        o += b;
    }
    return o;
}

// A reset sequence holding `depth` tokens (evaluated, untimed).
bool reset_to_depth(vt_seq *seq, const std::vector<vt_token> &depth) {
    if (failed(vt_seq_reset(seq))) return false;
    return depth.empty() || (!failed(vt_seq_feed(seq, depth.data(), depth.size())) && !failed(vt_seq_step(seq)));
}

// One prefill of `tokens` after `depth`: tokens/s.
bool run_pp(vt_seq *seq, const std::vector<vt_token> &depth, const std::vector<vt_token> &tokens, double &tps) {
    if (!reset_to_depth(seq, depth)) return false;
    auto t0 = Clock::now();
    if (failed(vt_seq_feed(seq, tokens.data(), tokens.size())) || failed(vt_seq_step(seq))) return false;
    const float *logits = nullptr;
    size_t n_vocab = 0;
    if (failed(vt_seq_logits(seq, -1, &logits, &n_vocab))) return false;
    tps = (double)tokens.size() / seconds_since(t0);
    return true;
}

// One untimed token, then n timed single-token steps: tokens/s.
bool run_tg(vt_seq *seq, const std::vector<vt_token> &depth, const std::vector<vt_token> &tokens, int n,
            double &tps) {
    if (!reset_to_depth(seq, depth)) return false;
    if (failed(vt_seq_feed(seq, &tokens[0], 1)) || failed(vt_seq_step(seq))) return false;
    const float *logits = nullptr;
    size_t n_vocab = 0;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
        const vt_token t = tokens[(size_t)(i + 1) % tokens.size()];
        if (failed(vt_seq_feed(seq, &t, 1)) || failed(vt_seq_step(seq))) return false;
        if (failed(vt_seq_logits(seq, -1, &logits, &n_vocab))) return false;
    }
    tps = (double)n / seconds_since(t0);
    return true;
}

int run(const Options &o) {
    vt_model_params mp;
    vt_model_params_init_v2(&mp, sizeof mp);
    vt_quant_type quantize = VT_QUANT_NONE;
    if (failed(vt_quant_type_from_name(o.quantize.c_str(), &quantize))) return 1;
    mp.quantize = quantize;
    mp.device = o.device.empty() ? nullptr : o.device.c_str();
    mp.n_gpu_layers = o.n_gpu_layers;
    mp.weights_memory_bytes = o.weights_memory;
    vt_model *mraw = nullptr;
    if (failed(vt_model_load(o.model.c_str(), &mp, &mraw))) return 1;
    std::unique_ptr<vt_model, ModelDel> model(mraw);
    vt_examples::print_placement("vt-bench", model.get());
    vt_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (failed(vt_model_get_info(model.get(), &info))) return 1;
    if (info.n_vocab == 0) {
        std::fprintf(stderr, "vt-bench: the model has an empty vocabulary\n");
        return 1;
    }
    const char *quant_name = vt_quant_type_name(quantize);
    if (quantize != VT_QUANT_NONE)
        std::fprintf(stderr, "vt-bench: quantized %u weights to %s at load (%u fallback, %u kept): %.1f MiB, %.2f s\n",
                     info.n_quantized, quant_name, info.n_quantize_fallback, info.n_quantize_kept,
                     (double)info.quantized_bytes / (1 << 20), info.quantize_seconds);

    vt_context_params cp;
    vt_context_params_init(&cp);
    cp.n_threads = o.threads;
    cp.n_batch = o.n_batch;
    vt_context *craw = nullptr;
    if (failed(vt_context_create(model.get(), &cp, &craw))) return 1;
    std::unique_ptr<vt_context, ContextDel> ctx(craw);
    vt_seq_params sp;
    vt_seq_params_init(&sp);
    sp.n_ctx = (uint32_t)(o.n_depth + std::max(o.n_prompt, o.n_gen + 1) + 16);
    vt_seq *sraw = nullptr;
    if (failed(vt_seq_create(ctx.get(), &sp, &sraw))) return 1;
    std::unique_ptr<vt_seq, SeqDel> seq(sraw);

    // Random valid ids with a fixed seed (llama-bench also feeds random ids:
    // throughput does not depend on the text).
    std::mt19937 rng(1234);
    std::vector<vt_token> tokens((size_t)std::max(o.n_prompt, o.n_gen + 1));
    for (vt_token &t : tokens) t = (vt_token)(rng() % info.n_vocab);
    const std::vector<vt_token> prompt(tokens.begin(), tokens.begin() + o.n_prompt);
    std::vector<vt_token> depth((size_t)o.n_depth);
    for (vt_token &t : depth) t = (vt_token)(rng() % info.n_vocab);

    std::vector<double> pp, tg;
    double tps = 0;
    if (o.n_prompt > 0) {
        if (!run_pp(seq.get(), depth, prompt, tps)) return 1;  // warmup
        for (int r = 0; r < o.reps; ++r) {
            if (!run_pp(seq.get(), depth, prompt, tps)) return 1;
            pp.push_back(tps);
        }
    }
    if (o.n_gen > 0) {
        if (!run_tg(seq.get(), depth, tokens, o.n_gen, tps)) return 1;  // warmup
        for (int r = 0; r < o.reps; ++r) {
            if (!run_tg(seq.get(), depth, tokens, o.n_gen, tps)) return 1;
            tg.push_back(tps);
        }
    }

    std::string name = o.model.substr(o.model.find_last_of('/') == std::string::npos
                                          ? 0
                                          : o.model.find_last_of('/') + 1);
    const Stats pps = stats(pp), tgs = stats(tg);
    if (o.json) {
        std::printf("{\"model\": \"%s\", \"arch\": \"%s\", \"size_bytes\": %llu, \"n_params\": %llu, "
                    "\"device\": \"%s\", \"threads\": %u, \"n_batch\": %u, \"n_prompt\": %d, "
                    "\"n_gen\": %d, \"n_depth\": %d, \"reps\": %d, \"quantize\": \"%s\", "
                    "\"quantize_seconds\": %.3f, \"statistic\": \"mean\", "
                    "\"pp_tps\": %.3f, \"pp_stddev\": %.3f, \"tg_tps\": %.3f, \"tg_stddev\": %.3f, "
                    "\"pp_samples\": [%s], \"tg_samples\": [%s]}\n",
                    json_escape(name).c_str(), json_escape(arch(model.get())).c_str(),
                    (unsigned long long)info.size_bytes, (unsigned long long)info.n_params,
                    json_escape(info.device ? info.device : "cpu").c_str(), o.threads, o.n_batch, o.n_prompt, o.n_gen, o.n_depth, o.reps,
                    quant_name, info.quantize_seconds, pps.mean, pps.stddev, tgs.mean, tgs.stddev, join(pp).c_str(), join(tg).c_str());
        return 0;
    }

    // Markdown table as llama-bench prints it.
    std::string desc = arch(model.get());
    std::string label = meta(model.get(), "general.size_label");
    if (!label.empty()) desc += " " + label;
    if (quantize != VT_QUANT_NONE) desc += std::string(" -> ") + quant_name + " at load";
    char size[32], params[32];
    std::snprintf(size, sizeof size, "%.2f MiB", (double)info.size_bytes / (1024.0 * 1024.0));
    if (info.n_params >= 1000000000ull)
        std::snprintf(params, sizeof params, "%.2f B", (double)info.n_params / 1e9);
    else
        std::snprintf(params, sizeof params, "%.2f M", (double)info.n_params / 1e6);
    char threads[16];
    if (o.threads) std::snprintf(threads, sizeof threads, "%u", o.threads);
    else std::snprintf(threads, sizeof threads, "auto");
    std::printf("| model | size | params | device | threads | test | t/s |\n");
    std::printf("| --- | ---: | ---: | --- | ---: | --- | ---: |\n");
    char at[32] = "";
    if (o.n_depth) std::snprintf(at, sizeof at, " @ d%d", o.n_depth);  // llama-bench's label
    auto row = [&](const char *test, int n, const Stats &s) {
        std::printf("| %s | %s | %s | %s | %s | %s%d%s | %.2f ± %.2f |\n", desc.c_str(), size, params,
                    info.device ? info.device : "cpu", threads, test, n, at, s.mean, s.stddev);
    };
    if (!pp.empty()) row("pp", o.n_prompt, pps);
    if (!tg.empty()) row("tg", o.n_gen, tgs);
    std::printf("\nvt %s, %s, mean ± stddev of %d repetitions\n", vt_version(), name.c_str(), o.reps);
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    Options o;
    CLI::App app{"vt-bench: prefill (pp) and decode (tg) throughput of a GGUF model"};
    app.footer("pp: one prefill of -p random tokens on a fresh sequence; tg: -n single-token decode\n"
               "steps after one warmup token; with -d, both on a context already D tokens deep.\n"
               "Table: mean ± stddev tokens/s over -r repetitions;\n"
               "--json: one object, pp_tps/tg_tps are means, per-repetition samples included.");
    app.add_option("-m,--model", o.model, "GGUF model file or Hugging Face model folder")->required();
    app.add_option("--quantize", o.quantize,
                   "quantize F32/F16/BF16/FP8 matmul weights at load: Q8_0, Q6_K, Q5_0, Q5_1, Q4_K, Q4_0, Q4_1 or MXFP4");
    vt_examples::add_device_options(app, o.device, o.n_gpu_layers);
    vt_examples::add_weights_memory_option(app, o.weights_memory);
    app.add_option("-p,--n-prompt", o.n_prompt, "prompt tokens for pp, 0 = skip")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 20));
    app.add_option("-n,--n-gen", o.n_gen, "generated tokens for tg, 0 = skip")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 20));
    app.add_option("-d,--n-depth", o.n_depth, "tokens already in the context before each test (untimed)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1 << 20));
    app.add_option("-t,--threads", o.threads, "compute threads, 0 = physical cores")->capture_default_str();
    app.add_option("-r,--repetitions", o.reps, "timed repetitions of each test")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    app.add_option("-b,--batch", o.n_batch, "context n_batch (most tokens per step)")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1u << 20));
    app.add_flag("--json", o.json, "print one JSON object instead of the table");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }
    try {
        return run(o);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "vt-bench: %s\n", e.what());
        return 1;
    }
}
