// Speculative decoding (vt_context_params.spec_method) through the public C
// ABI only. The oracle is the same engine without drafts: every request's
// tokens must be those it makes without speculation, greedy and sampled
// (seed for seed), in mixed batches through preemption, prefix-cache hits,
// stop strings and a grammar; the counters show the drafts were made and
// accepted, so a run that never drafted cannot pass.
//
// [tiny] cases: the tiny random-weight Llama (always available), whose
// greedy text falls into loops that n-grams draft, and the tiny hybrid
// fixtures of tests/models/tiny (one per kind of recurrent state), whose
// states are rolled back when a draft is rejected. [model] cases: SmolLM2
// (VT_TEST_MODEL; skipped without it) on prompts that repeat their input.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/skip.h"
#include "common/test-env.h"

#include "abi/engine-harness.h"

using namespace engine_harness;

namespace {

// Runs reqs without and with drafts of k tokens: the same tokens, texts and
// endings, and the pool empty after. Returns the drafting run's counters.
vt_engine_stats same_with_drafts(const vt_model *m, const std::vector<Request> &reqs, uint64_t kv_bytes,
                                 uint32_t n_batch, uint32_t k, uint32_t lookup_min, uint32_t lookup_max,
                                 uint32_t method = VT_SPEC_NGRAM, const vt_model *draft = nullptr) {
    ContextPtr plain = make_context(m, kv_bytes, n_batch);
    const std::vector<Result> want = run(plain.get(), reqs);
    ContextPtr spec = make_context(m, kv_bytes, n_batch, 16, k, lookup_min, lookup_max, method, draft);
    const std::vector<Result> got = run(spec.get(), reqs);
    uint64_t drafted = 0, accepted = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
        INFO("request " << i);
        CHECK(got[i].tokens == want[i].tokens);
        CHECK(got[i].text == want[i].text);
        CHECK(got[i].reason == want[i].reason);
        CHECK(got[i].n_final_events == 1);
        CHECK(got[i].n_output == want[i].n_output);
        // A request's own counters: its drafts, each at most its k tokens,
        // and one draft a step at most (a step makes at least one token).
        CHECK(got[i].n_accepted <= got[i].n_drafted);
        const uint32_t k_req = reqs[i].spec_k ? std::min(reqs[i].spec_k, k) : k;
        CHECK(got[i].n_drafted <= (uint64_t)k_req * got[i].n_output);
        if (reqs[i].no_speculation) CHECK(got[i].n_drafted == 0);
        drafted += got[i].n_drafted;
        accepted += got[i].n_accepted;
    }
    const vt_engine_stats s = stats_of(spec.get());
    CHECK(drafted == s.spec_num_draft_tokens);  // the requests' counters add up to the engine's
    CHECK(accepted == s.spec_num_accepted_tokens);
    CHECK(s.kv_blocks_used == 0);
    CHECK(s.n_running == 0);
    CHECK(s.generated_tokens == stats_of(plain.get()).generated_tokens);
    // Acceptance adds up: per position counts never grow along the draft,
    // and they sum to the accepted tokens.
    uint64_t by_position = 0;
    for (uint32_t i = 0; i < VT_SPEC_MAX_TOKENS; ++i) {
        by_position += s.spec_num_accepted_per_position[i];
        if (i > 0) CHECK(s.spec_num_accepted_per_position[i] <= s.spec_num_accepted_per_position[i - 1]);
        if (i >= k) CHECK(s.spec_num_accepted_per_position[i] == 0);
    }
    CHECK(by_position == s.spec_num_accepted_tokens);
    CHECK(s.spec_num_accepted_tokens <= s.spec_num_draft_tokens);
    CHECK(s.spec_num_draft_tokens <= (uint64_t)k * s.spec_num_drafts);
    // One request alone: each accepted token saved it a forward pass.
    if (reqs.size() == 1)
        CHECK(s.steps + s.spec_num_accepted_tokens == stats_of(plain.get()).steps);
    return s;
}

std::vector<Request> tiny_requests(int n, uint32_t max_tokens) {
    std::vector<Request> reqs;
    for (int i = 0; i < n; ++i) {
        Request r;
        r.spec_k = i % 4 == 3 ? 1 + (uint32_t)(i % 3) : 0;  // a quarter take shorter drafts than the context's
        r.prompt = tiny_prompt(i % 12);  // later ones repeat earlier prompts: prefix hits
        r.max_tokens = max_tokens + (uint32_t)(i % 5);
        r.seed = i % 3 == 1 ? 500 + (uint32_t)i : 0;  // a third sampled
        r.chain = i % 3 == 1 ? i % 2 : 0;             // top-k / temp, or penalties, top-k, top-p, temp
        r.ignore_eos = true;
        reqs.push_back(r);
    }
    return reqs;
}

