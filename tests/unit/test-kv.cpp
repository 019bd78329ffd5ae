// Paged KV bookkeeping: exact block ids handed out, prefix-cache hits through
// the chained hashes, LRU eviction order, all-or-nothing allocation, and no
// leak. Expected ids follow from the documented policy (fresh pool in id
// order, free queue appended tail-first per sequence, eviction from the head).
#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>
#include <xxhash.h>

#include "core/error.h"
#include "kv/cache-spec.h"
#include "kv/kv-cache-manager.h"

using namespace vt;
using Ids = std::vector<BlockId>;

namespace {

std::vector<int32_t> iota_tokens(size_t n, int32_t first) {
    std::vector<int32_t> t(n);
    std::iota(t.begin(), t.end(), first);
    return t;
}

Ids table_of(const KvCacheManager &kv, SeqId s) {
    auto t = kv.block_table(s);
    return Ids(t.begin(), t.end());
}

KvCacheManager make_kv(uint32_t num_blocks, bool caching = true) {
    KvCacheConfig cfg;
    cfg.block_size = 4;
    cfg.num_blocks = num_blocks;
    cfg.prefix_caching = caching;
    return KvCacheManager(cfg);
}

} // namespace

TEST_CASE("block hash is XXH3-128 over the parent hash and the block's token ids", "[kv]") {
    std::vector<int32_t> block = {7, 8, 9, 10};
    BlockHash parent{0x1122334455667788ull, 0x99aabbccddeeff00ull};
    // Independent one-shot hash of the same bytes, laid out by hand.
    unsigned char buf[16 + 16];
    std::memcpy(buf, &parent.lo, 8);
    std::memcpy(buf + 8, &parent.hi, 8);
    std::memcpy(buf + 16, block.data(), 16);
    XXH128_hash_t want = XXH3_128bits(buf, sizeof buf);
    BlockHash got = hash_block(parent, block);
    CHECK(got.lo == want.low64);
    CHECK(got.hi == want.high64);
    // The chain makes equal blocks under different parents different keys.
    CHECK(!(hash_block(BlockHash{}, block) == got));
}

TEST_CASE("KV memory is sized from a byte budget", "[kv]") {
    // SmolLM2-135M: 30 layers, 3 KV heads of 64 -> 192 K and 192 V values
    // per layer per token, f16: 2 * 30 * 192 * 2 = 23040 bytes per token.
    uint64_t per_token = 2ull * 30 * 192 * 2;
    CHECK(kv_blocks_for_budget(1ull << 30, per_token, 16) == 2912);  // floor(2^30 / 368640)
    CHECK(kv_blocks_for_budget(per_token * 16 - 1, per_token, 16) == 0);
    CHECK_THROWS_AS(kv_blocks_for_budget(1 << 20, 0, 16), Error);
}

TEST_CASE("a fresh pool hands out ids in order and takes a sequence back tail first", "[kv]") {
    KvCacheManager kv = make_kv(8);
    auto toks = iota_tokens(10, 100);
    REQUIRE(kv.allocate(1, toks, 0, 10));
    CHECK(table_of(kv, 1) == Ids{0, 1, 2});
    CHECK(kv.num_free_blocks() == 5);
    CHECK(kv.pool().free_queue() == Ids{3, 4, 5, 6, 7});
    // The two full blocks are cached; the partial third is not.
    CHECK(kv.pool().is_cached(0));
    CHECK(kv.pool().is_cached(1));
    CHECK(!kv.pool().is_cached(2));
    kv.check();

    kv.free(1);
    CHECK(kv.pool().free_queue() == Ids{3, 4, 5, 6, 7, 2, 1, 0});
    CHECK(kv.num_free_blocks() == 8);
    CHECK(kv.pool().num_cached() == 2);
    CHECK(table_of(kv, 1).empty());
    kv.check();
}

