// Shared declarations of the vt Python extension (vt._vt).
//
// The extension uses nothing but the public C ABI (include/vt). Each area has
// its own translation unit with an init_<area>(module) function; module.cpp
// only calls them (the MLX layout). The wrapper structs below are shared
// between areas because their handles cross them (a Sequence is sampled by a
// Sampler, a Generation drives a Sequence).
//
// Locking. The ABI makes models and tokenizers thread-safe and contexts (with
// their sequences) and sampler chains externally synchronized. Every Python
// object that wraps an externally synchronized handle owns a std::mutex that
// each call takes; long calls release the GIL. The one rule that keeps this
// free of deadlocks: never wait for one of these mutexes while holding the
// GIL (Lock below releases the GIL while it waits). Lock order: context, then
// sampler.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "vt/vt.h"

namespace py = pybind11;

namespace vt_py {

// ---- errors (errors.cpp) ----------------------------------------------------

// Raises the vt.VtError subclass of `status` with `message` (empty: the
// status description). Needs the GIL.
[[noreturn]] void raise_status(vt_status status, const std::string &message);

// Raises for a failed call on this thread: the message is vt_last_error().
[[noreturn]] void raise_last(vt_status status);

// check(vt_x(...)): raises unless VT_OK. Call it right after the vt call, on
// the same thread (vt_last_error is thread-local); the GIL must be held.
inline void check(vt_status status) {
    if (status != VT_OK) raise_last(status);
}

// A failed call made without the GIL: keep status and message, raise later.
struct Failure {
    vt_status status = VT_OK;
    std::string message;
    // Records a failure of the vt call that just returned; true if it failed.
    bool set(vt_status s) {
        if (s == VT_OK) return false;
        status = s;
        const char *m = vt_last_error();
        message = m ? m : "";
        return true;
    }
    void raise_if_failed() const {
        if (status != VT_OK) raise_status(status, message);
    }
};

// Calls fill(buf, size, &needed) by the caller-buffer convention of the ABI
// and returns the text. Status VT_ERR_NOT_FOUND is returned to the caller
// through *not_found when it is non-null instead of raising.
template <class Fill> std::string read_string(Fill fill, bool *not_found = nullptr) {
    std::string buf(256, '\0');
    size_t needed = 0;
    vt_status s = fill(buf.data(), buf.size(), &needed);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        buf.assign(needed + 1, '\0');
        s = fill(buf.data(), buf.size(), &needed);
    }
    if (not_found && s == VT_ERR_NOT_FOUND) {
        *not_found = true;
        return {};
    }
    check(s);
    buf.resize(needed);
    return buf;
}

// Appends the text of a vt_detokenizer_push or vt_detokenizer_finish call,
// call(buf, size, &needed), to out; text longer than the first buffer is
// fetched with a VT_TOKEN_NULL push, as the ABI says. Needs no GIL (raises
// nothing): the status is returned.
template <class Call> vt_status detokenizer_append(vt_detokenizer *d, Call call, std::string &out) {
    char buf[256];
    size_t needed = 0;
    vt_status s = call(buf, sizeof buf, &needed);
    if (s == VT_OK) out.append(buf, needed);
    if (s != VT_ERR_BUFFER_TOO_SMALL) return s;
    const size_t at = out.size();
    out.resize(at + needed + 1);
    s = vt_detokenizer_push(d, VT_TOKEN_NULL, out.data() + at, needed + 1, &needed);
    out.resize(s == VT_OK ? at + needed : at);
    return s;
}

// ---- locking -----------------------------------------------------------------

// Takes a mutex without ever waiting for it while holding the GIL.
class Lock {
public:
    explicit Lock(std::mutex &mu) : mu_(mu) {
        if (mu_.try_lock()) return;
        if (PyGILState_Check()) {
            py::gil_scoped_release nogil;
            mu_.lock();
        } else {
            mu_.lock();
        }
    }
    ~Lock() { mu_.unlock(); }
    Lock(const Lock &) = delete;
    Lock &operator=(const Lock &) = delete;

private:
    std::mutex &mu_;
};

// ---- handles -------------------------------------------------------------------

// vt.Model: immutable and shareable; no lock.
struct Model {
    vt_model *handle = nullptr;
    std::string path;
    ~Model() { vt_model_destroy(handle); }
};

// vt.LoRA: an adapter of a model (vt_lora.h). Immutable; no lock. Requests
// and sequences given it hold their own reference in libvt, so the object
// may go before them; it keeps its model alive, which must outlive it.
struct LoRA {
    vt_lora *handle = nullptr;
    std::shared_ptr<Model> model;
    std::string path;
    ~LoRA() { vt_lora_destroy(handle); }
};

