#include "server-flags.h"

#include <CLI/CLI.hpp>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "vt/vt.h"
#include "../common/devices.h"

namespace vts {

uint64_t parse_size(const std::string &text) {
    size_t i = 0;
    while (i < text.size() && (std::isdigit((unsigned char)text[i]) || text[i] == '.')) ++i;
    if (i == 0) throw std::invalid_argument("not a size: '" + text + "'");
    std::string num = text.substr(0, i);
    std::string unit = text.substr(i);
    while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
    char *end = nullptr;
    const double value = std::strtod(num.c_str(), &end);
    if (end != num.c_str() + num.size() || !std::isfinite(value) || value < 0)
        throw std::invalid_argument("not a size: '" + text + "'");
    std::string u;
    for (char c : unit) u += (char)std::tolower((unsigned char)c);
    double mult = 1;
    static const char *const prefixes = "kmgt";
    if (!u.empty() && u != "b") {
        const char *p = std::strchr(prefixes, u[0]);
        if (p == nullptr) throw std::invalid_argument("unknown size unit in '" + text + "'");
        const int power = (int)(p - prefixes) + 1;
        const std::string rest = u.substr(1);
        double base;
        if (rest.empty() || rest == "ib") base = 1024;  // "2G", "2GiB": binary, as memory is sized
        else if (rest == "b") base = 1000;              // "2GB": decimal
        else throw std::invalid_argument("unknown size unit in '" + text + "'");
        mult = std::pow(base, power);
    }
    const double bytes = std::floor(value * mult);
    if (bytes >= 18446744073709551615.0) throw std::invalid_argument("size too large: '" + text + "'");
    return (uint64_t)bytes;
}

namespace {

// A guard default from the environment; a bad value is reported and ignored.
void env_size(const char *name, uint64_t &out) {
    const char *v = std::getenv(name);
    if (v == nullptr || *v == '\0') return;
    try {
        out = parse_size(v);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "vt-server: ignoring %s: %s\n", name, e.what());
    }
}

// A CLI11 validator that accepts what parse_size accepts.
struct SizeValidator : CLI::Validator {
    SizeValidator() : CLI::Validator("SIZE") {
        func_ = [](std::string &s) -> std::string {
            try {
                parse_size(s);
                return {};
            } catch (const std::exception &e) {
                return e.what();
            }
        };
    }
};

} // namespace

