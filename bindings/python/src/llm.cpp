// vt._vt.Generation: the token loop behind vt.LLM (generate and stream).
//
// It is vt-generate's loop (examples/cli/vt-generate.cpp) over the same ABI
// calls, so that the same settings give the same tokens: accept the prompt
// into the sampler, feed and step it, then sample -> stop on an
// end-of-generation token -> accept -> detokenize -> feed -> step, until
// max_tokens or a full context. The text comes from a vt_detokenizer
// prefilled with the prompt (as vt-generate's), so that a streamed chunk
// never ends inside a character and spaces are those of the whole text.
#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "vt_py.h"

namespace vt_py {

namespace {

std::thread::id g_main_thread;

struct DetokenizerDel {
    void operator()(vt_detokenizer *d) const { vt_detokenizer_destroy(d); }
};

class Generation {
public:
    Generation(std::shared_ptr<Sequence> seq, std::shared_ptr<Sampler> sampler, std::shared_ptr<Tokenizer> tok,
               std::vector<vt_token> prompt, std::optional<int64_t> max_tokens, std::vector<vt_token> stop_ids)
        : seq_(std::move(seq)), sampler_(std::move(sampler)), tok_(std::move(tok)), prompt_(std::move(prompt)),
          max_tokens_(max_tokens.value_or(-1)), stop_ids_(std::move(stop_ids)) {
        if (max_tokens && *max_tokens < 0)
            raise_status(VT_ERR_INVALID_ARGUMENT, "max_tokens must be >= 0 or None (until end of generation)");
        {
            Lock lock(sampler_->mu);
            sampler_->get("Generation");
        }
        if (!sampler_->has_final)
            raise_status(VT_ERR_INVALID_STATE, "the sampler chain has no final stage (add_greedy or add_dist)");
        vt_detokenizer *d = nullptr;
        check(vt_detokenizer_create(tok_->handle, false, &d));
        detok_.reset(d);
    }

    // Next non-empty text chunk; StopIteration at the end.
    py::str next() {
        std::string chunk;
        run_locked([&] {
            while (!done_ && chunk.empty()) {
                if (!advance(chunk)) return;
            }
        }, false);
        if (chunk.empty() && done_) {
            chunk = take_rest();
            if (chunk.empty()) throw py::stop_iteration();
        }
        return utf8_replace(chunk);
    }

    // Runs to the end with the GIL released (checking for Ctrl-C now and
    // then on the main thread).
    void run() {
        std::string chunk;
        run_locked([&] {
            while (!done_) {
                chunk.clear();
                if (!advance(chunk)) return;
                if (interrupted()) return;
            }
        }, true);
        emitted_ = text_.size();
    }

    // May run while another thread is in run() (it ends that loop), so it
    // leaves the detokenizer alone: text held back in it is dropped.
    void close() {
        if (!done_) {
            done_ = true;
            finish_ = "abort";
        }
        closed_ = true;
        emitted_ = text_.size();
    }

    py::list token_ids() const { return py::cast(out_); }
    py::list prompt_token_ids() const { return py::cast(prompt_); }
    py::str text() const { return utf8_replace(text_); }
    py::object finish_reason() const { return finish_.empty() ? py::object(py::none()) : py::str(finish_); }
    py::object stop_reason() const { return stop_reason_ ? py::object(py::int_(*stop_reason_)) : py::object(py::none()); }
    bool done() const { return done_; }

private:
    // Takes the locks (context, then sampler), checks ownership, runs body
    // without the GIL and raises what it recorded.
    template <class Body> void run_locked(Body body, bool check_signals) {
        if (done_) return;
        Lock ctx_lock(seq_->ctx->mu);
        Lock smpl_lock(sampler_->mu);
        if (sampler_->moved) {
            done_ = true;
            finish_ = "abort";
            sampler_->get("Generation");  // raises: the chain was moved into an engine request
        }
        if (!started_) {
            seq_->check_no_views("step");
            seq_->owner = this;
        } else if (seq_->owner != this) {
            done_ = true;
            finish_ = "abort";
            raise_status(VT_ERR_INVALID_STATE, "this generation's sequence was taken over by a later generation");
        } else {
            seq_->check_no_views("step");
        }
        check_signals_ = check_signals && std::this_thread::get_id() == g_main_thread;
        last_check_ = std::chrono::steady_clock::now();
        {
            py::gil_scoped_release nogil;
            if (!started_) {
                started_ = true;
                if (!start()) done_ = true;
            }
            if (!done_) body();
        }
        if (signalled_) {
            done_ = true;
            finish_ = "abort";
            throw py::error_already_set();
        }
        if (fail_.status != VT_OK) {
            done_ = true;
            fail_.raise_if_failed();
        }
    }

