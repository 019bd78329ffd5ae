// vt.Tokenizer: text <-> token ids (vt_tokenizer.h).
#include <optional>

#include "vt_py.h"

namespace vt_py {

namespace {

std::string text_bytes(const py::object &text) {
    if (py::isinstance<py::bytes>(text)) return text.cast<std::string>();
    if (py::isinstance<py::str>(text)) {
        Py_ssize_t n = 0;
        const char *p = PyUnicode_AsUTF8AndSize(text.ptr(), &n);
        if (!p) throw py::error_already_set();  // lone surrogates
        return std::string(p, (size_t)n);
    }
    throw py::type_error("text must be str or bytes");
}

std::vector<vt_token> encode(const Tokenizer &self, const py::object &text, bool add_special, bool parse_special) {
    const std::string bytes = text_bytes(text);
    uint32_t flags = VT_TOKENIZE_NONE;
    if (add_special) flags |= VT_TOKENIZE_ADD_SPECIAL;
    if (parse_special) flags |= VT_TOKENIZE_PARSE_SPECIAL;
    std::vector<vt_token> out;
    Failure f;
    {
        py::gil_scoped_release nogil;
        out.resize(bytes.size() + 16);
        size_t n = 0;
        vt_status s = vt_tokenize(self.handle, bytes.data(), bytes.size(), flags, out.data(), out.size(), &n);
        if (s == VT_ERR_BUFFER_TOO_SMALL) {
            out.resize(n);
            s = vt_tokenize(self.handle, bytes.data(), bytes.size(), flags, out.data(), out.size(), &n);
        }
        if (!f.set(s)) out.resize(n);
    }
    f.raise_if_failed();
    return out;
}

std::string detokenize(const Tokenizer &self, const std::vector<vt_token> &ids, bool render_special) {
    std::string buf;
    Failure f;
    {
        py::gil_scoped_release nogil;
        buf.resize(ids.size() * 8 + 16);
        size_t needed = 0;
        vt_status s = vt_detokenize(self.handle, ids.data(), ids.size(), render_special, buf.data(), buf.size(), &needed);
        if (s == VT_ERR_BUFFER_TOO_SMALL) {
            buf.resize(needed + 1);
            s = vt_detokenize(self.handle, ids.data(), ids.size(), render_special, buf.data(), buf.size(), &needed);
        }
        if (!f.set(s)) buf.resize(needed);
    }
    f.raise_if_failed();
    return buf;
}

py::object token_or_none(vt_token t) { return t == VT_TOKEN_NULL ? py::object(py::none()) : py::int_(t); }

// vt.Detokenizer. Its calls are short and keep the GIL, which serializes
// them (the ABI asks one thread at a time); no lock of its own.
struct Detokenizer {
    std::shared_ptr<Tokenizer> tok;  // must outlive handle
    vt_detokenizer *handle = nullptr;
    ~Detokenizer() { vt_detokenizer_destroy(handle); }

