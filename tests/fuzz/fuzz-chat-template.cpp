// libFuzzer target for the chat-template renderer (tokenizer/jinja): any
// template source, rendered over any context, as vt_chat_template_apply does.
// Input: the template source, then optionally a NUL byte and a JSON object
// whose keys replace those of a default context (messages, tools,
// add_generation_prompt, bos_token, ...). The rendered text also goes through
// the tool-call parser of the format detected from the source.
//
// The renderer's own bounds (RenderOptions: steps, output bytes, bytes of
// values built) are set low so that a run stays fast; a hang past
// -timeout or memory past -rss_limit_mb means a bound is missing. A
// vt::Error is the accepted way to refuse; any other exception, crash,
// sanitizer report or leak is a bug. Build and run: see meson.build.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/jinja/jinja.h"
#include "tokenizer/tool-calls.h"

using ordered_json = nlohmann::ordered_json;

namespace {

ordered_json default_context() {
    return ordered_json::parse(R"({
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello", "tool_calls": [
                {"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]},
            {"role": "tool", "content": "42"},
            {"role": "user", "content": [{"type": "text", "text": "more"}]}],
        "tools": [{"type": "function", "function": {"name": "f", "description": "d",
            "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}],
        "documents": null,
        "add_generation_prompt": true,
        "bos_token": "<s>",
        "eos_token": "</s>"})");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const ordered_json base = default_context();
    const char *text = reinterpret_cast<const char *>(data);
    const void *nul = std::memchr(data, 0, size);
    const size_t src_len = nul ? size_t(static_cast<const uint8_t *>(nul) - data) : size;
    std::string_view source(text, src_len);

    ordered_json ctx = base;
    if (nul) {
        ordered_json extra = ordered_json::parse(text + src_len + 1, text + size, nullptr, false);
        if (extra.is_object())
            for (auto it = extra.begin(); it != extra.end(); ++it) ctx[it.key()] = it.value();
    }

    vt::jinja::RenderOptions opt;
    std::tm now{};
    now.tm_year = 125;
    now.tm_mday = 3;
    opt.now = now;
    opt.max_output_bytes = 1 << 20;
    opt.max_steps = 200'000;
    opt.max_value_bytes = 32 << 20;
    try {
        vt::jinja::Template t(source);
        std::string out = t.render(ctx, opt);
        if (out.size() > opt.max_output_bytes) __builtin_trap();
        vt::tok::ToolCallFormat f = vt::tok::detect_tool_call_format(source);
        if (f != vt::tok::ToolCallFormat::none) {
            auto calls = vt::tok::parse_tool_calls(f, out);
            (void)vt::tok::tool_call_parse_to_json(calls);
            if (vt::tok::tool_call_content_prefix(f, out) > out.size()) __builtin_trap();
        }
    } catch (const vt::Error &) {
    }
    return 0;
}