// The tiny model quantized to Q4_0 at load: a draft that mostly agrees
// with it (its greedy tokens differ now and then, so drafts are rejected too).
const vt_model *tiny_draft() {
    static ModelPtr draft = [] {
        static vt::test::TempFile f(vt::test::tiny_llama_gguf());
        vt_model_params mp;
        vt_model_params_init(&mp);
        mp.quantize = VT_QUANT_Q4_0;
        vt_model *d = nullptr;
        const vt_status st = vt_model_load(f.path.string().c_str(), &mp, &d);
        INFO(last_error());
        REQUIRE(st == VT_OK);
        return ModelPtr(d);
    }();
    return draft.get();
}

// A committed tiny fixture (tests/models/tiny/<name><ext>; ext "" reads the
// folder). Null without VT_SOURCE_ROOT (set by meson test).
ModelPtr tiny_fixture(const std::string &name, const std::string &ext = ".gguf") {
    const char *root = std::getenv("VT_SOURCE_ROOT");
    if (!root) return nullptr;
    return load_model((std::filesystem::path(root) / "tests" / "models" / "tiny" / (name + ext)).string());
}

} // namespace

TEST_CASE("spec: models with recurrent layers roll their states back and keep every token", "[tiny][hybrid]") {
    // One of each state: Gated DeltaNet (Qwen3.5), Mamba-2 (NemotronH),
    // short conv (LFM2), attention beside Mamba-2 in each layer (Falcon-H1),
    // Kimi's per-channel delta rule.
    const std::string arch = GENERATE(std::string("qwen3_5"), std::string("nemotron_h"), std::string("lfm2"),
                                      std::string("falcon_h1"), std::string("kimi_linear"));
    const uint32_t method = GENERATE((uint32_t)VT_SPEC_NGRAM, (uint32_t)VT_SPEC_SUFFIX, (uint32_t)VT_SPEC_DRAFT_MODEL);
    CAPTURE(arch, method);
    ModelPtr m = tiny_fixture(arch);
    if (!m) {
        VT_SKIP("VT_SOURCE_ROOT is unset: run through meson test");
    }
    // The draft model is a second load of the model (a draft with recurrent
    // layers of its own): its greedy drafts are the greedy requests' tokens,
    // the sampled requests reject most, so both the model's and the draft's
    // states are rolled back.
    ModelPtr draft = method == VT_SPEC_DRAFT_MODEL ? tiny_fixture(arch) : nullptr;
    const vt_engine_stats s = same_with_drafts(m.get(), tiny_requests(16, 40), 2 << 20, 64, 4,
                                               method == VT_SPEC_NGRAM ? 1 : 0, method == VT_SPEC_NGRAM ? 3 : 0, method,
                                               draft.get());
    CHECK(s.state_slots > 0);
    CHECK(s.spec_num_drafts > 0);
    if (method == VT_SPEC_DRAFT_MODEL) {
        CHECK(s.spec_num_accepted_tokens * 4 > s.spec_num_draft_tokens);
        CHECK(s.spec_num_accepted_tokens < s.spec_num_draft_tokens);
    }
}

TEST_CASE("spec: a hybrid model through preemption and a small budget keeps every token", "[tiny][hybrid]") {
    const uint32_t method = GENERATE((uint32_t)VT_SPEC_NGRAM, (uint32_t)VT_SPEC_DRAFT_MODEL);
    CAPTURE(method);
    ModelPtr m = tiny_fixture("qwen3_5");
    if (!m) {
        VT_SKIP("VT_SOURCE_ROOT is unset: run through meson test");
    }
    ModelPtr draft = method == VT_SPEC_DRAFT_MODEL ? tiny_fixture("qwen3_5") : nullptr;
    std::vector<Request> reqs = tiny_requests(16, 240);
    for (size_t i = 0; i < reqs.size(); i += 4) reqs[i].stops = {"a", "e"};
    // 384 KiB: the state slots, their checkpoints and the draft's take their
    // half first (2 to 8 requests run), and the blocks left run out as the
    // requests grow to 240 tokens; a step budget of 24 tokens that drafts
    // and replays share with prompts.
    const vt_engine_stats s = same_with_drafts(m.get(), reqs, 384 << 10, 24, 6, method == VT_SPEC_NGRAM ? 2 : 0,
                                               method == VT_SPEC_NGRAM ? 2 : 0, method, draft.get());
    CHECK(s.spec_num_drafts > 0);
    CHECK(s.preemptions > 0);
}

