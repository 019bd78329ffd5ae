// The serving engine (include/vt/vt_engine.h) through the public C ABI only.
//
// [tiny] cases run on the tiny random-weight Llama of tests/common/gguf-writer.h
// (always available): exact batching (a request's tokens alone == inside a
// batch of 16, also through preemption and prefix-cache hits), stop strings
// that never leak, max_tokens, cancellation from another thread, logprobs,
// argument errors, and the pool empty at the end.
// [model] cases run on SmolLM2 (VT_TEST_MODEL; skipped without it): the
// engine's greedy tokens against llama.cpp's goldens (tests/models) and
// against vt's single-sequence path, and batching stays exact.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/gguf-writer.h"
#include "common/temp-file.h"
#include "common/vt-handles.h"
#include "common/test-env.h"
#include "vt/vt.h"
#include "common/skip.h"

#include "abi/engine-harness.h"

using namespace engine_harness;

TEST_CASE("engine: the plain params init keeps the serving fields set after it", "[tiny]") {
    // vt_context_params_init(&p), then the serving fields: the context gets
    // them (the 1.0 function gave struct_size of the 1.0 struct, and a
    // 96 MiB, 3-request budget became the default pool, 6.1 GB measured).
    ModelPtr m = tiny_model();
    vt_context_params p;
    vt_context_params_init(&p);
    CHECK(p.struct_size == sizeof p);
    p.n_threads = 1;
    p.kv_cache_bytes = 96ull << 20;
    p.max_num_seqs = 3;
    vt_context *c = nullptr;
    REQUIRE(vt_context_create(m.get(), &p, &c) == VT_OK);
    ContextPtr ctx(c);
    Request r;
    r.prompt = tiny_prompt(1);
    r.max_tokens = 2;
    run(ctx.get(), {r});  // the pool is allocated by the first submit
    const vt_engine_stats s = stats_of(ctx.get());
    CHECK(s.kv_cache_bytes <= (96ull << 20));
    CHECK(s.kv_cache_bytes > (90ull << 20));
    // The 1.0 symbol still writes the 1.0 struct, for the binaries that linked it.
    vt_context_params old;
    (vt_context_params_init)(&old);
    CHECK(old.struct_size < sizeof old);
}

TEST_CASE("engine: a request's tokens are the same alone and in a batch of 16", "[tiny]") {
    ModelPtr m = tiny_model();
    std::vector<Request> reqs;
    for (int i = 0; i < 16; ++i) {
        Request r;
        r.prompt = tiny_prompt(i);
        r.max_tokens = 12 + (uint32_t)(i % 5);
        r.seed = i % 2 ? 1000 + (uint32_t)i : 0;  // half greedy, half seeded sampling
        reqs.push_back(r);
    }
    std::vector<Result> alone;
    for (const Request &r : reqs) {
        ContextPtr c = make_context(m.get(), 1 << 20);
        alone.push_back(run(c.get(), {r})[0]);
    }
    ContextPtr c = make_context(m.get(), 1 << 20, /*n_batch=*/48);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Result> batch = run(c.get(), reqs);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (size_t i = 0; i < reqs.size(); ++i) {
        INFO("request " << i);
        CHECK(alone[i].reason == VT_FINISH_LENGTH);
        CHECK(alone[i].tokens.size() == reqs[i].max_tokens);
        CHECK(batch[i].tokens == alone[i].tokens);
        CHECK(batch[i].text == alone[i].text);
        CHECK(batch[i].n_final_events == 1);
    }
    const vt_engine_stats s = stats_of(c.get());
    CHECK(s.kv_blocks_used == 0);
    CHECK(s.n_running == 0);
    CHECK(s.n_waiting == 0);
    CHECK(s.requests_finished == 16);
    uint64_t want_generated = 0;
    for (const Request &r : reqs) want_generated += r.max_tokens;
    CHECK(s.generated_tokens == want_generated);
    CHECK(s.steps > 0);
    // The rate covers the time the engine ran, not a 10 s window it has
    // not lived yet: at least the tokens computed (every prompt token, and
    // each sampled one but the last of each request) over the wall time.
    const double computed = (double)(s.prompt_tokens + s.generated_tokens - s.requests_finished);
    INFO("tokens_per_second " << s.tokens_per_second << ", " << computed << " tokens in " << seconds << " s");
    if (seconds < 9.0) CHECK(s.tokens_per_second >= computed / seconds);
}

