// vt_chat_template shims: a parsed vt::jinja::Template plus the model's
// BOS/EOS texts, and the context transformers' apply_chat_template passes to
// a template (messages, tools, documents, add_generation_prompt, bos_token,
// eos_token, then the caller's extra keys). The tool-call parsers
// (tokenizer/tool-calls.h) behind vt_chat_parse_tool_calls, and the harmony
// parser (tokenizer/harmony.h) behind VT_TOOL_CALL_FORMAT_HARMONY and
// vt_harmony_parser.
#include <algorithm>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api-handles.h"
#include "api/api-internal.h"
#include "tokenizer/harmony.h"
#include "tokenizer/jinja/jinja.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tool-calls.h"
#include "tokenizer/utf8.h"

using vt::api::copy_out;
using vt::api::fail_arg;
using vt::api::guard;
using ordered_json = nlohmann::ordered_json;

struct vt_chat_template {
    explicit vt_chat_template(std::string_view source)
        : tmpl(source), tool_format(vt::tok::detect_tool_call_format(source)),
          harmony(vt::tok::is_harmony_template(source)) {}
    vt::jinja::Template tmpl;
    vt::tok::ToolCallFormat tool_format;
    bool harmony;  // VT_TOOL_CALL_FORMAT_HARMONY, which ToolCallFormat does not name
    std::string bos_token;  // the model's, "" without one
    std::string eos_token;
};

using vt::tok::ToolCallFormat;
static_assert((int)ToolCallFormat::none == VT_TOOL_CALL_FORMAT_NONE &&
              (int)ToolCallFormat::hermes == VT_TOOL_CALL_FORMAT_HERMES &&
              (int)ToolCallFormat::llama3_json == VT_TOOL_CALL_FORMAT_LLAMA3_JSON &&
              (int)ToolCallFormat::mistral == VT_TOOL_CALL_FORMAT_MISTRAL,
              "vt_tool_call_format and vt::tok::ToolCallFormat must agree");

