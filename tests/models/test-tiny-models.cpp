// Every architecture against Hugging Face transformers, through the public C
// ABI only: tiny random-weight models that transformers wrote and llama.cpp's
// convert_hf_to_gguf.py converted (tests/models/make-tiny-models.py; the GGUF
// fixtures and transformers' float32 logits are in tests/models/tiny/).
//
// Environment: VT_TINY_MODEL names the fixture and VT_TINY_SOURCE how to load
// it, "gguf" (<name>.gguf) or "folder" (the Hugging Face folder <name>/);
// meson sets both, one test per architecture and source. VT_SOURCE_ROOT is
// the repository root; VT_TEST_DEVICE, when set, the device to run on, and
// VT_TEST_N_GPU_LAYERS the layers it holds (vt_model_params.n_gpu_layers).
//
// What must hold, for float32 weights:
// - vt's tokenizer from the GGUF gives the HF tokenizer's ids;
// - every logit of every prompt position within TOL_LOGIT of transformers';
// - greedy 32 tokens identical, through vt_seq and through the serving engine
//   (paged KV, prefix caching, preemption), except after a step whose
//   golden margin is below TIE_MARGIN.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/vt-handles.h"
#include "common/vt-status.h"
#include "models/tiny-checks.h"
#include "vt/vt.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using vt::test::TIE_MARGIN;
using vt::test::TOL_LOGIT;
using vt::test::ContextPtr;
using vt::test::ModelPtr;
using vt::test::SeqPtr;
using vt::test::status_msg;

struct Fixture {
    std::string name;
    json golden;
    ModelPtr model;
    const vt_tokenizer *tok = nullptr;
};

Fixture &fixture() {
    static Fixture f = [] {
        Fixture x;
        const char *name = std::getenv("VT_TINY_MODEL");
        const char *root = std::getenv("VT_SOURCE_ROOT");
        if (!name || !*name || !root) {
            std::fprintf(stderr, "SKIPPED: VT_TINY_MODEL and VT_SOURCE_ROOT are set by meson test\n");
            std::exit(77);
        }
        x.name = name;
        const fs::path dir = fs::path(root) / "tests" / "models" / "tiny";
        std::ifstream in(dir / (x.name + ".json"), std::ios::binary);
        if (in) x.golden = json::parse(in, nullptr, /*allow_exceptions=*/false);
        const char *source = std::getenv("VT_TINY_SOURCE");
        const bool folder = source && std::string(source) == "folder";
        const fs::path path = folder ? dir / x.name : dir / (x.name + ".gguf");
        // VT_TEST_DEVICE: the device to load on (meson's per-device tests).
        vt_model_params mp;
        vt_model_params_init(&mp);
        mp.device = std::getenv("VT_TEST_DEVICE");
        if (const char *ngl = std::getenv("VT_TEST_N_GPU_LAYERS")) mp.n_gpu_layers = std::atoi(ngl);
        vt_model *m = nullptr;
        if (vt_model_load(path.string().c_str(), &mp, &m) == VT_OK) {
            x.model.reset(m);
            vt_model_tokenizer(m, &x.tok);
        } else {
            std::fprintf(stderr, "%s: %s\n", x.name.c_str(), vt_last_error());
        }
        return x;
    }();
    REQUIRE(f.golden.is_object());
    REQUIRE(f.model != nullptr);
    REQUIRE(f.tok != nullptr);
    return f;
}

ContextPtr make_context(uint64_t kv_cache_bytes = 0, uint32_t max_num_seqs = 0, uint32_t max_model_len = 0,
                        uint32_t n_batch = 0, bool prefix_caching = true) {
    vt_context_params cp;
    vt_context_params_init_v2(&cp, sizeof cp);
    cp.no_prefix_caching = !prefix_caching;
    cp.n_threads = 2;
    cp.n_batch = n_batch;
    cp.kv_cache_bytes = kv_cache_bytes;
    cp.max_num_seqs = max_num_seqs;
    cp.max_model_len = max_model_len;
    vt_context *c = nullptr;
    VT_REQUIRE_OK(vt_context_create(fixture().model.get(), &cp, &c));
    return ContextPtr(c);
}

