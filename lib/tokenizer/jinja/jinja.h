// Chat templates: the subset of Jinja2 that models' tokenizer.chat_template
// strings use, rendered byte-identically to transformers'
// apply_chat_template (Jinja 3.1 in an ImmutableSandboxedEnvironment with
// trim_blocks, lstrip_blocks and loop controls; transformers' tojson,
// raise_exception, strftime_now, namespace and dict globals).
//
// No C++ Jinja library is packaged for Debian, hence this module. Supported:
// {{ }}, {% %}, {# #}, whitespace control, if/elif/else, for (loop.*, `if`
// filter, else, break, continue, unpacking), set (also block set and
// namespace attributes), macro and call blocks, filter blocks, raw,
// generation; Python operators, slicing, str/dict/list methods; Jinja's
// common filters and tests. Not supported: extends/include/import, recursive
// loops, `*args`/`**kwargs` in calls, dict literals with non-string keys.
// map/select return lists, not lazy generators, so `x|map(...)|tojson`
// renders where Jinja raises.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace vt::jinja {

struct Stmt;

struct RenderOptions {
    // The clock strftime_now() reads, as local broken-down time; unset: now.
    std::optional<std::tm> now;
    // Bounds for hostile templates: output size (also the most bytes of any
    // one string a template builds), executed steps (statements, loop
    // iterations and calls), and the bytes of all the strings and lists a
    // render builds, together (memory and work: a doubling loop, or a
    // string split into characters, reaches it long before the steps).
    // Past one, render throws VT_ERR_INVALID_ARGUMENT saying which.
    size_t max_output_bytes = size_t(64) << 20;
    uint64_t max_steps = 20'000'000;
    uint64_t max_value_bytes = uint64_t(256) << 20;
};

// A rendering that knows which of its bytes came from the caller's data.
struct MarkedRender {
    std::string text;
    // Byte ranges [begin, end) of text that came from the variables named as
    // data (message content, tools, ...), sorted and disjoint; the rest is the
    // template's own text. How far marks follow data through filters and
    // methods: taint.h.
    std::vector<std::pair<size_t, size_t>> data;
};

// A parsed template: parse once, render many times. Rendering is const and
// keeps its state on the stack, so one Template may render on many threads.
class Template {
public:
    // Throws vt::Error(VT_ERR_FORMAT) with line and column on a syntax error.
    explicit Template(std::string_view source);
    ~Template();
    Template(Template &&) noexcept;
    Template &operator=(Template &&) noexcept;

    // `context` must be a JSON object; its keys become the template's
    // variables (messages, add_generation_prompt, bos_token, tools, ...).
    // Use ordered_json to keep dict order as Python has it (tojson, items()).
    // Throws vt::Error: VT_ERR_INVALID_ARGUMENT for runtime errors and
    // raise_exception() (the message says where), VT_ERR_UNSUPPORTED for
    // constructs outside the subset.
    std::string render(const nlohmann::ordered_json &context, const RenderOptions &opt = {}) const;
    std::string render(const nlohmann::json &context, const RenderOptions &opt = {}) const;
    // As render, also telling where the values of the context keys named in
    // `data_keys` (every string in them, and dict keys) ended up. The text is
    // the same as render's.
    MarkedRender render_marked(const nlohmann::ordered_json &context, const std::vector<std::string> &data_keys,
                               const RenderOptions &opt = {}) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Parse + render in one call.
std::string render_chat_template(std::string_view tmpl, const nlohmann::ordered_json &context,
                                 const RenderOptions &opt = {});

} // namespace vt::jinja