namespace {

std::string special_text(const vt::Tokenizer &tok, int32_t id) {
    return id < 0 ? std::string() : tok.token_to_piece(id, /*render_special=*/true);
}

// A C string that becomes a template string: checked here so that a bad
// byte is reported as the caller's, with the field it came from.
std::string checked_text(const char *s, const char *what) {
    std::string_view v(s);
    size_t bad = vt::tok::utf8_find_invalid(v);
    if (bad != std::string_view::npos)
        vt::fail(VT_ERR_INVALID_UTF8, "%s is not valid UTF-8 (byte offset %zu)", what, bad);
    return std::string(v);
}

ordered_json parse_json(const char *text, const char *what) {
    try {
        return ordered_json::parse(text);
    } catch (const ordered_json::exception &e) {
        // nlohmann reports invalid UTF-8 as a parse error too.
        vt::fail(VT_ERR_FORMAT, "%s is not valid JSON: %s", what, e.what());
    }
}

// A caller's vt_tool_call_format, checked: it may hold any int.
bool tool_format_of(vt_tool_call_format f, ToolCallFormat *out) {
    switch (f) {
    case VT_TOOL_CALL_FORMAT_NONE:
    case VT_TOOL_CALL_FORMAT_HERMES:
    case VT_TOOL_CALL_FORMAT_LLAMA3_JSON:
    case VT_TOOL_CALL_FORMAT_MISTRAL: *out = (ToolCallFormat)f; return true;
    case VT_TOOL_CALL_FORMAT_HARMONY: return false;  // no ToolCallFormat: the callers read it themselves
    }
    return false;
}

vt_chat_params params_or_defaults(const vt_chat_params *params) {
    vt_chat_params p;
    vt_chat_params_init(&p);
    if (!params) return p;
    if (params->struct_size < offsetof(vt_chat_params, add_generation_prompt) + sizeof(bool))
        vt::fail(VT_ERR_INVALID_ARGUMENT, "params->struct_size is too small; call vt_chat_params_init");
    std::memcpy(&p, params, params->struct_size < sizeof p ? params->struct_size : sizeof p);
    p.struct_size = sizeof p;
    return p;
}

// transformers (5.24 on) fills a message's reasoning under all the names
// templates read: "thinking" (gpt-oss's template) first, then the message's
// own keys, then "reasoning_content" (what vLLM returns and clients send
// back), both from the first non-null of reasoning_content, thinking,
// reasoning. Idempotent, so messages already normalized render the same.
ordered_json alias_reasoning(ordered_json messages) {
    if (!messages.is_array()) return messages;
    for (ordered_json &m : messages) {
        if (!m.is_object()) continue;
        const ordered_json *reasoning = nullptr;
        for (const char *key : {"reasoning_content", "thinking", "reasoning"}) {
            auto it = m.find(key);
            if (it != m.end() && !it->is_null()) {
                reasoning = &*it;
                break;
            }
        }
        if (!reasoning) continue;
        ordered_json out = ordered_json::object();
        out["thinking"] = *reasoning;
        for (auto it = m.begin(); it != m.end(); ++it) out[it.key()] = it.value();
        out["reasoning_content"] = *reasoning;
        m = std::move(out);
    }
    return messages;
}

// The variables the template sees, in transformers' order. `data` receives
// the keys that hold the caller's data (everything but add_generation_prompt
// and the bos/eos texts of params or the model).
ordered_json make_context(const vt_chat_template &t, ordered_json messages, const vt_chat_params &p,
                          std::vector<std::string> *data = nullptr) {
    std::vector<std::string> keys{"messages", "tools", "documents"};
    ordered_json ctx = ordered_json::object();
    ctx["messages"] = alias_reasoning(std::move(messages));
    ctx["tools"] = nullptr;
    ctx["documents"] = nullptr;
    ctx["add_generation_prompt"] = p.add_generation_prompt;
    ctx["bos_token"] = p.bos_token ? checked_text(p.bos_token, "params->bos_token") : t.bos_token;
    ctx["eos_token"] = p.eos_token ? checked_text(p.eos_token, "params->eos_token") : t.eos_token;
    if (p.extra_json) {
        ordered_json extra = parse_json(p.extra_json, "params->extra_json");
        if (!extra.is_object()) vt::fail(VT_ERR_INVALID_ARGUMENT, "params->extra_json must be a JSON object");
        for (auto it = extra.begin(); it != extra.end(); ++it) {
            if (it.key() == "messages" || it.key() == "add_generation_prompt")
                vt::fail(VT_ERR_INVALID_ARGUMENT,
                         "params->extra_json must not set '%s' (pass it as the messages / the parameter)",
                         it.key().c_str());
            ctx[it.key()] = it.value();
            if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) keys.push_back(it.key());
        }
    }
    if (data) *data = std::move(keys);
    return ctx;
}

vt::jinja::RenderOptions render_options(const vt_chat_params &p) {
    vt::jinja::RenderOptions opt;
    if (p.now != 0) {
        std::time_t t = (std::time_t)p.now;
        std::tm tm{};
        if (!localtime_r(&t, &tm)) vt::fail(VT_ERR_INVALID_ARGUMENT, "params->now is out of range");
        opt.now = tm;
    }
    return opt;
}

// Renders and copies out. copy_out's own status (BUFFER_TOO_SMALL) is kept
// apart from guard()'s, which only reports what was thrown.
vt_status render_out(const vt_chat_template *t, ordered_json messages, const vt_chat_params &p, char *buf,
                     size_t buf_size, size_t *needed) {
    vt_status st = VT_OK;
    vt_status g = guard([&] {
        std::string text = t->tmpl.render(make_context(*t, std::move(messages), p), render_options(p));
        st = copy_out(text, buf, buf_size, needed);
    });
    return g != VT_OK ? g : st;
}

constexpr uint32_t kChatTokenizeFlags = VT_TOKENIZE_ADD_SPECIAL | VT_TOKENIZE_PARSE_SPECIAL;

