#include <algorithm>

#include "core/error.h"
#include "interpreter.h"
#include "jinja.h"
#include "lexer.h"
#include "parser.h"

namespace vt::jinja {

struct Template::Impl {
    Body body;
};

Template::Template(std::string_view source) : impl_(std::make_unique<Impl>()) {
    impl_->body = parse(tokenize(source));
}

Template::~Template() = default;
Template::Template(Template &&) noexcept = default;
Template &Template::operator=(Template &&) noexcept = default;

std::string Template::render(const nlohmann::ordered_json &context, const RenderOptions &opt) const {
    if (!context.is_object()) fail(VT_ERR_INVALID_ARGUMENT, "chat template context must be a JSON object");
    Value vars = Value::from_json(context);
    return render_body(impl_->body, vars.dict(), opt).text;
}

std::string Template::render(const nlohmann::json &context, const RenderOptions &opt) const {
    if (!context.is_object()) fail(VT_ERR_INVALID_ARGUMENT, "chat template context must be a JSON object");
    Value vars = Value::from_json(context);
    return render_body(impl_->body, vars.dict(), opt).text;
}

MarkedRender Template::render_marked(const nlohmann::ordered_json &context, const std::vector<std::string> &data_keys,
                                     const RenderOptions &opt) const {
    if (!context.is_object()) fail(VT_ERR_INVALID_ARGUMENT, "chat template context must be a JSON object");
    Dict vars;
    for (auto it = context.begin(); it != context.end(); ++it) {
        bool data = std::find(data_keys.begin(), data_keys.end(), it.key()) != data_keys.end();
        vars.items.emplace_back(it.key(), data ? Value::from_json_marked(it.value()) : Value::from_json(it.value()));
    }
    MarkedText out = render_body(impl_->body, vars, opt);
    MarkedRender r;
    r.data = out.ranges();
    r.text = std::move(out.text);
    return r;
}

std::string render_chat_template(std::string_view tmpl, const nlohmann::ordered_json &context,
                                 const RenderOptions &opt) {
    return Template(tmpl).render(context, opt);
}

} // namespace vt::jinja
