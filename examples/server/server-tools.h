// Tool calling in vt-server, as vLLM serves it:
//   tool_choice "none"      tools still reach the template; nothing is parsed;
//   "auto" (the default     the output is parsed for calls in the syntax the
//    with tools)            template teaches (vt_chat_template_tool_call_format);
//   "required"              the output is constrained to a JSON array of calls
//                           [{"name": <a tool>, "parameters": <its schema>}],
//                           at least one, and parsed as such;
//   {"type": "function",    the output is constrained to that function's
//    "function": {"name"}}  parameters schema and is the call's arguments.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "server-structured.h"
#include "vt/vt.h"

namespace vts {

enum class ToolMode { none, parse, required, named };

struct ToolChoice {
    ToolMode mode = ToolMode::none;  // parse: only when the template has a format (see resolve)
    std::string function;            // named: the function
    std::optional<Constraint> constraint;  // required / named: the schema of the output
};

// tools and tool_choice of a chat body (tools already checked to be a list).
// Throws ApiError for an unknown tool_choice, a named function that is not
// among the tools, or tools without a function name.
ToolChoice parse_tool_choice(const nlohmann::ordered_json &body);

struct ToolCall {
    std::string id;         // "call_" + 24 characters; Mistral's 9, which its template checks
    std::string name;
    std::string arguments;  // JSON text
};

// A choice's output split into content and calls (and, for harmony, the
// reasoning).
struct ToolOutput {
    std::optional<std::string> content;  // null when the output was only calls
    std::vector<ToolCall> calls;
    std::optional<std::string> reasoning;  // harmony: the analysis channel
};

// gpt-oss (a harmony template) answers in channels: the output, with its
// control tokens as text, is read by vt's harmony parser whatever the
// tool_choice, except "required" and a named function, whose output a
// grammar makes the calls' JSON (read as before).
bool uses_harmony(const ToolChoice &tc, vt_tool_call_format format);

// The whole harmony output: content, reasoning and calls (ids made here).
ToolOutput parse_harmony_output(const std::string &text);

// The whole output of a choice: parse mode through vt_chat_parse_tool_calls,
// required mode as the JSON array it was constrained to, named mode as the
// arguments of its one call. Output that holds no valid calls is content.
ToolOutput parse_tool_output(const ToolChoice &tc, vt_tool_call_format format, const std::string &text);

// The bytes of a growing output that may be streamed as content now: in
// parse mode vt_chat_tool_calls_content_prefix, in required and named mode
// none (their output is calls), else all.
size_t releasable_content(const ToolChoice &tc, vt_tool_call_format format, const std::string &text);

std::string make_call_id(vt_tool_call_format format);

// OpenAI's message.tool_calls entry; with index for a streamed delta.
nlohmann::json tool_call_json(const ToolCall &c, std::optional<int> index = std::nullopt);

} // namespace vts