TEST_CASE("decode grows the table one block at a time and caches blocks as they fill", "[kv]") {
    KvCacheManager kv = make_kv(4);
    auto toks = iota_tokens(3, 0);
    REQUIRE(kv.allocate(1, toks, 0, 3));
    CHECK(table_of(kv, 1) == Ids{0});
    CHECK(!kv.pool().is_cached(0));
    toks.push_back(3);  // the 4th token fills block 0
    REQUIRE(kv.allocate(1, toks, 3, 1));
    CHECK(table_of(kv, 1) == Ids{0});
    CHECK(kv.pool().is_cached(0));
    toks.push_back(4);  // the 5th needs a new block
    REQUIRE(kv.allocate(1, toks, 4, 1));
    CHECK(table_of(kv, 1) == Ids{0, 1});
    CHECK(kv_slot(kv.block_table(1), 4, 4) == 4);
    kv.free(1);
    CHECK(kv.num_free_blocks() == 4);
    kv.check();
}

TEST_CASE("a shared prefix hits cached blocks, live or freed", "[kv]") {
    KvCacheManager kv = make_kv(8);
    auto a = iota_tokens(10, 100);
    REQUIRE(kv.allocate(1, a, 0, 10));  // [0, 1, 2]

    // Same first 8 tokens, then 3 others.
    std::vector<int32_t> b(a.begin(), a.begin() + 8);
    for (int32_t t : {7, 7, 7}) b.push_back(t);
    PrefixHit hit = kv.find_prefix(b);
    CHECK(hit.blocks[0] == Ids{0, 1});
    CHECK(hit.num_tokens == 8);
    REQUIRE(kv.allocate(2, b, hit.num_tokens, 3, hit));
    CHECK(table_of(kv, 2) == Ids{0, 1, 3});
    CHECK(kv.pool().ref_count(0) == 2);
    CHECK(kv.pool().ref_count(1) == 2);
    CHECK(kv.pool().ref_count(2) == 1);
    CHECK(kv.prefix_query_tokens() == 10 + 11);
    CHECK(kv.prefix_hit_tokens() == 8);
    kv.check();

    // Freed blocks still hit; a hit takes them out of the free queue.
    kv.free(1);
    kv.free(2);
    CHECK(kv.pool().free_queue() == Ids{4, 5, 6, 7, 2, 3, 1, 0});
    hit = kv.find_prefix(a);
    CHECK(hit.blocks[0] == Ids{0, 1});
    REQUIRE(kv.allocate(3, a, 8, 2, hit));
    CHECK(table_of(kv, 3) == Ids{0, 1, 4});
    CHECK(kv.pool().free_queue() == Ids{5, 6, 7, 2, 3});
    kv.free(3);
    CHECK(kv.num_free_blocks() == 8);
    kv.check();
}

TEST_CASE("a root keys the chain: the same tokens under another root share nothing", "[kv]") {
    // A LoRA adapter's sequences chain from its own root: their KV is not the base's.
    KvCacheManager kv = make_kv(8);
    auto a = iota_tokens(10, 100);
    const BlockHash lora = hash_block(BlockHash{}, std::vector<int32_t>{-1, 7, 0, 0});
    REQUIRE(kv.allocate(1, a, 0, 10, {}, lora));  // blocks 0, 1 cached under lora's root
    CHECK(kv.find_prefix(a).num_tokens == 0);
    PrefixHit hit = kv.find_prefix(a, lora);
    CHECK(hit.blocks[0] == Ids{0, 1});
    REQUIRE(kv.allocate(2, a, 0, 10));  // the base's own blocks
    CHECK(table_of(kv, 2) == Ids{3, 4, 5});
    CHECK(kv.find_prefix(a).blocks[0] == Ids{3, 4});
    CHECK(kv.find_prefix(a, lora).blocks[0] == Ids{0, 1});
    kv.check();
}