TEST_CASE("spec: a model's multi-token-prediction layer drafts and every token stays as it was", "[tiny][hybrid]") {
    // The tiny Qwen3.5 with an MTP layer (tests/models/make-tiny-models.py):
    // its drafts (random weights: rarely accepted) chained 1 to 4 deep, in a
    // batch of 16 with prefix hits, and through preemption and a step budget
    // that splits the prompts. test-mtp checks the drafts against
    // transformers' MTP layer.
    const uint32_t k = GENERATE(1u, 4u);
    CAPTURE(k);
    ModelPtr m = tiny_fixture("qwen3_5_mtp");
    if (!m) {
        VT_SKIP("VT_SOURCE_ROOT is unset: run through meson test");
    }
    vt_engine_stats s = same_with_drafts(m.get(), tiny_requests(16, 40), 2 << 20, 64, k, 0, 0, VT_SPEC_MTP);
    CHECK(s.spec_num_drafts > 0);
    std::vector<Request> reqs = tiny_requests(16, 240);
    for (size_t i = 0; i < reqs.size(); i += 4) reqs[i].stops = {"a", "e"};
    s = same_with_drafts(m.get(), reqs, 384 << 10, 24, k, 0, 0, VT_SPEC_MTP);
    CHECK(s.spec_num_drafts > 0);
    CHECK(s.preemptions > 0);
    // A model without one is refused.
    ModelPtr plain = tiny_fixture("qwen3_5");
    vt_context_params p;
    vt_context_params_init(&p);
    p.spec_method = VT_SPEC_MTP;
    p.num_speculative_tokens = 2;
    vt_context *c = nullptr;
    CHECK(vt_context_create(plain.get(), &p, &c) == VT_ERR_INVALID_ARGUMENT);
    CHECK(last_error().find("multi-token-prediction") != std::string::npos);
}

TEST_CASE("spec: DeepSeek-V3's next-n layer drafts and every token stays as it was", "[tiny]") {
    // The tiny DeepSeek-V3 folder with its next-n layer (an MLA and expert
    // block; its cache a latent layer of the pool): drafts chained 1 to 4
    // deep in a batch of 16 with prefix hits, then through preemption and a
    // step budget that splits the prompts.
    const uint32_t k = GENERATE(1u, 4u);
    CAPTURE(k);
    ModelPtr m = tiny_fixture("deepseek_v3_mtp", "");  // a folder
    if (!m) {
        VT_SKIP("VT_SOURCE_ROOT is unset: run through meson test");
    }
    vt_engine_stats s = same_with_drafts(m.get(), tiny_requests(16, 40), 2 << 20, 64, k, 0, 0, VT_SPEC_MTP);
    CHECK(s.spec_num_drafts > 0);
    std::vector<Request> reqs = tiny_requests(16, 48);
    for (size_t i = 0; i < reqs.size(); i += 4) reqs[i].stops = {"a", "e"};
    // 12 blocks of 16 tokens (4 latent rows of 80 bytes a token, the MTP
    // layer's among them): fewer than the burst needs.
    s = same_with_drafts(m.get(), reqs, 12 * 16 * 320, 24, k, 0, 0, VT_SPEC_MTP);
    CHECK(s.spec_num_drafts > 0);
    CHECK(s.preemptions > 0);
}

TEST_CASE("spec: n-gram drafts leave every token as it was, greedy and sampled, in a batch of 16", "[tiny]") {
    ModelPtr m = tiny_model();
    const uint32_t k = GENERATE(1u, 4u, 16u);
    CAPTURE(k);
    const vt_engine_stats s = same_with_drafts(m.get(), tiny_requests(16, 40), 1 << 20, 64, k, 1, 3);
    CHECK(s.spec_num_drafts > 50);
    CHECK(s.spec_num_accepted_tokens > 20);
}

TEST_CASE("spec: suffix drafts leave every token as it was, greedy and sampled, in a batch of 16", "[tiny]") {
    ModelPtr m = tiny_model();
    const uint32_t k = GENERATE(4u, 16u);
    CAPTURE(k);
    // Requests that repeat earlier prompts also match the outputs of those
    // that finished before them (the cache of outputs).
    const vt_engine_stats s = same_with_drafts(m.get(), tiny_requests(16, 40), 1 << 20, 64, k, 0, 0, VT_SPEC_SUFFIX);
    CHECK(s.spec_num_drafts > 50);
    CHECK(s.spec_num_accepted_tokens > 20);
}

