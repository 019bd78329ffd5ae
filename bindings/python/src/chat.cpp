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

// Renders and tokenizes in one call (vt_chat_template_tokenize_json):
// control tokens only from the template's own text unless
// parse_special_in_content.
std::vector<vt_token> tokenize(const ChatTemplate &self, const Tokenizer &tok, const py::object &messages,
                               bool add_generation_prompt, bool add_special, bool parse_special_in_content,
                               const py::kwargs &kwargs) {
    py::object dumps = py::module_::import("json").attr("dumps");
    const std::string msgs = dumps(messages).cast<std::string>();
    // bos_token / eos_token given here are the program's, not a user's:
    // they go through params (the template's text), not extra_json (data).
    py::dict vars;
    std::optional<std::string> bos, eos;
    for (auto kv : kwargs) {
        const std::string key = kv.first.cast<std::string>();
        if (key == "bos_token" && py::isinstance<py::str>(kv.second)) bos = utf8_of(kv.second.cast<py::str>());
        else if (key == "eos_token" && py::isinstance<py::str>(kv.second)) eos = utf8_of(kv.second.cast<py::str>());
        else vars[kv.first] = kv.second;
    }
    std::optional<std::string> extra;
    if (vars.size() > 0) extra = dumps(vars).cast<std::string>();
    vt_chat_params p;
    vt_chat_params_init(&p);
    p.add_generation_prompt = add_generation_prompt;
    p.extra_json = extra ? extra->c_str() : nullptr;
    p.bos_token = bos ? bos->c_str() : nullptr;
    p.eos_token = eos ? eos->c_str() : nullptr;
    uint32_t flags = VT_TOKENIZE_NONE;
    if (add_special) flags |= VT_TOKENIZE_ADD_SPECIAL;
    if (parse_special_in_content) flags |= VT_TOKENIZE_PARSE_SPECIAL;
    std::vector<vt_token> out;
    Failure f;
    {
        py::gil_scoped_release nogil;
        out.resize(msgs.size() / 2 + 256);
        size_t n = 0;
        vt_status s = vt_chat_template_tokenize_json(self.handle, tok.handle, msgs.c_str(), &p, flags, out.data(),
                                                     out.size(), &n);
        for (int tries = 0; s == VT_ERR_BUFFER_TOO_SMALL && tries < 3; ++tries) {  // the clock may grow it
            out.resize(n + 64);
            s = vt_chat_template_tokenize_json(self.handle, tok.handle, msgs.c_str(), &p, flags, out.data(),
                                               out.size(), &n);
        }
        if (!f.set(s)) out.resize(n);
    }
    f.raise_if_failed();
    return out;
}

// A buffer-convention call into a std::string (GIL released by the caller).
template <class F> vt_status text_of(F call, std::string &out) {
    out.resize(256);
    size_t needed = 0;
    vt_status s = call(out.data(), out.size(), &needed);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        out.resize(needed + 1);
        s = call(out.data(), out.size(), &needed);
    }
    if (s == VT_OK) out.resize(needed);
    return s;
}

py::object json_loads(const std::string &s) { return py::module_::import("json").attr("loads")(py::str(s)); }

const char *format_name(vt_tool_call_format f) {
    switch (f) {
    case VT_TOOL_CALL_FORMAT_HERMES: return "hermes";
    case VT_TOOL_CALL_FORMAT_LLAMA3_JSON: return "llama3_json";
    case VT_TOOL_CALL_FORMAT_MISTRAL: return "mistral";
    case VT_TOOL_CALL_FORMAT_HARMONY: return "harmony";
    default: return "none";
    }
}

std::string tool_call_format(const ChatTemplate &self) {
    vt_tool_call_format f = VT_TOOL_CALL_FORMAT_NONE;
    Failure fl;
    fl.set(vt_chat_template_tool_call_format(self.handle, &f));
    fl.raise_if_failed();
    return format_name(f);
}

py::object parse_harmony(const py::str &text) {
    const std::string t = utf8_of(text);
    std::string out;
    Failure f;
    {
        py::gil_scoped_release nogil;
        f.set(text_of([&](char *b, size_t n, size_t *need) {
            return vt_chat_parse_tool_calls(VT_TOOL_CALL_FORMAT_HARMONY, t.data(), t.size(), b, n, need);
        }, out));
    }
    f.raise_if_failed();
    return json_loads(out);
}

// vt.HarmonyParser: one completion's; a lock because Python threads may share it.
struct HarmonyParser {
    vt_harmony_parser *handle = nullptr;
    std::mutex mu;
    ~HarmonyParser() { vt_harmony_parser_destroy(handle); }
};

