// vt.Grammar and vt.GrammarMatcher: constrained decoding (vt_grammar.h).
// A Grammar is compiled once for a tokenizer and used by many requests
// (Sampler.add_grammar, SamplingParams(json_schema=...)); a GrammarMatcher
// walks one output for callers who run their own decoding loop.
#include <cstdint>

#include "vt_py.h"

namespace vt_py {

namespace {

const char *kind_name(vt_grammar_kind k) {
    switch (k) {
    case VT_GRAMMAR_GBNF: return "gbnf";
    case VT_GRAMMAR_JSON_SCHEMA: return "json_schema";
    case VT_GRAMMAR_JSON: return "json";
    case VT_GRAMMAR_REGEX: return "regex";
    case VT_GRAMMAR_CHOICE: return "choice";
    }
    return "?";
}

// The UTF-8 bytes of a str argument (TypeError otherwise).
std::string utf8_arg(const py::handle &v, const char *what) {
    if (!py::isinstance<py::str>(v))
        throw py::type_error(std::string("Grammar: ") + what + " must be a str, not " +
                             std::string(Py_TYPE(v.ptr())->tp_name));
    Py_ssize_t n = 0;
    const char *p = PyUnicode_AsUTF8AndSize(v.ptr(), &n);
    if (!p) throw py::error_already_set();  // lone surrogates
    return std::string(p, (size_t)n);
}

std::shared_ptr<Tokenizer> tokenizer_of(const py::object &model_or_tokenizer) {
    if (py::isinstance<Tokenizer>(model_or_tokenizer)) return model_or_tokenizer.cast<std::shared_ptr<Tokenizer>>();
    if (py::isinstance<Model>(model_or_tokenizer))
        return model_or_tokenizer.attr("tokenizer").cast<std::shared_ptr<Tokenizer>>();
    // vt.LLM (or anything else with a vt.Model in .model).
    if (py::hasattr(model_or_tokenizer, "model") && py::isinstance<Model>(model_or_tokenizer.attr("model")))
        return model_or_tokenizer.attr("model").attr("tokenizer").cast<std::shared_ptr<Tokenizer>>();
    throw py::type_error("Grammar: the first argument must be a vt.Model, vt.LLM or vt.Tokenizer, not " +
                         std::string(Py_TYPE(model_or_tokenizer.ptr())->tp_name));
}

std::shared_ptr<Grammar> compile(const py::object &model_or_tokenizer, const py::object &gbnf,
                                 const py::object &json_schema, bool json, const py::object &regex,
                                 const py::object &choice) {
    auto g = std::make_shared<Grammar>();
    g->tok = tokenizer_of(model_or_tokenizer);
    int n_given = int(!gbnf.is_none()) + int(!json_schema.is_none()) + int(json) + int(!regex.is_none()) +
                  int(!choice.is_none());
    if (n_given != 1)
        raise_status(VT_ERR_INVALID_ARGUMENT, "Grammar: give exactly one of gbnf=, json_schema=, json=True, "
                                              "regex= or choice= (" + std::to_string(n_given) + " given)");
    py::module_ json_mod = py::module_::import("json");
    if (!gbnf.is_none()) {
        g->kind = VT_GRAMMAR_GBNF;
        g->source = utf8_arg(gbnf, "gbnf");
    } else if (!json_schema.is_none()) {
        g->kind = VT_GRAMMAR_JSON_SCHEMA;
        // A schema is a JSON document: given as text, or as the Python value
        // json.dumps writes (a dict; True and False are schemas too).
        py::object text = py::isinstance<py::str>(json_schema) ? json_schema
                                                                : json_mod.attr("dumps")(json_schema);
        g->source = utf8_arg(text, "json_schema");
    } else if (json) {
        g->kind = VT_GRAMMAR_JSON;
    } else if (!regex.is_none()) {
        g->kind = VT_GRAMMAR_REGEX;
        g->source = utf8_arg(regex, "regex");
    } else {
        g->kind = VT_GRAMMAR_CHOICE;
        if (py::isinstance<py::str>(choice) || !py::isinstance<py::iterable>(choice))
            throw py::type_error("Grammar: choice must be a list of str");
        py::list items;
        for (py::handle c : choice) {
            utf8_arg(c, "each choice");
            items.append(c);
        }
        g->source = utf8_arg(json_mod.attr("dumps")(items, py::arg("ensure_ascii") = false), "choice");
    }
    Failure f;
    {
        py::gil_scoped_release nogil;
        // VT_GRAMMAR_JSON takes no source: NULL with length 0.
        f.set(vt_grammar_compile(g->tok->handle, g->kind, g->source.empty() ? nullptr : g->source.data(),
                                 g->source.size(), &g->handle));
    }
    f.raise_if_failed();
    return g;
}

// vt.GrammarMatcher. The matcher is externally synchronized: a lock, taken
// without the GIL (fill_mask releases the GIL while it computes).
struct Matcher {
    vt_grammar_matcher *handle = nullptr;
    std::shared_ptr<Grammar> grammar;  // must outlive handle (libvt holds it too)
    std::mutex mu;
    ~Matcher() { vt_grammar_matcher_destroy(handle); }

