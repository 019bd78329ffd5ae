// A checkpoint's multi-token-prediction layer (Architecture::build_mtp)
// against transformers' own (modeling_layers.MtpModel, as generate(
// use_mtp=True) drafts with it), on the tiny fixtures with one
// (tests/models/make-tiny-models.py, MTP_OF): Qwen3.5, Qwen3.5-MoE and
// Qwen3-Next (an expert block) from their GGUFs (the nextn block llama.cpp's
// converter writes) and their folders (mtp.*), and
// DeepSeek-V3 from its folder (model.layers.<n>.*: an MLA and expert block;
// the converter drops it from a GGUF). The trunk's final normed hidden
// states of a prompt (Context::Pass::hidden_out), then the MTP pass over the
// prompt shifted by one: row p reads the token at p + 1 and the trunk's
// state at p, and gives the logits of the token at p + 2; every row against
// the golden's mtp_logits. Then the engine's MtpProposer, fed the model's
// steps as the engine feeds it (a prompt chunk, then one token a step): its
// first draft after each step is the greedy token of the golden's row for
// the step's last position. And the serving engine with the MTP method over
// the golden's greedy run: every draft it makes is the token transformers'
// MTP layer predicts at that position.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/skip.h"
#include "engine/engine.h"
#include "engine/mtp.h"
#include "model/model.h"
#include "runner/paged-kv.h"
#include "runner/sequence.h"

using namespace vt;

namespace {

std::filesystem::path tiny_dir() {
    const char *root = std::getenv("VT_SOURCE_ROOT");
    return root ? std::filesystem::path(root) / "tests" / "models" / "tiny" : std::filesystem::path();
}

// The fixture's golden (tests/models/tiny/<name>.json); false when
// VT_SOURCE_ROOT is unset or it is missing.
bool read_golden(const std::string &name, nlohmann::json &golden) {
    const std::filesystem::path path = tiny_dir() / (name + ".json");
    if (tiny_dir().empty() || !std::filesystem::exists(path)) return false;
    std::ifstream in(path);
    golden = nlohmann::json::parse(in);
    return true;
}

// A fixture with an MTP layer: its golden's name and the file or folder read.
struct Source {
    std::string golden, path;
};
Source any_source() {
    return GENERATE(Source{"qwen3_5_mtp", "qwen3_5_mtp.gguf"}, Source{"qwen3_5_mtp", "qwen3_5_mtp"},
                    Source{"qwen3_5_moe_mtp", "qwen3_5_moe_mtp.gguf"}, Source{"qwen3_5_moe_mtp", "qwen3_5_moe_mtp"},
                    Source{"qwen3_next_mtp", "qwen3_next_mtp.gguf"}, Source{"qwen3_next_mtp", "qwen3_next_mtp"},
                    Source{"deepseek_v3_mtp", "deepseek_v3_mtp"});
}

// The model's layers and its MTP layer: a pool made with_mtp.
std::vector<LayerCacheSpec> layers_with_mtp(const Model &m) {
    std::vector<LayerCacheSpec> layers = m.cache_layers;
    layers.insert(layers.end(), m.mtp_cache.begin(), m.mtp_cache.end());
    return layers;
}

// One forward pass of tokens (a single sequence from position 0) over kv,
// every row's logits; pass as Context::forward takes it.
std::vector<float> run(Context &ctx, PagedKv &kv, const std::vector<int32_t> &tokens, const Context::Pass &pass) {
    const uint32_t bs = kv.block_size();
    std::vector<std::vector<BlockId>> tables(kv.groups().size());
    for (auto &t : tables)
        for (uint32_t b = 0; b * bs < tokens.size(); ++b) t.push_back((BlockId)b);
    Context::BatchSeq s;
    s.tokens = tokens;
    s.block_tables = tables;
    s.logits = Context::Logits::all;
    s.state_slot = kv.num_slots() ? 0 : -1;
    const Tensor *lg = ctx.forward(kv, std::span<const Context::BatchSeq>(&s, 1), 512, pass);
    const float *p = static_cast<const float *>(lg->data);
    return std::vector<float>(p, p + lg->nelements());
}

} // namespace

