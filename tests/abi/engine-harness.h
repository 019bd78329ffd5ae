// Helpers of the serving-engine ABI tests (test-abi-engine.cpp,
// test-abi-spec.cpp), through the public C ABI only: models and contexts,
// requests with their sampler chains, and runs that step until every
// request has ended, collecting each one's events.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "common/gguf-writer.h"
#include "common/temp-file.h"
#include "common/vt-handles.h"
#include "vt/vt.h"

namespace engine_harness {

using vt::test::ContextPtr;
using vt::test::ModelPtr;
using vt::test::SeqPtr;


inline std::string last_error() { return vt_last_error(); }

inline ModelPtr load_model(const std::string &path) {
    vt_model *m = nullptr;
    const vt_status st = vt_model_load(path.c_str(), nullptr, &m);
    INFO(last_error());
    REQUIRE(st == VT_OK);
    return ModelPtr(m);
}

inline ModelPtr tiny_model() {
    static vt::test::TempFile f(vt::test::tiny_llama_gguf());
    return load_model(f.path.string());
}

// spec_tokens > 0: speculative decoding by `method`, drafts of that many
// tokens at most; VT_SPEC_NGRAM's n-grams of lookup_min..lookup_max tokens
// (0: vLLM's defaults), VT_SPEC_SUFFIX with vLLM's defaults,
// VT_SPEC_DRAFT_MODEL with draft.
inline ContextPtr make_context(const vt_model *m, uint64_t kv_bytes, uint32_t n_batch = 64, uint32_t max_num_seqs = 16,
                               uint32_t spec_tokens = 0, uint32_t lookup_min = 0, uint32_t lookup_max = 0,
                               uint32_t method = VT_SPEC_NGRAM, const vt_model *draft = nullptr) {
    vt_context_params p;
    vt_context_params_init_v2(&p, sizeof p);
    p.n_threads = 2;
    p.n_batch = n_batch;
    p.kv_cache_bytes = kv_bytes;
    p.kv_block_size = 16;
    p.max_num_seqs = max_num_seqs;
    if (spec_tokens) {
        p.spec_method = method;
        p.num_speculative_tokens = spec_tokens;
        p.prompt_lookup_min = lookup_min;
        p.prompt_lookup_max = lookup_max;
        if (method == VT_SPEC_DRAFT_MODEL) p.draft_model = draft;
    }
    vt_context *c = nullptr;
    const vt_status st = vt_context_create(m, &p, &c);
    INFO(last_error());
    REQUIRE(st == VT_OK);
    return ContextPtr(c);
}

// What one request produced, from its events.
struct Result {
    std::vector<vt_token> tokens;
    std::string text;
    std::vector<std::string> pieces;
    vt_finish_reason reason = VT_FINISH_NONE;
    vt_status status = VT_OK;
    uint32_t n_cached = 0, n_output = 0;
    uint32_t n_drafted = 0, n_accepted = 0;  // speculative decoding's, as the last event says
    std::vector<float> logprobs;
    std::vector<std::vector<vt_token>> top_tokens;
    std::vector<std::vector<float>> top_logprobs;
    int n_final_events = 0;
};

struct Request {
    std::vector<vt_token> prompt;
    uint32_t max_tokens = 16;
    std::vector<std::string> stops;
    uint32_t seed = 0;  // 0: greedy
    int chain = 0;      // with a seed: 0 top-k 40, temp 0.9; 1 penalties, top-k, top-p, temp; 2 temp 1 (whole vocabulary)
    bool logprobs = false;
    uint32_t top_logprobs = 0;
    bool ignore_eos = false;
    bool render_special = false;
    std::vector<vt_token> stop_tokens;
    vt_token forced = -1;  // greedy with a +100 logit bias on this token
    bool no_speculation = false;
    uint32_t spec_k = 0;  // num_speculative_tokens: 0 = the context's
    const vt_grammar *grammar = nullptr;  // greedy under this grammar (held by the caller)
};

inline vt_status submit(vt_context *ctx, const Request &r, uint64_t *id) {
    vt_request_params p;
    vt_request_params_init(&p);
    p.prompt = r.prompt.data();
    p.n_prompt = r.prompt.size();
    p.max_tokens = r.max_tokens;
    std::vector<const char *> stops;
    for (const std::string &s : r.stops) stops.push_back(s.c_str());
    p.stop_strings = stops.data();
    p.n_stop_strings = stops.size();
    p.logprobs = r.logprobs;
    p.top_logprobs = r.top_logprobs;
    p.ignore_eos = r.ignore_eos;
    p.render_special = r.render_special;
    p.no_speculation = r.no_speculation;
    p.num_speculative_tokens = r.spec_k;
    p.stop_tokens = r.stop_tokens.empty() ? nullptr : r.stop_tokens.data();
    p.n_stop_tokens = r.stop_tokens.size();
    if (r.grammar) {
        vt_sampler *s = nullptr;
        REQUIRE(vt_sampler_create(&s) == VT_OK);
        REQUIRE(vt_sampler_add_grammar(s, r.grammar) == VT_OK);
        REQUIRE(vt_sampler_add_greedy(s) == VT_OK);
        p.sampler = s;
        const vt_status st = vt_context_submit(ctx, &p, id);
        if (st != VT_OK) vt_sampler_destroy(s);
        return st;
    }
    if (r.forced >= 0) {
        vt_sampler *s = nullptr;
        REQUIRE(vt_sampler_create(&s) == VT_OK);
        const float bias = 100.0f;
        REQUIRE(vt_sampler_add_logit_bias(s, &r.forced, &bias, 1) == VT_OK);
        REQUIRE(vt_sampler_add_greedy(s) == VT_OK);
        p.sampler = s;
        const vt_status st = vt_context_submit(ctx, &p, id);
        if (st != VT_OK) vt_sampler_destroy(s);
        return st;
    }
    if (r.seed) {
        vt_sampler *s = nullptr;
        REQUIRE(vt_sampler_create(&s) == VT_OK);
        if (r.chain == 1) REQUIRE(vt_sampler_add_penalties(s, -1, 1.1f, 0.2f, 0.2f) == VT_OK);
        if (r.chain != 2) REQUIRE(vt_sampler_add_top_k(s, 40) == VT_OK);
        if (r.chain == 1) REQUIRE(vt_sampler_add_top_p(s, 0.9f, 1) == VT_OK);
        REQUIRE(vt_sampler_add_temp(s, r.chain == 1 ? 0.7f : r.chain == 2 ? 1.0f : 0.9f) == VT_OK);
        REQUIRE(vt_sampler_add_dist(s, r.seed) == VT_OK);
        p.sampler = s;
        const vt_status st = vt_context_submit(ctx, &p, id);
        if (st != VT_OK) vt_sampler_destroy(s);  // not owned by the context after a failed submit
        return st;
    }
    return vt_context_submit(ctx, &p, id);
}

inline void record(const vt_request_output *o, Result &r) {
    REQUIRE(o->struct_size >= sizeof(vt_request_output));
    if (o->token >= 0) {
        r.tokens.push_back(o->token);
        r.logprobs.push_back(o->logprob);
        r.top_tokens.emplace_back(o->top_tokens, o->top_tokens + o->n_top);
        r.top_logprobs.emplace_back(o->top_logprobs, o->top_logprobs + o->n_top);
    }
    r.text.append(o->text, o->text_len);
    r.pieces.emplace_back(o->text, o->text_len);
    r.n_cached = o->n_cached_tokens;
    r.n_output = o->n_output_tokens;
    r.n_drafted = o->n_draft_tokens;
    r.n_accepted = o->n_accepted_tokens;
    if (o->finish_reason != VT_FINISH_NONE) {
        r.reason = o->finish_reason;
        r.status = o->status;
        ++r.n_final_events;
    }
}

// Steps until every request has ended; polled events go to results by id.
inline void drain(vt_context *ctx, std::map<uint64_t, Result> &results, int max_steps = 100000) {
    auto all_done = [&] {
        return std::all_of(results.begin(), results.end(), [](auto &kv) { return kv.second.reason != VT_FINISH_NONE; });
    };
    for (int i = 0; i < max_steps && !all_done(); ++i) {
        size_t n = 0;
        vt_status st = vt_context_step(ctx, 10, &n);
        INFO(last_error());
        REQUIRE(st == VT_OK);
        const vt_request_output *o = nullptr;
        while (vt_context_poll(ctx, &o) == VT_OK && o) {
            REQUIRE(results.count(o->request_id));
            record(o, results[o->request_id]);
        }
    }
    REQUIRE(all_done());
}

inline std::vector<Result> run(vt_context *ctx, const std::vector<Request> &reqs) {
    std::vector<uint64_t> ids;
    std::map<uint64_t, Result> results;
    for (const Request &r : reqs) {
        uint64_t id = 0;
        INFO(last_error());
        REQUIRE(submit(ctx, r, &id) == VT_OK);
        REQUIRE(id > 0);
        ids.push_back(id);
        results[id];
    }
    drain(ctx, results);
    std::vector<Result> out;
    for (uint64_t id : ids) out.push_back(results[id]);
    return out;
}

inline vt_engine_stats stats_of(vt_context *ctx) {
    vt_engine_stats s{};
    s.struct_size = sizeof s;
    REQUIRE(vt_context_stats(ctx, &s) == VT_OK);
    return s;
}

// Distinct prompts of several lengths over the tiny vocabulary (bytes).
inline std::vector<vt_token> tiny_prompt(int i) {
    std::vector<vt_token> p;
    const int len = 3 + (i * 7) % 29;
    for (int k = 0; k < len; ++k) p.push_back((vt_token)(32 + (i * 31 + k * 17) % 90));
    return p;
}

inline std::vector<vt_token> tokenize(const vt_model *m, const std::string &text) {
    const vt_tokenizer *tok = nullptr;
    REQUIRE(vt_model_tokenizer(m, &tok) == VT_OK);
    std::vector<vt_token> ids(text.size() + 8);
    size_t n = 0;
    vt_status st = vt_tokenize(tok, text.data(), text.size(), VT_TOKENIZE_ADD_SPECIAL, ids.data(), ids.size(), &n);
    INFO(last_error());
    REQUIRE(st == VT_OK);
    ids.resize(n);
    return ids;
}

const char *const kSmolPrompts[8] = {"The capital of France is", "Once upon a time", "def fibonacci(n):",
                                     "The three primary colors are", "1, 2, 3, 4,", "Water boils at",
                                     "The quick brown fox", "In 1492, Columbus"};

} // namespace engine_harness