// vt.Tokenizer: either a model's own (borrowed, the model is kept alive) or a
// standalone one from vt_tokenizer_load (owned). Immutable; no lock.
struct Tokenizer {
    const vt_tokenizer *handle = nullptr;
    vt_tokenizer *owned = nullptr;
    std::shared_ptr<Model> model;
    ~Tokenizer() { vt_tokenizer_destroy(owned); }
};

// vt.Context: one thread at a time (mu), shared by its sequences.
struct Context {
    vt_context *handle = nullptr;
    std::shared_ptr<Model> model;
    std::shared_ptr<Model> draft;  // speculative_config's draft model, if any
    std::mutex mu;  // guards the context and every sequence of it
    // Standalone tokenizers (vt.Tokenizer.from_file) of grammars whose
    // samplers were moved into requests: libvt's grammar must not outlive its
    // tokenizer, and a request may outlive every Python object of it. Kept
    // until the context goes; one entry per tokenizer. Changed under the GIL.
    std::vector<std::shared_ptr<Tokenizer>> pinned_tokenizers;
    ~Context() { vt_context_destroy(handle); }
};

// vt.Sequence. Destroyed under its context's lock (another sequence of the
// context may be stepping on another thread).
struct Sequence {
    vt_seq *handle = nullptr;
    std::shared_ptr<Context> ctx;
    bool logits_all = false;
    // Zero-copy logits views alive (logits(copy=False)); step and reset
    // refuse to run while any exists. Changed only with the GIL held.
    int n_views = 0;
    // The vt.Generation that last started on this sequence (compared, never
    // dereferenced): an older generation must not continue on it.
    const void *owner = nullptr;
    ~Sequence() {
        if (!handle) return;
        Lock lock(ctx->mu);
        vt_seq_destroy(handle);
    }
    // Raises BufferError if a zero-copy logits view is alive. Needs the GIL
    // and ctx->mu held.
    void check_no_views(const char *what) const;
};

// vt.Grammar: a constraint compiled for one tokenizer (vt_grammar.h).
// Immutable; no lock. libvt needs the tokenizer to outlive the grammar, so
// the object keeps it (and so its model) alive; matchers and samplers that
// use the grammar keep this object alive in turn.
struct Grammar {
    vt_grammar *handle = nullptr;
    std::shared_ptr<Tokenizer> tok;
    vt_grammar_kind kind = VT_GRAMMAR_GBNF;
    std::string source;  // the text compiled (UTF-8): GBNF, a schema, a regex, a JSON array
    ~Grammar() { vt_grammar_destroy(handle); }
};

// vt.Sampler: one thread at a time (mu). Context.submit moves the handle
// into a request (the C ABI takes ownership): handle is null from then on.
struct Sampler {
    vt_sampler *handle = nullptr;
    bool has_final = false;  // ends in greedy or dist
    bool moved = false;      // given to a request by Context.submit
    // The grammar stage's grammar (add_grammar), or null. A chain with one
    // must not be given the prompt (vt_sampler_accept checks the grammar).
    std::shared_ptr<Grammar> grammar;
    std::mutex mu;
    ~Sampler() { vt_sampler_destroy(handle); }
    // The live handle; raises VtInvalidState (naming `what`) once moved.
    // Needs the GIL and mu held.
    vt_sampler *get(const char *what) const {
        if (moved)
            raise_status(VT_ERR_INVALID_STATE, std::string(what) +
                         ": this vt.Sampler was moved into a request by Context.submit; make a new chain");
        return handle;
    }
};

// ---- areas ---------------------------------------------------------------------

void init_errors(py::module_ &m);
void init_model(py::module_ &m);
// vt.LoRA (before init_context: Sequence.set_lora and Context.submit name it).
void init_lora(py::module_ &m);
void init_tokenizer(py::module_ &m);
void init_context(py::module_ &m);
// vt.RequestEvent, and Context.submit / cancel / step / poll / stats added to
// the Context class (after init_context and init_sampler).
void init_engine(py::module_ &m);
void init_sampler(py::module_ &m);
// vt.Grammar and vt.GrammarMatcher (before init_sampler: add_grammar names them).
void init_grammar(py::module_ &m);
void init_llm(py::module_ &m);
void init_chat(py::module_ &m);

// Bytes -> str with invalid UTF-8 replaced by U+FFFD (never raises).
py::str utf8_replace(const std::string &bytes);

} // namespace vt_py
