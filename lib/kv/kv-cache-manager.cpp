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
    : block_size_(cfg.block_size), prefix_caching_(cfg.prefix_caching) {
    if (cfg.block_size == 0) fail(VT_ERR_INVALID_ARGUMENT, "KV cache: block size must be positive");
    std::vector<KvGroupConfig> groups = cfg.groups;
    if (groups.empty()) groups.push_back({cfg.num_blocks, 0});
    groups_.reserve(groups.size());
    for (const KvGroupConfig &g : groups) groups_.push_back({g.window, BlockPool(g.num_blocks)});
    if (cfg.state_slots)
        slots_ = std::make_unique<StateSlotPool>(cfg.state_slots, cfg.state_snapshots, cfg.state_checkpoints);
}

uint64_t KvCacheManager::max_seq_tokens() const {
    uint64_t n = UINT64_MAX;
    for (const Group &g : groups_)
        if (g.window == 0) n = std::min<uint64_t>(n, (uint64_t)g.pool.num_blocks() * block_size_);
    return n;
}

uint32_t KvCacheManager::blocks_before_window(const Group &g, uint64_t pos) const {
    if (g.window == 0 || pos + 1 <= g.window) return 0;
    return (uint32_t)((pos + 1 - g.window) / block_size_);
}

PrefixHit KvCacheManager::find_prefix(std::span<const int32_t> tokens, const BlockHash &root) const {
    PrefixHit hit;
    hit.blocks.resize(groups_.size());
    if (!prefix_caching_ || tokens.empty()) return hit;
    if (slots_ && slots_->num_snapshots() == 0) return hit;
    const size_t max_blocks = (tokens.size() - 1) / block_size_;
    // Full-attention groups need every block from the first: the run of
    // blocks all of them hold bounds the hit.
    std::vector<BlockHash> hashes;
    BlockHash parent = root;
    for (size_t i = 0; i < max_blocks; ++i) {
        parent = hash_block(parent, tokens.subspan(i * block_size_, block_size_));
        bool all = true;
        for (const Group &g : groups_)
            if (g.window == 0 && g.pool.find_cached(parent) < 0) all = false;
        if (!all) break;
        hashes.push_back(parent);
    }
    // Sliding groups need the blocks of the window before the next token:
    // the longest n whose blocks [before the window, n) every one holds
    // (n = 0 always does). A window spans few blocks, so trying each n from
    // the longest down is cheap, and it runs once per admission.
    auto window_held = [&](size_t n) {
        for (const Group &g : groups_) {
            if (g.window == 0) continue;
            for (size_t i = blocks_before_window(g, (uint64_t)n * block_size_); i < n; ++i)
                if (g.pool.find_cached(hashes[i]) < 0) return false;
        }
        return true;
    };
    size_t n = hashes.size();
    // NOTE: a recurrent state is valid at one position only: the hit must
    // end where a snapshot was saved.
    while (n > 0 && (!window_held(n) || (slots_ && slots_->find(hashes[n - 1]) < 0))) --n;
    hashes.resize(n);
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        const Group &g = groups_[gi];
        const size_t lo = blocks_before_window(g, (uint64_t)n * block_size_);
        for (size_t i = 0; i < n; ++i) hit.blocks[gi].push_back(i < lo ? kNoBlock : g.pool.find_cached(hashes[i]));
    }
    hit.hashes = std::move(hashes);
    hit.num_tokens = (uint32_t)n * block_size_;
    return hit;
}

