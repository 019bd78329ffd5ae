// vt.Sampler: a sampler chain that picks the next token from logits
// (vt_sampler.h).
#include "vt_py.h"

namespace vt_py {

namespace {

std::shared_ptr<Sampler> make_sampler() {
    auto s = std::make_shared<Sampler>();
    check(vt_sampler_create(&s->handle));
    return s;
}

// Adds a stage under the sampler's lock and returns the sampler (chaining).
template <class Add> std::shared_ptr<Sampler> add(std::shared_ptr<Sampler> self, Add stage, bool final_stage = false) {
    Lock lock(self->mu);
    check(stage(self->get("Sampler.add_*")));
    if (final_stage) self->has_final = true;
    return self;
}

std::shared_ptr<Sampler> add_grammar(std::shared_ptr<Sampler> self, std::shared_ptr<Grammar> grammar) {
    if (!grammar) raise_status(VT_ERR_INVALID_ARGUMENT, "Sampler.add_grammar: grammar must be a vt.Grammar, not None");
    Lock lock(self->mu);
    check(vt_sampler_add_grammar(self->get("Sampler.add_grammar"), grammar->handle));
    self->grammar = std::move(grammar);
    return self;
}

// {token: bias} (any mapping) or an iterable of (token, bias) pairs.
std::shared_ptr<Sampler> add_logit_bias(std::shared_ptr<Sampler> self, const py::object &bias) {
    std::vector<vt_token> ids;
    std::vector<float> values;
    py::object pairs = py::hasattr(bias, "items") ? bias.attr("items")() : bias;
    for (py::handle item : pairs) {
        if (!PySequence_Check(item.ptr()) || py::isinstance<py::str>(item) || py::len(item) != 2)
            throw py::type_error("Sampler.add_logit_bias: bias must be a dict {token: bias} or (token, bias) pairs");
        py::sequence kv = py::reinterpret_borrow<py::sequence>(item);
        ids.push_back(kv[0].cast<vt_token>());
        values.push_back(kv[1].cast<float>());
    }
    return add(std::move(self), [&](vt_sampler *h) {
        return vt_sampler_add_logit_bias(h, ids.data(), values.data(), ids.size());
    });
}

vt_token sample_array(Sampler &self, py::array_t<float, py::array::c_style | py::array::forcecast> logits) {
    if (logits.ndim() != 1)
        raise_status(VT_ERR_INVALID_ARGUMENT, "Sampler.sample: logits must be one-dimensional (n_vocab,)");
    Lock lock(self.mu);
    vt_token t = VT_TOKEN_NULL;
    check(vt_sampler_sample(self.get("Sampler.sample"), logits.data(), (size_t)logits.size(), &t));
    return t;
}

vt_token sample_seq(Sampler &self, Sequence &seq, int32_t i) {
    Lock ctx_lock(seq.ctx->mu);  // lock order: context, then sampler
    Lock lock(self.mu);
    vt_sampler *h = self.get("Sampler.sample");
    const float *p = nullptr;
    size_t n = 0;
    check(vt_seq_logits(seq.handle, i, &p, &n));
    vt_token t = VT_TOKEN_NULL;
    check(vt_sampler_sample(h, p, n, &t));
    return t;
}

} // namespace

void init_sampler(py::module_ &m) {
    py::class_<Sampler, std::shared_ptr<Sampler>>(m, "Sampler",
        "A sampler chain: stages applied in the order they are added to the candidates\n"
        "(token, logit) built from logits, then a final stage that picks the token: greedy\n"
        "(argmax) or dist (a seeded draw). The usual order, as in llama.cpp and\n"
        "vt-generate: penalties, top-k, top-p, min-p, temperature, dist. Stages return\n"
        "the sampler, so they chain:\n\n"
        "    smpl = vt.Sampler().add_top_k(40).add_top_p(0.95).add_min_p(0.05) \\\n"
        "                       .add_temp(0.8).add_dist(seed=42)\n"
        "    tok = smpl.sample(seq); smpl.accept(tok)\n\n"
        "vt.SamplingParams(...).sampler() builds the chain LLM.generate uses. Constrained\n"
        "decoding: add_grammar(vt.Grammar) first, then the other stages; logit biases with\n"
        "add_logit_bias({id: bias}).\n\n"
        "Context.submit moves a chain into a request (the request owns it from then on):\n"
        "the object is then empty and every method raises VtInvalidState.\n\n"
        "Thread-safety: one thread at a time (it holds the RNG and the penalty history);\n"
        "enforced with a lock. Stages raise VtInvalidArgument for values out of range and\n"
        "VtInvalidState when added after a final stage.")
        .def(py::init(&make_sampler), "An empty chain.")
        .def("add_penalties", [](std::shared_ptr<Sampler> self, int32_t last_n, float repeat, float freq, float present) {
                return add(std::move(self), [&](vt_sampler *h) { return vt_sampler_add_penalties(h, last_n, repeat, freq, present); });
            },
            py::arg("last_n") = 64, py::arg("repeat") = 1.0f, py::arg("freq") = 0.0f, py::arg("present") = 0.0f,
            "Repetition (divides positive logits, multiplies negative ones, as in CTRL),\n"
            "frequency and presence penalties over the last last_n accepted tokens (0 = none,\n"
            "-1 = all). repeat 1.0, freq 0.0 and present 0.0 are off.")
        .def("add_top_k", [](std::shared_ptr<Sampler> self, int32_t k) {
                return add(std::move(self), [&](vt_sampler *h) { return vt_sampler_add_top_k(h, k); });
            },
            py::arg("k"), "Keep the k most likely tokens (k <= 0: keep all).")
        .def("add_top_p", [](std::shared_ptr<Sampler> self, float p, size_t min_keep) {
                return add(std::move(self), [&](vt_sampler *h) { return vt_sampler_add_top_p(h, p, min_keep); });
            },
            py::arg("p"), py::arg("min_keep") = 1,
            "Keep the smallest set whose probability reaches p (1.0: keep all), at least min_keep.")
        .def("add_min_p", [](std::shared_ptr<Sampler> self, float p, size_t min_keep) {
                return add(std::move(self), [&](vt_sampler *h) { return vt_sampler_add_min_p(h, p, min_keep); });
            },
            py::arg("p"), py::arg("min_keep") = 1,
            "Keep tokens with probability >= p * the top probability (0.0: keep all), at least min_keep.")
        .def("add_temp", [](std::shared_ptr<Sampler> self, float t) {
                return add(std::move(self), [&](vt_sampler *h) { return vt_sampler_add_temp(h, t); });
            },
            py::arg("t"), "Divide logits by t; t <= 0 keeps only the most likely token.")
        .def("add_grammar", &add_grammar, py::arg("grammar"),
             "Removes the tokens a vt.Grammar does not allow next. The chain keeps its own\n"
             "matcher of the grammar, advanced by accept() and rewound by reset(); so a\n"
             "chain with a grammar must be given the output tokens only, never the prompt\n"
             "(accept raises VtInvalidArgument for a token the grammar does not allow). Add it\n"
             "first, before top-k/top-p/min-p, so that they see allowed tokens only; a chain\n"
             "has at most one (VtInvalidState). The chain keeps the grammar alive.")
        .def("add_logit_bias", &add_logit_bias, py::arg("bias"),
             "Adds bias to the logits of tokens (OpenAI's and vLLM's logit_bias): a dict\n"
             "{token id: bias} or (token, bias) pairs; float('-inf') bans a token, a large\n"
             "value forces it. Raises VtInvalidArgument for a negative id or a NaN or +inf\n"
             "bias; ids past the vocabulary are ignored.")
        .def("add_greedy", [](std::shared_ptr<Sampler> self) {
                return add(std::move(self), [](vt_sampler *h) { return vt_sampler_add_greedy(h); }, true);
            },
            "Final stage: the most likely token.")
        .def("add_dist", [](std::shared_ptr<Sampler> self, uint32_t seed) {
                return add(std::move(self), [&](vt_sampler *h) { return vt_sampler_add_dist(h, seed); }, true);
            },
            py::arg("seed"),
            "Final stage: a draw from the softmax with a seeded mt19937 (same seed, same\n"
            "logits, same draws on every platform).")
        .def("sample", &sample_seq, py::arg("seq"), py::arg("i") = -1,
             "Picks a token from the logits of token i of seq's last step, without copying\n"
             "them. Does not accept the token. Raises VtInvalidState if the chain has no\n"
             "final stage.")
        .def("sample", &sample_array, py::arg("logits"),
             "Picks a token from a 1-D array of logits (converted to contiguous float32).")
        .def("accept", [](Sampler &self, vt_token t) {
                Lock lock(self.mu);
                check(vt_sampler_accept(self.get("Sampler.accept"), t));
            },
            py::arg("token"),
            "Records a token in the penalty history (prompt and output tokens) and advances\n"
            "the grammar stage (output tokens only); VtInvalidArgument, with nothing\n"
            "recorded, if the grammar does not allow it.")
        .def("reset", [](Sampler &self) {
                Lock lock(self.mu);
                check(vt_sampler_reset(self.get("Sampler.reset")));
            },
            "Clears the penalty history, rewinds the grammar stage and reseeds the RNG with\n"
            "its original seed.")
        .def_property_readonly("has_final", [](const Sampler &self) { return self.has_final; },
                               "Whether the chain ends in greedy or dist (it can sample).")
        .def_readonly("grammar", &Sampler::grammar, "The grammar stage's vt.Grammar, or None.")
        .def("__repr__", [](const Sampler &self) {
            if (self.moved) return std::string("<vt.Sampler (moved into a request)>");
            return std::string("<vt.Sampler") + (self.has_final ? "" : " (no final stage)") + ">";
        });
}

} // namespace vt_py