std::vector<vt_token> ids_of(const json &j) { return j.get<std::vector<vt_token>>(); }

vt_token argmax(const float *l, size_t n) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i)
        if (l[i] > l[best]) best = i;
    return (vt_token)best;
}

// The golden's greedy ids, up to a difference after a near-tie (tiny-checks.h).
void check_greedy(const std::vector<vt_token> &got, const char *path) {
    const json &g = fixture().golden;
    if (vt::test::check_greedy(got, ids_of(g["greedy"]), g["greedy_margins"].get<std::vector<float>>(), TIE_MARGIN,
                               path))
        WARN(fixture().name << " " << path << ": all " << got.size() << " greedy tokens identical");
}

} // namespace

TEST_CASE("tiny models: tokenizer ids match transformers'", "[tiny]") {
    Fixture &f = fixture();
    for (const json &p : f.golden["prompts"]) {
        const std::string text = p["text"];
        std::vector<vt_token> ids(text.size() + 8);
        size_t n = 0;
        VT_REQUIRE_OK(vt_tokenize(f.tok, text.data(), text.size(), VT_TOKENIZE_NONE, ids.data(), ids.size(), &n));
        ids.resize(n);
        CHECK(ids == ids_of(p["ids"]));
    }
}

TEST_CASE("tiny models: float32 logits match transformers'", "[tiny]") {
    Fixture &f = fixture();
    const size_t nv = f.golden["n_vocab"].get<size_t>();
    REQUIRE(vt_tokenizer_n_vocab(f.tok) == nv);
    ContextPtr ctx = make_context();
    float worst = 0.0f;
    for (const json &p : f.golden["prompts"]) {
        const std::vector<vt_token> ids = ids_of(p["ids"]);
        const auto got = vt::test::seq_all_logits(ctx.get(), ids);
        float max_diff = 0.0f;
        for (size_t t = 0; t < ids.size(); ++t) {
            REQUIRE(got[t].size() == nv);
            const std::vector<float> want = p["logits"][t].get<std::vector<float>>();
            for (size_t j = 0; j < nv; ++j) {
                const float d = std::fabs(got[t][j] - want[j]);
                if (!(d <= max_diff)) max_diff = std::isnan(d) ? INFINITY : d;
            }
        }
        INFO("prompt of " << ids.size() << " tokens");
        CHECK(max_diff <= TOL_LOGIT);
        worst = std::max(worst, max_diff);
    }
    WARN(f.name << ": max |vt - transformers| over every logit: " << worst);
}

TEST_CASE("tiny models: greedy tokens match transformers' through vt_seq", "[tiny]") {
    // Steps of the default 512 tokens, then of 16: the prompt in chunks, and
    // a sliding window's ring of blocks (what one step touches) wraps around
    // many times over the sequence.
    Fixture &f = fixture();
    for (uint32_t n_batch : {0u, 16u}) {
        INFO("n_batch " << n_batch);
        ContextPtr ctx = make_context(0, 0, 0, n_batch);
        const std::vector<vt_token> prompt = ids_of(f.golden["prompts"].back()["ids"]);
        vt_seq_params sp;
        vt_seq_params_init(&sp);
        sp.n_ctx = (uint32_t)prompt.size() + 40;
        vt_seq *s = nullptr;
        VT_REQUIRE_OK(vt_seq_create(ctx.get(), &sp, &s));
        SeqPtr seq(s);
        VT_REQUIRE_OK(vt_seq_feed(s, prompt.data(), prompt.size()));
        VT_REQUIRE_OK(vt_seq_step(s));
        std::vector<vt_token> got;
        for (size_t i = 0; i < f.golden["greedy"].size(); ++i) {
            const float *l = nullptr;
            size_t n = 0;
            VT_REQUIRE_OK(vt_seq_logits(s, -1, &l, &n));
            got.push_back(argmax(l, n));
            VT_REQUIRE_OK(vt_seq_feed(s, &got.back(), 1));
            VT_REQUIRE_OK(vt_seq_step(s));
        }
        check_greedy(got, n_batch ? "vt_seq, steps of 16" : "vt_seq");
    }
}