bool KvCacheManager::allocate(SeqId seq, std::span<const int32_t> tokens, uint32_t num_computed, uint32_t num_new,
                              const PrefixHit &hit, const BlockHash &root, uint32_t num_lookahead) {
    auto found = seqs_.find(seq);
    const size_t held = found == seqs_.end() ? 0 : found->second.tables[0].size();
    const size_t n_hit = hit.hashes.size();
    const uint64_t total = (uint64_t)num_computed + num_new;
    if (total > tokens.size())
        fail(VT_ERR_INTERNAL, "KV cache: %llu tokens to hold, %zu known", (unsigned long long)total, tokens.size());
    if (n_hit && (held != 0 || num_computed != hit.num_tokens || hit.blocks.size() != groups_.size()))
        fail(VT_ERR_INTERNAL, "KV cache: a prefix hit is only for a sequence holding no blocks");
    if ((held + n_hit) * block_size_ < num_computed)
        fail(VT_ERR_INTERNAL, "KV cache: %u tokens computed but %zu blocks held", num_computed, held + n_hit);

    const size_t required = (size_t)((total + num_lookahead + block_size_ - 1) / block_size_);
    const size_t have = held + n_hit;
    const size_t fresh = required > have ? required - have : 0;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        const Group &g = groups_[gi];
        // Hit blocks nobody references sit in the free queue: taking them
        // uses up free blocks just as fresh ones do. Blocks this call gives
        // back (before the window) and nobody else holds become free.
        size_t taken = fresh, freed = 0;
        if (n_hit)
            for (BlockId id : hit.blocks[gi]) taken += id != kNoBlock && g.pool.ref_count(id) == 0;
        if (held) {
            const std::vector<BlockId> &t = found->second.tables[gi];
            const size_t before = std::min<size_t>(blocks_before_window(g, num_computed), t.size());
            for (size_t i = 0; i < before; ++i) freed += t[i] != kNoBlock && g.pool.ref_count(t[i]) == 1;
        }
        if (taken > g.pool.num_free() + freed) return false;
    }
    const bool needs_slot = slots_ && (found == seqs_.end() || found->second.slot < 0);
    if (needs_slot && slots_->num_free_live() == 0) return false;

    SeqBlocks &sb = seqs_[seq];
    if (needs_slot) sb.slot = slots_->take_live();
    if (n_hit && slots_) slots_->restore(slots_->find(hit.hashes.back()), sb.slot);
    if (held == 0) {
        sb.tables.assign(groups_.size(), {});
        query_tokens_ += tokens.size();
        hit_tokens_ += hit.num_tokens;
    }
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        Group &g = groups_[gi];
        std::vector<BlockId> &t = sb.tables[gi];
        // Acquire the hits before allocating, or allocate() could evict them.
        for (size_t i = 0; i < n_hit; ++i) {
            const BlockId id = hit.blocks[gi][i];
            if (id != kNoBlock) g.pool.acquire(id);
            t.push_back(id);
        }
        const size_t before = std::min<size_t>(blocks_before_window(g, num_computed), t.size());
        for (size_t i = 0; i < before; ++i)
            if (t[i] != kNoBlock) {
                g.pool.release(std::span<const BlockId>(&t[i], 1));
                t[i] = kNoBlock;
            }
        g.pool.allocate((uint32_t)fresh, t);
    }
    for (size_t i = 0; i < n_hit; ++i) sb.hashes.push_back(hit.hashes[i]);

    if (prefix_caching_) {
        const size_t full = (size_t)(total / block_size_);
        for (size_t i = sb.hashes.size(); i < full; ++i) {
            BlockHash parent = i == 0 ? root : sb.hashes[i - 1];
            sb.hashes.push_back(hash_block(parent, tokens.subspan(i * block_size_, block_size_)));
            for (size_t gi = 0; gi < groups_.size(); ++gi)
                if (sb.tables[gi][i] != kNoBlock) groups_[gi].pool.set_cached(sb.tables[gi][i], sb.hashes[i]);
        }
    }
    return true;
}

void KvCacheManager::trim(SeqId seq, uint32_t num_tokens) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    SeqBlocks &sb = it->second;
    const size_t keep = (num_tokens + block_size_ - 1) / block_size_;
    if (keep < sb.hashes.size())
        fail(VT_ERR_INTERNAL, "KV cache: trimming to %u tokens would drop registered blocks", num_tokens);
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        std::vector<BlockId> &t = sb.tables[gi];
        std::vector<BlockId> tail;
        for (size_t i = t.size(); i > keep; --i)
            if (t[i - 1] != kNoBlock) tail.push_back(t[i - 1]);
        groups_[gi].pool.release(tail);
        if (t.size() > keep) t.resize(keep);
    }
}

