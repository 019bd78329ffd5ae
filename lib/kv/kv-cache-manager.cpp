#include "kv/kv-cache-manager.h"

#include <algorithm>
// The state struct is only complete with static linking declarations; it is
// part of xxHash's stable API since 0.8.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "core/error.h"

namespace vt {

uint32_t kv_blocks_for_budget(uint64_t budget_bytes, uint64_t bytes_per_token, uint32_t block_size) {
    if (bytes_per_token == 0 || block_size == 0)
        fail(VT_ERR_INVALID_ARGUMENT, "KV budget: bytes per token and block size must be positive");
    uint64_t n = budget_bytes / (bytes_per_token * block_size);
    return (uint32_t)std::min<uint64_t>(n, (uint64_t)INT32_MAX - 1);
}

BlockHash hash_block(const BlockHash &parent, std::span<const int32_t> block_tokens) {
    XXH3_state_t state;
    XXH3_128bits_reset(&state);
    XXH3_128bits_update(&state, &parent.lo, sizeof parent.lo);
    XXH3_128bits_update(&state, &parent.hi, sizeof parent.hi);
    XXH3_128bits_update(&state, block_tokens.data(), block_tokens.size_bytes());
    XXH128_hash_t h = XXH3_128bits_digest(&state);
    return {h.low64, h.high64};
}

KvCacheManager::KvCacheManager(const KvCacheConfig &cfg)
    : block_size_(cfg.block_size), prefix_caching_(cfg.prefix_caching), pool_(cfg.num_blocks) {
    if (cfg.block_size == 0) fail(VT_ERR_INVALID_ARGUMENT, "KV cache: block size must be positive");
}

PrefixHit KvCacheManager::find_prefix(std::span<const int32_t> tokens) const {
    PrefixHit hit;
    if (!prefix_caching_ || tokens.empty()) return hit;
    size_t max_blocks = (tokens.size() - 1) / block_size_;
    BlockHash parent;
    for (size_t i = 0; i < max_blocks; ++i) {
        parent = hash_block(parent, tokens.subspan(i * block_size_, block_size_));
        BlockId id = pool_.find_cached(parent);
        if (id < 0) break;
        hit.blocks.push_back(id);
        hit.hashes.push_back(parent);
    }
    hit.num_tokens = (uint32_t)hit.blocks.size() * block_size_;
    return hit;
}

bool KvCacheManager::allocate(SeqId seq, std::span<const int32_t> tokens, uint32_t num_computed, uint32_t num_new,
                              const PrefixHit &hit) {
    auto found = seqs_.find(seq);
    size_t held = found == seqs_.end() ? 0 : found->second.table.size();
    uint64_t total = (uint64_t)num_computed + num_new;
    if (total > tokens.size())
        fail(VT_ERR_INTERNAL, "KV cache: %llu tokens to hold, %zu known", (unsigned long long)total, tokens.size());
    if (!hit.blocks.empty() && (held != 0 || num_computed != hit.num_tokens))
        fail(VT_ERR_INTERNAL, "KV cache: a prefix hit is only for a sequence holding no blocks");
    if ((held + hit.blocks.size()) * block_size_ < num_computed)
        fail(VT_ERR_INTERNAL, "KV cache: %u tokens computed but %zu blocks held", num_computed,
             held + hit.blocks.size());

    size_t required = (size_t)((total + block_size_ - 1) / block_size_);
    size_t have = held + hit.blocks.size();
    size_t fresh = required > have ? required - have : 0;
    // Hit blocks nobody references sit in the free queue: taking them uses
    // up free blocks just as fresh ones do.
    size_t hits_from_free = 0;
    for (BlockId id : hit.blocks) hits_from_free += pool_.ref_count(id) == 0;
    if (fresh + hits_from_free > pool_.num_free()) return false;

    SeqBlocks &sb = seqs_[seq];
    if (held == 0) {
        query_tokens_ += tokens.size();
        hit_tokens_ += hit.num_tokens;
    }
    // Acquire the hits before allocating, or allocate() could evict them.
    for (size_t i = 0; i < hit.blocks.size(); ++i) {
        pool_.acquire(hit.blocks[i]);
        sb.table.push_back(hit.blocks[i]);
        sb.hashes.push_back(hit.hashes[i]);
    }
    pool_.allocate((uint32_t)fresh, sb.table);

    if (prefix_caching_) {
        size_t full = (size_t)(total / block_size_);
        for (size_t i = sb.hashes.size(); i < full; ++i) {
            BlockHash parent = i == 0 ? BlockHash{} : sb.hashes[i - 1];
            sb.hashes.push_back(hash_block(parent, tokens.subspan(i * block_size_, block_size_)));
            pool_.set_cached(sb.table[i], sb.hashes[i]);
        }
    }
    return true;
}

void KvCacheManager::free(SeqId seq) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    std::vector<BlockId> &t = it->second.table;
    std::reverse(t.begin(), t.end());
    pool_.release(t);
    seqs_.erase(it);
}

std::span<const BlockId> KvCacheManager::block_table(SeqId seq) const {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return {};
    return it->second.table;
}

void KvCacheManager::check() const {
    pool_.check();
    std::vector<uint32_t> refs(pool_.num_blocks(), 0);
    for (const auto &[id, sb] : seqs_)
        for (BlockId b : sb.table) {
            if (b < 0 || (uint32_t)b >= pool_.num_blocks())
                fail(VT_ERR_INTERNAL, "KV cache: sequence %llu holds bad block %d", (unsigned long long)id, b);
            ++refs[(size_t)b];
        }
    for (BlockId b = 0; b < (BlockId)pool_.num_blocks(); ++b)
        if (refs[(size_t)b] != pool_.ref_count(b))
            fail(VT_ERR_INTERNAL, "KV cache: block %d has %u references, %u tables hold it", b, pool_.ref_count(b),
                 refs[(size_t)b]);
}

} // namespace vt