TEST_CASE("mtp: the multi-token-prediction layer gives transformers' logits", "[mtp]") {
    const Source src = any_source();
    const std::string &source = src.path;
    nlohmann::json golden;
    if (!read_golden(src.golden, golden)) {
        VT_SKIP("VT_SOURCE_ROOT is unset or tests/models/tiny/" << src.golden << ".json is missing");
    }
    CAPTURE(source);
    auto model = Model::load((tiny_dir() / source).string(), true, nullptr);
    REQUIRE(model->arch().has_mtp());
    const size_t V = model->hparams.n_vocab, E = model->hparams.n_embd;
    Context ctx(*model, "cpu", 2, 512);
    double worst = 0;
    for (size_t pi = 0; pi < golden["mtp_logits"].size(); ++pi) {
        const std::vector<int32_t> ids = golden["prompts"][pi]["ids"].get<std::vector<int32_t>>();
        const auto &want = golden["mtp_logits"][pi];
        const size_t n = ids.size();
        REQUIRE(want.size() == n - 1);
        // The trunk over the prompt, its hidden states kept.
        PagedKv trunk_kv(*model, std::vector<uint32_t>(cache_groups(model->cache_layers).size(), 64), 16, 1);
        run(ctx, trunk_kv, ids, Context::Pass{true});
        const std::span<const float> h = ctx.hidden();
        REQUIRE(h.size() == (size_t)E * n);
        const std::vector<float> hidden(h.begin(), h.begin() + (ptrdiff_t)E * (ptrdiff_t)(n - 1));
        // The MTP layer over tokens 1..n-1 at positions 0..n-2 with the
        // trunk's states 0..n-2 (its own cache, after the model's layers).
        PagedKv mtp_kv(*model, std::vector<uint32_t>(cache_groups(layers_with_mtp(*model)).size(), 64), 16, 1, true,
                       true);
        const std::vector<int32_t> shifted(ids.begin() + 1, ids.end());
        Context::Pass mtp;
        mtp.mtp = true;
        mtp.hidden_in = hidden.data();
        const std::vector<float> got = run(ctx, mtp_kv, shifted, mtp);
        REQUIRE(got.size() == (size_t)V * (n - 1));
        REQUIRE(ctx.hidden().size() == (size_t)E * (n - 1));
        for (size_t r = 0; r + 1 < n; ++r)
            for (size_t v = 0; v < V; ++v)
                worst = std::max(worst, std::fabs((double)got[r * V + v] - want[r][v].get<double>()));
    }
    INFO("max |vt - transformers| over the MTP layer's logits: " << worst);
    CHECK(worst < 0.01);
}