// Renders and tokenizes in one pass over the whole text: special tokens are
// recognised in the template's own text, and in the data (message content)
// too only with VT_TOKENIZE_PARSE_SPECIAL.
vt_status tokenize_out(const vt_chat_template *t, const vt_tokenizer *tok, ordered_json messages,
                       const vt_chat_params &p, uint32_t flags, vt_token *tokens, size_t cap, size_t *n_tokens) {
    vt_status st = VT_OK;
    vt_status g = guard([&] {
        std::vector<std::string> data_keys;
        ordered_json ctx = make_context(*t, std::move(messages), p, &data_keys);
        vt::jinja::MarkedRender r = t->tmpl.render_marked(ctx, data_keys, render_options(p));
        if (r.text.size() > UINT32_MAX) vt::fail(VT_ERR_INVALID_ARGUMENT, "the rendered prompt is over 4 GiB");
        std::vector<vt::SpecialGate::Range> content;
        content.reserve(r.data.size());
        for (const auto &d : r.data) content.push_back({uint32_t(d.first), uint32_t(d.second)});
        const vt::SpecialGate gate = (flags & VT_TOKENIZE_PARSE_SPECIAL) ? vt::SpecialGate(true) : vt::SpecialGate(content);
        const vt::Tokenizer &tk = *from_handle(tok);
        std::vector<int32_t> ids = tk.encode(r.text, flags & VT_TOKENIZE_ADD_SPECIAL, gate);
        // A template that writes the BOS text itself gets no second BOS (as
        // llama.cpp and transformers avoid it): the added one goes.
        const int32_t bos = tk.bos();
        if ((flags & VT_TOKENIZE_ADD_SPECIAL) && bos >= 0 && ids.size() >= 2 && ids[0] == bos && ids[1] == bos) {
            const std::string bos_text = tk.token_to_piece(bos, /*render_special=*/true);
            if (!bos_text.empty() && r.text.compare(0, bos_text.size(), bos_text) == 0) ids.erase(ids.begin());
        }
        *n_tokens = ids.size();
        if (ids.size() > cap) {
            st = vt::api::fail(VT_ERR_BUFFER_TOO_SMALL,
                               vt::strprintf("vt_chat_template_tokenize: the prompt needs %zu tokens, cap is %zu",
                                             ids.size(), cap));
            return;
        }
        if (!ids.empty()) std::memcpy(tokens, ids.data(), ids.size() * sizeof(vt_token));
    });
    return g != VT_OK ? g : st;
}

// The messages of vt_chat_template_apply as the template's JSON.
ordered_json messages_of(const vt_chat_message *messages, size_t n_messages) {
    ordered_json msgs = ordered_json::array();
    for (size_t i = 0; i < n_messages; ++i) {
        if (!messages[i].role) vt::fail(VT_ERR_INVALID_ARGUMENT, "message %zu has a NULL role", i);
        ordered_json m = ordered_json::object();
        m["role"] = checked_text(messages[i].role, "a message role");
        if (messages[i].content)
            m["content"] = checked_text(messages[i].content, "a message content");
        else
            m["content"] = nullptr;
        msgs.push_back(std::move(m));
    }
    return msgs;
}

// messages_json checked: an array of objects with a string "role".
ordered_json messages_of_json(const char *messages_json) {
    ordered_json msgs = parse_json(messages_json, "messages_json");
    if (!msgs.is_array()) vt::fail(VT_ERR_INVALID_ARGUMENT, "messages_json must be a JSON array of messages");
    for (size_t i = 0; i < msgs.size(); ++i)
        if (!msgs[i].is_object() || !msgs[i].contains("role") || !msgs[i]["role"].is_string())
            vt::fail(VT_ERR_INVALID_ARGUMENT, "message %zu of messages_json is not an object with a string \"role\"", i);
    return msgs;
}

// What every apply and tokenize entry point does after its argument checks:
// the params and messages (from make()) built inside guard(), then
// out(messages, params) with what it reports.
template <class Make, class Out>
vt_status with_messages(const vt_chat_params *params, Make make, Out out) {
    ordered_json msgs;  // null until inside guard(): building the array may allocate
    vt_chat_params p;
    vt_status g = guard([&] {
        p = params_or_defaults(params);
        msgs = make();
    });
    return g != VT_OK ? g : out(std::move(msgs), p);
}

} // namespace