    void restart(const std::optional<std::vector<vt_token>> &prefill) {
        if (prefill) check(vt_detokenizer_prefill(handle, prefill->data(), prefill->size()));
        else vt_detokenizer_reset(handle);
    }
    py::str push(const std::vector<vt_token> &ids) {
        // All or nothing: a bad id after good ones would lose their text.
        const uint32_t n_vocab = vt_tokenizer_n_vocab(tok->handle);
        for (vt_token t : ids)
            if (t < 0 || (uint32_t)t >= n_vocab)
                raise_status(VT_ERR_INVALID_ARGUMENT, "Detokenizer.push: token " + std::to_string(t) +
                                                          " out of range [0, " + std::to_string(n_vocab) + ")");
        std::string text;
        for (vt_token t : ids) {
            check(detokenizer_append(handle, [&](char *b, size_t n, size_t *need) {
                return vt_detokenizer_push(handle, t, b, n, need);
            }, text));
        }
        return utf8_replace(text);
    }
    py::str finish() {
        std::string text;
        check(detokenizer_append(handle, [&](char *b, size_t n, size_t *need) {
            return vt_detokenizer_finish(handle, b, n, need);
        }, text));
        return utf8_replace(text);
    }
};

std::shared_ptr<Detokenizer> make_detokenizer(std::shared_ptr<Tokenizer> tok, bool render_special,
                                              const std::optional<std::vector<vt_token>> &prefill) {
    auto d = std::make_shared<Detokenizer>();
    check(vt_detokenizer_create(tok->handle, render_special, &d->handle));
    d->tok = std::move(tok);
    d->restart(prefill);
    return d;
}

const char *const kDetokenizerDoc =
    "Streaming detokenization: the text of a growing token sequence (generation\n"
    "output) in chunks that never end inside a UTF-8 character (vt_detokenizer, the\n"
    "method of Hugging Face tokenizers' DecodeStream). The chunks of a stream joined\n"
    "with finish() equal Tokenizer.decode of the whole sequence.\n\n"
    "    d = tok.decode_stream()\n"
    "    for id in ids:\n"
    "        print(d.push(id), end=\"\")\n"
    "    print(d.finish())\n\n"
    "A character split across byte tokens comes out with the token that finishes it;\n"
    "bytes that never form a character come out as U+FFFD (finish() returns an\n"
    "unfinished one at the end). prefill: tokens already shown (e.g. the prompt):\n"
    "their text is not returned, but the pushed tokens decode as they do after them\n"
    "(a SentencePiece word keeps its leading space).\n\n"
    "Thread-safety: one stream, one thread at a time. Keeps its Tokenizer alive.";

} // namespace

void init_tokenizer(py::module_ &m) {
    py::class_<Tokenizer, std::shared_ptr<Tokenizer>>(m, "Tokenizer",
        "Text <-> token ids (BPE, SentencePiece, WordPiece, Unigram, ...).\n\n"
        "Get one from a model (Model.tokenizer, LLM.tokenizer) or from a tokenizer file\n"
        "(GGUF, tokenizer.json, tiktoken, vocab.json + merges.txt, SentencePiece .model)\n"
        "with Tokenizer.from_file(path).\n\n"
        "Thread-safety: immutable; share it freely between threads (encode and decode\n"
        "release the GIL).\n\n"
        "    tok = vt.Tokenizer.from_file(\"ggml-vocab-gpt-2.gguf\")\n"
        "    ids = tok.encode(\"Hello world\")\n"
        "    assert tok.decode(ids) == \"Hello world\"")
        .def_static("from_file", [](const std::filesystem::path &path) {
                auto t = std::make_shared<Tokenizer>();
                const std::string p = path.string();
                Failure f;
                {
                    py::gil_scoped_release nogil;
                    f.set(vt_tokenizer_load(p.c_str(), &t->owned));
                }
                f.raise_if_failed();
                t->handle = t->owned;
                return t;
            },
            py::arg("path"),
            "Reads a tokenizer from a file, its format sniffed from the content: GGUF\n"
            "(tokenizer.ggml.* metadata of a vocab-only file or a full model; no weights are\n"
            "kept), a Hugging Face tokenizer.json (tokenizer_config.json beside it is read too)\n"
            "or a directory holding one, <encoding>.tiktoken, vocab.json/encoder.json with\n"
            "merges.txt/vocab.bpe beside it, or a SentencePiece .model.\n\n"
            "Raises VtIOError, VtFormatError, or VtUnsupportedError (unknown tokenizer model\n"
            "or pre-tokenizer).")
        .def("encode", &encode, py::arg("text"), py::arg("add_special") = false, py::arg("parse_special") = false,
             "Token ids of text (str, or bytes holding UTF-8).\n\n"
             "Args:\n"
             "    add_special: add BOS/EOS as the vocabulary's metadata asks.\n"
             "    parse_special: turn the text of control tokens (\"<|im_start|>\") into those\n"
             "        tokens. Off by default: user text must not become control tokens.\n\n"
             "Raises VtInvalidUTF8 for bytes that are not UTF-8.")
        .def("decode", [](const Tokenizer &self, const std::vector<vt_token> &ids, bool render_special,
                          const std::string &errors) -> py::str {
                const std::string b = detokenize(self, ids, render_special);
                PyObject *s = PyUnicode_DecodeUTF8(b.data(), (Py_ssize_t)b.size(), errors.c_str());
                if (!s) throw py::error_already_set();
                return py::reinterpret_steal<py::str>(s);
            },
            py::arg("ids"), py::arg("render_special") = false, py::arg("errors") = "replace",
            "Text of a token sequence: the concatenation of its pieces, without the leading\n"
            "space SentencePiece adds when the vocabulary asks for that. Control tokens give\n"
            "their text only if render_special. Bytes that are not UTF-8 (a character split\n"
            "across byte tokens) are handled per `errors` as in bytes.decode.\n\n"
            "Raises VtInvalidArgument for ids outside the vocabulary.")
        .def("detokenize", [](const Tokenizer &self, const std::vector<vt_token> &ids, bool render_special) {
                return py::bytes(detokenize(self, ids, render_special));
            },
            py::arg("ids"), py::arg("render_special") = false, "As decode(), but the raw bytes.")
        .def("token_to_piece", [](const Tokenizer &self, vt_token id, bool render_special) {
                return py::bytes(read_string([&](char *b, size_t s, size_t *need) {
                    return vt_token_to_piece(self.handle, id, render_special, b, s, need);
                }));
            },
            py::arg("id"), py::arg("render_special") = false,
            "Bytes of one token as it appears in text (\"Ġthe\" -> b\" the\"). A piece may be\n"
            "part of a UTF-8 character, hence bytes. Control tokens give b\"\" unless\n"
            "render_special. Raises VtInvalidArgument for an id outside the vocabulary.")
        .def_property_readonly("n_vocab", [](const Tokenizer &self) { return vt_tokenizer_n_vocab(self.handle); },
                               "Vocabulary size.")
        .def("__len__", [](const Tokenizer &self) { return vt_tokenizer_n_vocab(self.handle); })
        .def_property_readonly("bos", [](const Tokenizer &self) { return token_or_none(vt_token_bos(self.handle)); },
                               "Beginning-of-sequence token id, or None if the vocabulary has none.")
        .def_property_readonly("eos", [](const Tokenizer &self) { return token_or_none(vt_token_eos(self.handle)); },
                               "End-of-sequence token id, or None if the vocabulary has none.")
        .def("is_eog", [](const Tokenizer &self, vt_token id) { return vt_token_is_eog(self.handle, id); },
             py::arg("id"), "Whether id ends generation (EOS, EOT, <|im_end|>, ...).")
        .def("decode_stream", &make_detokenizer, py::arg("render_special") = false,
             py::arg("prefill") = py::none(),
             "A vt.Detokenizer of this tokenizer: streaming decode (see vt.Detokenizer).")
        .def("__repr__", [](const Tokenizer &self) {
            return "<vt.Tokenizer n_vocab=" + std::to_string(vt_tokenizer_n_vocab(self.handle)) +
                   (self.model ? ", of '" + self.model->path + "'>" : std::string(">"));
        });

    py::class_<Detokenizer, std::shared_ptr<Detokenizer>>(m, "Detokenizer", kDetokenizerDoc)
        .def(py::init(&make_detokenizer), py::arg("tokenizer"), py::arg("render_special") = false,
             py::arg("prefill") = py::none(),
             "Args:\n"
             "    tokenizer: the vt.Tokenizer whose decode it follows.\n"
             "    render_special: control tokens give their text (as in Tokenizer.decode).\n"
             "    prefill: token ids already shown, or None.")
        .def("push", [](Detokenizer &self, vt_token id) { return self.push({id}); }, py::arg("id"),
             "Adds a token; returns the text it completes (\"\" if none yet).\n"
             "Raises VtInvalidArgument for an id outside the vocabulary (nothing is added).")
        .def("push", [](Detokenizer &self, const std::vector<vt_token> &ids) { return self.push(ids); },
             py::arg("ids"),
             "Adds tokens in order; returns the text they complete. Raises VtInvalidArgument,\n"
             "adding none, if one is outside the vocabulary.")
        .def("finish", &Detokenizer::finish,
             "Ends the stream: returns the text still held back (an unfinished character\n"
             "as U+FFFD) and starts over, without prefill.")
        .def("reset", &Detokenizer::restart, py::arg("prefill") = py::none(),
             "Starts over, dropping what is held back; prefill as in the constructor.")
        .def_property_readonly("tokenizer", [](const Detokenizer &self) { return self.tok; })
        .def("__repr__", [](const Detokenizer &) { return std::string("<vt.Detokenizer>"); });
}

} // namespace vt_py