TEST_CASE("mtp: the proposer drafts after each step what transformers' MTP layer predicts there", "[mtp]") {
    const Source src = any_source();
    const std::string &source = src.path;
    nlohmann::json golden;
    if (!read_golden(src.golden, golden)) {
        VT_SKIP("VT_SOURCE_ROOT is unset or tests/models/tiny/" << src.golden << ".json is missing");
    }
    const uint32_t k = GENERATE(1u, 3u);
    CAPTURE(source, k);
    auto model = Model::load((tiny_dir() / source).string(), true, nullptr);
    const size_t V = model->hparams.n_vocab, E = model->hparams.n_embd;
    const std::vector<LayerCacheSpec> layers = layers_with_mtp(*model);
    size_t checked = 0;
    for (size_t pi = 0; pi < golden["mtp_logits"].size(); ++pi) {
        const std::vector<int32_t> ids = golden["prompts"][pi]["ids"].get<std::vector<int32_t>>();
        const auto &want = golden["mtp_logits"][pi];
        Context ctx(*model, "cpu", 2, 512);
        PagedKv kv(*model, std::vector<uint32_t>(cache_groups(layers).size(), 64), 16, 1, true, true);
        MtpProposer mtp(ctx, kv, 512);
        std::vector<std::vector<BlockId>> tables(kv.groups().size());
        for (auto &t : tables)
            for (BlockId b = 0; b < 8; ++b) t.push_back(b);  // 128 positions
        // A chunk of 7, then a token a step, to the prompt's last but one.
        for (size_t s = 0, e; s + 1 < ids.size(); s = e) {
            e = s == 0 ? 7 : s + 1;
            Context::BatchSeq b;
            b.tokens = std::span<const int32_t>(ids.data() + s, e - s);
            b.start_pos = (uint32_t)s;
            b.block_tables = tables;
            b.state_slot = 0;
            ctx.forward(kv, std::span<const Context::BatchSeq>(&b, 1), 512, Context::Pass{true});
            REQUIRE(ctx.hidden().size() == E * (e - s));
            MtpProposer::Part p;
            p.start = (uint32_t)s;
            p.next = std::span<const int32_t>(ids.data() + s + 1, e - s);  // the token after each position
            p.hidden = ctx.hidden().data();
            p.tables = tables;
            p.state_slot = 0;
            p.k = k;
            std::vector<std::vector<int32_t>> out;
            mtp.step(std::span<const MtpProposer::Part>(&p, 1), out);
            REQUIRE(out.size() == 1);
            REQUIRE(out[0].size() == k);
            // Row e - 1: the token at e and the state at e - 1, predicting e + 1.
            const auto &row = want[e - 1];
            size_t best = 0, second = 1;
            for (size_t v = 0; v < V; ++v) {
                if (row[v].get<double>() > row[best].get<double>()) second = best, best = v;
                else if (v != best && row[v].get<double>() > row[second].get<double>()) second = v;
            }
            if (row[best].get<double>() - row[second].get<double>() < 0.02) continue;  // a near-tie
            CHECK(out[0][0] == (int32_t)best);
            ++checked;
        }
    }
    CHECK(checked > 40);
}

TEST_CASE("mtp: the engine drafts, step after step, what transformers' MTP layer predicts", "[mtp]") {
    const Source src = any_source();
    const std::string &source = src.path;
    nlohmann::json golden;
    if (!read_golden(src.golden, golden)) {
        VT_SKIP("VT_SOURCE_ROOT is unset or tests/models/tiny/" << src.golden << ".json is missing");
    }
    const uint32_t k = GENERATE(1u, 3u);
    CAPTURE(source, k);
    const auto &mg = golden["mtp_greedy"];
    const size_t first_row = mg["first_row"].get<size_t>();
    auto model = Model::load((tiny_dir() / source).string(), true, nullptr);
    Context ctx(*model, "cpu", 2, 64);
    EngineConfig cfg;
    cfg.kv_cache_bytes = 8 << 20;
    cfg.max_batched_tokens = 64;  // the 170-token prompt in three chunks
    cfg.mtp_k = k;
    size_t checked = 0, drafts = 0;
    cfg.on_draft = [&](uint64_t, size_t pos, std::span<const int32_t> d) {
        // Its first token is for position pos: the row at pos - 2.
        ++drafts;
        REQUIRE(d.size() <= k);
        REQUIRE(pos >= first_row + 2);
        const size_t r = pos - 2 - first_row;
        if (r >= mg["tokens"].size() || mg["margins"][r].get<double>() < 0.02) return;
        CHECK(d[0] == mg["tokens"][r].get<int32_t>());
        ++checked;
    };
    Engine engine(ctx, cfg);
    RequestSpec r;
    r.prompt = golden["prompts"].back()["ids"].get<std::vector<int32_t>>();
    r.max_tokens = (uint32_t)golden["greedy"].size();
    r.ignore_eos = true;
    engine.submit(std::move(r));
    std::vector<int32_t> out;
    for (bool done = false; !done;) {
        engine.step(0);
        while (const vt_request_output *o = engine.poll()) {
            if (o->token >= 0) out.push_back(o->token);
            done |= o->finish_reason != VT_FINISH_NONE;
        }
    }
    CHECK(out == golden["greedy"].get<std::vector<int32_t>>());
    CHECK(drafts > 0);
    CHECK(checked * 2 > drafts);
}