TEST_CASE("engine: a burst larger than the KV pool completes through preemption, unchanged", "[tiny]") {
    ModelPtr m = tiny_model();
    // Tiny model: 2 layers x 2 KV heads x 16 dims x 2 (K, V) x 2 bytes = 256 bytes per token.
    // 12 blocks of 16 tokens = 192 tokens, less than the burst needs at once.
    const uint64_t pool = 12 * 16 * 256;
    std::vector<Request> reqs;
    for (int i = 0; i < 10; ++i) {
        Request r;
        r.prompt = tiny_prompt(i + 3);
        r.max_tokens = 40;
        reqs.push_back(r);
    }
    std::vector<Result> alone;
    {
        ContextPtr c = make_context(m.get(), 1 << 20);
        for (const Request &r : reqs) alone.push_back(run(c.get(), {r})[0]);
    }
    ContextPtr c = make_context(m.get(), pool, /*n_batch=*/32);
    std::vector<Result> burst = run(c.get(), reqs);
    const vt_engine_stats s = stats_of(c.get());
    CHECK(s.kv_blocks_total == 12);
    CHECK(s.preemptions > 0);
    for (size_t i = 0; i < reqs.size(); ++i) {
        INFO("request " << i);
        CHECK(burst[i].reason == VT_FINISH_LENGTH);
        CHECK(burst[i].tokens == alone[i].tokens);
        CHECK(burst[i].text == alone[i].text);
    }
    CHECK(s.kv_blocks_used == 0);
}

TEST_CASE("engine: a request that can never fit gets a clear error", "[tiny]") {
    ModelPtr m = tiny_model();
    ContextPtr c = make_context(m.get(), 4 * 16 * 256);  // 64 tokens in all
    Request r;
    r.prompt.assign(100, 65);
    uint64_t id = 0;
    CHECK(submit(c.get(), r, &id) == VT_ERR_CONTEXT_FULL);
    CHECK(id == 0);
    CHECK(last_error().find("100 tokens") != std::string::npos);
    // max_model_len is capped by the pool: a long generation ends for length.
    r.prompt.assign(40, 65);
    r.max_tokens = 0;
    std::vector<Result> res = run(c.get(), {r});
    CHECK(res[0].reason == VT_FINISH_LENGTH);
    CHECK(res[0].tokens.size() == 64 - 40);
    CHECK(stats_of(c.get()).max_model_len == 64);
}

TEST_CASE("engine: a repeated prompt is served from the prefix cache, with the same tokens", "[tiny]") {
    ModelPtr m = tiny_model();
    ContextPtr c = make_context(m.get(), 1 << 20);
    Request r;
    for (int k = 0; k < 50; ++k) r.prompt.push_back((vt_token)(40 + k % 50));
    r.max_tokens = 10;
    Result first = run(c.get(), {r})[0];
    Result second = run(c.get(), {r})[0];
    CHECK(first.n_cached == 0);
    CHECK(second.n_cached == 48);  // three full blocks of 16; the last prompt token is always computed
    CHECK(second.tokens == first.tokens);
    const vt_engine_stats s = stats_of(c.get());
    CHECK(s.prefix_hit_tokens == 48);
    CHECK(s.prefix_query_tokens == 100);
    CHECK(s.kv_blocks_cached > 0);
    CHECK(s.kv_blocks_used == 0);
    // Sixteen requests sharing a prefix, submitted together: each equals its run alone.
    std::vector<Request> reqs;
    for (int i = 0; i < 16; ++i) {
        Request q = r;
        q.prompt.push_back((vt_token)(100 + i));
        reqs.push_back(q);
    }
    std::vector<Result> together = run(c.get(), reqs);
    ContextPtr fresh = make_context(m.get(), 1 << 20);
    for (size_t i = 0; i < reqs.size(); ++i) {
        INFO("request " << i);
        CHECK(together[i].tokens == run(fresh.get(), {reqs[i]})[0].tokens);
    }
}

