// vt-generate: text completion from the command line, through the public
// C ABI only (include/vt). Streams the continuation of a prompt to stdout and
// a summary (token counts, prefill/decode speed, peak RSS) to stderr.
//
//   vt-generate -m model.gguf -p "Once upon a time" -n 128 --temp 0.7
//   vt-generate -m model.gguf --chat --system "Be brief." -p "What is a llama?"
//
// Every failing vt call ends the program with "vt-generate: <message>" on
// stderr and exit status 1; argument errors exit with CLI11's status.
#include <CLI/CLI.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "vt/vt.h"
#include "../common/devices.h"

namespace {

struct Options {
    std::string model;
    std::string prompt;
    std::string prompt_file;
    std::string quantize;        // --quantize: a vt_quant_type name, "" = keep the file's types
    std::string device;          // --device: a vt_device_info name, "" = the CPU
    int n_gpu_layers = -1;       // --n-gpu-layers
    uint64_t weights_memory = 0;  // --weights-memory
    std::string lora;            // --lora: a PEFT folder or GGUF LoRA, "" = none
    float lora_scale = 1.0f;     // --lora-scale
    int n_predict = 128;
    float temp = 0.8f;
    int top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    float repeat_penalty = 1.0f;
    int repeat_last_n = 64;
    std::optional<uint32_t> seed;
    unsigned threads = 0;
    unsigned n_ctx = 0;
    bool no_parse_special = false;
    bool chat = false;           // the prompt is a user message, rendered by the chat template
    std::optional<std::string> system;
    // The output's constraint (vt_grammar.h), as llama.cpp's flags: at most one.
    std::string grammar, grammar_file, json_schema, json_schema_file, regex;
};

// Prints the error of a failed vt call and tells the caller to stop.
bool failed(vt_status s) {
    if (s == VT_OK) return false;
    const char *msg = vt_last_error();
    std::fprintf(stderr, "vt-generate: %s\n", msg && *msg ? msg : vt_status_str(s));
    return true;
}

struct ModelDel { void operator()(vt_model *m) const { vt_model_destroy(m); } };
struct ContextDel { void operator()(vt_context *c) const { vt_context_destroy(c); } };
struct SeqDel { void operator()(vt_seq *s) const { vt_seq_destroy(s); } };
struct GrammarDel { void operator()(vt_grammar *g) const { vt_grammar_destroy(g); } };
struct LoraDel { void operator()(vt_lora *l) const { vt_lora_destroy(l); } };
struct SamplerDel { void operator()(vt_sampler *s) const { vt_sampler_destroy(s); } };
struct DetokenizerDel { void operator()(vt_detokenizer *d) const { vt_detokenizer_destroy(d); } };
struct ChatTemplateDel { void operator()(vt_chat_template *t) const { vt_chat_template_destroy(t); } };

// One progress line on stderr: rewritten in place on a terminal, printed once
// at the end otherwise (logs stay clean).
struct Progress {
    const char *path;
    bool tty;
    int last = -1;
};

bool on_progress(float p, void *ud) {
    auto *pr = static_cast<Progress *>(ud);
    int pct = (int)(p * 100.0f + 0.5f);
    if (pct < 0) pct = 0;
    if (pct > 100) pct = 100;
    if (pct == pr->last) return true;
    pr->last = pct;
    if (pr->tty) {
        std::fprintf(stderr, "\rloading %s: %3d%%", pr->path, pct);
        if (pct == 100) std::fputc('\n', stderr);
    } else if (pct == 100) {
        std::fprintf(stderr, "loading %s: 100%%\n", pr->path);
    }
    return true;
}

bool read_file(const std::string &path, std::string &out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "vt-generate: cannot read prompt file %s: %s\n", path.c_str(),
                     std::strerror(errno));
        return false;
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    out = ss.str();
    return true;
}

bool tokenize(const vt_tokenizer *tok, const std::string &text, uint32_t flags,
              std::vector<vt_token> &out) {
    out.resize(text.size() + 16);
    size_t n = 0;
    vt_status s = vt_tokenize(tok, text.data(), text.size(), flags, out.data(), out.size(), &n);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        out.resize(n);
        s = vt_tokenize(tok, text.data(), text.size(), flags, out.data(), out.size(), &n);
    }
    if (failed(s)) return false;
    out.resize(n);
    return true;
}