TEST_CASE("a hit never covers the last token, and the chain needs every parent", "[kv]") {
    KvCacheManager kv = make_kv(8);
    auto a = iota_tokens(8, 0);
    REQUIRE(kv.allocate(1, a, 0, 8));  // [0, 1], both cached
    // The whole prompt is cached, but its last token must be computed for
    // its logits: only the first block hits.
    PrefixHit hit = kv.find_prefix(a);
    CHECK(hit.blocks[0] == Ids{0});
    CHECK(hit.num_tokens == 4);
    // Recomputing block 1 gives a duplicate of a cached block: it is not
    // shared (tables stay append-only) and not cached.
    REQUIRE(kv.allocate(2, a, 4, 4, hit));
    CHECK(table_of(kv, 2) == Ids{0, 2});
    CHECK(!kv.pool().is_cached(2));
    CHECK(kv.pool().num_cached() == 2);

    // Block 1's tokens behind a different block 0: a different key, no hit.
    std::vector<int32_t> c = {50, 51, 52, 53, 4, 5, 6, 7, 9};
    CHECK(kv.find_prefix(c).blocks[0].empty());
    kv.free(1);
    kv.free(2);
    CHECK(kv.num_free_blocks() == 8);
    kv.check();
}

TEST_CASE("unreferenced cached blocks are evicted least recently freed first", "[kv]") {
    KvCacheManager kv = make_kv(4);
    auto a = iota_tokens(8, 0);
    auto b = iota_tokens(8, 100);
    REQUIRE(kv.allocate(1, a, 0, 8));  // [0, 1]
    REQUIRE(kv.allocate(2, b, 0, 8));  // [2, 3]
    kv.free(1);
    kv.free(2);
    CHECK(kv.pool().free_queue() == Ids{1, 0, 3, 2});
    CHECK(kv.pool().num_cached() == 4);
    CHECK(kv.pool().num_free_cached() == 4);

    auto c = iota_tokens(4, 200);
    REQUIRE(kv.allocate(3, c, 0, 4));
    CHECK(table_of(kv, 3) == Ids{1});  // a's tail goes first
    CHECK(kv.pool().num_free_cached() == 3);  // one evicted; c's block is held
    auto a9 = a;
    a9.push_back(-1);
    CHECK(kv.find_prefix(a9).blocks[0] == Ids{0});  // a's head survives

    auto d = iota_tokens(8, 300);
    REQUIRE(kv.allocate(4, d, 0, 8));
    CHECK(table_of(kv, 4) == Ids{0, 3});
    CHECK(kv.find_prefix(a9).blocks[0].empty());
    auto b9 = b;
    b9.push_back(-1);
    CHECK(kv.find_prefix(b9).blocks[0] == Ids{2});
    // The evicted blocks now carry c's and d's prefixes instead.
    CHECK(kv.pool().num_cached() == 4);
    CHECK(kv.pool().num_free_cached() == 1);  // b's head
    kv.free(3);
    kv.free(4);
    CHECK(kv.num_free_blocks() == 4);
    CHECK(kv.pool().num_free_cached() == 4);
    kv.check();
}

TEST_CASE("allocation is all or nothing, and free hits count against the free blocks", "[kv]") {
    KvCacheManager kv = make_kv(4);
    auto a = iota_tokens(8, 0);
    REQUIRE(kv.allocate(1, a, 0, 8));  // [0, 1]
    kv.free(1);                        // queue [2, 3, 1, 0]

    // 17 tokens need 5 blocks: 2 hits + 3 fresh, one more than the pool.
    auto longer = a;
    for (int32_t t = 0; t < 9; ++t) longer.push_back(1000 + t);
    PrefixHit hit = kv.find_prefix(longer);
    CHECK(hit.blocks[0] == Ids{0, 1});
    CHECK(!kv.allocate(2, longer, 8, 9, hit));
    CHECK(table_of(kv, 2).empty());
    CHECK(kv.pool().free_queue() == Ids{2, 3, 1, 0});
    CHECK(kv.pool().ref_count(0) == 0);

    // 13 tokens need 4: the two free hits plus two fresh use the whole pool.
    longer.resize(13);
    hit = kv.find_prefix(longer);
    REQUIRE(kv.allocate(2, longer, 8, 5, hit));
    CHECK(table_of(kv, 2) == Ids{0, 1, 2, 3});
    CHECK(kv.num_free_blocks() == 0);
    CHECK(!kv.allocate(3, a, 0, 1));
    kv.free(2);
    CHECK(kv.num_free_blocks() == 4);
    kv.check();
}

