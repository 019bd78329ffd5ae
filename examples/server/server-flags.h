// Command-line flags of vt-server (CLI11) and the request guards' defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vts {

// Limits checked on every request before any tokenization; 0 disables one.
struct Guards {
    uint64_t max_body_bytes = 8ull << 20;  // larger bodies: 413, never buffered
    uint64_t max_prompt_chars = 1000000;   // characters of all prompts/messages: 400
    uint64_t max_new_tokens = 0;           // max_tokens above it: 400 (also the default cap)
};

struct ServerOptions {
    std::string model;
    std::string device;               // --device: a vt_device_info name, "" = the CPU
    int n_gpu_layers = -1;            // --n-gpu-layers
    uint64_t weights_memory = 0;      // --weights-memory
    std::string quantize;             // --quantize: a vt_quant_type name, "" = keep the file's types
    std::string host = "127.0.0.1";
    int port = 8080;
    unsigned threads = 0;             // compute threads, 0 = physical cores
    unsigned http_threads = 0;        // most connection threads, 0 = 4096 (capped by the fd limit)
    unsigned keep_alive_timeout_s = 5;  // an idle connection (before or between requests) is closed after it
    double header_timeout_s = 10;     // a request's head must arrive within it of its first byte (0: no limit)
    double body_timeout_s = 60;       // its body within it of the head's end (0: no limit)
    uint64_t kv_cache_bytes = 0;      // 0 = the engine's default
    uint32_t max_num_seqs = 0;        // 0 = the engine's default (64)
    uint32_t max_model_len = 0;       // 0 = the model's training context, capped by the pool
    uint32_t n_batch = 0;             // 0 = the engine's default (512)
    uint32_t kv_block_size = 0;       // 0 = the engine's default (16)
    bool no_prefix_caching = false;
    std::string speculative_config;   // --speculative-config: vLLM's JSON, "" = no drafts
    std::string api_key;              // empty: no authentication
    std::string served_model_name;    // empty: the model file's name
    std::string chat_template;        // --chat-template: Jinja text (read from the file named), "" = the model's
    bool chat_parse_special_in_content = false;  // --chat-parse-special-in-content: today's injectable tokenizing
    std::vector<std::pair<std::string, std::string>> loras;  // --lora NAME=PATH, in order
    double grace_period_s = 30.0;     // SIGTERM: time in-flight requests get to finish
    Guards guards;
};

// "8MiB", "2GiB", "1.5G", "512k", "1000000": bytes. K/M/G/T and KiB/MiB/...
// are powers of 1024, KB/MB/GB/TB powers of 1000. Throws
// std::invalid_argument for anything else (negative, junk, overflow).
uint64_t parse_size(const std::string &text);

// Reads VT_SERVER_MAX_BODY_BYTES, VT_SERVER_MAX_PROMPT_CHARS and
// VT_SERVER_MAX_NEW_TOKENS into the guard defaults, then the flags (which
// override them). Returns an exit status to end with (help, errors), or
// std::nullopt to go on serving.
std::optional<int> parse_flags(int argc, char **argv, ServerOptions &o);

} // namespace vts
