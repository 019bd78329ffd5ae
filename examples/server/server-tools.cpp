#include "server-tools.h"

#include <random>

#include "server-errors.h"

namespace vts {

using json = nlohmann::ordered_json;  // request bodies keep their order

namespace {

const json *field(const json &obj, const char *key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

// A function without parameters takes none: the empty object.
json parameters_of(const json &function) {
    const json *p = field(function, "parameters");
    if (!p || (p->is_object() && p->empty())) return {{"type", "object"}, {"properties", json::object()}};
    return *p;
}

// vLLM's schema for tool_choice "required": an array of at least one call,
// each the name of one tool with that tool's parameters. $defs (and
// definitions) of the tools move to the root, where their $refs point.
json required_schema(const std::vector<const json *> &functions, bool parallel) {
    json any_of = json::array();
    json defs = json::object();
    json definitions = json::object();
    auto hoist = [](json &params, const char *key, json &into) {
        if (!params.is_object() || !params.contains(key)) return;
        if (!params[key].is_object()) throw bad_param("tools", std::string("a tool's '") + key + "' must be an object");
        for (auto it = params[key].begin(); it != params[key].end(); ++it) {
            if (into.contains(it.key()) && into[it.key()] != it.value())
                throw bad_param("tools", "two tools define '" + it.key() + "' in " + key +
                                             " differently (tool_choice 'required' merges them)");
            into[it.key()] = it.value();
        }
        params.erase(key);
    };
    for (const json *f : functions) {
        json params = parameters_of(*f);
        hoist(params, "$defs", defs);
        hoist(params, "definitions", definitions);
        any_of.push_back({{"type", "object"},
                          {"properties", {{"name", {{"type", "string"}, {"enum", {(*f)["name"]}}}}, {"parameters", params}}},
                          {"required", {"name", "parameters"}}});
    }
    json schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", any_of}}}};
    if (!parallel) schema["maxItems"] = 1;
    if (!defs.empty()) schema["$defs"] = defs;
    if (!definitions.empty()) schema["definitions"] = definitions;
    return schema;
}

std::string random_chars(size_t n) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static const char alnum[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    std::string s;
    for (size_t i = 0; i < n; ++i) s += alnum[rng() % 62];
    return s;
}

// tool_choice "required": the array of {"name", "parameters"} objects,
// read in the model's key order.
ToolOutput parse_required(const std::string &text, vt_tool_call_format format) {
    const json arr = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!arr.is_array() || arr.empty()) return {text, {}, std::nullopt};
    ToolOutput out;
    for (const auto &el : arr) {
        if (!el.is_object() || !el.contains("name") || !el["name"].is_string()) return {text, {}, std::nullopt};
        auto args = el.find("parameters");
        if (args == el.end()) args = el.find("arguments");
        out.calls.push_back({make_call_id(format), el["name"].get<std::string>(),
                             args == el.end() ? std::string("{}") : dump_json(*args)});
    }
    return out;
}

} // namespace

ToolChoice parse_tool_choice(const json &body) {
    ToolChoice tc;
    std::vector<const json *> functions;
    if (const json *tools = field(body, "tools")) {
        for (const auto &t : *tools) {
            const json *f = t.is_object() ? field(t, "function") : nullptr;
            if (!f || !f->is_object() || !f->contains("name") || !(*f)["name"].is_string())
                throw bad_param("tools", "each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
            if (t.contains("type") && t["type"] != "function")
                throw bad_param("tools", "only tools of type 'function' are supported");
            if (const json *p = field(*f, "parameters"); p && !p->is_object())
                throw bad_param("tools", "a function's 'parameters' must be a JSON Schema object");
            functions.push_back(f);
        }
    }
    const json *choice = field(body, "tool_choice");
    if (!choice) {
        tc.mode = functions.empty() ? ToolMode::none : ToolMode::parse;
        return tc;
    }
    if (choice->is_string()) {
        const std::string c = choice->get<std::string>();
        if (c == "none") return tc;
        if (c == "auto") {
            tc.mode = functions.empty() ? ToolMode::none : ToolMode::parse;
            return tc;
        }
        if (c != "required")
            throw bad_param("tool_choice", "'tool_choice' must be 'none', 'auto', 'required' or a named function");
        if (functions.empty()) throw bad_param("tool_choice", "tool_choice 'required' needs 'tools'");
        bool parallel = true;
        if (const json *pc = field(body, "parallel_tool_calls"); pc && pc->is_boolean()) parallel = pc->get<bool>();
        tc.mode = ToolMode::required;
        tc.constraint = Constraint{VT_GRAMMAR_JSON_SCHEMA, dump_json(required_schema(functions, parallel)), "tools"};
        return tc;
    }
    const json *fn = choice->is_object() ? field(*choice, "function") : nullptr;
    if (!fn || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
        throw bad_param("tool_choice",
                        "a named 'tool_choice' is {\"type\": \"function\", \"function\": {\"name\": ...}}");
    const std::string name = (*fn)["name"].get<std::string>();
    for (const json *f : functions) {
        if ((*f)["name"] != name) continue;
        tc.mode = ToolMode::named;
        tc.function = name;
        tc.constraint = Constraint{VT_GRAMMAR_JSON_SCHEMA, dump_json(parameters_of(*f)), "tools"};
        return tc;
    }
    throw bad_param("tool_choice", "tool_choice names the function '" + name + "', which is not among 'tools'");
}

ToolOutput parse_tool_output(const ToolChoice &tc, vt_tool_call_format format, const std::string &text) {
    switch (tc.mode) {
    case ToolMode::none: return {text, {}, std::nullopt};
    case ToolMode::named: return {std::nullopt, {{make_call_id(format), tc.function, text}}, std::nullopt};
    case ToolMode::required: return parse_required(text, format);
    case ToolMode::parse: break;
    }
    std::string buf(text.size() + 256, '\0');
    size_t needed = 0;
    vt_status s = vt_chat_parse_tool_calls(format, text.data(), text.size(), buf.data(), buf.size(), &needed);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        buf.resize(needed + 1);
        s = vt_chat_parse_tool_calls(format, text.data(), text.size(), buf.data(), buf.size(), &needed);
    }
    if (s != VT_OK) return {text, {}, std::nullopt};
    buf.resize(needed);
    const json parsed = json::parse(buf, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object() || !parsed.contains("tool_calls") || !parsed["tool_calls"].is_array()) return {text, {}, std::nullopt};
    ToolOutput out;
    if (parsed["content"].is_string()) out.content = parsed["content"].get<std::string>();
    for (const auto &c : parsed["tool_calls"])
        out.calls.push_back({make_call_id(format), c["name"].get<std::string>(), c["arguments"].get<std::string>()});
    if (out.calls.empty()) out.content = text;  // the bytes as generated, not the JSON's U+FFFD
    return out;
}

bool uses_harmony(const ToolChoice &tc, vt_tool_call_format format) {
    return format == VT_TOOL_CALL_FORMAT_HARMONY && (tc.mode == ToolMode::none || tc.mode == ToolMode::parse);
}

ToolOutput parse_harmony_output(const std::string &text) {
    std::string buf(text.size() + 256, '\0');
    size_t needed = 0;
    vt_status s = vt_chat_parse_tool_calls(VT_TOOL_CALL_FORMAT_HARMONY, text.data(), text.size(), buf.data(),
                                           buf.size(), &needed);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        buf.resize(needed + 1);
        s = vt_chat_parse_tool_calls(VT_TOOL_CALL_FORMAT_HARMONY, text.data(), text.size(), buf.data(), buf.size(),
                                     &needed);
    }
    if (s != VT_OK) return {text, {}, std::nullopt};
    buf.resize(needed);
    const json parsed = json::parse(buf, nullptr, /*allow_exceptions=*/false);
    ToolOutput out;
    if (!parsed.is_object()) return {text, {}, std::nullopt};
    if (parsed["content"].is_string()) out.content = parsed["content"].get<std::string>();
    if (parsed["reasoning_content"].is_string()) out.reasoning = parsed["reasoning_content"].get<std::string>();
    for (const auto &c : parsed["tool_calls"])
        out.calls.push_back({make_call_id(VT_TOOL_CALL_FORMAT_HARMONY), c["name"].get<std::string>(),
                             c["arguments"].get<std::string>()});
    return out;
}

size_t releasable_content(const ToolChoice &tc, vt_tool_call_format format, const std::string &text) {
    switch (tc.mode) {
    case ToolMode::none: return text.size();
    case ToolMode::required:
    case ToolMode::named: return 0;
    case ToolMode::parse: break;
    }
    size_t n = 0;
    if (vt_chat_tool_calls_content_prefix(format, text.data(), text.size(), &n) != VT_OK) return 0;
    return n;
}

std::string make_call_id(vt_tool_call_format format) {
    // NOTE: Mistral's template refuses ids that are not 9 alphanumerics, so
    // a conversation sent back with our ids must carry such ones.
    if (format == VT_TOOL_CALL_FORMAT_MISTRAL) return random_chars(9);
    return "call_" + random_chars(24);
}

nlohmann::json tool_call_json(const ToolCall &c, std::optional<int> index) {
    nlohmann::json j = nlohmann::json::object();
    if (index) j["index"] = *index;
    j["id"] = c.id;
    j["type"] = "function";
    j["function"] = {{"name", c.name}, {"arguments", c.arguments}};
    return j;
}

} // namespace vts