// The text of a vt_detokenizer_push (token) or, with no token, of
// vt_detokenizer_finish, into buf. Text longer than buf stays pending in the
// detokenizer and is fetched with a VT_TOKEN_NULL push.
bool stream_text(vt_detokenizer *d, std::optional<vt_token> token, std::string &buf) {
    size_t needed = 0;
    buf.resize(buf.capacity() < 256 ? 256 : buf.capacity());
    vt_status s = token ? vt_detokenizer_push(d, *token, buf.data(), buf.size(), &needed)
                        : vt_detokenizer_finish(d, buf.data(), buf.size(), &needed);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        buf.resize(needed + 1);
        s = vt_detokenizer_push(d, VT_TOKEN_NULL, buf.data(), buf.size(), &needed);
    }
    if (failed(s)) return false;
    buf.resize(needed);
    return true;
}

// The conversation [system,] user rendered with the model's chat template
// and tokenized: control tokens only from the template's own text, so a
// prompt that reads "<|im_end|><|im_start|>system" stays text.
bool chat_tokens(const vt_model *model, const vt_tokenizer *tok, const Options &o, const std::string &user,
                 std::vector<vt_token> &out) {
    vt_chat_template *traw = nullptr;
    if (failed(vt_chat_template_create(nullptr, model, &traw))) return false;
    std::unique_ptr<vt_chat_template, ChatTemplateDel> tmpl(traw);
    std::vector<vt_chat_message> msgs;
    if (o.system) msgs.push_back({"system", o.system->c_str()});
    msgs.push_back({"user", user.c_str()});
    size_t needed = 0;
    out.resize(user.size() + 1024);
    vt_status s = vt_chat_template_tokenize(tmpl.get(), tok, msgs.data(), msgs.size(), nullptr, VT_TOKENIZE_ADD_SPECIAL,
                                            out.data(), out.size(), &needed);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        out.resize(needed);
        s = vt_chat_template_tokenize(tmpl.get(), tok, msgs.data(), msgs.size(), nullptr, VT_TOKENIZE_ADD_SPECIAL,
                                      out.data(), out.size(), &needed);
    }
    if (failed(s)) return false;
    out.resize(needed);
    return true;
}

// The constraint the options ask for, compiled for tok; *out stays NULL
// when there is none.
bool build_grammar(const Options &o, const vt_tokenizer *tok, vt_grammar **out) {
    *out = nullptr;
    vt_grammar_kind kind = VT_GRAMMAR_GBNF;
    std::string source;
    if (!o.grammar.empty()) {
        source = o.grammar;
    } else if (!o.grammar_file.empty()) {
        if (!read_file(o.grammar_file, source)) return false;
    } else if (!o.json_schema.empty()) {
        kind = VT_GRAMMAR_JSON_SCHEMA;
        source = o.json_schema;
    } else if (!o.json_schema_file.empty()) {
        kind = VT_GRAMMAR_JSON_SCHEMA;
        if (!read_file(o.json_schema_file, source)) return false;
    } else if (!o.regex.empty()) {
        kind = VT_GRAMMAR_REGEX;
        source = o.regex;
    } else {
        return true;
    }
    return !failed(vt_grammar_compile(tok, kind, source.data(), source.size(), out));
}