TEST_CASE("a hit at the head of the free queue is not evicted by its own allocation", "[kv]") {
    KvCacheManager kv = make_kv(3);
    auto a = iota_tokens(8, 0);
    REQUIRE(kv.allocate(1, a, 0, 8));  // [0, 1]
    kv.free(1);                        // queue [2, 1, 0]
    auto x = iota_tokens(4, 50);
    REQUIRE(kv.allocate(2, x, 0, 4));  // [2]
    kv.free(2);
    CHECK(kv.pool().free_queue() == Ids{1, 0, 2});
    auto a9 = a;
    a9.push_back(99);
    PrefixHit hit = kv.find_prefix(a9);
    CHECK(hit.blocks[0] == Ids{0, 1});
    REQUIRE(kv.allocate(3, a9, 8, 1, hit));
    CHECK(table_of(kv, 3) == Ids{0, 1, 2});
    CHECK(kv.pool().num_cached() == 2);  // x's block was evicted
    kv.free(3);
    kv.check();
}

TEST_CASE("with prefix caching off nothing is cached or hit", "[kv]") {
    KvCacheManager kv = make_kv(4, false);
    auto a = iota_tokens(9, 0);
    REQUIRE(kv.allocate(1, a, 0, 9));
    CHECK(kv.pool().num_cached() == 0);
    CHECK(kv.find_prefix(a).blocks[0].empty());
    kv.free(1);
    CHECK(kv.num_free_blocks() == 4);
}

TEST_CASE("bad sizes are clear errors", "[kv]") {
    CHECK_THROWS_AS(make_kv(0), Error);
    KvCacheConfig cfg;
    cfg.block_size = 0;
    cfg.num_blocks = 4;
    CHECK_THROWS_AS(KvCacheManager(cfg), Error);
}

TEST_CASE("random allocate/free keeps the pool consistent", "[kv][stress]") {
    std::mt19937 rng(1234);
    KvCacheManager kv = make_kv(32);
    std::vector<std::vector<int32_t>> seqs(8);
    std::vector<uint32_t> computed(8, 0);
    for (int iter = 0; iter < 4000; ++iter) {
        SeqId s = rng() % 8;
        auto &toks = seqs[s];
        if (rng() % 5 == 0) {
            kv.free(s);
            toks.clear();
            computed[s] = 0;
        } else if (toks.empty()) {
            // Prompts from a few shared stems so that prefixes repeat.
            size_t n = 1 + rng() % 20;
            int32_t stem = (int32_t)(rng() % 3);
            for (size_t i = 0; i < n; ++i) toks.push_back(i < 8 ? stem * 10 + (int32_t)i : (int32_t)(rng() % 50));
            PrefixHit hit = kv.find_prefix(toks);
            if (kv.allocate(s, toks, hit.num_tokens, (uint32_t)toks.size() - hit.num_tokens, hit))
                computed[s] = (uint32_t)toks.size();
            else
                toks.clear();
        } else {
            toks.push_back((int32_t)(rng() % 50));
            if (kv.allocate(s, toks, computed[s], 1)) computed[s] += 1;
            else toks.pop_back();
        }
        kv.check();
        for (SeqId q = 0; q < 8; ++q)
            REQUIRE(kv.block_table(q).size() == (computed[q] + 3) / 4);
    }
    for (SeqId q = 0; q < 8; ++q) kv.free(q);
    CHECK(kv.num_free_blocks() == 32);
    kv.check();
}

// ---- cache groups: a full-attention and a sliding-window group ----------------

namespace {
// Group 0: full attention, 16 blocks; group 1: a window of 6 positions, 6
// blocks; blocks of 4 tokens.
KvCacheManager make_hybrid_kv(uint32_t sliding_blocks = 6) {
    KvCacheConfig cfg;
    cfg.block_size = 4;
    cfg.groups = {{16, 0}, {sliding_blocks, 6}};
    return KvCacheManager(cfg);
}
Ids table_of(const KvCacheManager &kv, SeqId s, uint32_t g) {
    auto t = kv.block_table(s, g);
    return Ids(t.begin(), t.end());
}
} // namespace

