// A checkpoint's multi-token-prediction layer (Architecture::build_mtp)
// against transformers' own (modeling_layers.MtpModel, as generate(
// use_mtp=True) drafts with it): the tiny Qwen3.5 with an MTP layer
// (tests/models/make-tiny-models.py, MTP_OF), from its GGUF (the nextn block
// llama.cpp's converter writes) and its folder (mtp.*). The trunk's final
// normed hidden states of a prompt (Context::Pass::hidden_out), then the MTP
// pass over the prompt shifted by one: row p reads the token at p + 1 and the
// trunk's state at p, and gives the logits of the token at p + 2; every row
// against the golden's mtp_logits.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/skip.h"
#include "model/model.h"
#include "runner/paged-kv.h"
#include "runner/sequence.h"

using namespace vt;

namespace {

std::filesystem::path tiny_dir() {
    const char *root = std::getenv("VT_SOURCE_ROOT");
    return root ? std::filesystem::path(root) / "tests" / "models" / "tiny" : std::filesystem::path();
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

TEST_CASE("mtp: Qwen3.5's multi-token-prediction layer gives transformers' logits", "[mtp]") {
    const std::filesystem::path dir = tiny_dir();
    if (dir.empty() || !std::filesystem::exists(dir / "qwen3_5_mtp.json")) {
        VT_SKIP("VT_SOURCE_ROOT is unset or tests/models/tiny/qwen3_5_mtp.json is missing");
    }
    const std::string source = GENERATE(std::string("qwen3_5_mtp.gguf"), std::string("qwen3_5_mtp"));
    CAPTURE(source);
    std::ifstream in(dir / "qwen3_5_mtp.json");
    const nlohmann::json golden = nlohmann::json::parse(in);
    auto model = Model::load((dir / source).string(), true, nullptr);
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
        std::vector<LayerCacheSpec> layers = model->cache_layers;
        layers.insert(layers.end(), model->mtp_cache.begin(), model->mtp_cache.end());
        PagedKv mtp_kv(*model, std::vector<uint32_t>(cache_groups(layers).size(), 64), 16, 1, true, true);
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
