// vt.Context and vt.Sequence: evaluating tokens and reading logits
// (vt_context.h). The context's serving engine (submit, step, ...) is in
// engine.cpp.
#include <cstring>
#include <optional>

#include "vt_py.h"

namespace vt_py {

void Sequence::check_no_views(const char *what) const {
    if (n_views > 0)
        throw py::buffer_error(std::string("Sequence.") + what +
                               ": a zero-copy logits view (logits(copy=False)) of this sequence is still "
                               "alive and would be invalidated; delete it or copy it first");
}

namespace {

// vLLM's speculative_config dict: {"method": "ngram", "num_speculative_tokens":
// k, "prompt_lookup_max": a, "prompt_lookup_min": b}, {"method": "suffix",
// "num_speculative_tokens": k (default VT_SPEC_MAX_TOKENS),
// "suffix_decoding_max_tree_depth": d, "suffix_decoding_max_cached_requests":
// n, "suffix_decoding_max_spec_factor": f, "suffix_decoding_min_token_prob":
// p} or {"method": "draft_model" (implied by "model"), "model": a vt.Model,
// "num_speculative_tokens": k}, whose model goes to draft (the context keeps
// it), or {"method": "mtp", "num_speculative_tokens": k}. Other methods, keys and another method's keys raise ValueError by
// name; the numbers' ranges are vt_context_create's.
void read_speculative_config(const py::dict &cfg, vt_context_params &cp, std::shared_ptr<Model> &draft) {
    std::string method = cfg.contains("model") ? "draft_model" : "";
    if (cfg.contains("method")) method = py::cast<std::string>(cfg["method"]);
    if (method != "ngram" && method != "suffix" && method != "draft_model" && method != "mtp")
        throw py::value_error("speculative_config: method '" + method +
                              "' is not supported (vt implements 'ngram', 'suffix', 'draft_model' and 'mtp')");
    const bool suffix = method == "suffix", draft_method = method == "draft_model", mtp = method == "mtp";
    if (draft_method && !cfg.contains("model"))
        throw py::value_error("speculative_config: method 'draft_model' needs 'model', a vt.Model");
    const bool ngram = !suffix && !draft_method && !mtp;
    uint32_t k = 0;
    for (const auto &item : cfg) {
        const std::string key = py::cast<std::string>(item.first);
        if (key == "method" || (draft_method && key == "model")) continue;
        uint32_t *count = key == "num_speculative_tokens"                         ? &k
                          : ngram && key == "prompt_lookup_min"                    ? &cp.prompt_lookup_min
                          : ngram && key == "prompt_lookup_max"                    ? &cp.prompt_lookup_max
                          : suffix && key == "suffix_decoding_max_tree_depth"      ? &cp.suffix_max_tree_depth
                          : suffix && key == "suffix_decoding_max_cached_requests" ? &cp.suffix_max_cached_requests
                                                                                   : nullptr;
        float *real = suffix && key == "suffix_decoding_max_spec_factor" ? &cp.suffix_max_spec_factor
                      : suffix && key == "suffix_decoding_min_token_prob" ? &cp.suffix_min_token_prob
                                                                          : nullptr;
        if (real) {
            *real = (float)py::cast<double>(item.second);
            continue;
        }
        if (!count)
            throw py::value_error("speculative_config: '" + key + "' is not supported with method '" + method +
                                  "' (vt reads " +
                                  (suffix         ? "num_speculative_tokens and suffix_decoding_max_tree_depth, "
                                                    "_max_cached_requests, _max_spec_factor and _min_token_prob)"
                                   : draft_method ? "model and num_speculative_tokens)"
                                   : mtp          ? "num_speculative_tokens)"
                                                  : "num_speculative_tokens, prompt_lookup_min and prompt_lookup_max)"));
        const long long v = py::cast<long long>(item.second);
        if (v < 0 || v > UINT32_MAX) throw py::value_error("speculative_config: '" + key + "' is out of range");
        *count = (uint32_t)v;
    }
    if (k == 0 && !suffix) throw py::value_error("speculative_config: 'num_speculative_tokens' is required");
    if (draft_method) {
        if (!py::isinstance<Model>(cfg["model"]))
            throw py::type_error("speculative_config: 'model' must be a vt.Model (vt.LLM also takes a path)");
        draft = py::cast<std::shared_ptr<Model>>(cfg["model"]);
    }
    cp.spec_method = suffix ? VT_SPEC_SUFFIX : draft_method ? VT_SPEC_DRAFT_MODEL : mtp ? VT_SPEC_MTP : VT_SPEC_NGRAM;
    cp.num_speculative_tokens = k ? k : VT_SPEC_MAX_TOKENS;
    cp.draft_model = draft ? draft->handle : nullptr;
}

std::shared_ptr<Context> make_context(std::shared_ptr<Model> model, uint32_t n_threads,
                                      std::optional<std::string> backend, uint32_t n_batch, uint64_t kv_cache_bytes,
                                      uint32_t kv_block_size, uint32_t max_num_seqs, uint32_t max_model_len,
                                      bool prefix_caching, std::optional<py::dict> speculative_config) {
    auto c = std::make_shared<Context>();
    c->model = std::move(model);
    vt_context_params cp;
    vt_context_params_init_v2(&cp, sizeof cp);  // the serving fields too (ABI 1.2)
    cp.n_threads = n_threads;
    cp.backend = backend ? backend->c_str() : nullptr;
    cp.n_batch = n_batch;
    cp.kv_cache_bytes = kv_cache_bytes;
    cp.kv_block_size = kv_block_size;
    cp.max_num_seqs = max_num_seqs;
    cp.max_model_len = max_model_len;
    cp.no_prefix_caching = !prefix_caching;
    if (speculative_config) read_speculative_config(*speculative_config, cp, c->draft);
    Failure f;
    {
        py::gil_scoped_release nogil;
        f.set(vt_context_create(c->model->handle, &cp, &c->handle));
    }
    f.raise_if_failed();
    return c;
}

std::shared_ptr<Sequence> make_sequence(std::shared_ptr<Context> ctx, uint32_t n_ctx, bool logits_all) {
    auto s = std::make_shared<Sequence>();
    s->ctx = std::move(ctx);
    s->logits_all = logits_all;
    vt_seq_params sp;
    vt_seq_params_init(&sp);
    sp.n_ctx = n_ctx;
    sp.logits_all = logits_all;
    Lock lock(s->ctx->mu);
    Failure f;
    {
        py::gil_scoped_release nogil;
        f.set(vt_seq_create(s->ctx->handle, &sp, &s->handle));
    }
    f.raise_if_failed();
    return s;
}

// Keeps a sequence alive while a zero-copy view of its logits exists, and
// counts the views (the capsule is the arrays' base object).
struct ViewToken {
    std::shared_ptr<Sequence> seq;
};

py::array logits(const std::shared_ptr<Sequence> &self, int32_t i, bool copy) {
    Lock lock(self->ctx->mu);
    const float *p = nullptr;
    size_t n = 0;
    check(vt_seq_logits(self->handle, i, &p, &n));
    if (copy) {
        py::array_t<float> out((py::ssize_t)n);
        std::memcpy(out.mutable_data(), p, n * sizeof(float));
        return out;
    }
    auto *token = new ViewToken{self};
    py::capsule base(token, [](void *v) {
        auto *t = static_cast<ViewToken *>(v);
        t->seq->n_views -= 1;
        delete t;
    });
    self->n_views += 1;
    py::array_t<float> view({(py::ssize_t)n}, {(py::ssize_t)sizeof(float)}, p, base);
    view.attr("flags").attr("writeable") = false;
    return view;
}

} // namespace

void init_context(py::module_ &m) {
    py::class_<Context, std::shared_ptr<Context>>(m, "Context",
        "A model bound to a compute backend and a thread pool; sequences are made in it.\n\n"
        "Thread-safety: a Context and its Sequences are used by one thread at a time. This\n"
        "is enforced: every call takes the context's lock (waiting with the GIL released),\n"
        "so concurrent calls from several threads are serialized, not corrupted. For\n"
        "parallel work use one Context per thread; they may share one Model.\n\n"
        "    ctx = vt.Context(model, n_threads=4)\n"
        "    seq = ctx.sequence()\n"
        "    seq.feed(model.tokenizer.encode(\"Hello\", add_special=True)); seq.step()\n"
        "    next_id = int(seq.logits().argmax())\n\n"
        "A context also serves many requests at once (continuous batching, vt_engine.h):\n"
        "submit() queues one, each step() is one forward pass over all running requests,\n"
        "poll() returns their events (vt.RequestEvent). A request's tokens are the same\n"
        "alone or batched.\n\n"
        "    rid = ctx.submit(prompt_ids, max_tokens=16)\n"
        "    done = False\n"
        "    while not done:\n"
        "        ctx.step()\n"
        "        for ev in ctx.poll():\n"
        "            print(ev.text, end=\"\"); done = ev.finish_reason is not None\n\n"
        "submit, cancel and stats may be called from any thread while one thread steps.")
        .def(py::init(&make_context), py::arg("model"), py::arg("n_threads") = 0, py::arg("backend") = py::none(),
             py::arg("n_batch") = 512, py::kw_only(), py::arg("kv_cache_bytes") = 0, py::arg("kv_block_size") = 0,
             py::arg("max_num_seqs") = 0, py::arg("max_model_len") = 0, py::arg("prefix_caching") = true,
             py::arg("speculative_config") = py::none(),
             "Args:\n"
             "    model: a vt.Model (kept alive by the context).\n"
             "    n_threads: compute threads; 0 = the number of physical cores.\n"
             "    backend: the device to compute on; None = the model's (Model.device), and a\n"
             "        name must be that one.\n"
             "    n_batch: most tokens evaluated per forward pass (longer feeds are chunked;\n"
             "        the engine's token budget per step).\n"
             "  The serving engine (read at the first submit; 0 = libvt's default):\n"
             "    kv_cache_bytes: the KV block pool; 0 = what its memory holds (the CPU: a\n"
             "        quarter of the available memory; a device: 90% of its free memory after\n"
             "        the weights and the compute arena), capped at what max_num_seqs requests\n"
             "        of max_model_len tokens can use. On a device a budget that does not fit\n"
             "        raises VtOutOfMemory here, saying what fits.\n"
             "    kv_block_size: tokens per KV block; 0 = 16.\n"
             "    max_num_seqs: requests running at once; 0 = 64.\n"
             "    max_model_len: tokens per request (prompt + output); 0 = the model's\n"
             "        training context, capped by the pool.\n"
             "    prefix_caching: share the KV blocks of common prompt prefixes.\n"
             "    speculative_config: vLLM's dict, {\"method\": \"ngram\", \"num_speculative_tokens\":\n"
             "        5, \"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2}: n-gram prompt lookup\n"
             "        drafts, or {\"method\": \"suffix\", ...} (vLLM's suffix_decoding_* keys):\n"
             "        suffix decoding over the request and earlier outputs, or {\"model\":\n"
             "        draft, \"num_speculative_tokens\": 4} with draft a vt.Model of the same\n"
             "        vocabulary (the draft_model method, kept by the context); verified in the\n"
             "        same step, the tokens stay those made without it. Acceptance in\n"
             "        stats(). None = no drafts. Not for models with recurrent layers\n"
             "        (VtUnsupportedError).\n\n"
             "Raises VtNotFound (no such device), VtInvalidArgument (another device than the\n"
             "model's), VtOutOfMemory.")
        .def_readonly("model", &Context::model, "The vt.Model of this context.")
        .def("sequence", &make_sequence, py::arg("n_ctx") = 0, py::arg("logits_all") = false,
             "A new empty vt.Sequence in this context; see Sequence.__init__.")
        .def("__repr__", [](const Context &self) { return "<vt.Context of '" + self.model->path + "'>"; });

    py::class_<Sequence, std::shared_ptr<Sequence>>(m, "Sequence",
        "One token stream evaluated in a Context: it owns its KV cache (n_ctx tokens),\n"
        "takes tokens with feed(), evaluates them with step() and exposes the logits of\n"
        "that step with logits().\n\n"
        "Thread-safety: as its Context (one thread at a time, enforced by the context's\n"
        "lock). step() releases the GIL.")
        .def(py::init(&make_sequence), py::arg("context"), py::arg("n_ctx") = 0, py::arg("logits_all") = false,
             "Args:\n"
             "    context: the vt.Context to evaluate in (kept alive by the sequence).\n"
             "    n_ctx: KV capacity in tokens; 0 = the model's training context, capped at 4096.\n"
             "    logits_all: keep the logits of every token of a step, not only the last.\n\n"
             "Raises VtOutOfMemory (KV cache), VtInvalidArgument.")
        .def("feed", [](Sequence &self, const std::vector<vt_token> &tokens) {
                Lock lock(self.ctx->mu);
                check(vt_seq_feed(self.handle, tokens.data(), tokens.size()));
            },
            py::arg("tokens"),
            "Queues token ids for the next step(). Raises VtContextFull if the tokens held\n"
            "plus queued would exceed n_ctx (nothing is queued then) and VtInvalidArgument\n"
            "for ids outside the vocabulary.")
        .def("step", [](Sequence &self) {
                Lock lock(self.ctx->mu);
                self.check_no_views("step");
                Failure f;
                {
                    py::gil_scoped_release nogil;
                    f.set(vt_seq_step(self.handle));
                }
                f.raise_if_failed();
            },
            "Evaluates every queued token (in chunks of the context's n_batch) and makes their\n"
            "logits readable; releases the GIL. Raises VtInvalidState if nothing is queued,\n"
            "and BufferError while a zero-copy logits view is alive (see logits()).")
        .def("logits", &logits, py::arg("i") = -1, py::arg("copy") = true,
             "Logits of token i of the last step as a float32 NumPy array of shape (n_vocab,).\n"
             "i = -1 is the last token; other indexes need logits_all=True.\n\n"
             "copy=True (default): a fresh array the caller owns.\n"
             "copy=False: a zero-copy, read-only view of the sequence's own buffer. The view\n"
             "keeps the sequence alive, and while any such view (or a view of it) exists,\n"
             "step() and reset() raise BufferError instead of overwriting the memory under\n"
             "it -- the same rule as bytearray and memoryview. Delete views before the next\n"
             "step.\n\n"
             "Raises VtInvalidArgument for an index outside the last step, VtInvalidState\n"
             "before the first step.")
        .def("set_lora", [](Sequence &self, std::shared_ptr<LoRA> adapter, float scale) {
                Lock lock(self.ctx->mu);
                check(vt_seq_set_lora(self.handle, adapter ? adapter->handle : nullptr, scale));
            },
            py::arg("adapter"), py::arg("scale") = 1.0f,
            "Sets the vt.LoRA adapter the next steps compute with, at scale (1 = as trained,\n"
            "0 = as the base model); adapter None = the base model. Tokens already in the KV\n"
            "cache keep what they were computed with: reset() to recompute them. The sequence\n"
            "holds the adapter until it is replaced. Raises VtInvalidArgument for an adapter\n"
            "of another model or a scale that is not finite.")
        .def_property_readonly("n_past", [](const Sequence &self) {
                size_t n = 0;
                check(vt_seq_n_past(self.handle, &n));
                return n;
            },
            "Number of tokens evaluated into the KV cache so far.")
        .def_readonly("logits_all", &Sequence::logits_all, "Whether every token's logits are kept.")
        .def_readonly("context", &Sequence::ctx, "The vt.Context of this sequence.")
        .def("reset", [](Sequence &self) {
                Lock lock(self.ctx->mu);
                self.check_no_views("reset");
                check(vt_seq_reset(self.handle));
            },
            "Forgets every token (KV cache, queue and logits) and keeps the memory.\n"
            "Raises BufferError while a zero-copy logits view is alive.")
        .def("__repr__", [](const Sequence &self) {
            size_t n = 0;
            vt_seq_n_past(self.handle, &n);
            return "<vt.Sequence n_past=" + std::to_string(n) + ">";
        });
}

} // namespace vt_py