    bool interrupted() {
        if (!check_signals_) return false;
        auto now = std::chrono::steady_clock::now();
        if (now - last_check_ < std::chrono::milliseconds(100)) return false;
        last_check_ = now;
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() != 0) signalled_ = true;
        return signalled_;
    }

    // Prefill: without the GIL. False on failure (recorded in fail_).
    bool start() {
        if (prompt_.empty()) {
            fail_.status = VT_ERR_INVALID_ARGUMENT;
            fail_.message = "the prompt is empty (no tokens to evaluate)";
            return false;
        }
        if (fail_.set(vt_seq_reset(seq_->handle))) return false;
        if (fail_.set(vt_sampler_reset(sampler_->handle))) return false;
        // The penalties see the prompt, as vt-generate's; a grammar stage
        // must see the output only (its matcher would refuse the prompt), so
        // a chain with one is given nothing of the prompt.
        if (!sampler_->grammar)
            for (vt_token t : prompt_)
                if (fail_.set(vt_sampler_accept(sampler_->handle, t))) return false;
        if (fail_.set(vt_seq_feed(seq_->handle, prompt_.data(), prompt_.size()))) return false;
        if (fail_.set(vt_seq_step(seq_->handle))) return false;
        // The output continues the prompt's text (a SentencePiece word keeps
        // its leading space).
        if (fail_.set(vt_detokenizer_prefill(detok_.get(), prompt_.data(), prompt_.size()))) return false;
        if (max_tokens_ == 0) finish("length");
        return true;
    }

    void finish(const char *reason) {
        done_ = true;
        finish_ = reason;
    }

    // One token: without the GIL. Appends the text completed to chunk (all
    // of it once done). False on failure (recorded in fail_).
    bool advance(std::string &chunk) {
        const float *logits = nullptr;
        size_t n_vocab = 0;
        if (fail_.set(vt_seq_logits(seq_->handle, -1, &logits, &n_vocab))) return false;
        vt_token t = VT_TOKEN_NULL;
        if (fail_.set(vt_sampler_sample(sampler_->handle, logits, n_vocab, &t))) return false;
        if (vt_token_is_eog(tok_->handle, t)) {
            finish("stop");
        } else if (std::find(stop_ids_.begin(), stop_ids_.end(), t) != stop_ids_.end()) {
            finish("stop");
            stop_reason_ = t;
        } else {
            out_.push_back(t);
            if (fail_.set(vt_sampler_accept(sampler_->handle, t))) return false;
            if (fail_.set(detokenizer_append(detok_.get(), [&](char *b, size_t n, size_t *need) {
                    return vt_detokenizer_push(detok_.get(), t, b, n, need);
                }, text_)))
                return false;
            if (max_tokens_ >= 0 && (int64_t)out_.size() >= max_tokens_) {
                finish("length");
            } else {
                vt_status s = vt_seq_feed(seq_->handle, &t, 1);
                if (s == VT_ERR_CONTEXT_FULL) finish("length");
                else if (fail_.set(s) || fail_.set(vt_seq_step(seq_->handle))) return false;
            }
        }
        if (done_ && !flush()) return false;
        chunk.append(text_, emitted_, std::string::npos);
        emitted_ = text_.size();
        return true;
    }

    // Appends what the detokenizer still holds back to text_, once.
    bool flush() {
        if (flushed_) return true;
        flushed_ = true;
        return !fail_.set(detokenizer_append(detok_.get(), [&](char *b, size_t n, size_t *need) {
            return vt_detokenizer_finish(detok_.get(), b, n, need);
        }, text_));
    }

