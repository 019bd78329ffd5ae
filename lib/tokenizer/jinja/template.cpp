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
    return render_body(impl_->body, vars.dict(), opt);
}

std::string Template::render(const nlohmann::json &context, const RenderOptions &opt) const {
    if (!context.is_object()) fail(VT_ERR_INVALID_ARGUMENT, "chat template context must be a JSON object");
    Value vars = Value::from_json(context);
    return render_body(impl_->body, vars.dict(), opt);
}

std::string render_chat_template(std::string_view tmpl, const nlohmann::ordered_json &context,
                                 const RenderOptions &opt) {
    return Template(tmpl).render(context, opt);
}

} // namespace vt::jinja
