// OpenAI request bodies -> what vt-server submits: field types and ranges
// are checked here, before any tokenization, and every violation is an
// ApiError (400) naming the field.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server-flags.h"
#include "server-structured.h"
#include "server-tools.h"
#include "vt/vt.h"

namespace vts {

// Sampling parameters; defaults as OpenAI's (temperature 1, nothing else on).
struct SamplingParams {
    double temperature = 1.0;   // 0 = greedy
    double top_p = 1.0;
    int top_k = 0;              // 0 or -1: off
    double min_p = 0.0;
    double presence_penalty = 0.0;
    double frequency_penalty = 0.0;
    double repetition_penalty = 1.0;  // vLLM's extension
    std::optional<uint32_t> seed;
};

struct GenRequest {
    bool chat = false;
    std::string model;                 // "" when the request names none
    // chat: the messages as the template gets them (content parts joined)
    nlohmann::ordered_json messages;
    nlohmann::ordered_json template_extra;     // {"tools": ..., chat_template_kwargs...} or null
    bool add_generation_prompt = true;
    // completions: one entry per prompt, text or token ids
    std::vector<std::string> prompt_texts;
    std::vector<std::vector<vt_token>> prompt_ids;
    std::optional<uint32_t> max_tokens;  // 0 (completions with echo or prompt_logprobs): score the prompt only
    int n = 1;
    std::vector<std::string> stop;
    bool stream = false;
    bool include_usage = false;        // stream_options.include_usage
    bool logprobs = false;
    uint32_t top_logprobs = 0;
    bool ignore_eos = false;           // vLLM's extension
    std::optional<float> lora_scale;   // vt's extension: the adapter's scale (finite)
    SamplingParams sampling;
    std::optional<Constraint> constraint;  // response_format, structured_outputs, guided_*, or the tools'
    std::vector<std::pair<vt_token, float>> logit_bias;
    ToolChoice tools;                  // chat: tools and tool_choice
    bool echo = false;                 // completions: the prompt (and its logprobs) starts each choice
    std::optional<uint32_t> prompt_logprobs;  // vLLM's extension: 0..20 top tokens per prompt token
};

// Parses and checks a request body (already JSON). chat: a
// /v1/chat/completions body, else /v1/completions. n_vocab bounds token ids.
// Throws ApiError.
GenRequest parse_request(const nlohmann::ordered_json &body, bool chat, const Guards &guards, uint32_t n_vocab);

// A sampler chain in llama.cpp's order: the grammar (when given: first, so
// that every later stage sees only allowed tokens), logit_bias, penalties
// (when any is set), then greedy for temperature 0, else top-k, top-p,
// min-p, temperature and a seeded draw. The caller owns the result (which
// holds its own reference to the grammar). Throws ApiError.
vt_sampler *make_sampler(const SamplingParams &p, uint32_t seed, const vt_grammar *grammar = nullptr,
                         const std::vector<std::pair<vt_token, float>> &logit_bias = {});

// Characters (code points) of UTF-8 text.
uint64_t count_chars(const std::string &utf8);

} // namespace vts