void KvCacheManager::free(SeqId seq) {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        std::vector<BlockId> held;
        const std::vector<BlockId> &t = it->second.tables[gi];
        for (auto b = t.rbegin(); b != t.rend(); ++b)
            if (*b != kNoBlock) held.push_back(*b);
        groups_[gi].pool.release(held);
    }
    if (it->second.slot >= 0) slots_->free_live(it->second.slot);
    seqs_.erase(it);
}

std::span<const BlockId> KvCacheManager::block_table(SeqId seq, uint32_t g) const {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return {};
    return it->second.tables.at(g);
}

int32_t KvCacheManager::state_slot(SeqId seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? -1 : it->second.slot;
}

void KvCacheManager::save_state(SeqId seq, uint32_t pos, bool pinned) {
    if (!slots_ || !prefix_caching_ || slots_->num_snapshots() == 0 || pos == 0 || pos % block_size_ != 0) return;
    auto it = seqs_.find(seq);
    if (it == seqs_.end() || it->second.slot < 0 || it->second.hashes.size() < pos / block_size_)
        fail(VT_ERR_INTERNAL, "KV cache: no state or hashes to save at position %u", pos);
    // No snapshot slot free of running sequences: this boundary is not
    // saved; a later one may be.
    slots_->save(it->second.slot, it->second.hashes[pos / block_size_ - 1], pinned);
}

void KvCacheManager::checkpoint_state(SeqId seq) {
    const int32_t slot = state_slot(seq);
    if (slot < 0 || !slots_) fail(VT_ERR_INTERNAL, "KV cache: sequence %llu has no state to checkpoint", (unsigned long long)seq);
    slots_->checkpoint(slot);
}

void KvCacheManager::rollback_state(SeqId seq) {
    const int32_t slot = state_slot(seq);
    if (slot < 0 || !slots_) fail(VT_ERR_INTERNAL, "KV cache: sequence %llu has no state to roll back", (unsigned long long)seq);
    slots_->rollback(slot);
}

void KvCacheManager::check() const {
    if (slots_) {
        slots_->check();
        std::vector<uint8_t> held(slots_->num_live(), 0);
        for (const auto &[id, sb] : seqs_) {
            if (sb.slot < 0 || (uint32_t)sb.slot >= slots_->num_live() || held[(size_t)sb.slot])
                fail(VT_ERR_INTERNAL, "KV cache: sequence %llu holds state slot %d, out of range or another's",
                     (unsigned long long)id, sb.slot);
            held[(size_t)sb.slot] = 1;
        }
        if (slots_->num_free_live() + seqs_.size() != slots_->num_live())
            fail(VT_ERR_INTERNAL, "KV cache: %u free state slots and %zu sequences of %u", slots_->num_free_live(),
                 seqs_.size(), slots_->num_live());
    }
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
        const BlockPool &pool = groups_[gi].pool;
        pool.check();
        std::vector<uint32_t> refs(pool.num_blocks(), 0);
        for (const auto &[id, sb] : seqs_) {
            if (sb.tables.size() != groups_.size() || sb.tables[gi].size() != sb.tables[0].size())
                fail(VT_ERR_INTERNAL, "KV cache: sequence %llu's tables differ in length", (unsigned long long)id);
            for (BlockId b : sb.tables[gi]) {
                if (b == kNoBlock && groups_[gi].window) continue;
                if (b < 0 || (uint32_t)b >= pool.num_blocks())
                    fail(VT_ERR_INTERNAL, "KV cache: sequence %llu holds bad block %d", (unsigned long long)id, b);
                ++refs[(size_t)b];
            }
        }
        for (BlockId b = 0; b < (BlockId)pool.num_blocks(); ++b)
            if (refs[(size_t)b] != pool.ref_count(b))
                fail(VT_ERR_INTERNAL, "KV cache: group %zu block %d has %u references, %u tables hold it", gi, b,
                     pool.ref_count(b), refs[(size_t)b]);
    }
}

} // namespace vt