TEST_CASE("engine: stop strings end the text before them and never leak into the stream", "[tiny]") {
    ModelPtr m = tiny_model();
    ContextPtr c = make_context(m.get(), 1 << 20);
    int checked = 0;
    for (int i = 0; i < 8; ++i) {
        Request r;
        r.prompt = tiny_prompt(i);
        r.max_tokens = 40;
        const Result full = run(c.get(), {r})[0];
        if (full.text.size() < 12) continue;
        // A stop string from the middle of the free-running text, spanning tokens.
        const std::string stop = full.text.substr(full.text.size() / 2, 3);
        // Random weights emit arbitrary bytes; a stop string must be valid UTF-8.
        if (std::any_of(stop.begin(), stop.end(), [](char ch) { return ch < 0x20 || (unsigned char)ch >= 0x80; }))
            continue;
        r.stops = {stop, "\x01never-matches"};
        const Result cut = run(c.get(), {r})[0];
        INFO("stop '" << stop << "'");
        const size_t at = full.text.find(stop);
        CHECK(cut.reason == VT_FINISH_STOP);
        CHECK(cut.text == full.text.substr(0, at));
        // No event ever showed text past the cut.
        std::string shown;
        for (const std::string &p : cut.pieces) {
            shown += p;
            CHECK(full.text.compare(0, shown.size(), shown) == 0);
            CHECK(shown.size() <= at);
        }
        ++checked;
    }
    CHECK(checked >= 4);
}

TEST_CASE("engine: render_special shows control tokens in the text; stop tokens are never shown", "[tiny]") {
    // A chat format read from the text (gpt-oss's harmony) needs its control
    // tokens there; the tiny vocabulary's one is <|endoftext|> (its EOS).
    ModelPtr m = tiny_model();
    ContextPtr c = make_context(m.get(), 1 << 20);
    Request r;
    r.prompt = tiny_prompt(1);
    r.max_tokens = 3;
    r.ignore_eos = true;
    r.forced = vt::test::TinyLlama::kEot;
    Result plain = run(c.get(), {r})[0];
    CHECK(plain.tokens == std::vector<vt_token>(3, vt::test::TinyLlama::kEot));
    CHECK(plain.text.empty());
    r.render_special = true;
    Result shown = run(c.get(), {r})[0];
    CHECK(shown.tokens == plain.tokens);
    CHECK(shown.text == "<|endoftext|><|endoftext|><|endoftext|>");
    // vt_request_params_init zeroes it (in 1.10 its bytes were padding).
    vt_request_params p;
    std::memset(&p, 0xab, sizeof p);
    vt_request_params_init(&p);
    CHECK(!p.render_special);
    // A stop token ends the request and is left out, rendered or not.
    r.stop_tokens = {vt::test::TinyLlama::kEot};
    Result stopped = run(c.get(), {r})[0];
    CHECK(stopped.reason == VT_FINISH_STOP);
    CHECK(stopped.text.empty());
}

