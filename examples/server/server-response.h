// The state of one HTTP generation request and the OpenAI JSON it answers
// with: chat.completion / text_completion objects, their streamed chunks
// (Server-Sent Events) and usage; the echoed prompt and prompt logprobs of
// completions, and the tool calls of chat answers.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server-engine.h"
#include "server-tools.h"

namespace vts {

class Prompter;

// What the answer holds, beyond the choices' text.
struct ResponseOptions {
    bool chat = false, stream = false, include_usage = false;
    bool logprobs = false;         // logprobs of the output tokens
    uint32_t top_logprobs = 0;     //   their top entries (completions: echoed prompt tokens too)
    bool ignore_eos = false;
    bool echo = false;             // completions: each choice starts with its prompt
    bool score_only = false;       // max_tokens 0: the one token generated is dropped
    std::optional<uint32_t> prompt_logprobs;  // vLLM's prompt_logprobs field, this many top entries
    ToolChoice tools;              // chat
    vt_tool_call_format tool_format = VT_TOOL_CALL_FORMAT_NONE;
    bool harmony = false;          // chat, the output read as harmony (uses_harmony)
    std::string model;
};

// One prompt of the request: its ids and the text an echo shows.
struct PromptInfo {
    std::vector<vt_token> ids;
    std::string text;
};

// A prompt token's log-probability given the tokens before it.
struct PromptLogprob {
    vt_token token = -1;
    float logprob = 0.0f;
    std::vector<std::pair<vt_token, float>> top;
};

// One choice: the output of one engine request.
struct ChoiceState {
    int index = 0;
    int prompt = 0;          // index into the request's prompts
    std::string text;
    nlohmann::json chat_logprobs = nlohmann::json::array();  // chat: logprobs.content entries
    nlohmann::json tokens = nlohmann::json::array();         // completions: logprobs.tokens
    nlohmann::json token_logprobs = nlohmann::json::array(); //   .token_logprobs
    nlohmann::json top_logprobs = nlohmann::json::array();   //   .top_logprobs
    nlohmann::json text_offset = nlohmann::json::array();    //   .text_offset
    std::vector<PromptLogprob> prompt_lp;  // prompt tokens from the second on
    uint32_t n_output = 0;
    vt_finish_reason finish = VT_FINISH_NONE;
    vt_status status = VT_OK;
    bool role_sent = false;  // chat streaming: the first delta carries the role
    bool echoed = false;     // completions streaming: the prompt went out
    size_t sent = 0;         // chat with tools: bytes of text sent as content
    std::string call_id;     // tool_choice naming a function, streaming: the call's id
    std::optional<ToolOutput> tool_out;  // chat with tools, once finished
    // Harmony, streaming: the parser of this choice's output and the ids of
    // the calls it has begun.
    std::shared_ptr<vt_harmony_parser> harmony;
    std::vector<std::string> call_ids;
};

class ResponseBuilder {
public:
    // n_per_prompt engine requests per prompt, in prompt order.
    ResponseBuilder(ResponseOptions opts, std::vector<PromptInfo> prompts, int n_per_prompt,
                    const Prompter &prompter);

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
    const char *finish_reason(const ChoiceState &c) const;
    // Adds a logprobs entry for ev to c; returns this token's entry for a
    // streamed chunk (null when it has none).
    nlohmann::json add_logprobs(ChoiceState &c, const TokenEvent &ev, size_t text_offset);
    // Completions with echo and logprobs: the prompt tokens' part of
    // logprobs (the first token has none: null).
    nlohmann::json echo_logprobs(const ChoiceState &c) const;
    // vLLM's prompt_logprobs: [null, {"<id>": {logprob, rank, decoded_token}}, ...].
    nlohmann::json vllm_prompt_logprobs(const ChoiceState &c) const;
    // Completions: the legacy top_logprobs object of a token, the chosen
    // token included as OpenAI does.
    nlohmann::json top_object(vt_token chosen, float logprob, const std::vector<std::pair<vt_token, float>> &top,
                              uint32_t n) const;
    // Streaming chat: the chunks of one event's text (content, or the named
    // function's arguments), and at the choice's end its calls.
    std::string chat_chunks(ChoiceState &c, const TokenEvent &ev, const nlohmann::json &lp);
    // Harmony: the deltas that the event's text adds (reasoning_content,
    // content, tool calls), as vLLM streams gpt-oss.
    std::string harmony_chunks(ChoiceState &c, const TokenEvent &ev, nlohmann::json lp);
    std::string completion_chunks(ChoiceState &c, const TokenEvent &ev, const nlohmann::json &lp);
    std::string delta_chunk(const ChoiceState &c, nlohmann::json delta, nlohmann::json lp) const;
    nlohmann::json message(const ChoiceState &c) const;

    ResponseOptions o_;
    std::vector<PromptInfo> prompts_;
    std::string id_;
    int64_t created_;
    uint64_t prompt_tokens_ = 0;
    const Prompter &prompter_;
    std::vector<ChoiceState> choices_;
    int n_finished_ = 0;
};

// "data: <json>\n\n"
std::string sse(const nlohmann::json &j);

} // namespace vts