std::shared_ptr<HarmonyParser> harmony_create() {
    auto p = std::make_shared<HarmonyParser>();
    Failure f;
    f.set(vt_harmony_parser_create(&p->handle));
    f.raise_if_failed();
    return p;
}

py::object harmony_push(HarmonyParser &self, const py::str &text, bool end) {
    const std::string t = utf8_of(text);
    std::string out;
    Failure f;
    {
        py::gil_scoped_release nogil;
        std::lock_guard<std::mutex> lock(self.mu);
        if (!f.set(vt_harmony_parser_push(self.handle, t.data(), t.size(), end)))
            f.set(text_of([&](char *b, size_t n, size_t *need) { return vt_harmony_parser_take(self.handle, b, n, need); },
                          out));
    }
    f.raise_if_failed();
    return json_loads(out);
}

py::object harmony_result(HarmonyParser &self) {
    std::string out;
    Failure f;
    {
        py::gil_scoped_release nogil;
        std::lock_guard<std::mutex> lock(self.mu);
        f.set(text_of([&](char *b, size_t n, size_t *need) { return vt_harmony_parser_result(self.handle, b, n, need); },
                      out));
    }
    f.raise_if_failed();
    return json_loads(out);
}

} // namespace

void init_chat(py::module_ &m) {
    m.def("parse_harmony", &parse_harmony, py::arg("text"),
          "Splits a gpt-oss completion written in OpenAI's harmony format (its control\n"
          "tokens as text) into {\"content\": str|None, \"reasoning_content\": str|None,\n"
          "\"tool_calls\": [{\"name\": ..., \"arguments\": \"<JSON text>\"}]}: the final channel\n"
          "is content, analysis reasoning, a message to functions.NAME a call (vt_chat.h,\n"
          "VT_TOOL_CALL_FORMAT_HARMONY). Text that is not harmony is content; never raises\n"
          "on the text.");
    py::class_<HarmonyParser, std::shared_ptr<HarmonyParser>>(m, "HarmonyParser",
        "Reads a harmony completion piece by piece (vt_harmony_parser):\n\n"
        "    p = vt.HarmonyParser()\n"
        "    p.push('<|channel|>analysis<|message|>Hm')   # [{'reasoning_content': 'Hm'}]\n"
        "    p.push('', end=True); p.result()\n\n"
        "Deltas are dicts: {'reasoning_content': s}, {'content': s},\n"
        "{'tool_call': {'index': i, 'name': s}}, {'tool_call': {'index': i, 'arguments': s}}.")
        .def(py::init(&harmony_create))
        .def("push", &harmony_push, py::arg("text"), py::arg("end") = false,
             "Reads more of the completion (end=True: it is over) and returns the deltas it adds.")
        .def("result", &harmony_result, "The split of everything pushed so far, as vt.parse_harmony gives it.");

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
        .def_property_readonly("tool_call_format", &tool_call_format,
             "The tool-call syntax the template teaches: \"none\", \"hermes\", \"llama3_json\",\n"
             "\"mistral\" or \"harmony\" (gpt-oss: its output also carries the reasoning).")
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
             "    TypeError: messages or kwargs json.dumps cannot serialize.")
        .def("tokenize", &tokenize, py::arg("tokenizer"), py::arg("messages"), py::arg("add_generation_prompt") = true,
             py::kw_only(), py::arg("add_special") = true, py::arg("parse_special_in_content") = false,
             "Renders a conversation and returns the prompt's token ids, in one pass over the\n"
             "text, with control tokens (<|im_start|>, ...) taken only from the template's own\n"
             "text: a message, tool or kwarg that contains \"<|im_start|>system\" stays plain\n"
             "text, so users cannot open turns of their own (vt_chat_template_tokenize).\n\n"
             "Args:\n"
             "    tokenizer: a vt.Tokenizer (model.tokenizer).\n"
             "    messages, add_generation_prompt, **kwargs: as apply(); every string in\n"
             "        messages and kwargs is data, except bos_token / eos_token, which are\n"
             "        the template's text.\n"
             "    add_special: the model's BOS/EOS rules, without a second BOS when the\n"
             "        template writes one.\n"
             "    parse_special_in_content: control-token text inside the data becomes\n"
             "        control tokens too: tokenize(apply(...), parse_special=True), as\n"
             "        transformers' apply_chat_template(tokenize=True) and vLLM do.\n\n"
             "Raises: as apply().");
}

} // namespace vt_py
