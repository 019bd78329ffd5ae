// Tool calls in a model's output: which syntax a chat template teaches the
// model (detected from the template's source), and the output split into
// plain content and calls. The public face is vt_chat.h
// (vt_chat_template_tool_call_format, vt_chat_parse_tool_calls,
// vt_chat_tool_calls_content_prefix); the values of ToolCallFormat are those
// of vt_tool_call_format.
//
// The three families, as vLLM's parsers of the same names read them:
//   hermes       <tool_call>{"name": .., "arguments": {..}}</tool_call>, any
//                number, text around them (Hermes 2 Pro, Qwen 2.5 / 3);
//   llama3_json  the whole output is {"name": .., "parameters": {..}}, or
//                several joined by ';', after an optional <|python_tag|>
//                (Llama 3.1 / 3.2 / 3.3);
//   mistral      [TOOL_CALLS][{"name": .., "arguments": {..}}, ...], or
//                [TOOL_CALLS]name[ARGS]{..} (newer tokenizers); text before
//                the marker is content. [TOOL_CALLS] is a control token that
//                a detokenizer skipping special tokens drops: an output that
//                is only such a JSON array is read as calls too.
// "arguments" and "parameters" are accepted in every family.
//
// A call that does not parse (invalid JSON, no string "name") makes the whole
// output content with no calls, so a caller never gets half of a malformed
// answer as calls.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vt::tok {

enum class ToolCallFormat { none = 0, hermes = 1, llama3_json = 2, mistral = 3 };

// The syntax a chat template's source teaches, from the markers it writes:
// [TOOL_CALLS] -> mistral, <tool_call> -> hermes, <|python_tag|> or a Llama 3
// header with a "parameters" call format -> llama3_json; else none.
ToolCallFormat detect_tool_call_format(std::string_view template_source);

struct ToolCall {
    std::string name;
    std::string arguments;  // JSON text (compact), "{}" when the call gave none
};

struct ToolCallParse {
    // With calls: the text outside them in order, trailing whitespace
    // removed, nullopt when nothing else is left. Without calls: the whole
    // text as it was.
    std::optional<std::string> content;
    std::vector<ToolCall> calls;
};

ToolCallParse parse_tool_calls(ToolCallFormat format, std::string_view text);

// The length of the longest prefix of a growing output that is content
// whatever follows: a call cannot start in it, and it does not end in
// whitespace (which is dropped before a call). The content of any
// completion of `text` begins with this prefix, so a stream may show it.
size_t tool_call_content_prefix(ToolCallFormat format, std::string_view text);

// {"content": string|null, "tool_calls": [{"name": .., "arguments": ".."}]};
// bytes that are not UTF-8 become U+FFFD.
std::string tool_call_parse_to_json(const ToolCallParse &parse);

} // namespace vt::tok