TEST_CASE("engine: cancel from another thread ends the request and frees its blocks", "[tiny]") {
    ModelPtr m = tiny_model();
    ContextPtr c = make_context(m.get(), 1 << 20);
    Request r;
    r.prompt = tiny_prompt(2);
    r.max_tokens = 200;
    uint64_t id = 0;
    REQUIRE(submit(c.get(), r, &id) == VT_OK);
    std::map<uint64_t, Result> res;
    res[id];
    for (int i = 0; i < 3; ++i) REQUIRE(vt_context_step(c.get(), 0, nullptr) == VT_OK);
    CHECK(stats_of(c.get()).kv_blocks_used > 0);
    std::thread t([&] { CHECK(vt_context_cancel(c.get(), id) == VT_OK); });
    t.join();
    drain(c.get(), res);
    CHECK(res[id].reason == VT_FINISH_CANCELLED);
    CHECK(res[id].n_final_events == 1);
    CHECK(res[id].tokens.size() < 200);
    CHECK(stats_of(c.get()).kv_blocks_used == 0);
    // Unknown and finished ids are ignored.
    CHECK(vt_context_cancel(c.get(), id) == VT_OK);
    CHECK(vt_context_cancel(c.get(), 999999) == VT_OK);
}

TEST_CASE("engine: submits from many threads while one thread steps", "[tiny]") {
    ModelPtr m = tiny_model();
    ContextPtr c = make_context(m.get(), 1 << 20);
    struct Sink {
        std::atomic<int> finished{0};
        std::atomic<int> tokens{0};
    } sink;
    auto cb = [](const vt_request_output *o, void *user) {
        auto *s = static_cast<Sink *>(user);
        if (o->token >= 0) ++s->tokens;
        if (o->finish_reason != VT_FINISH_NONE) ++s->finished;
    };
    std::atomic<bool> stop{false};
    std::thread engine([&] {
        while (!stop) REQUIRE(vt_context_step(c.get(), 5, nullptr) == VT_OK);
    });
    std::vector<std::thread> clients;
    for (int t = 0; t < 4; ++t)
        clients.emplace_back([&, t] {
            for (int i = 0; i < 5; ++i) {
                std::vector<vt_token> prompt = tiny_prompt(t * 5 + i);
                vt_request_params p;
                vt_request_params_init(&p);
                p.prompt = prompt.data();
                p.n_prompt = prompt.size();
                p.max_tokens = 8;
                p.callback = cb;
                p.user_data = &sink;
                uint64_t id = 0;
                CHECK(vt_context_submit(c.get(), &p, &id) == VT_OK);
                vt_engine_stats s{};
                s.struct_size = sizeof s;
                CHECK(vt_context_stats(c.get(), &s) == VT_OK);
            }
        });
    for (std::thread &t : clients) t.join();
    for (int i = 0; i < 2000 && sink.finished < 20; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stop = true;
    engine.join();
    CHECK(sink.finished == 20);
    CHECK(sink.tokens == 20 * 8);
    CHECK(stats_of(c.get()).kv_blocks_used == 0);
}

TEST_CASE("engine: logprobs are the log-softmax of the logits", "[tiny]") {
    ModelPtr m = tiny_model();
    ContextPtr c = make_context(m.get(), 1 << 20);
    Request r;
    r.prompt = tiny_prompt(5);
    r.max_tokens = 6;
    r.logprobs = true;
    r.top_logprobs = 5;
    const Result res = run(c.get(), {r})[0];
    // The same prompt through a vt_seq: its logits give the expected values.
    vt_seq *sq = nullptr;
    REQUIRE(vt_seq_create(c.get(), nullptr, &sq) == VT_OK);
    SeqPtr seq(sq);
    std::vector<vt_token> ctx_ids = r.prompt;
    REQUIRE(res.tokens.size() == 6);
    for (size_t i = 0; i < res.tokens.size(); ++i) {
        REQUIRE(vt_seq_reset(sq) == VT_OK);
        REQUIRE(vt_seq_feed(sq, ctx_ids.data(), ctx_ids.size()) == VT_OK);
        REQUIRE(vt_seq_step(sq) == VT_OK);
        const float *lg = nullptr;
        size_t n_vocab = 0;
        REQUIRE(vt_seq_logits(sq, -1, &lg, &n_vocab) == VT_OK);
        double mx = *std::max_element(lg, lg + n_vocab), sum = 0;
        for (size_t k = 0; k < n_vocab; ++k) sum += std::exp(lg[k] - mx);
        const double log_z = mx + std::log(sum);
        INFO("token " << i);
        // Attention numerics differ slightly between the two paths (paged:
        // f32 probabilities; vt_seq: f16, as llama.cpp).
        CHECK(res.logprobs[i] == Approx(lg[res.tokens[i]] - log_z).margin(2e-3));
        REQUIRE(res.top_tokens[i].size() == 5);
        CHECK(res.top_tokens[i][0] == res.tokens[i]);  // greedy
        CHECK(res.top_logprobs[i][0] == res.logprobs[i]);
        for (size_t k = 1; k < 5; ++k) CHECK(res.top_logprobs[i][k] <= res.top_logprobs[i][k - 1]);
        ctx_ids.push_back(res.tokens[i]);
    }
}

TEST_CASE("engine: bad requests are refused and queue nothing", "[tiny]") {
    ModelPtr m = tiny_model();
    ContextPtr c = make_context(m.get(), 1 << 20);
    uint64_t id = 7;
    vt_request_params p;
    vt_request_params_init(&p);
    CHECK(vt_context_submit(c.get(), &p, &id) == VT_ERR_INVALID_ARGUMENT);  // empty prompt
    CHECK(id == 0);
    vt_token bad[] = {1, 99999};
    p.prompt = bad;
    p.n_prompt = 2;
    CHECK(vt_context_submit(c.get(), &p, &id) == VT_ERR_INVALID_ARGUMENT);
    CHECK(last_error().find("99999") != std::string::npos);
    vt_token ok[] = {65, 66};
    p.prompt = ok;
    p.top_logprobs = 21;
    CHECK(vt_context_submit(c.get(), &p, &id) == VT_ERR_INVALID_ARGUMENT);
    p.top_logprobs = 0;
    const char *bad_utf8[] = {"\xff\xfe"};
    p.stop_strings = bad_utf8;
    p.n_stop_strings = 1;
    CHECK(vt_context_submit(c.get(), &p, &id) == VT_ERR_INVALID_UTF8);
    const char *empty[] = {""};
    p.stop_strings = empty;
    CHECK(vt_context_submit(c.get(), &p, &id) == VT_ERR_INVALID_ARGUMENT);
    p.n_stop_strings = 0;
    vt_sampler *s = nullptr;
    REQUIRE(vt_sampler_create(&s) == VT_OK);
    REQUIRE(vt_sampler_add_top_k(s, 5) == VT_OK);
    p.sampler = s;  // no final stage
    CHECK(vt_context_submit(c.get(), &p, &id) == VT_ERR_INVALID_STATE);
    vt_sampler_destroy(s);  // still the caller's after a failed submit
    p.sampler = nullptr;
    vt_request_params zero{};
    CHECK(vt_context_submit(c.get(), &zero, &id) == VT_ERR_INVALID_ARGUMENT);  // struct_size unset
    CHECK(vt_context_submit(nullptr, &p, &id) == VT_ERR_INVALID_ARGUMENT);
    CHECK(vt_context_step(nullptr, 0, nullptr) == VT_ERR_INVALID_ARGUMENT);
    const vt_request_output *o = nullptr;
    CHECK(vt_context_poll(c.get(), &o) == VT_OK);
    CHECK(o == nullptr);
    size_t n = 1;
    CHECK(vt_context_step(c.get(), 0, &n) == VT_OK);
    CHECK(n == 0);
    const vt_engine_stats st = stats_of(c.get());
    CHECK(st.n_waiting == 0);
    CHECK(st.n_running == 0);
    // A caller built against a smaller stats struct gets only its fields.
    vt_engine_stats small{};
    std::memset(&small, 0xAB, sizeof small);
    small.struct_size = offsetof(vt_engine_stats, kv_block_size);
    CHECK(vt_context_stats(c.get(), &small) == VT_OK);
    uint32_t untouched;
    std::memcpy(&untouched, reinterpret_cast<const char *>(&small) + offsetof(vt_engine_stats, kv_block_size), 4);
    CHECK(untouched == 0xABABABABu);
}

// Prompts of the SmolLM2 tests: short, each continuing differently.

TEST_CASE("engine: SmolLM2 greedy follows the single-sequence path and batches exactly", "[model]") {
    const auto path = vt::test::default_model();
    if (path.empty()) {
        VT_SKIP(vt::test::default_model_hint());
    }
    ModelPtr m = load_model(path.string());
    const auto &texts = kSmolPrompts;
    std::vector<Request> reqs;
    for (const char *t : texts) {
        Request r;
        r.prompt = tokenize(m.get(), t);
        r.max_tokens = 24;
        reqs.push_back(r);
    }
    ContextPtr c = make_context(m.get(), 64ull << 20, /*n_batch=*/128);
    std::vector<Result> batch = run(c.get(), reqs);
    int agree_fully = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
        INFO(texts[i]);
        CHECK(batch[i].reason == VT_FINISH_LENGTH);
        // vt_seq greedy (the path checked against llama.cpp), with top-2 margins.
        vt_seq *sq = nullptr;
        REQUIRE(vt_seq_create(c.get(), nullptr, &sq) == VT_OK);
        SeqPtr seq(sq);
        std::vector<vt_token> feed = reqs[i].prompt;
        size_t same = 0;
        bool diverged = false;
        for (size_t k = 0; k < batch[i].tokens.size() && !diverged; ++k) {
            REQUIRE(vt_seq_feed(sq, feed.data(), feed.size()) == VT_OK);
            REQUIRE(vt_seq_step(sq) == VT_OK);
            const float *lg = nullptr;
            size_t n_vocab = 0;
            REQUIRE(vt_seq_logits(sq, -1, &lg, &n_vocab) == VT_OK);
            std::vector<float> row(lg, lg + n_vocab);
            const size_t best = (size_t)(std::max_element(row.begin(), row.end()) - row.begin());
            float second = -INFINITY;
            for (size_t v = 0; v < n_vocab; ++v)
                if (v != best) second = std::max(second, row[v]);
            if ((vt_token)best == batch[i].tokens[k]) {
                ++same;
            } else {
                // Only a near-tie may flip. The paged attention keeps softmax
                // probabilities in f32; vt_seq rounds them to f16 as
                // llama.cpp does (tests/unit ATTN_PAGED bounds the paged
                // error far tighter). Through 30 layers of int8-quantized
                // activations that moves logits by up to ~0.15 here; 0.4 is
                // the divergence margin tests/models measured between vt
                // and llama.cpp themselves.
                CHECK(row[best] - second < 0.4f);
                diverged = true;
            }
            feed = {batch[i].tokens[k]};
        }
        agree_fully += same == batch[i].tokens.size();
    }
    CHECK(agree_fully >= 4);
    // Each request alone gives what it gave in the batch.
    ContextPtr alone_ctx = make_context(m.get(), 64ull << 20, 128);
    for (size_t i = 0; i < reqs.size(); ++i) {
        INFO(texts[i]);
        CHECK(run(alone_ctx.get(), {reqs[i]})[0].tokens == batch[i].tokens);
    }
    CHECK(stats_of(c.get()).kv_blocks_used == 0);
}