extern "C" {

VT_API void vt_chat_params_init(vt_chat_params *params) {
    if (!params) return;
    std::memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->add_generation_prompt = true;
}

VT_API vt_status vt_chat_template_create(const char *source, const vt_model *model, vt_chat_template **out) {
    if (out) *out = nullptr;
    if (!out) return fail_arg("vt_chat_template_create: out must not be NULL");
    if (!source && !model)
        return fail_arg("vt_chat_template_create: pass a template source, a model, or both");
    return guard([&] {
        std::optional<std::string> text;
        if (source) {
            text = source;
        } else {
            text = model->impl->gguf().get_string("tokenizer.chat_template");
            if (!text)
                vt::fail(VT_ERR_NOT_FOUND,
                         "the model has no chat template (tokenizer.chat_template); pass one as source");
        }
        auto t = std::make_unique<vt_chat_template>(*text);
        if (model) {
            const vt::Tokenizer &tok = model->impl->tokenizer();
            t->bos_token = special_text(tok, tok.bos());
            t->eos_token = special_text(tok, tok.eos());
        }
        *out = t.release();
    });
}

VT_API void vt_chat_template_destroy(vt_chat_template *tmpl) { delete tmpl; }

VT_API vt_status vt_chat_template_apply(const vt_chat_template *tmpl, const vt_chat_message *messages,
                                        size_t n_messages, const vt_chat_params *params, char *buf,
                                        size_t buf_size, size_t *needed) {
    if (!tmpl || !needed) return fail_arg("vt_chat_template_apply: tmpl and needed must not be NULL");
    if (!messages && n_messages) return fail_arg("vt_chat_template_apply: messages is NULL with a nonzero count");
    return with_messages(params, [&] { return messages_of(messages, n_messages); },
                         [&](ordered_json msgs, const vt_chat_params &p) {
                             return render_out(tmpl, std::move(msgs), p, buf, buf_size, needed);
                         });
}

VT_API vt_status vt_chat_template_apply_json(const vt_chat_template *tmpl, const char *messages_json,
                                             const vt_chat_params *params, char *buf, size_t buf_size,
                                             size_t *needed) {
    if (!tmpl || !messages_json || !needed)
        return fail_arg("vt_chat_template_apply_json: tmpl, messages_json and needed must not be NULL");
    return with_messages(params, [&] { return messages_of_json(messages_json); },
                         [&](ordered_json msgs, const vt_chat_params &p) {
                             return render_out(tmpl, std::move(msgs), p, buf, buf_size, needed);
                         });
}

VT_API vt_status vt_chat_template_tokenize(const vt_chat_template *tmpl, const vt_tokenizer *tok,
                                           const vt_chat_message *messages, size_t n_messages,
                                           const vt_chat_params *params, uint32_t flags, vt_token *tokens,
                                           size_t cap, size_t *n_tokens) {
    if (!tmpl || !tok || !n_tokens || (!tokens && cap))
        return fail_arg("vt_chat_template_tokenize: NULL tmpl, tok, n_tokens, or tokens with a nonzero cap");
    if (!messages && n_messages) return fail_arg("vt_chat_template_tokenize: messages is NULL with a nonzero count");
    if (flags & ~kChatTokenizeFlags) return fail_arg("vt_chat_template_tokenize: unknown flags");
    return with_messages(params, [&] { return messages_of(messages, n_messages); },
                         [&](ordered_json msgs, const vt_chat_params &p) {
                             return tokenize_out(tmpl, tok, std::move(msgs), p, flags, tokens, cap, n_tokens);
                         });
}

VT_API vt_status vt_chat_template_tokenize_json(const vt_chat_template *tmpl, const vt_tokenizer *tok,
                                                const char *messages_json, const vt_chat_params *params,
                                                uint32_t flags, vt_token *tokens, size_t cap, size_t *n_tokens) {
    if (!tmpl || !tok || !messages_json || !n_tokens || (!tokens && cap))
        return fail_arg("vt_chat_template_tokenize_json: NULL tmpl, tok, messages_json, n_tokens, or tokens with a "
                        "nonzero cap");
    if (flags & ~kChatTokenizeFlags) return fail_arg("vt_chat_template_tokenize_json: unknown flags");
    return with_messages(params, [&] { return messages_of_json(messages_json); },
                         [&](ordered_json msgs, const vt_chat_params &p) {
                             return tokenize_out(tmpl, tok, std::move(msgs), p, flags, tokens, cap, n_tokens);
                         });
}

VT_API vt_status vt_chat_template_tool_call_format(const vt_chat_template *tmpl, vt_tool_call_format *out) {
    if (!tmpl || !out) return fail_arg("vt_chat_template_tool_call_format: tmpl and out must not be NULL");
    return guard([&] {
        *out = tmpl->harmony ? VT_TOOL_CALL_FORMAT_HARMONY : (vt_tool_call_format)tmpl->tool_format;
    });
}

VT_API vt_status vt_chat_parse_tool_calls(vt_tool_call_format format, const char *text, size_t len, char *buf,
                                          size_t buf_size, size_t *needed) {
    ToolCallFormat f = ToolCallFormat::none;
    if (!needed) return fail_arg("vt_chat_parse_tool_calls: needed must not be NULL");
    if (!text && len) return fail_arg("vt_chat_parse_tool_calls: text is NULL with a nonzero length");
    const bool harmony = format == VT_TOOL_CALL_FORMAT_HARMONY;
    if (!harmony && !tool_format_of(format, &f))
        return fail_arg("vt_chat_parse_tool_calls: unknown vt_tool_call_format");
    vt_status st = VT_OK;
    vt_status g = guard([&] {
        const std::string_view t(text ? text : "", len);
        const std::string out = harmony ? vt::tok::harmony_result_to_json(vt::tok::parse_harmony(t))
                                        : vt::tok::tool_call_parse_to_json(vt::tok::parse_tool_calls(f, t));
        st = copy_out(out, buf, buf_size, needed);
    });
    return g != VT_OK ? g : st;
}

VT_API vt_status vt_chat_tool_calls_content_prefix(vt_tool_call_format format, const char *text, size_t len,
                                                   size_t *n_content) {
    ToolCallFormat f = ToolCallFormat::none;
    if (!n_content) return fail_arg("vt_chat_tool_calls_content_prefix: n_content must not be NULL");
    if (!text && len) return fail_arg("vt_chat_tool_calls_content_prefix: text is NULL with a nonzero length");
    if (format == VT_TOOL_CALL_FORMAT_HARMONY) {
        *n_content = 0;  // its content is not a prefix of the text: vt_harmony_parser streams it
        return VT_OK;
    }
    if (!tool_format_of(format, &f)) return fail_arg("vt_chat_tool_calls_content_prefix: unknown vt_tool_call_format");
    return guard([&] { *n_content = vt::tok::tool_call_content_prefix(f, std::string_view(text ? text : "", len)); });
}

struct vt_harmony_parser {
    vt::tok::HarmonyParser parser;
    std::vector<vt::tok::HarmonyDelta> queued;
};

VT_API vt_status vt_harmony_parser_create(vt_harmony_parser **out) {
    if (!out) return fail_arg("vt_harmony_parser_create: out must not be NULL");
    *out = nullptr;
    return guard([&] { *out = new vt_harmony_parser(); });
}

VT_API void vt_harmony_parser_destroy(vt_harmony_parser *parser) { delete parser; }

VT_API vt_status vt_harmony_parser_push(vt_harmony_parser *parser, const char *text, size_t len, bool end) {
    if (!parser) return fail_arg("vt_harmony_parser_push: parser must not be NULL");
    if (!text && len) return fail_arg("vt_harmony_parser_push: text is NULL with a nonzero length");
    return guard([&] {
        parser->parser.push(std::string_view(text ? text : "", len), parser->queued);
        if (end) parser->parser.finish(parser->queued);
    });
}

VT_API vt_status vt_harmony_parser_take(vt_harmony_parser *parser, char *buf, size_t buf_size, size_t *needed) {
    if (!parser || !needed) return fail_arg("vt_harmony_parser_take: parser and needed must not be NULL");
    vt_status st = VT_OK;
    const vt_status g = guard([&] {
        st = copy_out(vt::tok::harmony_deltas_to_json(parser->queued), buf, buf_size, needed);
        if (st == VT_OK) parser->queued.clear();
    });
    return g != VT_OK ? g : st;
}

VT_API vt_status vt_harmony_parser_result(const vt_harmony_parser *parser, char *buf, size_t buf_size,
                                          size_t *needed) {
    if (!parser || !needed) return fail_arg("vt_harmony_parser_result: parser and needed must not be NULL");
    vt_status st = VT_OK;
    const vt_status g = guard([&] {
        st = copy_out(vt::tok::harmony_result_to_json(parser->parser.result()), buf, buf_size, needed);
    });
    return g != VT_OK ? g : st;
}

} // extern "C"