TEST_CASE("spec: draft-model drafts leave every token as it was, greedy and sampled, in a batch of 16", "[tiny]") {
    ModelPtr m = tiny_model();
    const uint32_t k = GENERATE(1u, 4u, 16u);
    CAPTURE(k);
    // Twice the plain run's budget: the draft's KV comes out of it too.
    const vt_engine_stats s =
        same_with_drafts(m.get(), tiny_requests(16, 40), 2 << 20, 64, k, 0, 0, VT_SPEC_DRAFT_MODEL, tiny_draft());
    // The requests draft (60 to 330 times here, fewer with longer drafts),
    // k tokens each but where a request's room for tokens is shorter or it
    // takes fewer (a quarter take 1 to 3: tiny_requests).
    CHECK(s.spec_num_drafts > 40);
    CHECK(s.spec_num_draft_tokens * 3 > (uint64_t)k * s.spec_num_drafts);
    // A Q4_0 copy of the model agrees with it on most greedy tokens.
    CHECK(s.spec_num_accepted_tokens * 4 > s.spec_num_draft_tokens);
    CHECK(s.spec_num_accepted_tokens < s.spec_num_draft_tokens);
}

TEST_CASE("spec: a draft model that fails ends drafting, not the requests", "[tiny]") {
    ModelPtr m = tiny_model();
    // Its 5th proposal fails (lib/engine/engine.h's test hook): the first
    // four drafted, the requests then decode without drafts, to the tokens
    // they make without any.
    REQUIRE(setenv("VT_DEBUG_FAIL_DRAFT_ONCE", "5", 1) == 0);
    const vt_engine_stats s =
        same_with_drafts(m.get(), tiny_requests(16, 40), 2 << 20, 64, 4, 0, 0, VT_SPEC_DRAFT_MODEL, tiny_draft());
    unsetenv("VT_DEBUG_FAIL_DRAFT_ONCE");
    CHECK(s.spec_num_drafts > 0);
    CHECK(s.spec_num_drafts <= 4 * 16);  // four proposals of at most 16 requests
    CHECK(s.requests_finished == 16);
}

TEST_CASE("spec: through preemption, a small budget and stop strings, nothing changes", "[tiny]") {
    ModelPtr m = tiny_model();
    const uint32_t method = GENERATE((uint32_t)VT_SPEC_NGRAM, (uint32_t)VT_SPEC_SUFFIX, (uint32_t)VT_SPEC_DRAFT_MODEL);
    CAPTURE(method);
    std::vector<Request> reqs = tiny_requests(16, 48);
    for (size_t i = 0; i < reqs.size(); i += 4) reqs[i].stops = {"a", "e"};
    // 12 blocks of 16 tokens (256 bytes a token): fewer than the burst needs,
    // and a step budget of 24 tokens that drafts share with prompts. The
    // draft model's blocks come out of the same budget.
    const vt_engine_stats s =
        same_with_drafts(m.get(), reqs, 12 * 16 * 256, 24, 6, method == VT_SPEC_NGRAM ? 2 : 0,
                         method == VT_SPEC_NGRAM ? 2 : 0, method, tiny_draft());
    CHECK(s.spec_num_drafts > 0);
    CHECK(s.preemptions > 0);
}

TEST_CASE("spec: a request with no_speculation never drafts", "[tiny]") {
    ModelPtr m = tiny_model();
    std::vector<Request> reqs = tiny_requests(4, 40);
    for (Request &r : reqs) r.no_speculation = true;
    const vt_engine_stats s = same_with_drafts(m.get(), reqs, 1 << 20, 64, 4, 1, 3);
    CHECK(s.spec_num_drafts == 0);
    CHECK(s.spec_num_draft_tokens == 0);
}