TEST_CASE("engine: SmolLM2 seeded sampler chains give the same tokens alone and sampled in parallel in a batch",
          "[model]") {
    // A step's sequences sample on several threads (n_threads 2 here); each
    // request's chain must draw what it draws alone, on the real vocabulary
    // where the top-k shortcut applies.
    const auto path = vt::test::default_model();
    if (path.empty()) {
        VT_SKIP(vt::test::default_model_hint());
    }
    ModelPtr m = load_model(path.string());
    const auto &texts = kSmolPrompts;
    std::vector<Request> reqs;
    for (int i = 0; i < 16; ++i) {
        Request r;
        r.prompt = tokenize(m.get(), texts[i % 8]);
        r.max_tokens = 20;
        r.ignore_eos = true;
        r.seed = i % 4 ? 77 + (uint32_t)i : 0;  // a quarter the engine's own greedy
        r.chain = i % 3;
        reqs.push_back(r);
    }
    ContextPtr c = make_context(m.get(), 64ull << 20, /*n_batch=*/128);
    std::vector<Result> batch = run(c.get(), reqs);
    ContextPtr alone_ctx = make_context(m.get(), 64ull << 20, 128);
    for (size_t i = 0; i < reqs.size(); ++i) {
        INFO("request " << i);
        REQUIRE(batch[i].tokens.size() == reqs[i].max_tokens);
        CHECK(run(alone_ctx.get(), {reqs[i]})[0].tokens == batch[i].tokens);
    }
}

