#include "tokenizer/tool-calls.h"

#include <nlohmann/json.hpp>

namespace vt::tok {

namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kMistralCallId = "[CALL_ID]";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

size_t skip_space(std::string_view s, size_t i) {
    while (i < s.size() && is_space(s[i])) ++i;
    return i;
}

// p moved back over the whitespace before it.
size_t back_over_space(std::string_view s, size_t p) {
    while (p > 0 && is_space(s[p - 1])) --p;
    return p;
}

std::string rstrip(std::string s) {
    s.resize(back_over_space(s, s.size()));
    return s;
}

bool all_space(std::string_view s) { return skip_space(s, 0) == s.size(); }

// Where `marker` first occurs in s, else where a partial marker at the end of
// s begins (a suffix of s that is a proper prefix of marker), else s.size().
size_t marker_start(std::string_view s, std::string_view marker) {
    const size_t at = s.find(marker);
    if (at != std::string_view::npos) return at;
    const size_t longest = marker.size() - 1 < s.size() ? marker.size() - 1 : s.size();
    for (size_t k = longest; k > 0; --k)
        if (s.substr(s.size() - k) == marker.substr(0, k)) return s.size() - k;
    return s.size();
}

// One past the end of the JSON object or array that opens at s[pos] ('{' or
// '['), found by bracket depth outside strings; npos when it never closes.
// Only the extent: the caller parses the value to check it.
size_t json_extent(std::string_view s, size_t pos) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = pos; i < s.size(); ++i) {
        const char c = s[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') in_string = true;
        else if (c == '{' || c == '[') ++depth;
        else if (c == '}' || c == ']') {
            if (--depth == 0) return i + 1;
        }
    }
    return std::string_view::npos;
}

