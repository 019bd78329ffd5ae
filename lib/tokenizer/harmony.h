//! OpenAI's harmony response format (gpt-oss), read from a completion's text.
//! Reference: the format as openai-harmony (PyPI, github.com/openai/harmony)
//! renders and parses it; its StreamableParser is the oracle of
//! tests/chat/test_harmony.py. Self-contained: text in, split out.
//!
//! A completion continues a prompt that ends with "<|start|>assistant", so it
//! opens inside the header of the first message:
//!
//!   <|channel|>analysis<|message|>Let me think.<|end|>
//!   <|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>
//!   <|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}<|call|>
//!
//! A header (up to <|message|>) names the role (not in the first one), the
//! channel (after <|channel|>), a recipient (" to=...", before or after the
//! channel) and a content type. A message's text runs to <|end|>, <|return|>
//! or <|call|>; every other marker inside it is text, as openai-harmony reads
//! it. Messages are routed, as vLLM serves gpt-oss:
//!   recipient functions.NAME       -> a tool call NAME, its text the arguments
//!                                     (JSON text as the model wrote it);
//!   channel analysis, or another   -> reasoning_content (built-in tools such
//!     recipient (browser, python)     as browser.search are the model's own);
//!   anything else (final, commentary without recipient, no channel) -> content.
//! Messages of one kind are concatenated.
//!
//! Fallbacks, never an error: a completion whose first bytes cannot begin a
//! header ("Hello", a JSON object a grammar forced) is content as a whole; a
//! header that is cut off (no <|message|> before the end; "<|chan" and " to"
//! count as its beginning) is dropped, as openai-harmony drops it; a
//! message cut off is kept as far as it came; text between messages (after an
//! end marker, before <|start|>) that is not whitespace is content; a header
//! that grows past kMaxHeader bytes is not one: it and the rest are content.
//!
//! The markers are the text of gpt-oss's control tokens, so the text must be
//! detokenized with special tokens rendered. A message's own text that spells
//! "<|end|>" is read as the marker (the text cannot tell them apart).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tool-calls.h"

namespace vt::tok {

// Whether a chat template writes harmony: its source holds the markers of a
// header, a message and a channel.
bool is_harmony_template(std::string_view template_source);

struct HarmonyDelta {
    enum class Kind { reasoning, content, call_begin, call_arguments };
    Kind kind;
    int call = -1;     // call_begin / call_arguments: the call's index
    std::string text;  // the new text; call_begin: the function's name
};

struct HarmonyResult {
    std::optional<std::string> content;    // nullopt: no content message
    std::optional<std::string> reasoning;  // nullopt: no reasoning message
    std::vector<ToolCall> calls;           // arguments: the text as written
};

// Reads a completion piece by piece. push() appends the deltas that the new
// text makes certain; a possible marker at the end (e.g. "<|e") is held back
// until the next piece or finish(). The concatenated deltas of each kind are
// the result's fields, whatever the chunking.
class HarmonyParser {
public:
    static constexpr size_t kMaxHeader = 1024;

    void push(std::string_view text, std::vector<HarmonyDelta> &out);
    // The completion ended: held-back text of a message is emitted, a
    // header in progress dropped. Later pushes are ignored.
    void finish(std::vector<HarmonyDelta> &out);
    const HarmonyResult &result() const { return result_; }

private:
    enum class State { header, content, between, plain, done };
    enum class Target { content, reasoning, call };

    void step(std::vector<HarmonyDelta> &out, bool at_end);
    bool step_header(std::vector<HarmonyDelta> &out, bool at_end);
    bool step_content(std::vector<HarmonyDelta> &out, bool at_end);
    bool step_between(std::vector<HarmonyDelta> &out, bool at_end);
    void open_message(std::vector<HarmonyDelta> &out, std::string_view header);
    void emit(std::vector<HarmonyDelta> &out, std::string_view text);
    void emit_as(std::vector<HarmonyDelta> &out, Target target, std::string_view text);

    State state_ = State::header;
    bool first_ = true;      // the first header: no role, and may turn out plain text
    Target target_ = Target::content;
    std::string buf_;        // text not yet consumed
    std::string junk_;       // whitespace between messages, held
    bool junk_shown_ = false;  // this gap's text is being shown as content
    HarmonyResult result_;
};

// The whole completion at once.
HarmonyResult parse_harmony(std::string_view text);

// {"content": s|null, "reasoning_content": s|null,
//  "tool_calls": [{"name": .., "arguments": ".."}]}; invalid UTF-8 -> U+FFFD.
std::string harmony_result_to_json(const HarmonyResult &r);

// A JSON array of the deltas (push() merges consecutive ones of a kind):
// {"reasoning_content": s}, {"content": s},
// {"tool_call": {"index": i, "name": s}}, {"tool_call": {"index": i, "arguments": s}}.
std::string harmony_deltas_to_json(const std::vector<HarmonyDelta> &deltas);

} // namespace vt::tok
