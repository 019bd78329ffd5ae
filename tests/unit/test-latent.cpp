// DeepSeek MLA's latent cache: the pool a latent layer gets (PagedKv: a K
// pool and no V; the engine's byte budget at one row per token).
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "common/gguf-writer.h"
#include "common/temp-file.h"
#include "engine/engine.h"
#include "model/model.h"
#include "runner/paged-kv.h"

using namespace vt;

namespace {

// ---- the pool and its bytes ---------------------------------------------------

// A tiny Llama of five layers whose cache spec is then rewritten to mix the
// kinds (no forward pass runs: the pool and the engine's sizing only read
// the spec).
std::unique_ptr<Model> mixed_model() {
    vt::test::TinyLlama o;
    o.n_layer = 5;
    vt::test::TempFile f(vt::test::tiny_llama_gguf(o));
    std::unique_ptr<Model> m = Model::load(f.path.string(), true, nullptr);
    m->cache_layers = {{CacheKind::full_attention, 0, 128},
                       {CacheKind::latent, 0, 40},
                       {CacheKind::sliding_window, 8, 128},
                       {CacheKind::latent, 0, 40},
                       {CacheKind::full_attention, 0, 128}};
    return m;
}

TEST_CASE("PagedKv: a latent layer gets a K pool and no V pool", "[latent]") {
    const std::unique_ptr<Model> m = mixed_model();
    const uint32_t bs = 16;
    // Groups: full attention (layers 0, 4), latent (1, 3), sliding (2).
    PagedKv kv(*m, {10, 6, 3}, bs);
    REQUIRE(kv.groups().size() == 3);
    CHECK(kv.groups()[1].kind == CacheKind::latent);
    CHECK(kv.layer_group(1) == 1);
    CHECK(kv.layer_group(3) == 1);
    CHECK(kv.layer_group(2) == 2);
    // Bytes: K and V rows of 128 f16 for full and sliding layers, one row
    // of 40 for a latent one.
    const uint64_t want = 10ull * bs * 2 * (2 * 128 * 2) + 6ull * bs * 2 * (40 * 2) + 3ull * bs * (2 * 128 * 2);
    CHECK(kv.bytes() == want);
    for (uint32_t l : {1u, 3u}) {
        const Tensor &k = kv.k()[l], &v = kv.v()[l];
        CHECK(k.ne[0] == bs);
        CHECK(k.ne[1] == 40);
        CHECK(k.ne[2] == 6);
        CHECK(k.data != nullptr);
        CHECK(v.nelements() == 0);
        CHECK(v.data == nullptr);
        CHECK(v.buffer == nullptr);
    }
    CHECK(kv.v()[0].ne[0] == 128);
    CHECK(kv.v()[2].ne[1] == 3 * bs);
    // The pools lie back to back in one buffer of exactly bytes(): none
    // overlaps and none spills past what the budget counted.
    std::vector<std::pair<const uint8_t *, size_t>> spans;
    for (uint32_t l = 0; l < 5; ++l) {
        spans.push_back({static_cast<const uint8_t *>(kv.k()[l].data), kv.k()[l].nbytes()});
        if (kv.v()[l].data) spans.push_back({static_cast<const uint8_t *>(kv.v()[l].data), kv.v()[l].nbytes()});
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 0; i + 1 < spans.size(); ++i) CHECK(spans[i].first + spans[i].second == spans[i + 1].first);
    CHECK((uint64_t)(spans.back().first + spans.back().second - spans.front().first) == want);
}

TEST_CASE("the engine sizes a pool with latent layers at one row per token", "[latent]") {
    const std::unique_ptr<Model> m = mixed_model();
    Context ctx(*m, "cpu", 1, 64);
    EngineConfig cfg;
    cfg.kv_cache_bytes = 1 << 20;
    cfg.max_num_seqs = 2;
    Engine e(ctx, cfg);
    vt_engine_stats st{};
    st.struct_size = sizeof st;
    e.stats(st);
    // The sliding group takes what 2 sequences of 256 positions touch: 2 *
    // 16 blocks of 16 tokens * 512 bytes = 256 KiB. The rest, 768 KiB, goes
    // to the windowless groups alike, a block of both costing 16 * (2 * 512
    // + 2 * 80) = 18944 bytes: 41 blocks each (a latent row counted as K
    // and V would make it 21504 bytes, 36 blocks).
    CHECK(st.kv_blocks_total == 32 + 2 * 41);
    CHECK(st.kv_cache_bytes == 32ull * 16 * 512 + 41ull * 18944);
    CHECK(st.kv_cache_bytes <= cfg.kv_cache_bytes);
}

} // namespace