TEST_CASE("a sliding-window group gives back the blocks before its window", "[kv]") {
    KvCacheManager kv = make_hybrid_kv();
    const std::vector<int32_t> a = iota_tokens(20, 100);
    // A prompt of 10: both groups hold its 3 blocks (the first token's window starts at 0).
    REQUIRE(kv.allocate(1, a, 0, 10));
    CHECK(table_of(kv, 1, 0) == Ids{0, 1, 2});
    CHECK(table_of(kv, 1, 1) == Ids{0, 1, 2});
    // Decoding position 10 sees 5..10: block 0 (positions 0-3) is given back.
    REQUIRE(kv.allocate(1, a, 10, 1));
    CHECK(table_of(kv, 1, 0) == Ids{0, 1, 2});
    CHECK(table_of(kv, 1, 1) == Ids{kNoBlock, 1, 2});
    CHECK(kv.num_free_blocks(1) == 4);
    CHECK(kv.pool(1).is_cached(0));  // still a prefix-cache entry until evicted
    // Positions 11 and 12: 11 sees 6..11, so block 1 stays; block 3 is new.
    REQUIRE(kv.allocate(1, a, 11, 2));
    CHECK(table_of(kv, 1, 1) == Ids{kNoBlock, 1, 2, 3});
    CHECK(table_of(kv, 1, 0) == Ids{0, 1, 2, 3});
    // Position 13 sees 8..13: block 1 goes too.
    REQUIRE(kv.allocate(1, a, 13, 1));
    CHECK(table_of(kv, 1, 1) == Ids{kNoBlock, kNoBlock, 2, 3});
    kv.check();
    kv.free(1);
    CHECK(kv.num_free_blocks(0) == 16);
    CHECK(kv.num_free_blocks(1) == 6);
    kv.check();
}

TEST_CASE("a prefix hit needs every full block and the sliding window's blocks", "[kv]") {
    KvCacheManager kv = make_hybrid_kv();
    const std::vector<int32_t> a = iota_tokens(20, 100);
    REQUIRE(kv.allocate(1, a, 0, 12));
    REQUIRE(kv.allocate(1, a, 12, 1));  // sees 7..12: sliding block 0 back in the pool, still cached
    kv.free(1);  // the sliding free queue: 4 5 0, then 3 2 1
    // The same 13 tokens: 3 full blocks hit in both groups (the next
    // position, 12, sees 7..12, i.e. blocks 1 and 2 of the window).
    std::vector<int32_t> b(a.begin(), a.begin() + 13);
    PrefixHit hit = kv.find_prefix(b);
    CHECK(hit.num_tokens == 12);
    CHECK(hit.blocks[0] == Ids{0, 1, 2});
    CHECK(hit.blocks[1] == Ids{kNoBlock, 1, 2});
    REQUIRE(kv.allocate(2, b, hit.num_tokens, 1, hit));
    CHECK(table_of(kv, 2, 1) == Ids{kNoBlock, 1, 2, 4});  // the free queue's head
    kv.check();
    kv.free(2);
    // Evict sliding block 2 (fill the sliding pool with another prompt):
    // position 12's window lost a block, and so did position 8's (5..8
    // needs block 1 and 2); only 4 tokens hit (position 4 sees 0..4, blocks
    // 0 and 1, still cached).
    const std::vector<int32_t> c = iota_tokens(8, 500);
    REQUIRE(kv.allocate(3, c, 0, 8));
    for (SeqId s = 4; s < 6; ++s) REQUIRE(kv.allocate(s, std::vector<int32_t>(8, (int32_t)s), 0, 8));
    kv.free(3);
    kv.free(4);
    kv.free(5);
    hit = kv.find_prefix(b);
    CHECK(hit.num_tokens < 12);
    for (uint32_t g = 0; g < 2; ++g) CHECK(hit.blocks[g].size() == hit.num_tokens / 4);
    for (size_t i = 0; i < hit.blocks[1].size(); ++i)
        if (hit.blocks[1][i] != kNoBlock) CHECK(kv.pool(1).is_cached(hit.blocks[1][i]));
    kv.check();
}