TEST_CASE("engine: SmolLM2 greedy, all prompts batched, follows llama.cpp's greedy tokens", "[model]") {
    // The oracle: tests/models/goldens/smollm2-q4_1.json (llama.cpp through
    // llama-cpp-python; 64 greedy tokens per prompt, EOG fed back, with
    // llama.cpp's own top-1 minus top-2 margin at each step). All prompts run
    // together in one engine; each must equal llama.cpp's tokens up to the
    // first step where llama.cpp's margin is below 0.25: the engine's f32
    // attention and the f16 one llama.cpp and vt's sequence path share were
    // seen to move a top-2 margin by up to 0.15 on this model; the rest is
    // headroom. (0.25 compares 133 tokens here, 13 prompts; 0.2 compares 252,
    // all equal.)
    const auto path = vt::test::default_model();
    const char *root = std::getenv("VT_SOURCE_ROOT");
    if (path.empty() || !root) {
        VT_SKIP(vt::test::default_model_hint() << " (and VT_SOURCE_ROOT, set by meson)");
    }
    std::ifstream f(std::string(root) + "/tests/models/goldens/smollm2-q4_1.json");
    REQUIRE(f.good());
    const nlohmann::json golden = nlohmann::json::parse(f);
    ModelPtr m = load_model(path.string());
    std::vector<Request> reqs;
    std::vector<std::vector<vt_token>> want;
    std::vector<std::vector<float>> margins;
    std::vector<std::string> names;
    for (const auto &p : golden["prompts"]) {
        if (!p.contains("greedy")) continue;
        Request r;
        r.prompt = p[p.value("eval_special", false) ? "ids_special" : "ids"].get<std::vector<vt_token>>();
        if (r.prompt.empty()) continue;
        want.push_back(p["greedy"].get<std::vector<vt_token>>());
        margins.push_back(p["greedy_margins"].get<std::vector<float>>());
        r.max_tokens = (uint32_t)want.back().size();
        r.ignore_eos = true;  // llama.cpp's goldens feed EOG back and go on
        reqs.push_back(r);
        names.push_back(p["name"].get<std::string>());
    }
    REQUIRE(reqs.size() >= 10);
    ContextPtr c = make_context(m.get(), 64ull << 20, /*n_batch=*/256);
    const std::vector<Result> got = run(c.get(), reqs);
    size_t compared = 0, full = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
        INFO(names[i]);
        REQUIRE(got[i].tokens.size() == want[i].size());
        size_t k = 0;
        while (k < want[i].size() && margins[i][k] >= 0.25f) {
            CHECK(got[i].tokens[k] == want[i][k]);
            if (got[i].tokens[k] != want[i][k]) break;
            ++k;
        }
        compared += k;
        full += k == want[i].size();
    }
    WARN("engine vs llama.cpp greedy: " << compared << " tokens compared before the first near-tie, " << full
                                        << " of " << reqs.size() << " prompts whole");
    CHECK(compared >= 100);
    CHECK(stats_of(c.get()).kv_blocks_used == 0);
}