std::optional<ordered_json> parse_json(std::string_view s) {
    ordered_json j = ordered_json::parse(s.begin(), s.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return std::nullopt;
    return j;
}

std::string dump(const ordered_json &j) { return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

// A call's arguments as JSON text. A string holding JSON (some models
// encode the object) is that JSON; any other string stays a JSON string.
std::string arguments_text(const ordered_json &args) {
    if (args.is_null()) return "{}";
    if (args.is_string()) {
        if (auto inner = parse_json(args.get_ref<const std::string &>())) return dump(*inner);
    }
    return dump(args);
}

std::optional<ToolCall> call_of(const ordered_json &obj) {
    if (!obj.is_object()) return std::nullopt;
    auto name = obj.find("name");
    if (name == obj.end() || !name->is_string() || name->get_ref<const std::string &>().empty()) return std::nullopt;
    auto args = obj.find("arguments");
    if (args == obj.end()) args = obj.find("parameters");
    return ToolCall{name->get<std::string>(), args == obj.end() ? "{}" : arguments_text(*args)};
}

// A JSON array of call objects (at least one) appended to calls.
bool add_calls_of_array(std::string_view s, std::vector<ToolCall> &calls) {
    auto arr = parse_json(s);
    if (!arr || !arr->is_array() || arr->empty()) return false;
    for (const auto &el : *arr) {
        auto call = call_of(el);
        if (!call) return false;
        calls.push_back(std::move(*call));
    }
    return true;
}

ToolCallParse only_content(std::string_view text) { return {std::string(text), {}}; }

ToolCallParse with_calls(std::string content, std::vector<ToolCall> calls) {
    content = rstrip(std::move(content));
    ToolCallParse p;
    if (!all_space(content)) p.content = std::move(content);
    p.calls = std::move(calls);
    return p;
}

ToolCallParse parse_hermes(std::string_view text) {
    std::string content;
    std::vector<ToolCall> calls;
    size_t pos = 0;
    while (true) {
        const size_t open = text.find(kHermesOpen, pos);
        if (open == std::string_view::npos) {
            content.append(text.substr(pos));
            break;
        }
        content.append(text.substr(pos, open - pos));
        const size_t body = open + kHermesOpen.size();
        // NOTE: the last block may lack its closing tag: models often end
        // the turn right after the JSON (vLLM's hermes parser allows it too).
        const size_t close = text.find(kHermesClose, body);
        const std::string_view inner =
            close == std::string_view::npos ? text.substr(body) : text.substr(body, close - body);
        auto j = parse_json(inner);
        auto call = j ? call_of(*j) : std::nullopt;
        if (!call) return only_content(text);
        calls.push_back(std::move(*call));
        if (close == std::string_view::npos) break;
        pos = close + kHermesClose.size();
    }
    if (calls.empty()) return only_content(text);
    return with_calls(std::move(content), std::move(calls));
}

ToolCallParse parse_llama3(std::string_view text) {
    size_t i = skip_space(text, 0);
    if (text.substr(i, kPythonTag.size()) == kPythonTag) i += kPythonTag.size();
    std::vector<ToolCall> calls;
    while (true) {
        i = skip_space(text, i);
        if (i == text.size()) break;
        if (text[i] != '{') return only_content(text);
        const size_t end = json_extent(text, i);
        if (end == std::string_view::npos) return only_content(text);
        auto j = parse_json(text.substr(i, end - i));
        auto call = j ? call_of(*j) : std::nullopt;
        if (!call) return only_content(text);
        calls.push_back(std::move(*call));
        i = skip_space(text, end);
        if (i < text.size() && text[i] == ';') ++i;
    }
    if (calls.empty()) return only_content(text);
    return with_calls("", std::move(calls));
}

ToolCallParse parse_mistral(std::string_view text) {
    std::vector<ToolCall> calls;
    size_t at = text.find(kMistralCalls);
    if (at == std::string_view::npos) {
        // The marker was a control token left out of the text: a bare array.
        const size_t i = skip_space(text, 0);
        if (i == text.size() || text[i] != '[') return only_content(text);
        const size_t end = json_extent(text, i);
        if (end == std::string_view::npos || !all_space(text.substr(end)) ||
            !add_calls_of_array(text.substr(i, end - i), calls))
            return only_content(text);
        return with_calls("", std::move(calls));
    }
    std::string content(text.substr(0, at));
    size_t pos = at;
    while (text.substr(pos, kMistralCalls.size()) == kMistralCalls) {
        pos = skip_space(text, pos + kMistralCalls.size());
        if (pos < text.size() && text[pos] == '[') {
            const size_t end = json_extent(text, pos);
            if (end == std::string_view::npos || !add_calls_of_array(text.substr(pos, end - pos), calls))
                return only_content(text);
            pos = end;
        } else {
            // name[ARGS]{...}, or name[CALL_ID]id[ARGS]{...}
            const size_t args = text.find(kMistralArgs, pos);
            if (args == std::string_view::npos) return only_content(text);
            std::string_view name = text.substr(pos, args - pos);
            name = name.substr(0, name.find(kMistralCallId));
            name = name.substr(0, back_over_space(name, name.size()));
            size_t obj = skip_space(text, args + kMistralArgs.size());
            if (name.empty() || obj == text.size() || text[obj] != '{') return only_content(text);
            const size_t end = json_extent(text, obj);
            if (end == std::string_view::npos) return only_content(text);
            auto j = parse_json(text.substr(obj, end - obj));
            if (!j || !j->is_object()) return only_content(text);
            calls.push_back(ToolCall{std::string(name), dump(*j)});
            pos = end;
        }
        pos = skip_space(text, pos);
    }
    content.append(text.substr(pos));
    return with_calls(std::move(content), std::move(calls));
}

} // namespace

ToolCallFormat detect_tool_call_format(std::string_view src) {
    auto has = [&](std::string_view s) { return src.find(s) != std::string_view::npos; };
    if (has(kMistralCalls)) return ToolCallFormat::mistral;
    if (has(kHermesOpen)) return ToolCallFormat::hermes;
    if (has(kPythonTag)) return ToolCallFormat::llama3_json;
    // Llama 3.2 writes no python tag, only the JSON call format it asks for.
    if (has("<|start_header_id|>") && has("\"parameters\"")) return ToolCallFormat::llama3_json;
    return ToolCallFormat::none;
}

ToolCallParse parse_tool_calls(ToolCallFormat format, std::string_view text) {
    switch (format) {
    case ToolCallFormat::hermes: return parse_hermes(text);
    case ToolCallFormat::llama3_json: return parse_llama3(text);
    case ToolCallFormat::mistral: return parse_mistral(text);
    case ToolCallFormat::none: break;
    }
    return only_content(text);
}

size_t tool_call_content_prefix(ToolCallFormat format, std::string_view text) {
    const size_t first = skip_space(text, 0);
    const std::string_view rest = text.substr(first);
    switch (format) {
    case ToolCallFormat::none: return text.size();
    case ToolCallFormat::hermes: return back_over_space(text, marker_start(text, kHermesOpen));
    case ToolCallFormat::llama3_json:
        // Calls are the whole output: hold it while it may still be one.
        if (rest.empty() || rest[0] == '{') return 0;
        if (rest.substr(0, kPythonTag.size()) == kPythonTag.substr(0, rest.size())) return 0;
        return back_over_space(text, text.size());
    case ToolCallFormat::mistral:
        if (rest.empty() || rest[0] == '[') return 0;  // the marker, or a bare array of calls
        return back_over_space(text, marker_start(text, kMistralCalls));
    }
    return text.size();
}

std::string tool_call_parse_to_json(const ToolCallParse &parse) {
    ordered_json j = ordered_json::object();
    j["content"] = parse.content ? ordered_json(*parse.content) : ordered_json(nullptr);
    j["tool_calls"] = ordered_json::array();
    for (const auto &c : parse.calls) j["tool_calls"].push_back({{"name", c.name}, {"arguments", c.arguments}});
    return dump(j);
}

} // namespace vt::tok