TEST_CASE("allocation across groups is all or nothing", "[kv]") {
    KvCacheManager kv = make_hybrid_kv(3);  // the sliding group runs out first
    const std::vector<int32_t> a = iota_tokens(16, 100), b = iota_tokens(12, 300);
    REQUIRE(kv.allocate(1, a, 0, 8));        // 2 blocks in each group
    CHECK_FALSE(kv.allocate(2, b, 0, 8));    // the sliding group has 1 free
    CHECK(table_of(kv, 2, 0).empty());       // nothing taken from the full group either
    CHECK(kv.num_free_blocks(0) == 14);
    // Position 8 sees 3..8: block 0 stays, block 2 is the last free one.
    REQUIRE(kv.allocate(1, a, 8, 1));
    CHECK(table_of(kv, 1, 1) == Ids{0, 1, 2});
    CHECK(kv.num_free_blocks(1) == 0);
    // Positions 9..12 need a fourth block with none free: 9 sees 4..9, so
    // block 0 goes back first and is taken again.
    REQUIRE(kv.allocate(1, a, 9, 4));
    CHECK(table_of(kv, 1, 1) == Ids{kNoBlock, 1, 2, 0});
    CHECK(kv.max_seq_tokens() == 16 * 4);
    kv.check();
}

// ---- cache specs: which layers share a group, and what a token costs ----------

TEST_CASE("a latent layer caches one row per token, in a group of its own", "[kv]") {
    // DeepSeek-V2-Lite's MLA: kv_lora_rank 512 + rope 64 = one row of 576
    // f16 per token, no V: 1152 bytes, where K and V rows would take twice.
    const LayerCacheSpec mla{CacheKind::latent, 0, 576};
    CHECK(layer_bytes_per_token(mla) == 576 * 2);
    CHECK(layer_bytes_per_token({CacheKind::full_attention, 0, 576}) == 2 * 576 * 2);
    CHECK(layer_bytes_per_token({CacheKind::sliding_window, 8, 576}) == 2 * 576 * 2);
    CHECK_FALSE(has_v_cache(mla));
    CHECK(has_v_cache({CacheKind::full_attention, 0, 64}));
    CHECK(std::string(cache_kind_name(CacheKind::latent)) == "latent");

    const std::vector<CacheGroup> g = cache_groups(std::vector<LayerCacheSpec>(4, mla));
    REQUIRE(g.size() == 1);
    CHECK(g[0].kind == CacheKind::latent);
    CHECK(g[0].window == 0);  // every past position: full attention to the KV manager
    CHECK(g[0].layers == std::vector<uint32_t>{0, 1, 2, 3});
    CHECK(g[0].bytes_per_token == 4 * 576 * 2);
}

TEST_CASE("a model mixing cache kinds: full attention, latent, then sliding windows by size", "[kv]") {
    // Layer kinds in a scrambled order, rows of different widths; a window
    // on a latent or full layer means nothing and does not split its group.
    const std::vector<LayerCacheSpec> layers = {
        {CacheKind::sliding_window, 1024, 128},  // 0
        {CacheKind::latent, 0, 576},             // 1
        {CacheKind::full_attention, 0, 256},     // 2
        {CacheKind::sliding_window, 512, 128},   // 3
        {CacheKind::latent, 7, 576},             // 4
        {CacheKind::full_attention, 0, 64},      // 5
        {CacheKind::sliding_window, 1024, 64},   // 6
    };
    const std::vector<CacheGroup> g = cache_groups(layers);
    REQUIRE(g.size() == 4);
    CHECK(g[0].kind == CacheKind::full_attention);
    CHECK(g[0].layers == std::vector<uint32_t>{2, 5});
    CHECK(g[0].bytes_per_token == 2 * (256 + 64) * 2);
    CHECK(g[1].kind == CacheKind::latent);
    CHECK(g[1].window == 0);
    CHECK(g[1].layers == std::vector<uint32_t>{1, 4});
    CHECK(g[1].bytes_per_token == (576 + 576) * 2);
    CHECK(g[2].kind == CacheKind::sliding_window);
    CHECK(g[2].window == 512);
    CHECK(g[2].layers == std::vector<uint32_t>{3});
    CHECK(g[2].bytes_per_token == 2 * 128 * 2);
    CHECK(g[3].window == 1024);
    CHECK(g[3].layers == std::vector<uint32_t>{0, 6});
    CHECK(g[3].bytes_per_token == 2 * (128 + 64) * 2);
    // Every layer in exactly one group, and the groups' bytes are the layers'.
    uint64_t total = 0, want = 0;
    size_t n = 0;
    for (const CacheGroup &c : g) total += c.bytes_per_token, n += c.layers.size();
    for (const LayerCacheSpec &l : layers) want += layer_bytes_per_token(l);
    CHECK(n == layers.size());
    CHECK(total == want);
}