namespace {
// Greedy continuations of the longest prompt through the serving engine:
// `copies` identical requests submitted at once into a pool of kv_bytes,
// steps of n_batch tokens (0: the default); max_running: the most requests
// that ran at once.
std::vector<std::vector<vt_token>> engine_greedy(uint64_t kv_bytes, uint32_t max_seqs, int copies,
                                                 vt_engine_stats *stats, uint32_t n_batch = 0,
                                                 uint32_t *max_running = nullptr) {
    Fixture &f = fixture();
    // 96 positions: what the test needs (a 63-token prompt and 32 more),
    // and within Phi-3's original context, where transformers and vt both
    // use its short rope factors; more for the hybrid models' longer prompt
    // (over two delta-rule chunks). No more than that: a model with as many
    // sliding-window layers as full ones (gpt-oss) gives its sliding group
    // half of the pool for 1.5 requests below, and the full layers' half
    // must still hold one request of max_model_len.
    const std::vector<vt_token> prompt = ids_of(f.golden["prompts"].back()["ids"]);
    const uint32_t n_new = (uint32_t)f.golden["greedy"].size();
    ContextPtr ctx = make_context(kv_bytes, max_seqs, std::max<uint32_t>(96, (uint32_t)prompt.size() + n_new), n_batch);
    std::vector<uint64_t> ids(copies);
    for (int c = 0; c < copies; ++c) {
        vt_request_params rp;
        vt_request_params_init(&rp);
        rp.prompt = prompt.data();
        rp.n_prompt = prompt.size();
        rp.max_tokens = n_new;
        rp.ignore_eos = true;
        VT_REQUIRE_OK(vt_context_submit(ctx.get(), &rp, &ids[c]));
    }
    std::vector<std::vector<vt_token>> out(copies);
    int done = 0;
    for (int guard = 0; done < copies && guard < 10000; ++guard) {
        VT_REQUIRE_OK(vt_context_step(ctx.get(), 0, nullptr));
        if (max_running) {
            vt_engine_stats now{};
            now.struct_size = sizeof now;
            VT_REQUIRE_OK(vt_context_stats(ctx.get(), &now));
            *max_running = std::max(*max_running, now.n_running);
        }
        const vt_request_output *ev = nullptr;
        while (vt_context_poll(ctx.get(), &ev) == VT_OK && ev) {
            for (int c = 0; c < copies; ++c)
                if (ids[c] == ev->request_id && ev->token >= 0) out[c].push_back(ev->token);
            REQUIRE(ev->finish_reason != VT_FINISH_ERROR);
            if (ev->finish_reason != VT_FINISH_NONE) ++done;
        }
    }
    REQUIRE(done == copies);
    if (stats) {
        stats->struct_size = sizeof *stats;
        VT_REQUIRE_OK(vt_context_stats(ctx.get(), stats));
    }
    return out;
}
} // namespace