    // Text not yet handed out by next(), after an error ended the generation
    // (nothing after close()).
    std::string take_rest() {
        Lock lock(seq_->ctx->mu);  // as run_locked: the detokenizer is the loop's
        std::string r;
        if (!closed_) {
            flush();
            r = text_.substr(emitted_);
        }
        emitted_ = text_.size();
        return r;
    }

    std::shared_ptr<Sequence> seq_;
    std::shared_ptr<Sampler> sampler_;
    std::shared_ptr<Tokenizer> tok_;
    std::vector<vt_token> prompt_;
    int64_t max_tokens_;  // < 0: until end of generation
    std::vector<vt_token> stop_ids_;

    bool started_ = false;
    bool done_ = false;
    std::vector<vt_token> out_;
    std::unique_ptr<vt_detokenizer, DetokenizerDel> detok_;
    std::string text_;       // the text the detokenizer gave so far
    size_t emitted_ = 0;     // text_ handed out by next()
    bool flushed_ = false;   // the detokenizer's rest is in text_
    bool closed_ = false;
    std::string finish_;     // "", "stop", "length", "abort"
    std::optional<vt_token> stop_reason_;
    Failure fail_;
    bool check_signals_ = false;
    bool signalled_ = false;
    std::chrono::steady_clock::time_point last_check_;
};

} // namespace

void init_llm(py::module_ &m) {
    g_main_thread = std::this_thread::get_id();  // the importing thread
    py::class_<Generation>(m, "Generation",
        "One generation on a Sequence: the token loop behind LLM.generate and LLM.stream,\n"
        "the same as vt-generate's. Iterate it for text chunks that never end inside a\n"
        "UTF-8 character, or call run() to finish it at once (the GIL is released; Ctrl-C\n"
        "interrupts it on the main thread). The prompt is evaluated on the first next() or\n"
        "run(); the sequence is reset and the sampler reset (history cleared, RNG\n"
        "reseeded, grammar rewound) first, and the prompt recorded in its penalty history\n"
        "unless the chain has a grammar stage (which takes output tokens only).\n\n"
        "Thread-safety: as its Sequence and Sampler (one thread at a time, enforced).")
        .def(py::init<std::shared_ptr<Sequence>, std::shared_ptr<Sampler>, std::shared_ptr<Tokenizer>,
                      std::vector<vt_token>, std::optional<int64_t>, std::vector<vt_token>>(),
             py::arg("seq"), py::arg("sampler"), py::arg("tokenizer"), py::arg("prompt_token_ids"),
             py::arg("max_tokens") = py::none(), py::arg("stop_token_ids") = std::vector<vt_token>{},
             "Args:\n"
             "    seq: the vt.Sequence to generate in (reset when the generation starts).\n"
             "    sampler: a vt.Sampler chain ending in greedy or dist.\n"
             "    tokenizer: the model's vt.Tokenizer (end-of-generation ids, text).\n"
             "    prompt_token_ids: the prompt, already tokenized (non-empty).\n"
             "    max_tokens: most tokens to generate; None = until end of generation or a\n"
             "        full context.\n"
             "    stop_token_ids: extra ids that end generation (not included in the output).")
        .def("__iter__", [](py::object self) { return self; })
        .def("__next__", &Generation::next)
        .def("run", &Generation::run, "Generates to the end (GIL released).")
        .def("close", &Generation::close,
             "Ends the generation early (finish_reason \"abort\" if it had not finished).")
        .def_property_readonly("token_ids", &Generation::token_ids, "Generated token ids so far.")
        .def_property_readonly("prompt_token_ids", &Generation::prompt_token_ids, "The prompt's token ids.")
        .def_property_readonly("text", &Generation::text,
                               "Generated text so far, as handed out (Tokenizer.decode of prompt + output,\n"
                               "less the prompt's text; invalid UTF-8 replaced). Complete once done, unless\n"
                               "closed early.")
        .def_property_readonly("finish_reason", &Generation::finish_reason,
                               "None while running; \"stop\" (end-of-generation or stop token), \"length\"\n"
                               "(max_tokens or a full context) or \"abort\" (closed, interrupted).")
        .def_property_readonly("stop_reason", &Generation::stop_reason,
                               "The id from stop_token_ids that ended generation, else None.")
        .def_property_readonly("done", &Generation::done, "Whether the generation has ended.");
}

} // namespace vt_py