TEST_CASE("KV-shared layers are in no group and count no bytes (Gemma 4)", "[kv]") {
    // E2B-like: sliding 0, 1, 2, global 3; layers 4 (sliding) and 5 (global)
    // read 2's and 3's caches.
    std::vector<LayerCacheSpec> layers = {
        {CacheKind::sliding_window, 8, 32}, {CacheKind::sliding_window, 8, 32}, {CacheKind::sliding_window, 8, 32},
        {CacheKind::full_attention, 0, 64}, {CacheKind::sliding_window, 8, 32}, {CacheKind::full_attention, 0, 64}};
    layers[4].shared_from = 2;
    layers[5].shared_from = 3;
    CHECK(is_shared(layers[4]));
    CHECK(!is_shared(layers[3]));
    CHECK(cache_owner(layers, 5) == 3);
    CHECK(cache_owner(layers, 1) == 1);
    CHECK(layer_bytes_per_token(layers[4]) == 0);
    const std::vector<CacheGroup> g = cache_groups(layers);
    REQUIRE(g.size() == 2);
    CHECK(g[0].layers == std::vector<uint32_t>{3});
    CHECK(g[0].bytes_per_token == 2 * 64 * 2);
    CHECK(g[1].layers == std::vector<uint32_t>{0, 1, 2});
    CHECK(g[1].bytes_per_token == 3 * 2 * 32 * 2);
}

// Recurrent layers (Gated DeltaNet, Mamba): a state slot per sequence beside
// its blocks, taken with its first blocks, given back with them; admission
// needs one; no prefix hits (a slot's state is valid at its own position only).
TEST_CASE("state slots: one per sequence, taken and freed with its blocks, no prefix hits", "[kv]") {
    KvCacheConfig cfg;
    cfg.block_size = 4;
    cfg.groups = {{8, 0}};
    cfg.state_slots = 2;
    KvCacheManager kv(cfg);
    const auto prompt = iota_tokens(9, 100);
    REQUIRE(kv.allocate(1, prompt, 0, 9));
    REQUIRE(kv.allocate(2, prompt, 0, 5));
    CHECK(kv.state_slot(1) == 0);
    CHECK(kv.state_slot(2) == 1);
    CHECK(kv.num_free_state_slots() == 0);
    // Growing keeps the slot.
    REQUIRE(kv.allocate(2, prompt, 5, 4));
    CHECK(kv.state_slot(2) == 1);
    // Blocks are free, slots are not: the third waits, taking nothing.
    const uint32_t free_blocks = kv.num_free_blocks();
    CHECK_FALSE(kv.allocate(3, iota_tokens(2, 7), 0, 2));
    CHECK(kv.state_slot(3) == -1);
    CHECK(kv.num_free_blocks() == free_blocks);
    kv.check();
    // The shared prompt is cached, yet not hit.
    CHECK(kv.find_prefix(prompt).num_tokens == 0);
    kv.free(1);
    CHECK(kv.state_slot(1) == -1);
    CHECK(kv.num_free_state_slots() == 1);
    REQUIRE(kv.allocate(3, iota_tokens(2, 7), 0, 2));
    CHECK(kv.state_slot(3) == 0);
    kv.check();
    kv.free(2);
    kv.free(3);
    CHECK(kv.num_free_state_slots() == 2);
    kv.check();
}