TEST_CASE("tiny models: greedy tokens match transformers' through the serving engine", "[tiny]") {
    // Alone; then four copies at once in a pool too small for all of them,
    // so the scheduler preempts and re-admits through the prefix cache. Each
    // copy must give the tokens of the run alone.
    const std::vector<vt_token> prompt = ids_of(fixture().golden["prompts"].back()["ids"]);
    vt_engine_stats st{};
    const auto alone = engine_greedy(0, 0, 1, &st);
    check_greedy(alone[0], "engine");
    // Recurrent layers: a slot per running request and up to two snapshots
    // each, all inside the pool.
    if (st.state_slots) {
        CHECK(st.state_bytes > 0);
        CHECK(st.state_bytes < st.kv_cache_bytes);
        CHECK(st.state_snapshots <= 2 * st.state_slots);
    } else {
        CHECK(st.state_bytes == 0);
    }
    // In steps of 16 tokens (prompts longer than a step and than the
    // tiny sliding windows, chunked), in a pool sized for one request of
    // max_model_len, then for two and a half of this test's: the third and
    // fourth wait or preempt. (Sliding-window layers keep only the blocks a
    // step of their window needs, so the full-attention ones run out first.)
    const uint32_t n_batch = 16;
    engine_greedy(0, 1, 1, &st, n_batch);
    REQUIRE(st.kv_blocks_total > 0);
    REQUIRE(st.max_model_len > 0);
    const uint64_t n_tokens = prompt.size() + fixture().golden["greedy"].size();
    // Then a pool for one and a half: a model with recurrent layers keeps a
    // state (and its snapshots) per running request in the same budget, so
    // the pool for 2.5 may hold its shared prompt without preempting, and
    // the smaller one (no room for snapshots) preempts without prefix hits.
    uint64_t preemptions = 0, hits = 0;
    const uint64_t one_request = st.kv_cache_bytes * n_tokens / st.max_model_len;
    // A model whose state slot outweighs a request's blocks (the tiny
    // Kimi-Linear: three KDA layers, 19 KB a slot, beside one latent layer
    // of 80 B a token) has snapshot room only once the four slots fit in
    // half the pool (kv-plan gives the slots at most half): a pool for 4 then.
    uint32_t running_small = 0;
    uint64_t small_blocks = 0, block_size = 1;
    for (uint64_t tenths : {25, 15, 40}) {
        if (tenths == 40 && hits > 0) break;
        const auto many = engine_greedy(one_request * tenths / 10, 4, 4, &st, n_batch,
                                        tenths == 15 ? &running_small : nullptr);
        for (const auto &seq : many) CHECK(seq == alone[0]);
        WARN(fixture().name << " engine: 4 copies in a pool for " << tenths / 10.0 << ", steps of 16 tokens, "
                            << st.preemptions << " preemptions, " << st.prefix_hit_tokens
                            << " prompt tokens from the prefix cache; all as alone");
        preemptions += st.preemptions;
        hits += st.prefix_hit_tokens;
        if (tenths == 15) {
            small_blocks = st.kv_blocks_total;
            block_size = st.kv_block_size;
        }
    }
    // (Recurrent layers: a hit resumes from a snapshot of the state at the
    // prompt's last full block, kv/state-slots.h.)
    CHECK(hits > 0);
    // Such a model cannot preempt at all: the blocks left beside at most
    // half the pool in slots hold every request the slots admit. Checked,
    // not assumed: the small pool's blocks cover the requests that ran.
    const uint64_t request_blocks = (n_tokens + block_size - 1) / std::max<uint64_t>(block_size, 1);
    if (preemptions == 0 && (uint64_t)running_small * request_blocks <= small_blocks)
        WARN(fixture().name << " engine: no preemption possible: " << small_blocks << " blocks hold the "
                            << running_small << " requests of " << request_blocks << " blocks its state slots admit");
    else
        CHECK(preemptions > 0);
}

TEST_CASE("tiny models: 16 different requests in one batch each give their tokens alone", "[tiny]") {
    // Different prompts take different experts in a mixture-of-experts
    // model, so every step groups other rows under each expert: a row's
    // arithmetic must not depend on them (nor, in any model, on the batch).
    const std::vector<vt_token> longest = ids_of(fixture().golden["prompts"].back()["ids"]);
    REQUIRE(longest.size() >= 24);
    const uint32_t n_new = 16;
    auto run = [&](const std::vector<std::vector<vt_token>> &prompts) {
        ContextPtr ctx = make_context(0, (uint32_t)prompts.size(), 128, 0);
        std::vector<uint64_t> ids(prompts.size());
        for (size_t i = 0; i < prompts.size(); ++i) {
            vt_request_params rp;
            vt_request_params_init(&rp);
            rp.prompt = prompts[i].data();
            rp.n_prompt = prompts[i].size();
            rp.max_tokens = n_new;
            rp.ignore_eos = true;
            VT_REQUIRE_OK(vt_context_submit(ctx.get(), &rp, &ids[i]));
        }
        std::vector<std::vector<vt_token>> out(prompts.size());
        size_t done = 0;
        for (int guard = 0; done < prompts.size() && guard < 10000; ++guard) {
            VT_REQUIRE_OK(vt_context_step(ctx.get(), 0, nullptr));
            const vt_request_output *ev = nullptr;
            while (vt_context_poll(ctx.get(), &ev) == VT_OK && ev) {
                for (size_t i = 0; i < prompts.size(); ++i)
                    if (ids[i] == ev->request_id && ev->token >= 0) out[i].push_back(ev->token);
                REQUIRE(ev->finish_reason != VT_FINISH_ERROR);
                if (ev->finish_reason != VT_FINISH_NONE) ++done;
            }
        }
        REQUIRE(done == prompts.size());
        return out;
    };
    // Windows of the longest prompt at 16 offsets, 8 to 23 tokens long.
    std::vector<std::vector<vt_token>> prompts;
    for (size_t i = 0; i < 16; ++i) {
        const size_t start = (i * 7) % (longest.size() - 23), len = 8 + i;
        prompts.emplace_back(longest.begin() + (ptrdiff_t)start, longest.begin() + (ptrdiff_t)(start + len));
    }
    const auto together = run(prompts);
    size_t distinct = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
        const auto alone = run({prompts[i]});
        INFO("request " << i);
        CHECK(together[i] == alone[0]);
        distinct += i == 0 || together[i] != together[0];
    }
    CHECK(distinct > 1);  // the requests do differ
    WARN(fixture().name << ": 16 different requests in one batch, each as alone");
}