    size_t n_words() const { return (vt_grammar_n_vocab(grammar->handle) + 31) / 32; }

    void fill(uint32_t *mask, size_t n) {
        Lock lock(mu);
        vt_status s;
        {
            py::gil_scoped_release nogil;
            s = vt_grammar_matcher_fill_mask(handle, mask, n);
        }
        check(s);
    }
};

std::shared_ptr<Matcher> make_matcher(std::shared_ptr<Grammar> g) {
    auto m = std::make_shared<Matcher>();
    m->grammar = std::move(g);
    check(vt_grammar_matcher_create(m->grammar->handle, &m->handle));
    return m;
}

// array('I') holds 32-bit words on every platform Python runs on, but the
// typecode's size is the C compiler's: pick the one that is 4 bytes.
py::object word_array(size_t n) {
    py::object array = py::module_::import("array").attr("array");
    for (const char *code : {"I", "L"}) {
        py::object a = array(code);
        if (a.attr("itemsize").cast<size_t>() == 4) {
            a.attr("frombytes")(py::bytes(std::string(n * 4, '\0')));
            return a;
        }
    }
    raise_status(VT_ERR_INTERNAL, "GrammarMatcher.fill_mask: no 32-bit array typecode");
}

py::object fill_mask(Matcher &self, const py::object &out) {
    const size_t n = self.n_words();
    py::object target = out.is_none() ? word_array(n) : out;
    // Any writable, C-contiguous buffer of at least n 32-bit words (a
    // bytearray, array('I'), a NumPy uint32 array, a torch tensor's .numpy()).
    Py_buffer view;
    if (PyObject_GetBuffer(target.ptr(), &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0)
        throw py::error_already_set();
    struct Release {
        Py_buffer *v;
        ~Release() { PyBuffer_Release(v); }
    } release{&view};
    const size_t bytes = (size_t)view.len;
    if (bytes < n * 4 || reinterpret_cast<uintptr_t>(view.buf) % alignof(uint32_t) != 0)
        raise_status(VT_ERR_BUFFER_TOO_SMALL, "GrammarMatcher.fill_mask: out must hold at least " +
                                                  std::to_string(n) + " aligned 32-bit words (" +
                                                  std::to_string(n * 4) + " bytes), not " +
                                                  std::to_string(bytes) + " bytes");
    self.fill(static_cast<uint32_t *>(view.buf), bytes / 4);
    return target;
}

std::vector<vt_token> allowed_tokens(Matcher &self) {
    const size_t n_vocab = vt_grammar_n_vocab(self.grammar->handle);
    std::vector<uint32_t> mask(self.n_words());
    self.fill(mask.data(), mask.size());
    std::vector<vt_token> out;
    for (size_t t = 0; t < n_vocab; ++t)
        if ((mask[t / 32] >> (t % 32)) & 1u) out.push_back((vt_token)t);
    return out;
}

} // namespace

void init_grammar(py::module_ &m) {
    py::class_<Grammar, std::shared_ptr<Grammar>>(m, "Grammar",
        "A constraint on generated text, compiled once for a tokenizer's vocabulary\n"
        "(vt_grammar.h): GBNF, a JSON Schema, any JSON, a regular expression or a choice\n"
        "of strings. Generation under it can only produce text of its language (tokens may\n"
        "span rule boundaries and partial UTF-8 characters), and ends, with an\n"
        "end-of-generation token, only where the text is a whole string of it.\n\n"
        "    g = vt.Grammar(model, gbnf='root ::= \"yes\" | \"no\"')\n"
        "    g = vt.Grammar(model, json_schema={\"type\": \"object\", \"properties\": {...}})\n"
        "    g = vt.Grammar(model, choice=[\"red\", \"green\", \"blue\"])\n"
        "    llm.generate(prompt, vt.SamplingParams(grammar=g))   # or the constraint itself:\n"
        "    llm.generate(prompt, vt.SamplingParams(json_schema={...}))   # compiled once per LLM\n\n"
        "Use it through SamplingParams (which also take the constraint as text), a\n"
        "Sampler's grammar stage (Sampler.add_grammar) or a GrammarMatcher (matcher()).\n\n"
        "Thread-safety: immutable once compiled; any number of threads, samplers and\n"
        "matchers may share it. It keeps its tokenizer (and so its model) alive.")
        .def(py::init(&compile), py::arg("model_or_tokenizer"), py::kw_only(), py::arg("gbnf") = py::none(),
             py::arg("json_schema") = py::none(), py::arg("json") = false, py::arg("regex") = py::none(),
             py::arg("choice") = py::none(),
             "Compiles a constraint for the vocabulary of a vt.Model, vt.LLM or vt.Tokenizer\n"
             "(the GIL is released while it compiles). Give exactly one of:\n\n"
             "    gbnf: llama.cpp's GBNF (str); the start rule is root.\n"
             "    json_schema: a JSON Schema, as a dict (or bool) or as JSON text; the output\n"
             "        is one JSON value valid against it (a draft 2020-12 subset: see\n"
             "        vt_grammar_compile in vt_grammar.h).\n"
             "    json: True for any JSON value.\n"
             "    regex: a regular expression the whole output must match (str).\n"
             "    choice: a list of str; the output is one of them.\n\n"
             "Raises:\n"
             "    VtInvalidArgument: malformed source (the message names where: a GBNF line,\n"
             "        an undefined rule, a language with no string such as an empty choice\n"
             "        list), or not exactly one constraint given.\n"
             "    VtUnsupportedError: a feature vt does not implement, named in the message\n"
             "        (left recursion in GBNF, a JSON Schema keyword such as 'not').\n"
             "    TypeError: a constraint of the wrong Python type.")
        .def_property_readonly("kind", [](const Grammar &self) { return kind_name(self.kind); },
                               "\"gbnf\", \"json_schema\", \"json\", \"regex\" or \"choice\".")
        .def_property_readonly("source", [](const Grammar &self) { return utf8_replace(self.source); },
                               "The text compiled: the GBNF, the schema as JSON, the regex, the\n"
                               "choices as a JSON array; \"\" for json=True.")
        .def_property_readonly("n_vocab", [](const Grammar &self) { return vt_grammar_n_vocab(self.handle); },
                               "The vocabulary size its masks cover.")
        .def_readonly("tokenizer", &Grammar::tok, "The vt.Tokenizer it was compiled for.")
        .def("matcher", &make_matcher, "A new vt.GrammarMatcher at the start of the language.")
        // Immutable: a copy is the object itself (copy.deepcopy of SamplingParams).
        .def("__copy__", [](std::shared_ptr<Grammar> self) { return self; })
        .def("__deepcopy__", [](std::shared_ptr<Grammar> self, const py::object &) { return self; }, py::arg("memo"))
        .def("__repr__", [](const Grammar &self) {
            std::string src = self.source.size() > 60 ? self.source.substr(0, 57) + "..." : self.source;
            return std::string("<vt.Grammar ") + kind_name(self.kind) +
                   (src.empty() ? std::string() : " " + std::string(py::repr(utf8_replace(src)))) + ">";
        });

    py::class_<Matcher, std::shared_ptr<Matcher>>(m, "GrammarMatcher",
        "Walks one output through a vt.Grammar's language, for callers that run their own\n"
        "decoding loop (LLM and Sampler.add_grammar do this themselves):\n\n"
        "    m = grammar.matcher()\n"
        "    while not m.is_completed:\n"
        "        allowed = m.allowed_tokens()     # or m.fill_mask(): a bitmask\n"
        "        tok = pick(logits, allowed)\n"
        "        if tokenizer.is_eog(tok): break\n"
        "        m.accept(tok)\n\n"
        "A token is allowed when the text so far followed by its bytes begins some string\n"
        "of the language; end-of-generation tokens are allowed exactly when the text so\n"
        "far is a whole string of it; other control tokens never are.\n\n"
        "Thread-safety: one thread at a time (enforced with a lock). It keeps its grammar\n"
        "alive.")
        .def(py::init(&make_matcher), py::arg("grammar"), "A matcher at the start of grammar's language.")
        .def("fill_mask", &fill_mask, py::arg("out") = py::none(),
             "The tokens allowed next as a bitmask of (n_vocab + 31) // 32 32-bit words: bit\n"
             "t % 32 of word t // 32 is set when token t is allowed (as bytes on a\n"
             "little-endian machine: bit t % 8 of byte t // 8). Returns a new array('I'), or\n"
             "fills out (any writable, contiguous, 4-byte aligned buffer of at least that many\n"
             "words: a bytearray, array('I'), a NumPy uint32 array; extra words are zeroed)\n"
             "and returns it. After an end-of-generation token was accepted nothing is\n"
             "allowed. Releases the GIL while it computes.")
        .def("allowed_tokens", &allowed_tokens, "The ids allowed next, ascending (fill_mask as a list).")
        .def("accept", [](Matcher &self, vt_token t) {
                Lock lock(self.mu);
                check(vt_grammar_matcher_accept(self.handle, t));
            },
            py::arg("token"),
            "Advances over one token. Raises VtInvalidArgument, with the state unchanged, if\n"
            "the token is not allowed. Accepting an end-of-generation token terminates the\n"
            "matcher.")
        .def("accept_text", [](Matcher &self, const py::object &text) {
                std::string bytes = py::isinstance<py::bytes>(text) ? text.cast<std::string>()
                                                                    : utf8_arg(text, "accept_text's text");
                Lock lock(self.mu);
                check(vt_grammar_matcher_accept_text(self.handle, bytes.data(), bytes.size()));
            },
            py::arg("text"),
            "Advances over text (str, or bytes) as if it had been generated. Raises\n"
            "VtInvalidArgument, with the state unchanged, if no string of the language\n"
            "begins with the text so far followed by it.")
        .def_property_readonly("is_accepting", [](Matcher &self) {
                Lock lock(self.mu);
                return vt_grammar_matcher_is_accepting(self.handle);
            },
            "Whether the text so far is a whole string of the language (end of generation\n"
            "is allowed).")
        .def_property_readonly("is_completed", [](Matcher &self) {
                Lock lock(self.mu);
                return vt_grammar_matcher_is_completed(self.handle);
            },
            "Whether nothing but end of generation can follow (or the matcher accepted an\n"
            "end-of-generation token).")
        .def("reset", [](Matcher &self) {
                Lock lock(self.mu);
                vt_grammar_matcher_reset(self.handle);
            },
            "Back to the start of the language.")
        .def_readonly("grammar", &Matcher::grammar, "The vt.Grammar it walks.")
        .def("__repr__", [](Matcher &self) {
            Lock lock(self.mu);
            return std::string("<vt.GrammarMatcher ") + kind_name(self.grammar->kind) +
                   (vt_grammar_matcher_is_completed(self.handle)   ? " completed"
                    : vt_grammar_matcher_is_accepting(self.handle) ? " accepting"
                                                                   : "") + ">";
        });
}

} // namespace vt_py
