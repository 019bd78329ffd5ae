#include "server-generate.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>

#include "server-conn.h"
#include "server-engine.h"
#include "server-errors.h"
#include "server-lora.h"
#include "server-prompt.h"
#include "server-request.h"
#include "server-response.h"
#include "server-structured.h"

namespace vts {

using json = nlohmann::json;

namespace {

// The engine requests of one HTTP request. Destroying it (the response is
// done, or the connection died before the provider ran) cancels whatever is
// still running, so no request outlives its client.
struct Generation {
    Engine &engine;
    std::shared_ptr<Channel> channel = std::make_shared<Channel>();
    std::vector<uint64_t> ids;
    ResponseBuilder rb;
    Engine::Hold hold;  // until the response is written (destroyed after ~Generation's cancel)

    Generation(Engine &e, ResponseBuilder builder) : engine(e), rb(std::move(builder)) {}
    ~Generation() { cancel(); }
    void cancel() {
        if (rb.all_finished()) return;
        for (uint64_t id : ids) engine.cancel(id);
    }
};

ApiError submit_error(vt_status s, size_t n_prompt, uint32_t max_model_len) {
    const char *m = vt_last_error();
    const std::string why = m && *m ? m : vt_status_str(s);
    switch (s) {
    case VT_ERR_CONTEXT_FULL:
        return ApiError(400,
                        "this model's maximum context length is " + std::to_string(max_model_len) +
                            " tokens, but the prompt has " + std::to_string(n_prompt) + " tokens (" + why + ")",
                        "invalid_request_error", "messages", "context_length_exceeded");
    case VT_ERR_INVALID_ARGUMENT:
    case VT_ERR_INVALID_UTF8: return ApiError(400, why);
    case VT_ERR_CANCELLED: return ApiError(503, "the server is shutting down", "server_error");
    case VT_ERR_OUT_OF_MEMORY: return ApiError(503, "out of memory: " + why, "server_error");
    default: return ApiError(500, "cannot submit the request: " + why, "server_error");
    }
}

// The adapter the request's "model" names: null for the base model (by
// its name, or none), 404 for a name that is neither.
LoraRef resolve_model(const ServerState &st, const GenRequest &r) {
    LoraRef adapter;
    if (!r.model.empty() && r.model != st.model_name) {
        adapter = st.loras->find(r.model);
        if (!adapter)
            throw ApiError(404,
                           "the model '" + r.model + "' does not exist (this server serves '" + st.model_name +
                               "'" + (st.loras->list().empty() ? "" : " and LoRA adapters: see /v1/models") + ")",
                           "invalid_request_error", "model", "model_not_found");
    }
    if (!adapter && r.lora_scale)
        throw bad_param("lora_scale", "'lora_scale' applies to a LoRA adapter, and '" + st.model_name +
                                          "' is the base model");
    return adapter;
}

// Tokenized prompts of a request, one per prompt (chat: exactly one).
std::vector<std::vector<vt_token>> tokenize_prompts(const ServerState &st, GenRequest &r) {
    std::vector<std::vector<vt_token>> prompts;
    if (r.chat) {
        prompts.push_back(st.prompter->tokenize_chat(r.messages, r.template_extra, r.add_generation_prompt));
    } else {
        for (const auto &t : r.prompt_texts) prompts.push_back(st.prompter->tokenize_text(t));
        for (auto &ids : r.prompt_ids) prompts.push_back(std::move(ids));
    }
    for (const auto &p : prompts)
        if (p.empty()) throw bad_param(r.chat ? "messages" : "prompt", "the prompt has no tokens");
    return prompts;
}

// vLLM's rule: prompt + max_tokens must fit max_model_len, so that
// finish_reason "length" always means max_tokens.
void check_lengths(const GenRequest &r, const std::vector<std::vector<vt_token>> &prompts, uint32_t mml) {
    if (mml == 0) return;  // not known yet: the engine checks the prompt itself
    const char *param = r.chat ? "messages" : "prompt";
    for (const auto &p : prompts) {
        if (p.size() > mml)
            throw ApiError(400,
                           "this model's maximum context length is " + std::to_string(mml) +
                               " tokens, but the prompt has " + std::to_string(p.size()) + " tokens",
                           "invalid_request_error", param, "context_length_exceeded");
        if (r.max_tokens && p.size() + *r.max_tokens > mml)
            throw ApiError(400,
                           "this model's maximum context length is " + std::to_string(mml) + " tokens, but " +
                               std::to_string(p.size() + *r.max_tokens) + " were requested (" +
                               std::to_string(p.size()) + " in the prompt, " + std::to_string(*r.max_tokens) +
                               " for the completion)",
                           "invalid_request_error", "max_tokens", "context_length_exceeded");
    }
}

// How waiting for a generation ended.
enum class Ended { finished, client_left, engine_stopped };

// Feeds g's events to its ResponseBuilder until every choice finished.
// deliver(text) sends what a stream has to send now (empty: nothing) and
// says whether the client is still there; a client that left cancels g.
template <class Deliver>
Ended drain(Generation &g, Deliver deliver) {
    using namespace std::chrono_literals;
    std::vector<TokenEvent> events;
    auto idle_since = std::chrono::steady_clock::now();
    while (true) {
        events.clear();
        g.channel->wait(events, 100ms);
        if (!deliver(g.rb.consume(events))) {
            g.cancel();
            return Ended::client_left;
        }
        if (g.rb.all_finished()) return Ended::finished;
        // The engine thread only stops after every handler returned; this
        // is a last resort against waiting forever on a wedged engine.
        if (!events.empty()) idle_since = std::chrono::steady_clock::now();
        else if (!g.engine.running() && std::chrono::steady_clock::now() - idle_since > 5s)
            return Ended::engine_stopped;
    }
}

// The last text of a drained generation (the whole answer when not
// streamed) and its HTTP status, were it not sent yet.
std::string closing_text(const Generation &g, Ended e, int &status) {
    vt_status st = VT_OK;
    status = 500;
    if (e == Ended::engine_stopped) return g.rb.error_text(500, "the engine stopped");
    // The step failed on the engine thread: only its status is known here.
    if (g.rb.failed(&st)) return g.rb.error_text(500, std::string("generation failed: ") + vt_status_str(st));
    status = 200;
    return g.rb.final_text();
}

// A stream: events are written as they come. Returns false when the
// client is gone.
bool pump(Generation &g, httplib::DataSink &sink) {
    const Ended e = drain(g, [&sink](const std::string &out) {
        return out.empty() ? sink.is_writable()  // peer closed: the socket reads EOF
                           : sink.write(out.data(), out.size());
    });
    if (e == Ended::client_left) return false;
    int status = 0;
    const std::string out = closing_text(g, e, status);
    if (!sink.write(out.data(), out.size())) return false;
    sink.done();
    return true;
}

// A non-streamed answer, computed in the handler before anything is
// written: its status is then known, so a generation that failed is a 500
// (not an error object under a 200 already sent). The client's connection is
// watched meanwhile: one that hung up cancels its requests.
void answer_whole(Generation &g, httplib::Response &res) {
    const Ended e = drain(g, [](const std::string &) { return !client_hung_up(); });
    if (e == Ended::client_left) return;  // nobody reads the response
    int status = 0;
    res.set_content(closing_text(g, e, status), "application/json");
    res.status = status;
}

void generate(ServerState &st, const std::string &body_text, bool chat, httplib::Response &res) {
    Engine::Hold hold = st.engine->hold();  // before the check: see Engine::Hold
    if (st.draining.load()) throw ApiError(503, "the server is shutting down", "server_error");
    Body body;
    try {
        body = Body::parse(body_text);
    } catch (const Body::exception &e) {
        // parse_error, and out_of_range for a number beyond a double (1e400)
        throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
    }
    GenRequest r = parse_request(body, chat, st.opts.guards, st.n_vocab);
    // NOTE: held until every vt_context_submit below has returned; the
    // engine holds its own reference from then on, so an unload meanwhile
    // cannot take the adapter from under this request.
    const LoraRef adapter = resolve_model(st, r);
    // Compiled (or found in the cache) before any work is queued: a
    // constraint the compiler refuses is a 400. Each sampler holds it too.
    const GrammarRef grammar = r.constraint ? st.grammars->get(*r.constraint) : nullptr;

    auto prompts = tokenize_prompts(st, r);
    check_lengths(r, prompts, st.engine->stats().max_model_len);

    // max_tokens 0 (scoring a prompt): the ABI's max_tokens 0 means "until
    // max_model_len", so the request generates one token, greedily, which
    // the answer leaves out (vLLM does the same).
    const bool score_only = r.max_tokens && *r.max_tokens == 0;
    ResponseOptions ro;
    ro.chat = chat;
    ro.stream = r.stream;
    ro.include_usage = r.include_usage;
    ro.logprobs = r.logprobs;
    ro.top_logprobs = r.top_logprobs;
    ro.ignore_eos = r.ignore_eos;
    ro.echo = r.echo;
    ro.score_only = score_only;
    ro.prompt_logprobs = r.prompt_logprobs;
    ro.tools = r.tools;
    ro.tool_format = st.prompter->tool_format();
    ro.harmony = chat && uses_harmony(r.tools, ro.tool_format);
    const bool ro_harmony = ro.harmony;
    ro.model = adapter ? adapter->name : st.model_name;
    std::vector<PromptInfo> infos;
    for (size_t i = 0; i < prompts.size(); ++i) {
        PromptInfo info{prompts[i], ""};
        if (r.echo)  // text prompts come first (tokenize_prompts), then token ids
            info.text = i < r.prompt_texts.size() ? r.prompt_texts[i] : st.prompter->detokenize(prompts[i]);
        infos.push_back(std::move(info));
    }
    auto g = std::make_shared<Generation>(*st.engine, ResponseBuilder(std::move(ro), std::move(infos), r.n,
                                                                      *st.prompter));
    g->hold = std::move(hold);
    SubmitParams sp;
    sp.max_tokens = score_only ? 1 : r.max_tokens.value_or(0);
    sp.stop = r.stop;
    sp.ignore_eos = r.ignore_eos;
    sp.logprobs = r.logprobs && !score_only;
    sp.top_logprobs = score_only ? 0 : r.top_logprobs;
    // Prompt tokens' logprobs: for the echo's logprobs and for vLLM's
    // prompt_logprobs, with the larger of their top counts.
    const bool echo_lp = r.echo && r.logprobs;
    sp.prompt_logprobs = echo_lp || r.prompt_logprobs;
    sp.prompt_top_logprobs = std::max(echo_lp ? r.top_logprobs : 0u, r.prompt_logprobs.value_or(0));
    if (ro_harmony) {
        sp.render_special = true;
        sp.stop_tokens = st.prompter->harmony_stops();
    }
    sp.lora = adapter ? adapter->lora.get() : nullptr;
    sp.lora_scale = r.lora_scale.value_or(1.0f);
    SamplingParams sampling = r.sampling;
    if (score_only) {
        sampling = SamplingParams();
        sampling.temperature = 0.0;
    }
    const uint32_t base_seed = r.sampling.seed ? *r.sampling.seed : std::random_device{}();
    for (size_t pi = 0; pi < prompts.size(); ++pi) {
        for (int j = 0; j < r.n; ++j) {
            // n > 1: seed + i, so that a seeded request is reproducible and
            // its choices still differ.
            vt_sampler *smpl = make_sampler(sampling, base_seed + (uint32_t)j, score_only ? nullptr : grammar.get(),
                                            score_only ? std::vector<std::pair<vt_token, float>>{} : r.logit_bias);
            uint64_t id = 0;
            const int choice = (int)pi * r.n + j;
            const vt_status s = st.engine->submit(prompts[pi], sp, smpl, g->channel, choice, &id);
            if (s != VT_OK) {
                const ApiError e = submit_error(s, prompts[pi].size(), st.engine->stats().max_model_len);
                vt_sampler_destroy(smpl);
                throw e;  // ~Generation cancels the ones already submitted
            }
            g->ids.push_back(id);
        }
    }
    log_kv_pool_once(st);

    if (r.stream) {
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider("text/event-stream",
                                         [g](size_t, httplib::DataSink &sink) { return pump(*g, sink); });
    } else {
        answer_whole(*g, res);
    }
}

} // namespace

void handle_generation(ServerState &st, const std::string &body, bool chat, httplib::Response &res) {
    try {
        generate(st, body, chat, res);
    } catch (const ApiError &e) {
        res.status = e.status;
        res.set_content(dump_json(error_body(e)), "application/json");
    } catch (const std::exception &e) {  // bad_alloc, a json type error missed by the checks
        res.status = 500;
        res.set_content(dump_json(error_body(ApiError(500, e.what(), "server_error"))), "application/json");
    }
}

} // namespace vts