namespace {
// Greedy continuations of each prompt, one after the other in one context
// (each request finishes before the next is submitted).
std::vector<std::vector<vt_token>> one_by_one(vt_context *ctx, const std::vector<std::vector<vt_token>> &prompts,
                                              uint32_t n_new) {
    std::vector<std::vector<vt_token>> out;
    for (const auto &p : prompts) {
        vt_request_params rp;
        vt_request_params_init(&rp);
        rp.prompt = p.data();
        rp.n_prompt = p.size();
        rp.max_tokens = n_new;
        rp.ignore_eos = true;
        uint64_t id = 0;
        VT_REQUIRE_OK(vt_context_submit(ctx, &rp, &id));
        std::vector<vt_token> got;
        bool done = false;
        for (int guard = 0; !done && guard < 10000; ++guard) {
            VT_REQUIRE_OK(vt_context_step(ctx, 0, nullptr));
            const vt_request_output *ev = nullptr;
            while (vt_context_poll(ctx, &ev) == VT_OK && ev) {
                if (ev->token >= 0) got.push_back(ev->token);
                REQUIRE(ev->finish_reason != VT_FINISH_ERROR);
                done |= ev->finish_reason != VT_FINISH_NONE;
            }
        }
        REQUIRE(done);
        out.push_back(std::move(got));
    }
    return out;
}
} // namespace

TEST_CASE("tiny models: a follow-up turn resumes from the prefix cache with the tokens of a run without it", "[tiny]") {
    // Multi-turn chat: turn 2's prompt is turn 1's prompt, its answer and a
    // new message. With the cache it resumes from turn 1's blocks (and, for
    // recurrent layers, the snapshot of its state at the last block
    // boundary it reached); without it, it computes everything. Steps of 16
    // tokens, so prompts are chunked too.
    const std::vector<vt_token> longest = ids_of(fixture().golden["prompts"].back()["ids"]);
    const uint32_t n1 = 20, n2 = 12;
    const std::vector<vt_token> turn1(longest.begin(), longest.begin() + (ptrdiff_t)std::min<size_t>(longest.size(), 100));
    ContextPtr cached = make_context(0, 4, 256, 16, true);
    const auto first = one_by_one(cached.get(), {turn1}, n1);
    std::vector<vt_token> turn2 = turn1;
    turn2.insert(turn2.end(), first[0].begin(), first[0].end());
    turn2.insert(turn2.end(), longest.begin(), longest.begin() + 9);
    const auto resumed = one_by_one(cached.get(), {turn2}, n2);
    vt_engine_stats st{};
    st.struct_size = sizeof st;
    VT_REQUIRE_OK(vt_context_stats(cached.get(), &st));
    ContextPtr plain = make_context(0, 4, 256, 16, false);
    const auto fresh = one_by_one(plain.get(), {turn2}, n2);
    CHECK(resumed[0] == fresh[0]);
    // Turn 1's full blocks were hit: its prompt and its answer but the last
    // sampled token (never computed), in whole blocks of 16.
    CHECK(st.prefix_hit_tokens == (turn1.size() + n1 - 1) / 16 * 16);
    WARN(fixture().name << ": turn 2 of " << turn2.size() << " tokens resumed " << st.prefix_hit_tokens
                        << " from the cache; its tokens as without it");
}