TEST_CASE("spec: bad speculative parameters are refused at vt_context_create", "[tiny]") {
    ModelPtr m = tiny_model();
    // vt_context_create's status with the defaults changed by `set`.
    auto status = [&](auto set) {
        vt_context_params p;
        vt_context_params_init(&p);
        set(p);
        vt_context *c = nullptr;
        const vt_status st = vt_context_create(m.get(), &p, &c);
        vt_context_destroy(c);
        return st;
    };
    auto create = [&](uint32_t method, uint32_t k, uint32_t lo, uint32_t hi) {
        return status([&](vt_context_params &p) {
            p.spec_method = method;
            p.num_speculative_tokens = k;
            p.prompt_lookup_min = lo;
            p.prompt_lookup_max = hi;
        });
    };
    CHECK(create(VT_SPEC_NGRAM, 0, 0, 0) == VT_ERR_INVALID_ARGUMENT);
    CHECK(create(VT_SPEC_NGRAM, VT_SPEC_MAX_TOKENS + 1, 0, 0) == VT_ERR_INVALID_ARGUMENT);
    CHECK(create(VT_SPEC_NGRAM, 4, 5, 2) == VT_ERR_INVALID_ARGUMENT);
    CHECK(create(VT_SPEC_NGRAM, 4, 0, 65) == VT_ERR_INVALID_ARGUMENT);
    CHECK(create(7, 4, 0, 0) == VT_ERR_INVALID_ARGUMENT);
    CHECK(create(VT_SPEC_NGRAM, VT_SPEC_MAX_TOKENS, 0, 3) == VT_OK);
    CHECK(create(VT_SPEC_NONE, 0, 0, 0) == VT_OK);
    vt_context_params d;
    vt_context_params_init(&d);
    CHECK(d.suffix_max_cached_requests == 10000);  // vLLM's defaults
    CHECK(d.suffix_max_spec_factor == 1.0f);
    CHECK(d.suffix_min_token_prob == 0.1f);
    auto suffix = [&](uint32_t depth, float factor, float min_prob) {
        return status([&](vt_context_params &p) {
            p.spec_method = VT_SPEC_SUFFIX;
            p.num_speculative_tokens = 8;
            p.suffix_max_tree_depth = depth;
            p.suffix_max_spec_factor = factor;
            p.suffix_min_token_prob = min_prob;
        });
    };
    CHECK(suffix(0, 1.0f, 0.1f) == VT_OK);  // depth 24
    CHECK(suffix(2, 0.0f, 0.0f) == VT_OK);
    CHECK(suffix(1, 1.0f, 0.1f) == VT_ERR_INVALID_ARGUMENT);
    CHECK(suffix(1025, 1.0f, 0.1f) == VT_ERR_INVALID_ARGUMENT);
    CHECK(suffix(24, -1.0f, 0.1f) == VT_ERR_INVALID_ARGUMENT);
    CHECK(suffix(24, std::nanf(""), 0.1f) == VT_ERR_INVALID_ARGUMENT);
    CHECK(suffix(24, 1.0f, 1.5f) == VT_ERR_INVALID_ARGUMENT);
    CHECK(suffix(24, 1.0f, std::nanf("")) == VT_ERR_INVALID_ARGUMENT);
    // A draft model goes with VT_SPEC_DRAFT_MODEL, and that method needs one.
    auto draft = [&](uint32_t method, const vt_model *d) {
        return status([&](vt_context_params &p) {
            p.spec_method = method;
            p.num_speculative_tokens = 4;
            p.draft_model = d;
        });
    };
    CHECK(draft(VT_SPEC_DRAFT_MODEL, tiny_draft()) == VT_OK);
    CHECK(draft(VT_SPEC_DRAFT_MODEL, nullptr) == VT_ERR_INVALID_ARGUMENT);
    CHECK(draft(VT_SPEC_NGRAM, tiny_draft()) == VT_ERR_INVALID_ARGUMENT);
    CHECK(draft(VT_SPEC_NONE, tiny_draft()) == VT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("spec: SmolLM2 and Gemma 3 270M copying their input draft well and keep their tokens, with a grammar in "
          "the batch", "[model]") {
    const auto smol = vt::test::default_model();
    if (smol.empty()) {
        VT_SKIP(vt::test::default_model_hint());
    }
    // tests/run.sh fetches both beside each other (VT_TEST_MODEL's folder).
    const std::string file = GENERATE(std::string(), std::string("gemma-3-270m-q4_k_m.gguf"));
    const auto path = file.empty() ? smol : smol.parent_path() / file;
    if (!std::filesystem::exists(path)) {
        VT_SKIP(path.string() + " is missing: tests/run.sh fetches it");
    }
    const uint32_t method = GENERATE((uint32_t)VT_SPEC_NGRAM, (uint32_t)VT_SPEC_SUFFIX);
    CAPTURE(path, method);
    const uint32_t lo = method == VT_SPEC_NGRAM ? 2 : 0, hi = method == VT_SPEC_NGRAM ? 4 : 0;
    ModelPtr m = load_model(path.string());
    const char *const copying[] = {
        "Repeat the list exactly: apples, pears, plums, cherries, apricots, peaches, grapes.\n"
        "apples, pears, plums, cherries, apricots, peaches, grapes.\nAgain: apples,",
        "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n",
        "Name: Ada Lovelace. Born: 1815. Field: mathematics.\nJSON: {\"name\": \"Ada Lovelace\", \"born\": 1815, ",
        "1, 2, 3, 4, 5, 6, 7, 8,",
    };
    // Alone, the list drafts itself: the model copies its 14 tokens (then
    // rambles), most drafts are accepted, and each accepted token saves a
    // forward pass (same_with_drafts).
    Request list;
    list.prompt = tokenize(m.get(), copying[0]);
    list.max_tokens = 14;
    const vt_engine_stats alone = same_with_drafts(m.get(), {list}, 64ull << 20, 128, 5, lo, hi, method);
    CHECK(alone.spec_num_accepted_tokens >= 8);
    CHECK(alone.spec_num_accepted_tokens * 2 > alone.spec_num_draft_tokens);

    // A batch: the copying prompts, free text, seeded sampling with
    // penalties and top-p, and greedy under a grammar that drafts reject
    // where it forbids them.
    const vt_tokenizer *tok = nullptr;
    REQUIRE(vt_model_tokenizer(m.get(), &tok) == VT_OK);
    const std::string gbnf = "root ::= (\"apples\" | \"pears\" | \"plums\") (\", \" (\"apples\" | \"pears\" | \"plums\"))* \".\"\n";
    vt_grammar *g = nullptr;
    REQUIRE(vt_grammar_compile(tok, VT_GRAMMAR_GBNF, gbnf.data(), gbnf.size(), &g) == VT_OK);
    std::vector<Request> reqs;
    for (int i = 0; i < 10; ++i) {
        Request r;
        r.prompt = tokenize(m.get(), i < 4 ? copying[i] : i < 8 ? kSmolPrompts[i] : copying[0]);
        r.max_tokens = 48;
        r.seed = i % 4 == 3 ? 91 + (uint32_t)i : 0;
        r.chain = 1;
        if (i >= 8) r.grammar = g;
        reqs.push_back(r);
    }
    const vt_engine_stats s = same_with_drafts(m.get(), reqs, 64ull << 20, 128, 5, lo, hi, method);
    CHECK(s.spec_num_drafts > 20);
    CHECK(s.spec_num_accepted_tokens > 40);
    vt_grammar_destroy(g);
}

TEST_CASE("spec: SmolLM2 drafted by a second load of itself keeps its tokens; Gemma 3 as its draft is refused",
          "[model]") {
    const auto smol = vt::test::default_model();
    if (smol.empty()) {
        VT_SKIP(vt::test::default_model_hint());
    }
    ModelPtr m = load_model(smol.string());
    ModelPtr draft = load_model(smol.string());
    std::vector<Request> reqs;
    for (int i = 0; i < 6; ++i) {
        Request r;
        r.prompt = tokenize(m.get(), kSmolPrompts[i % 4]);
        r.max_tokens = 24;
        r.seed = i % 2 ? 300 + (uint32_t)i : 0;  // half sampled: their drafts are rejected where the draw differs
        r.chain = 1;
        reqs.push_back(r);
    }
    const vt_engine_stats s =
        same_with_drafts(m.get(), reqs, 64ull << 20, 128, 4, 0, 0, VT_SPEC_DRAFT_MODEL, draft.get());
    // The greedy half accepts nearly all, the sampled half far less (45% of
    // all drafted tokens accepted here).
    CHECK(s.spec_num_drafts > 10);
    CHECK(s.spec_num_accepted_tokens * 3 > s.spec_num_draft_tokens);

    const auto gemma = smol.parent_path() / "gemma-3-270m-q4_k_m.gguf";
    if (!std::filesystem::exists(gemma)) {
        VT_SKIP(gemma.string() + " is missing: tests/run.sh fetches it");
    }
    ModelPtr other = load_model(gemma.string());
    vt_context_params p;
    vt_context_params_init(&p);
    p.spec_method = VT_SPEC_DRAFT_MODEL;
    p.num_speculative_tokens = 4;
    p.draft_model = other.get();
    vt_context *c = nullptr;
    CHECK(vt_context_create(m.get(), &p, &c) == VT_ERR_INVALID_ARGUMENT);
    CHECK(c == nullptr);
    CHECK(last_error().find("vocabulary") != std::string::npos);
}
