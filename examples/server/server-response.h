// The state of one HTTP generation request and the OpenAI JSON it answers
// with: chat.completion / text_completion objects, their streamed chunks
// (Server-Sent Events) and usage.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "server-engine.h"

namespace vts {

class Prompter;

// One choice: the output of one engine request.
struct ChoiceState {
    int index = 0;
    std::string text;
    nlohmann::json chat_logprobs = nlohmann::json::array();  // chat: logprobs.content entries
    nlohmann::json tokens = nlohmann::json::array();         // completions: logprobs.tokens
    nlohmann::json token_logprobs = nlohmann::json::array(); //   .token_logprobs
    nlohmann::json top_logprobs = nlohmann::json::array();   //   .top_logprobs
    nlohmann::json text_offset = nlohmann::json::array();    //   .text_offset
    uint32_t n_output = 0;
    vt_finish_reason finish = VT_FINISH_NONE;
    vt_status status = VT_OK;
    bool role_sent = false;  // chat streaming: the first delta carries the role
};

class ResponseBuilder {
public:
    // n_choices engine requests, whose prompts add up to prompt_tokens.
    ResponseBuilder(bool chat, bool stream, bool include_usage, bool logprobs, bool ignore_eos,
                    std::string model, int n_choices, uint64_t prompt_tokens, const Prompter &prompter);

    // Folds events into the choices. When streaming, returns the SSE text
    // to send for them ("" for none).
    std::string consume(const std::vector<TokenEvent> &events);
    bool all_finished() const { return n_finished_ == (int)choices_.size(); }
    // Whether a choice ended with VT_FINISH_ERROR (its status in *status).
    bool failed(vt_status *status) const;
    // After all_finished(): streaming, the usage chunk (if asked) and
    // "data: [DONE]"; otherwise the whole response object.
    std::string final_text() const;
    // An error in the shape of the transport: an SSE "data:" event when
    // streaming, else the error object.
    std::string error_text(int http_status, const std::string &message) const;

private:
    nlohmann::json chunk(nlohmann::json choices) const;
    nlohmann::json usage() const;
    nlohmann::json choice_logprobs(const ChoiceState &c) const;
    // Adds a logprobs entry for ev to c; returns this token's entry for a
    // streamed chunk (null when it has none).
    nlohmann::json add_logprobs(ChoiceState &c, const TokenEvent &ev, size_t text_offset);

    bool chat_, stream_, include_usage_, logprobs_, ignore_eos_;
    std::string id_, model_;
    int64_t created_;
    uint64_t prompt_tokens_;
    const Prompter &prompter_;
    std::vector<ChoiceState> choices_;
    int n_finished_ = 0;
};

// "data: <json>\n\n"
std::string sse(const nlohmann::json &j);

} // namespace vts
