// vt._vt.Generation: the token loop behind vt.LLM (generate and stream).
//
// It is vt-generate's loop (examples/cli/vt-generate.cpp) over the same ABI
// calls, so that the same settings give the same tokens: accept the prompt
// into the sampler, feed and step it, then sample -> stop on an
// end-of-generation token -> accept -> piece -> feed -> step, until
// max_tokens or a full context. Pieces go through a UTF-8 hold-back so that a
// streamed chunk never ends inside a character.
#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "vt_py.h"

namespace vt_py {

namespace {

std::thread::id g_main_thread;

// Bytes of s that can be handed out now: all but an incomplete UTF-8
// sequence at the very end. Invalid bytes are never held back. (The same rule
// as examples/cli/utf8.h; examples are not a library to include.)
size_t utf8_complete_prefix(const std::string &s) {
    const size_t n = s.size();
    for (size_t k = 1; k <= 4 && k <= n; ++k) {
        const unsigned char c = (unsigned char)s[n - k];
        if ((c & 0xC0) == 0x80) continue;
        size_t need = 1;
        if ((c & 0xE0) == 0xC0) need = 2;
        else if ((c & 0xF0) == 0xE0) need = 3;
        else if ((c & 0xF8) == 0xF0) need = 4;
        return need > k ? n - k : n;
    }
    return n;
}

class Generation {
public:
    Generation(std::shared_ptr<Sequence> seq, std::shared_ptr<Sampler> sampler, std::shared_ptr<Tokenizer> tok,
               std::vector<vt_token> prompt, std::optional<int64_t> max_tokens, std::vector<vt_token> stop_ids)
        : seq_(std::move(seq)), sampler_(std::move(sampler)), tok_(std::move(tok)), prompt_(std::move(prompt)),
          max_tokens_(max_tokens.value_or(-1)), stop_ids_(std::move(stop_ids)) {
        if (max_tokens && *max_tokens < 0)
            raise_status(VT_ERR_INVALID_ARGUMENT, "max_tokens must be >= 0 or None (until end of generation)");
        if (!sampler_->has_final)
            raise_status(VT_ERR_INVALID_STATE, "the sampler chain has no final stage (add_greedy or add_dist)");
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
        rest_sent_ = emitted_ = bytes_.size();
    }

    void close() {
        if (!done_) {
            done_ = true;
            finish_ = "abort";
        }
        rest_sent_ = emitted_ = bytes_.size();
    }

    py::list token_ids() const { return py::cast(out_); }
    py::list prompt_token_ids() const { return py::cast(prompt_); }
    py::str text() const { return utf8_replace(bytes_); }
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
        for (vt_token t : prompt_)
            if (fail_.set(vt_sampler_accept(sampler_->handle, t))) return false;
        if (fail_.set(vt_seq_feed(seq_->handle, prompt_.data(), prompt_.size()))) return false;
        if (fail_.set(vt_seq_step(seq_->handle))) return false;
        if (max_tokens_ == 0) finish("length");
        return true;
    }

    void finish(const char *reason) {
        done_ = true;
        finish_ = reason;
    }

    // One token: without the GIL. Appends printable bytes to chunk. False on
    // failure (recorded in fail_).
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
            if (!piece(t)) return false;
            if (max_tokens_ >= 0 && (int64_t)out_.size() >= max_tokens_) {
                finish("length");
            } else {
                vt_status s = vt_seq_feed(seq_->handle, &t, 1);
                if (s == VT_ERR_CONTEXT_FULL) finish("length");
                else if (fail_.set(s) || fail_.set(vt_seq_step(seq_->handle))) return false;
            }
        }
        // Hand out what is complete (everything once done).
        const size_t upto = done_ ? bytes_.size() : emitted_ + utf8_complete_prefix(bytes_.substr(emitted_));
        chunk.append(bytes_, emitted_, upto - emitted_);
        emitted_ = upto;
        rest_sent_ = emitted_;
        return true;
    }

    bool piece(vt_token t) {
        if (piece_.size() < 64) piece_.resize(64);
        size_t needed = 0;
        vt_status s = vt_token_to_piece(tok_->handle, t, false, piece_.data(), piece_.size(), &needed);
        if (s == VT_ERR_BUFFER_TOO_SMALL) {
            piece_.resize(needed + 1);
            s = vt_token_to_piece(tok_->handle, t, false, piece_.data(), piece_.size(), &needed);
        }
        if (fail_.set(s)) return false;
        bytes_.append(piece_.data(), needed);
        return true;
    }

    // Bytes not yet handed out by next() (after an error or close).
    std::string take_rest() {
        std::string r = bytes_.substr(rest_sent_);
        rest_sent_ = emitted_ = bytes_.size();
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
    std::string bytes_;      // every generated piece, concatenated
    size_t emitted_ = 0;     // bytes_ handed out by next()
    size_t rest_sent_ = 0;
    std::string piece_;
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
        "reseeded) first.\n\n"
        "Thread-safety: as its Sequence and Sampler (one thread at a time, enforced).")
        .def(py::init<std::shared_ptr<Sequence>, std::shared_ptr<Sampler>, std::shared_ptr<Tokenizer>,
                      std::vector<vt_token>, std::optional<int64_t>, std::vector<vt_token>>(),
             py::arg("seq"), py::arg("sampler"), py::arg("tokenizer"), py::arg("prompt_token_ids"),
             py::arg("max_tokens") = py::none(), py::arg("stop_token_ids") = std::vector<vt_token>{},
             "Args:\n"
             "    seq: the vt.Sequence to generate in (reset when the generation starts).\n"
             "    sampler: a vt.Sampler chain ending in greedy or dist.\n"
             "    tokenizer: the model's vt.Tokenizer (end-of-generation ids, pieces).\n"
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
                               "Generated text so far: the pieces concatenated (invalid UTF-8 replaced).")
        .def_property_readonly("finish_reason", &Generation::finish_reason,
                               "None while running; \"stop\" (end-of-generation or stop token), \"length\"\n"
                               "(max_tokens or a full context) or \"abort\" (closed, interrupted).")
        .def_property_readonly("stop_reason", &Generation::stop_reason,
                               "The id from stop_token_ids that ended generation, else None.")
        .def_property_readonly("done", &Generation::done, "Whether the generation has ended.");
}

} // namespace vt_py