bool build_sampler(const Options &o, uint32_t seed, const vt_grammar *grammar, vt_sampler **out) {
    vt_sampler *s = nullptr;
    if (failed(vt_sampler_create(&s))) return false;
    std::unique_ptr<vt_sampler, SamplerDel> guard(s);
    // First, so that the truncating stages see only allowed tokens.
    if (grammar && failed(vt_sampler_add_grammar(s, grammar))) return false;
    if (o.repeat_penalty != 1.0f &&
        failed(vt_sampler_add_penalties(s, o.repeat_last_n, o.repeat_penalty, 0.0f, 0.0f)))
        return false;
    if (o.temp <= 0.0f) {
        if (failed(vt_sampler_add_greedy(s))) return false;
    } else {
        if (failed(vt_sampler_add_top_k(s, o.top_k))) return false;
        if (failed(vt_sampler_add_top_p(s, o.top_p, 1))) return false;
        if (failed(vt_sampler_add_min_p(s, o.min_p, 1))) return false;
        if (failed(vt_sampler_add_temp(s, o.temp))) return false;
        if (failed(vt_sampler_add_dist(s, seed))) return false;
    }
    *out = guard.release();
    return true;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run(const Options &o) {
    std::string prompt = o.prompt;
    if (!o.prompt_file.empty() && !read_file(o.prompt_file, prompt)) return 1;

    // Load.
    Progress progress{o.model.c_str(), isatty(fileno(stderr)) != 0};
    vt_model_params mp;
    vt_model_params_init_v2(&mp, sizeof mp);
    mp.progress = on_progress;
    mp.progress_user_data = &progress;
    vt_quant_type quantize = VT_QUANT_NONE;
    if (failed(vt_quant_type_from_name(o.quantize.c_str(), &quantize))) return 1;
    mp.quantize = quantize;
    mp.device = o.device.empty() ? nullptr : o.device.c_str();
    mp.n_gpu_layers = o.n_gpu_layers;
    mp.weights_memory_bytes = o.weights_memory;
    vt_model *mraw = nullptr;
    if (failed(vt_model_load(o.model.c_str(), &mp, &mraw))) {
        if (progress.tty && progress.last >= 0 && progress.last < 100) std::fputc('\n', stderr);
        return 1;
    }
    std::unique_ptr<vt_model, ModelDel> model(mraw);
    if (quantize != VT_QUANT_NONE) {
        vt_model_info info{};
        info.struct_size = sizeof info;
        if (failed(vt_model_get_info(model.get(), &info))) return 1;
        std::fprintf(stderr, "vt-generate: quantized %u weights to %s at load (%u fallback, %u kept): %.1f MiB, %.2f s\n",
                     info.n_quantized, vt_quant_type_name(quantize), info.n_quantize_fallback, info.n_quantize_kept,
                     (double)info.quantized_bytes / (1 << 20), info.quantize_seconds);
    }
    vt_examples::print_placement("vt-generate", model.get());
    const vt_tokenizer *tok = nullptr;
    if (failed(vt_model_tokenizer(model.get(), &tok))) return 1;

    // Tokenize: a raw prompt is the user's own text, so control-token text
    // in it ("<|im_start|>") becomes control tokens unless
    // --no-parse-special. A chat prompt takes them from the template only.
    std::vector<vt_token> prompt_tokens;
    if (o.chat) {
        if (!chat_tokens(model.get(), tok, o, prompt, prompt_tokens)) return 1;
    } else {
        uint32_t flags = VT_TOKENIZE_ADD_SPECIAL;
        if (!o.no_parse_special) flags |= VT_TOKENIZE_PARSE_SPECIAL;
        if (!tokenize(tok, prompt, flags, prompt_tokens)) return 1;
    }
    if (prompt_tokens.empty()) {
        std::fprintf(stderr, "vt-generate: the prompt is empty (no tokens to evaluate)\n");
        return 1;
    }

    // Context, sequence, sampler.
    vt_context_params cp;
    vt_context_params_init(&cp);
    cp.n_threads = o.threads;
    vt_context *craw = nullptr;
    if (failed(vt_context_create(model.get(), &cp, &craw))) return 1;
    std::unique_ptr<vt_context, ContextDel> ctx(craw);
    vt_seq_params sp;
    vt_seq_params_init(&sp);
    sp.n_ctx = o.n_ctx;
    vt_seq *sraw = nullptr;
    if (failed(vt_seq_create(ctx.get(), &sp, &sraw))) return 1;
    std::unique_ptr<vt_seq, SeqDel> seq(sraw);
    if (!o.lora.empty()) {
        vt_lora *lraw = nullptr;
        if (failed(vt_lora_load(model.get(), o.lora.c_str(), &lraw))) return 1;
        std::unique_ptr<vt_lora, LoraDel> lora(lraw);  // the sequence keeps its own reference
        if (failed(vt_seq_set_lora(seq.get(), lora.get(), o.lora_scale))) return 1;
    }

    const uint32_t seed = o.seed ? *o.seed : std::random_device{}();
    vt_grammar *graw = nullptr;
    if (!build_grammar(o, tok, &graw)) return 1;
    std::unique_ptr<vt_grammar, GrammarDel> grammar(graw);  // the sampler keeps its own reference
    vt_sampler *smraw = nullptr;
    if (!build_sampler(o, seed, grammar.get(), &smraw)) return 1;
    std::unique_ptr<vt_sampler, SamplerDel> smpl(smraw);
    // The penalties see the prompt too, as llama.cpp's do; a grammar stage
    // must see only the output, so with one they see only the output.
    if (!grammar)
        for (vt_token t : prompt_tokens)
            if (failed(vt_sampler_accept(smpl.get(), t))) return 1;

    // Prefill.
    auto t_prefill = std::chrono::steady_clock::now();
    if (failed(vt_seq_feed(seq.get(), prompt_tokens.data(), prompt_tokens.size()))) return 1;
    if (failed(vt_seq_step(seq.get()))) return 1;
    const double prefill_s = seconds_since(t_prefill);

    // Decode. The detokenizer continues the prompt's text: chunks never end
    // inside a character, and the first word keeps its leading space.
    vt_detokenizer *draw = nullptr;
    if (failed(vt_detokenizer_create(tok, false, &draw))) return 1;
    std::unique_ptr<vt_detokenizer, DetokenizerDel> detok(draw);
    if (failed(vt_detokenizer_prefill(detok.get(), prompt_tokens.data(), prompt_tokens.size()))) return 1;
    std::string buf;
    bool ends_in_newline = true;
    auto emit = [&](std::string_view bytes) {
        if (bytes.empty()) return;
        std::fwrite(bytes.data(), 1, bytes.size(), stdout);
        std::fflush(stdout);
        ends_in_newline = bytes.back() == '\n';
    };
    int n_gen = 0;
    bool context_full = false;
    auto t_decode = std::chrono::steady_clock::now();
    while (o.n_predict < 0 || n_gen < o.n_predict) {
        const float *logits = nullptr;
        size_t n_vocab = 0;
        if (failed(vt_seq_logits(seq.get(), -1, &logits, &n_vocab))) return 1;
        vt_token t = VT_TOKEN_NULL;
        if (failed(vt_sampler_sample(smpl.get(), logits, n_vocab, &t))) return 1;
        if (vt_token_is_eog(tok, t)) break;
        ++n_gen;
        if (failed(vt_sampler_accept(smpl.get(), t))) return 1;
        if (!stream_text(detok.get(), t, buf)) return 1;
        emit(buf);
        if (o.n_predict >= 0 && n_gen >= o.n_predict) break;
        vt_status s = vt_seq_feed(seq.get(), &t, 1);
        if (s == VT_ERR_CONTEXT_FULL) {
            context_full = true;
            break;
        }
        if (failed(s) || failed(vt_seq_step(seq.get()))) return 1;
    }
    const double decode_s = seconds_since(t_decode);
    if (!stream_text(detok.get(), std::nullopt, buf)) return 1;
    emit(buf);
    if (!ends_in_newline && isatty(fileno(stdout))) std::fputc('\n', stdout);
    std::fflush(stdout);

    // Summary.
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);  // ru_maxrss is in KiB on Linux
    if (context_full) std::fprintf(stderr, "vt-generate: stopped early: the context is full\n");
    std::fprintf(stderr, "vt-generate: prompt %zu tokens, prefill %.2f tokens/s (%.3f s)\n",
                 prompt_tokens.size(), prefill_s > 0 ? prompt_tokens.size() / prefill_s : 0.0,
                 prefill_s);
    std::fprintf(stderr, "vt-generate: generated %d tokens, decode %.2f tokens/s (%.3f s)\n", n_gen,
                 decode_s > 0 ? n_gen / decode_s : 0.0, decode_s);
    std::fprintf(stderr, "vt-generate: peak RSS %.1f MiB, seed %u\n", ru.ru_maxrss / 1024.0, seed);
    vt_engine_stats st{};
    st.struct_size = sizeof st;
    if (vt_context_stats(ctx.get(), &st) == VT_OK && st.fallback_nodes)
        std::fprintf(stderr, "vt-generate: %llu nodes ran on the CPU for the device, %.1f MiB copied\n",
                     (unsigned long long)st.fallback_nodes, st.fallback_bytes / 1048576.0);
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    Options o;
    CLI::App app{"vt-generate: continue a prompt with a GGUF model (libvt " + std::string(vt_version()) +
                 ")"};
    app.footer(
        "The prompt is tokenized with the model's BOS/EOS rules, and text of control tokens in it\n"
        "(e.g. <|im_start|>) becomes those tokens, since it is your own text; pass\n"
        "--no-parse-special to tokenize it as plain text. --temp 0 samples greedily.\n"
        "With --chat the prompt is one user message (after --system's, if given) rendered by\n"
        "the model's chat template, ending with the assistant's turn header.\n"
        "Generated text goes to stdout, the load line and a summary to stderr.");
    app.add_option("-m,--model", o.model, "GGUF model file or Hugging Face model folder")->required();
    app.add_option("--quantize", o.quantize,
                   "quantize F32/F16/BF16/FP8 matmul weights at load: Q8_0, Q6_K, Q5_0, Q5_1, Q4_K, Q4_0, Q4_1 or MXFP4");
    vt_examples::add_device_options(app, o.device, o.n_gpu_layers);
    vt_examples::add_weights_memory_option(app, o.weights_memory);
    auto *lora_opt = app.add_option("--lora", o.lora, "LoRA adapter: a PEFT folder or a GGUF LoRA (llama.cpp's)");
    app.add_option("--lora-scale", o.lora_scale, "the adapter's scale, 0 = the base model")
        ->capture_default_str()
        ->needs(lora_opt);

    auto *p_opt = app.add_option("-p,--prompt", o.prompt, "prompt text");
    auto *f_opt = app.add_option("-f,--file", o.prompt_file, "read the prompt from a file");
    p_opt->excludes(f_opt);
    app.add_option("-n,--n-predict", o.n_predict, "tokens to generate, -1 = until end of generation")
        ->capture_default_str()
        ->check(CLI::Range(-1, 1 << 30));
    app.add_option("--temp", o.temp, "temperature; <= 0 = greedy")->capture_default_str();
    app.add_option("--top-k", o.top_k, "top-k, 0 = off")->capture_default_str();
    app.add_option("--top-p", o.top_p, "top-p, 1 = off")->capture_default_str()->check(CLI::Range(0.0, 1.0));
    app.add_option("--min-p", o.min_p, "min-p, 0 = off")->capture_default_str()->check(CLI::Range(0.0, 1.0));
    app.add_option("--repeat-penalty", o.repeat_penalty, "repetition penalty over the last tokens, 1 = off")
        ->capture_default_str();
    app.add_option("--repeat-last-n", o.repeat_last_n, "tokens the repetition penalty looks back, -1 = all")
        ->capture_default_str();
    app.add_option("-s,--seed", o.seed, "RNG seed (default: random, printed in the summary)");
    app.add_option("-t,--threads", o.threads, "compute threads, 0 = physical cores")->capture_default_str();
    app.add_option("-c,--ctx", o.n_ctx, "context size in tokens, 0 = model default")->capture_default_str();
    auto *nps_opt = app.add_flag("--no-parse-special", o.no_parse_special,
                                 "tokenize control-token text in the prompt as plain text");
    auto *chat_opt = app.add_flag("--chat", o.chat,
                                  "the prompt is a user message: render it with the model's chat template");
    chat_opt->excludes(nps_opt);
    app.add_option("--system", o.system, "system message before the prompt (with --chat)")->needs(chat_opt);
    auto *g1 = app.add_option("--grammar", o.grammar, "constrain the output to a GBNF grammar (llama.cpp's format)");
    auto *g2 = app.add_option("--grammar-file", o.grammar_file, "constrain the output to the GBNF grammar of a file");
    auto *g3 = app.add_option("-j,--json-schema", o.json_schema, "constrain the output to JSON valid against a schema");
    auto *g4 = app.add_option("--json-schema-file", o.json_schema_file, "as --json-schema, the schema read from a file");
    auto *g5 = app.add_option("--regex", o.regex, "constrain the output to a regular expression (whole output)");
    for (auto *a : {g1, g2, g3, g4, g5})
        for (auto *b : {g1, g2, g3, g4, g5})
            if (a != b) a->excludes(b);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }
    if (p_opt->count() == 0 && f_opt->count() == 0) {
        std::fprintf(stderr, "vt-generate: no prompt: pass -p TEXT or -f FILE\n");
        return 2;
    }
    try {
        return run(o);
    } catch (const std::exception &e) {  // bad_alloc in the example's own code
        std::fprintf(stderr, "vt-generate: %s\n", e.what());
        return 1;
    }
}