// Snapshots (kv/state-slots.h): a step that ends on a block boundary queues
// a save into a snapshot slot, hittable once the step is committed; a hit
// ends on a saved boundary and restores the snapshot into the new live slot;
// the prompt's last block is pinned, a running sequence's own snapshot is
// replaced as it moves on, and finished sequences' snapshots are evicted
// least recently used first.
TEST_CASE("state snapshots: saved on block boundaries, hit and restored, replaced and evicted", "[kv]") {
    KvCacheConfig cfg;
    cfg.block_size = 4;
    cfg.groups = {{32, 0}};
    cfg.state_slots = 2;
    cfg.state_snapshots = 2;
    KvCacheManager kv(cfg);
    REQUIRE(kv.saves_states());
    std::vector<StateCopy> restores, saves;
    const auto prompt = iota_tokens(11, 100);
    // Sequence 1: 8 prompt tokens (the last full block of an 11-token prompt
    // ends at 8), pinned; then 3 more.
    REQUIRE(kv.allocate(1, prompt, 0, 8));
    kv.save_state(1, 8, true);
    kv.take_state_copies(restores, saves);
    CHECK(restores.empty());
    REQUIRE(saves.size() == 1);
    CHECK(saves[0].src == 0);
    CHECK(saves[0].dst == 2);  // live slots 0-1, snapshots 2-3
    // Not hittable before the step is committed.
    CHECK(kv.find_prefix(prompt).num_tokens == 0);
    kv.commit_state_saves();
    CHECK(kv.find_prefix(prompt).num_tokens == 8);
    // Sequence 2 hits it: a live slot, a restore from snapshot 2.
    PrefixHit hit = kv.find_prefix(prompt);
    REQUIRE(kv.allocate(2, prompt, hit.num_tokens, 3, hit));
    kv.take_state_copies(restores, saves);
    REQUIRE(restores.size() == 1);
    CHECK(restores[0].src == 2);
    CHECK(restores[0].dst == kv.state_slot(2));
    CHECK(saves.empty());
    // Sequence 1 decodes on: its boundaries take its own snapshot (slot 3)
    // and then replace it.
    std::vector<int32_t> toks = prompt;
    for (int32_t t = 0; t < 9; ++t) toks.push_back(500 + t);
    REQUIRE(kv.allocate(1, toks, 8, 4));
    kv.save_state(1, 12, false);
    kv.take_state_copies(restores, saves);
    REQUIRE(saves.size() == 1);
    CHECK(saves[0].dst == 3);
    kv.commit_state_saves();
    REQUIRE(kv.allocate(1, toks, 12, 4));
    kv.save_state(1, 16, false);
    kv.take_state_copies(restores, saves);
    REQUIRE(saves.size() == 1);
    CHECK(saves[0].dst == 3);  // replaced, not a new slot
    kv.commit_state_saves();
    // The boundary at 12 is gone, 16 is there: the hit is the longest saved one.
    const std::vector<int32_t> prefix16(toks.begin(), toks.begin() + 17);
    CHECK(kv.find_prefix(prefix16).num_tokens == 16);
    const std::vector<int32_t> prefix12(toks.begin(), toks.begin() + 13);
    CHECK(kv.find_prefix(prefix12).num_tokens == 8);
    kv.check();
    // Sequence 1 finishes: its snapshot stays, now evictable. A third
    // sequence's save takes the least recently used of 2 (hit last at
    // sequence 2's admission) and 3 (saved later): slot 2.
    kv.free(1);
    kv.free(2);
    const auto other = iota_tokens(9, 900);
    REQUIRE(kv.allocate(3, other, 0, 8));
    kv.save_state(3, 8, true);
    kv.take_state_copies(restores, saves);
    REQUIRE(saves.size() == 1);
    CHECK(saves[0].dst == 2);
    kv.commit_state_saves();
    CHECK(kv.find_prefix(prompt).num_tokens == 0);
    CHECK(kv.find_prefix(prefix16).num_tokens == 16);
    CHECK(kv.find_prefix(other).num_tokens == 8);
    kv.check();
}
