// vt.ChatTemplate: a conversation rendered into prompt text (vt_chat.h).
// Messages and keyword arguments cross the ABI as JSON (json.dumps), so any
// OpenAI-style message (tool_calls, content parts) reaches the template as
// transformers would pass it.
#include "vt_py.h"

namespace vt_py {

namespace {

// vt.ChatTemplate: immutable after parsing; no lock.
struct ChatTemplate {
    vt_chat_template *handle = nullptr;
    ~ChatTemplate() { vt_chat_template_destroy(handle); }
};

std::string utf8_of(const py::str &s) {
    Py_ssize_t n = 0;
    const char *p = PyUnicode_AsUTF8AndSize(s.ptr(), &n);
    if (!p) throw py::error_already_set();  // lone surrogates
    return std::string(p, (size_t)n);
}

std::shared_ptr<ChatTemplate> create(std::optional<py::str> source, std::shared_ptr<Model> model) {
    if (!source && !model) raise_status(VT_ERR_INVALID_ARGUMENT, "ChatTemplate: pass a template source, a model, or both");
    std::optional<std::string> text;
    if (source) text = utf8_of(*source);
    auto t = std::make_shared<ChatTemplate>();
    Failure f;
    {
        py::gil_scoped_release nogil;
        f.set(vt_chat_template_create(text ? text->c_str() : nullptr, model ? model->handle : nullptr, &t->handle));
    }
    f.raise_if_failed();
    return t;
}

std::string apply(const ChatTemplate &self, const py::object &messages, bool add_generation_prompt,
                  const py::kwargs &kwargs) {
    // ensure_ascii (the default) escapes every non-ASCII character, so the
    // JSON text is ASCII whatever the strings hold; libvt decodes it back.
    py::object dumps = py::module_::import("json").attr("dumps");
    const std::string msgs = dumps(messages).cast<std::string>();
    std::optional<std::string> extra;
    if (kwargs.size() > 0) extra = dumps(kwargs).cast<std::string>();
    vt_chat_params p;
    vt_chat_params_init(&p);
    p.add_generation_prompt = add_generation_prompt;
    p.extra_json = extra ? extra->c_str() : nullptr;
    std::string out;
    Failure f;
    {
        py::gil_scoped_release nogil;
        out.resize(msgs.size() * 2 + 1024);
        size_t needed = 0;
        vt_status s = vt_chat_template_apply_json(self.handle, msgs.c_str(), &p, out.data(), out.size(), &needed);
        if (s == VT_ERR_BUFFER_TOO_SMALL) {
            out.resize(needed + 1);
            s = vt_chat_template_apply_json(self.handle, msgs.c_str(), &p, out.data(), out.size(), &needed);
        }
        if (!f.set(s)) out.resize(needed);
    }
    f.raise_if_failed();
    return out;
}

} // namespace

void init_chat(py::module_ &m) {
    py::class_<ChatTemplate, std::shared_ptr<ChatTemplate>>(m, "ChatTemplate",
        "A parsed chat template (Jinja), rendered as transformers' apply_chat_template renders\n"
        "it. Parse once, apply many times. Immutable: one ChatTemplate may be used by any\n"
        "number of threads at once (apply releases the GIL).\n\n"
        "    t = vt.ChatTemplate(model=model)          # the model's tokenizer.chat_template\n"
        "    t.apply([{\"role\": \"user\", \"content\": \"Hi\"}])\n"
        "    '<|im_start|>system\\n...<|im_start|>assistant\\n'")
        .def(py::init(&create), py::arg("source") = py::none(), py::arg("model") = py::none(),
             "Args:\n"
             "    source: the Jinja text; None = the model's own template.\n"
             "    model: a vt.Model: its template when source is None, and the default\n"
             "        bos_token / eos_token (the texts of its BOS / EOS tokens; \"\" without a\n"
             "        model). The template does not keep the model alive.\n\n"
             "Raises:\n"
             "    VtInvalidArgument: neither source nor model.\n"
             "    VtNotFound: source is None and the model has no chat template.\n"
             "    VtFormatError: a syntax error (the message names line and column).\n"
             "    VtUnsupportedError: a construct outside vt's Jinja subset.")
        .def("apply", &apply, py::arg("messages"), py::arg("add_generation_prompt") = true,
             "Renders a conversation into prompt text.\n\n"
             "Args:\n"
             "    messages: a list of message dicts ({\"role\": ..., \"content\": ...}, plus any\n"
             "        other fields: tool_calls, tool_call_id, content as a list of parts),\n"
             "        anything json.dumps accepts.\n"
             "    add_generation_prompt: end with the header of an assistant turn.\n"
             "    **kwargs: further template variables (tools=[...], documents=[...],\n"
             "        enable_thinking=False, bos_token=\"<s>\", ...), JSON-serializable.\n\n"
             "Raises:\n"
             "    VtInvalidArgument: the template failed (raise_exception: its message), a\n"
             "        message without a string \"role\", a kwarg named messages.\n"
             "    TypeError: messages or kwargs json.dumps cannot serialize.");
}

} // namespace vt_py
