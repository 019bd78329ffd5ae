// Prompt text -> token ids for vt-server: plain completions prompts, and
// chat messages rendered with the model's chat template.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "vt/vt.h"

namespace vts {

class Prompter {
public:
    // model must outlive the Prompter. template_source: a chat template to
    // use instead of the model's ("" = the model's). A model without a chat
    // template (or with one vt cannot parse) still serves /v1/completions;
    // chat requests then fail with 400 and the reason, logged once here.
    // parse_special_in_content: control-token text inside messages becomes
    // control tokens too (--chat-parse-special-in-content).
    explicit Prompter(const vt_model *model, const std::string &template_source = "",
                      bool parse_special_in_content = false);
    ~Prompter();
    Prompter(const Prompter &) = delete;
    Prompter &operator=(const Prompter &) = delete;

    // A completions prompt: the model's BOS/EOS rules apply, and text of
    // control tokens becomes those tokens (as Hugging Face encode() and vLLM
    // do). Throws ApiError (400) for text the tokenizer refuses.
    std::vector<vt_token> tokenize_text(const std::string &text) const;

    // Chat messages (a JSON array of message objects, already validated)
    // rendered by the template with `extra` (an object of further template
    // variables, or null), then tokenized with control tokens parsed in the
    // template's own text only (vt_chat_template_tokenize_json; everywhere
    // with parse_special_in_content) and BOS added only when the rendered
    // text does not begin with it.
    // Throws ApiError (400) when the template refuses the conversation.
    std::vector<vt_token> tokenize_chat(const nlohmann::ordered_json &messages, const nlohmann::ordered_json &extra,
                                        bool add_generation_prompt) const;

    // Bytes of one token as it appears in text (control tokens rendered).
    std::string piece(vt_token token) const;

    // Text of a token sequence (control tokens rendered): the echo of a
    // prompt given as token ids.
    std::string detokenize(const std::vector<vt_token> &tokens) const;

    // Why there is no chat template ("" when there is one).
    const std::string &template_error() const { return tmpl_error_; }

    // The tool-call syntax the chat template teaches (none without one).
    vt_tool_call_format tool_format() const { return tool_format_; }

    // A harmony template's ends of generation: the ids of <|return|> and
    // <|call|> (whichever the vocabulary has as one token), so that a
    // model whose own end-of-generation set lacks them still stops.
    const std::vector<vt_token> &harmony_stops() const { return harmony_stops_; }

    const vt_tokenizer *tokenizer() const { return tok_; }

private:
    std::vector<vt_token> tokenize(const std::string &text, uint32_t flags) const;

    const vt_model *model_;
    const vt_tokenizer *tok_ = nullptr;
    vt_chat_template *tmpl_ = nullptr;
    std::string tmpl_error_;  // why there is no template
    std::string bos_text_;    // text of the BOS token, "" without one
    bool parse_special_in_content_ = false;
    vt_tool_call_format tool_format_ = VT_TOOL_CALL_FORMAT_NONE;
    std::vector<vt_token> harmony_stops_;
};

} // namespace vts
