// The serving engine of a vt.Context (vt_engine.h): Context.submit / cancel /
// step / poll / stats and vt.RequestEvent, the events that poll() returns.
//
// These are methods of vt.Context because the C ABI's are (vt_context_*):
// every request of a context shares its KV pool and its one event queue.
// Sampler ownership: vt_context_submit takes the vt_sampler on success, so
// submit() moves the handle out of the vt.Sampler it is given (the object
// raises VtInvalidState afterwards) and leaves it untouched on failure.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vt_py.h"

namespace vt_py {

namespace {

// One polled event, copied out of the context's buffer (valid only until
// the next poll or step there).
struct RequestEvent {
    uint64_t request_id = 0;
    std::optional<vt_token> token;                      // None: the event carries no token
    std::string text;                                   // UTF-8 bytes that are safe to show
    float logprob = 0.0f;                               // 0 unless logprobs were requested
    std::vector<std::pair<vt_token, float>> top;        // most likely first
    vt_finish_reason finish = VT_FINISH_NONE;
    vt_status status = VT_OK;
    uint32_t n_prompt = 0, n_output = 0, n_cached = 0;
    uint32_t n_drafted = 0, n_accepted = 0;
    bool is_prompt = false;                             // a prompt token's event (prompt_logprobs)
};

// The package's names of the finish reasons, shared with vt.Generation and
// vt.LLM: a cancelled request ends with "abort", as in vLLM.
const char *finish_name(vt_finish_reason r) {
    switch (r) {
    case VT_FINISH_STOP: return "stop";
    case VT_FINISH_LENGTH: return "length";
    case VT_FINISH_CANCELLED: return "abort";
    case VT_FINISH_ERROR: return "error";
    default: return nullptr;
    }
}

RequestEvent copy_event(const vt_request_output &o) {
    RequestEvent e;
    e.request_id = o.request_id;
    if (o.token >= 0) e.token = o.token;
    if (o.text_len) e.text.assign(o.text, o.text_len);
    e.logprob = o.logprob;
    for (uint32_t i = 0; i < o.n_top; ++i) e.top.emplace_back(o.top_tokens[i], o.top_logprobs[i]);
    e.finish = o.finish_reason;
    e.status = o.status;
    e.n_prompt = o.n_prompt_tokens;
    e.n_output = o.n_output_tokens;
    e.n_cached = o.n_cached_tokens;
    e.n_drafted = o.n_draft_tokens;
    e.n_accepted = o.n_accepted_tokens;
    e.is_prompt = o.is_prompt;
    return e;
}

uint64_t submit(Context &self, const std::vector<vt_token> &prompt, std::optional<int64_t> max_tokens,
                std::shared_ptr<Sampler> sampler, const std::vector<vt_token> &stop_token_ids,
                const std::vector<std::string> &stop, bool ignore_eos, bool logprobs, uint32_t top_logprobs,
                std::shared_ptr<LoRA> lora, float lora_scale, bool prompt_logprobs, uint32_t prompt_top_logprobs,
                uint32_t num_speculative_tokens) {
    if (max_tokens && (*max_tokens < 1 || *max_tokens > UINT32_MAX))
        raise_status(VT_ERR_INVALID_ARGUMENT, "submit: max_tokens must be in 1 .. 2**32-1, or None (until the "
                                              "context's max_model_len)");
    std::vector<const char *> stops;
    for (const std::string &s : stop) {
        if (s.empty() || std::memchr(s.data(), '\0', s.size()))
            raise_status(VT_ERR_INVALID_ARGUMENT, "submit: a stop string is empty or contains NUL");
        stops.push_back(s.c_str());
    }
    vt_request_params p;
    vt_request_params_init(&p);
    p.prompt = prompt.data();
    p.n_prompt = prompt.size();
    p.max_tokens = max_tokens ? (uint32_t)*max_tokens : 0;
    p.stop_tokens = stop_token_ids.data();
    p.n_stop_tokens = stop_token_ids.size();
    p.stop_strings = stops.data();
    p.n_stop_strings = stops.size();
    p.ignore_eos = ignore_eos;
    p.logprobs = logprobs;
    p.top_logprobs = top_logprobs;
    p.lora = lora ? lora->handle : nullptr;  // the request holds its own reference
    p.lora_scale = lora_scale;
    p.prompt_logprobs = prompt_logprobs;
    p.prompt_top_logprobs = prompt_top_logprobs;
    p.num_speculative_tokens = num_speculative_tokens;
    uint64_t id = 0;
    if (!sampler) {
        check(vt_context_submit(self.handle, &p, &id));
    } else {
        // The sampler's lock keeps it from a Generation sampling with it
        // while its handle moves into the request.
        Lock lock(sampler->mu);
        p.sampler = sampler->get("Context.submit");
        check(vt_context_submit(self.handle, &p, &id));
        sampler->handle = nullptr;  // owned by the request now (freed by the context)
        sampler->has_final = false;
        sampler->moved = true;
        // A model's tokenizer lives as long as the context's model; a
        // standalone one is kept by the context (vt_py.h).
        if (sampler->grammar && sampler->grammar->tok->owned) {
            auto &pinned = self.pinned_tokenizers;
            if (std::find(pinned.begin(), pinned.end(), sampler->grammar->tok) == pinned.end())
                pinned.push_back(sampler->grammar->tok);
        }
    }
    return id;
}

size_t step(Context &self, uint32_t wait_ms) {
    Lock lock(self.mu);
    Failure f;
    size_t n = 0;
    {
        py::gil_scoped_release nogil;
        f.set(vt_context_step(self.handle, wait_ms, &n));
    }
    f.raise_if_failed();
    return n;
}

std::vector<RequestEvent> poll(Context &self) {
    Lock lock(self.mu);
    std::vector<RequestEvent> out;
    for (;;) {
        const vt_request_output *o = nullptr;
        check(vt_context_poll(self.handle, &o));
        if (!o) break;
        out.push_back(copy_event(*o));
    }
    return out;
}

py::dict stats(Context &self) {
    vt_engine_stats s{};
    s.struct_size = sizeof s;
    check(vt_context_stats(self.handle, &s));
    py::dict d;
    d["n_running"] = s.n_running;
    d["n_waiting"] = s.n_waiting;
    d["kv_block_size"] = s.kv_block_size;
    d["kv_blocks_total"] = s.kv_blocks_total;
    d["kv_blocks_used"] = s.kv_blocks_used;
    d["kv_blocks_cached"] = s.kv_blocks_cached;
    d["max_model_len"] = s.max_model_len;
    d["kv_cache_bytes"] = s.kv_cache_bytes;
    d["prefix_query_tokens"] = s.prefix_query_tokens;
    d["prefix_hit_tokens"] = s.prefix_hit_tokens;
    d["prompt_tokens"] = s.prompt_tokens;
    d["generated_tokens"] = s.generated_tokens;
    d["steps"] = s.steps;
    d["preemptions"] = s.preemptions;
    d["requests_finished"] = s.requests_finished;
    d["tokens_per_second"] = s.tokens_per_second;
    d["fallback_nodes"] = s.fallback_nodes;
    d["fallback_bytes"] = s.fallback_bytes;
    d["state_slots"] = s.state_slots;
    d["state_snapshots"] = s.state_snapshots;
    d["state_bytes"] = s.state_bytes;
    d["spec_num_drafts"] = s.spec_num_drafts;
    d["spec_num_draft_tokens"] = s.spec_num_draft_tokens;
    d["spec_num_accepted_tokens"] = s.spec_num_accepted_tokens;
    d["spec_num_accepted_per_position"] =
        std::vector<uint64_t>(s.spec_num_accepted_per_position, s.spec_num_accepted_per_position + VT_SPEC_MAX_TOKENS);
    return d;
}

} // namespace

// Adds the engine's methods to the vt.Context class registered by init_context.
static void add_engine_methods(py::class_<Context, std::shared_ptr<Context>> cls) {
    cls.def("submit", &submit, py::arg("prompt_token_ids"), py::arg("max_tokens") = py::none(),
            py::arg("sampler") = py::none(), py::arg("stop_token_ids") = std::vector<vt_token>{},
            py::arg("stop") = std::vector<std::string>{}, py::arg("ignore_eos") = false,
            py::arg("logprobs") = false, py::arg("top_logprobs") = 0, py::arg("lora") = py::none(),
            py::arg("lora_scale") = 1.0f, py::arg("prompt_logprobs") = false, py::arg("prompt_top_logprobs") = 0,
            py::arg("num_speculative_tokens") = 0,
            "Queues a request on this context's serving engine and returns its id (> 0,\n"
            "never reused). Its events come from poll() after later step() calls.\n\n"
            "Args:\n"
            "    prompt_token_ids: the prompt (non-empty, ids inside the vocabulary).\n"
            "    max_tokens: most tokens to generate (>= 1); None = until the context's\n"
            "        max_model_len.\n"
            "    sampler: a vt.Sampler chain ending in greedy or dist, MOVED into the\n"
            "        request: after a successful submit the object is empty and raises\n"
            "        VtInvalidState if used (make one chain per request, e.g.\n"
            "        SamplingParams.sampler()); after a failed submit it is unchanged.\n"
            "        None = greedy. Penalty stages see the generated tokens only.\n"
            "    stop_token_ids: extra ids that end the request (finish_reason \"stop\").\n"
            "    stop: stop strings (non-empty): the text before one is shown, the string\n"
            "        itself never is; text that may begin one is held back until it cannot.\n"
            "    ignore_eos: keep going after end-of-generation tokens.\n"
            "    logprobs: give each event's token log-probability (log-softmax of the logits).\n"
            "    top_logprobs: 0..20 most likely (token, logprob) pairs per event.\n"
            "    lora: a vt.LoRA of this context's model the request computes with (it holds\n"
            "        the adapter until it ends); None = the base model. Requests with\n"
            "        different adapters run batched; the prefix cache shares KV only between\n"
            "        requests with the same adapter and scale.\n"
            "    lora_scale: the adapter's scale (1 = as trained, 0 = the base model).\n"
            "    prompt_logprobs: before the first generated token, one event per prompt token\n"
            "        from the second on (is_prompt True): the token, its log-probability given\n"
            "        the tokens before it, no text. Such a request computes its whole prompt\n"
            "        (it does not read the prefix cache).\n"
            "    prompt_top_logprobs: 0..20 most likely (token, logprob) pairs per prompt event.\n"
            "    num_speculative_tokens: the most draft tokens this request takes per step\n"
            "        where the context drafts (speculative_config); 0 = the context's, a\n"
            "        larger value is taken as the context's.\n\n"
            "Thread-safe (another thread may be in step()). The first submit allocates the\n"
            "KV pool (the context's kv_cache_bytes). Raises VtInvalidArgument (empty prompt,\n"
            "ids outside the vocabulary, bad stop strings, top_logprobs or prompt_top_logprobs\n"
            "> 20, an adapter of\n"
            "another model, a lora_scale that is not finite), VtInvalidUTF8\n"
            "(a stop string), VtContextFull (the prompt alone reaches max_model_len),\n"
            "VtOutOfMemory (the pool), VtInvalidState (a sampler without a final stage or\n"
            "already moved). Nothing is queued on error.")
        .def("cancel", [](Context &self, uint64_t id) { check(vt_context_cancel(self.handle, id)); },
             py::arg("request_id"),
             "Asks to end a request: the next step() frees its KV blocks and queues its last\n"
             "event, with finish_reason \"abort\". Unknown or finished ids are ignored.\n"
             "Thread-safe; never waits for a step in progress.")
        .def("step", &step, py::arg("wait_ms") = 0,
             "Runs one engine step: one forward pass over the scheduled tokens of every\n"
             "running request (prompt chunks and one decode token each), sampling, and their\n"
             "events (read them with poll()). When nothing is queued or running it first\n"
             "waits up to wait_ms for a submit or cancel. Returns the tokens computed (0 when\n"
             "idle). Releases the GIL; takes the context's lock, so it never runs alongside a\n"
             "Sequence of this context. A failing pass ends every admitted request with\n"
             "finish_reason \"error\" and raises its VtError; the context stays usable.")
        .def("poll", &poll,
             "Every queued event, oldest first, as a list of vt.RequestEvent (empty when there\n"
             "is none). A request's events are: with prompt_logprobs, one per prompt token from\n"
             "the second (is_prompt True); then one per generated token (with the text it\n"
             "completes), the last one carrying finish_reason.")
        .def("stats", &stats,
             "A snapshot of the engine's counters (vt_engine_stats) as a dict: n_running,\n"
             "n_waiting, kv_block_size, kv_blocks_total, kv_blocks_used, kv_blocks_cached,\n"
             "max_model_len, kv_cache_bytes, prefix_query_tokens, prefix_hit_tokens,\n"
             "prompt_tokens, generated_tokens, steps, preemptions, requests_finished,\n"
             "tokens_per_second, fallback_nodes, fallback_bytes (nodes the device could not\n"
             "run, computed on the CPU, and the bytes copied for them), state_slots,\n"
             "state_snapshots, state_bytes (recurrent layers' per-request states and their\n"
             "prefix-cache snapshots, part of kv_cache_bytes). The pool fields are 0 before\n"
             "the first submit. Thread-safe.");
}

void init_engine(py::module_ &m) {
    py::class_<RequestEvent>(m, "RequestEvent",
        "One event of a request of Context.submit, from Context.poll(): a new token with\n"
        "the text it completes, the request's end, or both.\n\n"
        "finish_reason: None while the request runs; then \"stop\" (an end-of-generation\n"
        "token, one of stop_token_ids or a stop string), \"length\" (max_tokens or\n"
        "max_model_len), \"abort\" (Context.cancel) or \"error\" (status says why; check()\n"
        "raises it). A request has exactly one event with a finish_reason, its last.")
        .def_readonly("request_id", &RequestEvent::request_id)
        .def_readonly("token", &RequestEvent::token,
                      "The generated token, or None. The last event of a request that stopped on an\n"
                      "end-of-generation or stop token carries that token (its text is not shown).")
        .def_property_readonly("text", [](const RequestEvent &e) { return utf8_replace(e.text); },
                               "New text that is safe to show (never ends inside a UTF-8 character).")
        .def_readonly("logprob", &RequestEvent::logprob,
                      "Log-probability of token (log-softmax of the raw logits); 0.0 unless submitted\n"
                      "with logprobs=True or top_logprobs > 0.")
        .def_readonly("top_logprobs", &RequestEvent::top,
                      "The top_logprobs most likely (token, logprob) pairs, most likely first.")
        .def_readonly("is_prompt", &RequestEvent::is_prompt,
                      "A prompt token's event (submit(prompt_logprobs=True)): token is the prompt\n"
                      "token, logprob and top_logprobs (prompt_top_logprobs of them) its\n"
                      "log-probabilities given the prompt before it; no text, no finish_reason.")
        .def_property_readonly("finish_reason", [](const RequestEvent &e) -> py::object {
                const char *n = finish_name(e.finish);
                return n ? py::object(py::str(n)) : py::object(py::none());
            })
        .def_readonly("status", &RequestEvent::status, "0 (VT_OK), or why the request failed.")
        .def_readonly("n_prompt_tokens", &RequestEvent::n_prompt)
        .def_readonly("n_output_tokens", &RequestEvent::n_output, "Tokens generated so far, this one included.")
        .def_readonly("n_cached_tokens", &RequestEvent::n_cached,
                      "Prompt tokens served from the prefix cache when the request was admitted.")
        .def_readonly("n_draft_tokens", &RequestEvent::n_drafted,
                      "Speculative decoding: this request's draft tokens verified so far.")
        .def_readonly("n_accepted_tokens", &RequestEvent::n_accepted, "Of those, the ones accepted.")
        .def("check", [](const RequestEvent &e) {
                if (e.status != VT_OK)
                    raise_status(e.status, "request " + std::to_string(e.request_id) + " failed: " +
                                               vt_status_str(e.status));
            },
            "Raises the VtError of status if the request failed; else does nothing.")
        .def("__repr__", [](const RequestEvent &e) {
            std::string r = "<vt.RequestEvent id=" + std::to_string(e.request_id);
            if (e.token) r += (e.is_prompt ? " prompt_token=" : " token=") + std::to_string(*e.token);
            if (const char *n = finish_name(e.finish)) r += std::string(" finish_reason=") + n;
            return r + ">";
        });
    add_engine_methods(py::reinterpret_borrow<py::class_<Context, std::shared_ptr<Context>>>(m.attr("Context")));
}

} // namespace vt_py