std::optional<int> parse_flags(int argc, char **argv, ServerOptions &o) {
    env_size("VT_SERVER_MAX_BODY_BYTES", o.guards.max_body_bytes);
    env_size("VT_SERVER_MAX_PROMPT_CHARS", o.guards.max_prompt_chars);
    env_size("VT_SERVER_MAX_NEW_TOKENS", o.guards.max_new_tokens);

    CLI::App app{"vt-server: an OpenAI-compatible HTTP server for a GGUF model (libvt " +
                 std::string(vt_version()) + ")"};
    app.footer(
        "Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models,\n"
        "GET /health, GET /version, GET /metrics (Prometheus). With --api-key, /v1/* needs\n"
        "'Authorization: Bearer KEY'; /health, /version and /metrics stay open.\n"
        "LoRA (as vLLM): a request whose \"model\" names an adapter computes with it (the\n"
        "base model's name, or none: without); the body's \"lora_scale\" (vt's extension,\n"
        "default 1) scales it. POST /v1/load_lora_adapter {\"lora_name\", \"lora_path\"} and\n"
        "POST /v1/unload_lora_adapter {\"lora_name\"} add and remove adapters at run time;\n"
        "requests running with one that is unloaded finish with it.\n"
        "Guards (0 disables): VT_SERVER_MAX_BODY_BYTES, VT_SERVER_MAX_PROMPT_CHARS and\n"
        "VT_SERVER_MAX_NEW_TOKENS set their defaults; the flags override them.\n"
        "SIGTERM/SIGINT: stop accepting connections, let requests in flight finish within\n"
        "--grace-period seconds (then cancel them), exit 0. A second signal cancels at once.");
    std::string kv_mem, body_bytes, prompt_chars, new_tokens;
    const SizeValidator size_check;
    app.add_option("-m,--model", o.model, "GGUF model file or Hugging Face model folder")->required();
    app.add_option("--quantize", o.quantize,
                   "quantize F32/F16/BF16/FP8 matmul weights at load: Q8_0, Q6_K, Q5_0, Q5_1, Q4_K, Q4_0, Q4_1 or MXFP4");
    vt_examples::add_device_options(app, o.device, o.n_gpu_layers);
    vt_examples::add_weights_memory_option(app, o.weights_memory);
    app.add_option("--host", o.host, "address to listen on")->capture_default_str();
    app.add_option("--port", o.port, "port to listen on")->capture_default_str()->check(CLI::Range(1, 65535));
    app.add_option("-t,--threads", o.threads, "compute threads, 0 = physical cores")->capture_default_str();
    app.add_option("--http-threads", o.http_threads,
                   "most connection threads (each open connection holds one; they start per connection and "
                   "exit when idle), 0 = 4096 capped by the open-file limit")
        ->capture_default_str();
    app.add_option("--keep-alive-timeout", o.keep_alive_timeout_s,
                   "seconds an idle connection is kept open, before its first request or between requests")
        ->capture_default_str()
        ->check(CLI::Range(1u, 3600u));
    app.add_option("--header-timeout", o.header_timeout_s,
                   "seconds a request's head (request line and headers) may take from its first byte; "
                   "slower clients get 408 and are disconnected (0 = no limit)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 86400.0));
    app.add_option("--body-timeout", o.body_timeout_s,
                   "seconds a request's body may take after its head; slower clients get 408 and are "
                   "disconnected (0 = no limit). Responses (streams, long generations) have no limit")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 86400.0));
    app.add_option("--kv-cache-memory", kv_mem, "KV block pool size (e.g. 2GiB); default: the engine's")
        ->check(size_check);
    app.add_option("--max-num-seqs", o.max_num_seqs, "requests running at once, 0 = engine default (64)")
        ->capture_default_str();
    app.add_option("--max-model-len", o.max_model_len,
                   "tokens per request (prompt + output), 0 = the model's context, capped by the pool")
        ->capture_default_str();
    app.add_option("--n-batch", o.n_batch, "most tokens per forward pass, 0 = engine default (512)")
        ->capture_default_str();
    app.add_option("--kv-block-size", o.kv_block_size, "tokens per KV block, 0 = engine default (16)")
        ->capture_default_str();
    app.add_flag("--no-prefix-caching", o.no_prefix_caching, "do not share KV blocks between requests");
    app.add_option("--speculative-config", o.speculative_config,
                   "speculative decoding as vLLM spells it, a JSON object: {\"method\": \"ngram\", "
                   "\"num_speculative_tokens\": 5, \"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2} (n-gram "
                   "prompt lookup: drafts where the output repeats the input) or {\"method\": \"suffix\"} with "
                   "vLLM's suffix_decoding_* keys (suffix decoding over the request and earlier outputs) or "
                   "{\"model\": \"draft.gguf\", \"num_speculative_tokens\": 4} (a smaller model with the same "
                   "vocabulary, loaded as the model is) or {\"method\": \"mtp\", \"num_speculative_tokens\": 2} "
                   "(the model's own multi-token-prediction layer, Qwen3.5's); the tokens stay those made without "
                   "it. Acceptance: /metrics");
    app.add_option("--api-key", o.api_key, "require 'Authorization: Bearer KEY' on /v1/*");
    app.add_option("--served-model-name", o.served_model_name,
                   "model id clients must name (default: the model file's name)");
    std::string chat_template;
    app.add_option("--chat-template", chat_template,
                   "chat template to use instead of the model's: a Jinja file, or the template itself (as vLLM)");
    app.add_flag("--chat-parse-special-in-content", o.chat_parse_special_in_content,
                 "turn control-token text inside chat messages into control tokens, as vLLM and llama-server do "
                 "(default: only the chat template's own text holds control tokens, so users cannot inject turns)");
    std::vector<std::string> loras;
    app.add_option("--lora", loras,
                   "serve a LoRA adapter (a PEFT folder or a GGUF LoRA file) as the model NAME; repeatable")
        ->type_name("NAME=PATH")
        ->allow_extra_args(false)
        ->check(CLI::Validator(
            [](std::string &s) -> std::string {
                const size_t eq = s.find('=');
                if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
                    return "expected NAME=PATH, got '" + s + "'";
                return {};
            },
            ""));
    app.add_option("--max-body-bytes", body_bytes,
                   "largest request body (413 beyond; 0 = no limit) [" +
                       std::to_string(o.guards.max_body_bytes) + "]")
        ->check(size_check);
    app.add_option("--max-prompt-chars", prompt_chars,
                   "most prompt characters per request (400 beyond; 0 = no limit) [" +
                       std::to_string(o.guards.max_prompt_chars) + "]")
        ->check(size_check);
    app.add_option("--max-new-tokens", new_tokens,
                   "largest max_tokens a request may ask (400 beyond; 0 = no limit) [" +
                       std::to_string(o.guards.max_new_tokens) + "]")
        ->check(size_check);
    app.add_option("--grace-period", o.grace_period_s,
                   "seconds in-flight requests get to finish after SIGTERM")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 86400.0));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }
    // The validators accepted these, so parse_size does not throw here.
    if (!kv_mem.empty()) o.kv_cache_bytes = parse_size(kv_mem);
    if (!body_bytes.empty()) o.guards.max_body_bytes = parse_size(body_bytes);
    if (!prompt_chars.empty()) o.guards.max_prompt_chars = parse_size(prompt_chars);
    if (!new_tokens.empty()) o.guards.max_new_tokens = parse_size(new_tokens);
    if (o.guards.max_new_tokens > UINT32_MAX) o.guards.max_new_tokens = UINT32_MAX;
    if (!chat_template.empty()) {
        std::ifstream f(chat_template, std::ios::binary);
        if (f) o.chat_template.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
        else o.chat_template = chat_template;  // no such file: the template's text
    }
    // The name ends at the first '=': a path may hold more. The names' other
    // rules are the registry's, checked as each is loaded.
    for (const auto &l : loras) {
        const size_t eq = l.find('=');
        o.loras.emplace_back(l.substr(0, eq), l.substr(eq + 1));
    }
    return std::nullopt;
}

} // namespace vts
