// Per-request output state of the serving engine: the text a request may
// show (streaming detokenization, stop strings held back until they cannot
// match), its sampler, and the log-probabilities of its tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/lora.h"
#include "sample/sampler.h"
#include "tokenizer/detok-stream.h"
#include "vt/vt_engine.h"

namespace vt {

// What a request asks for, validated by the caller (lib/api).
struct RequestSpec {
    std::vector<int32_t> prompt;
    uint32_t max_tokens = 0;              // 0: until max_model_len
    std::unique_ptr<Sampler> sampler;     // null: greedy
    std::vector<int32_t> stop_tokens;
    std::vector<std::string> stop_strings;
    bool ignore_eos = false;
    bool logprobs = false;
    uint32_t top_logprobs = 0;
    vt_request_callback callback = nullptr;
    void *user_data = nullptr;
    std::shared_ptr<const LoraAdapter> lora;  // null: the base model
    float lora_scale = 1.0f;
    bool prompt_logprobs = false;         // is_prompt events for prompt tokens 1..n-1
    uint32_t prompt_top_logprobs = 0;
    bool render_special = false;          // control tokens shown in the text
    bool no_speculation = false;          // never drafts (EngineConfig::ngram)
    uint32_t spec_k = 0;                  // the most draft tokens a step; 0: the engine's k
};

// One event with the storage its pointers point into.
struct OwnedEvent {
    vt_request_output out{};
    std::string text;
    std::vector<int32_t> top_tokens;
    std::vector<float> top_logprobs;

    // Points out's pointers at this object's storage (after a copy or move).
    void fix_pointers();
};

// The text side of one request. Not thread-safe (engine thread only).
class RequestText {
public:
    RequestText(const Tokenizer &tok, const RequestSpec &spec);

    // Adds a generated token's text; appends to shown what may be shown now.
    // Returns true when a stop string matched: shown then ends just before
    // it and the request must stop.
    bool push(int32_t token, std::string &shown);

    // The request ends for another reason: appends everything held back.
    void flush(std::string &shown);

private:
    // Length of the longest suffix of held_ that is a proper prefix of a stop string.
    size_t partial_stop_suffix() const;

    const std::vector<std::string> &stops_;
    tok::DecodeStream detok_;
    std::string held_;  // decoded, not shown yet
};

// Log-probabilities of a logits row (log-softmax of the raw logits, as
// OpenAI's and vLLM's logprobs): token's, and the top n (most likely first,
// ties by lower id).
void token_logprobs(const float *logits, size_t n_vocab, int32_t token, uint32_t top_n, float &logprob,
                    std::vector<int32_t> &top_tokens, std::vector<float> &top_logprobs);

} // namespace vt
