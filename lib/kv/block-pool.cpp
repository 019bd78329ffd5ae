#include "kv/block-pool.h"

#include <climits>

#include "core/error.h"

namespace vt {

BlockPool::BlockPool(uint32_t num_blocks) {
    if (num_blocks == 0 || num_blocks > (uint32_t)INT32_MAX - 1)
        fail(VT_ERR_INVALID_ARGUMENT, "KV block pool: %u blocks is out of range", num_blocks);
    blocks_.resize((size_t)num_blocks + 1);
    BlockId sentinel = (BlockId)num_blocks;
    blocks_[sentinel].prev = blocks_[sentinel].next = sentinel;
    // A fresh pool hands out ids in increasing order.
    for (BlockId id = 0; id < sentinel; ++id) push_back(id);
}

void BlockPool::unlink(BlockId id) {
    Block &b = blocks_[(size_t)id];
    blocks_[(size_t)b.prev].next = b.next;
    blocks_[(size_t)b.next].prev = b.prev;
    b.prev = b.next = -1;
    --num_free_;
    num_free_cached_ -= b.cached;
}

void BlockPool::push_back(BlockId id) {
    BlockId sentinel = (BlockId)num_blocks();
    Block &b = blocks_[(size_t)id];
    b.prev = blocks_[(size_t)sentinel].prev;
    b.next = sentinel;
    blocks_[(size_t)b.prev].next = id;
    blocks_[(size_t)sentinel].prev = id;
    ++num_free_;
    num_free_cached_ += b.cached;
}

void BlockPool::allocate(uint32_t n, std::vector<BlockId> &out) {
    if (n > num_free_) fail(VT_ERR_INTERNAL, "KV block pool: %u blocks asked, %u free", n, num_free_);
    BlockId sentinel = (BlockId)num_blocks();
    for (uint32_t i = 0; i < n; ++i) {
        BlockId id = blocks_[(size_t)sentinel].next;
        unlink(id);
        Block &b = blocks_[(size_t)id];
        if (b.cached) {  // eviction: the LRU cached block is forgotten here
            cached_.erase(b.hash);
            b.cached = false;
            b.hash = {};
        }
        b.ref = 1;
        out.push_back(id);
    }
}

BlockId BlockPool::find_cached(const BlockHash &hash) const {
    auto it = cached_.find(hash);
    return it == cached_.end() ? -1 : it->second;
}

void BlockPool::acquire(BlockId id) {
    if (id < 0 || id >= (BlockId)num_blocks()) fail(VT_ERR_INTERNAL, "KV block pool: bad block id %d", id);
    if (blocks_[(size_t)id].ref++ == 0) unlink(id);
}

void BlockPool::release(std::span<const BlockId> ids) {
    for (BlockId id : ids) {
        if (id < 0 || id >= (BlockId)num_blocks() || blocks_[(size_t)id].ref == 0)
            fail(VT_ERR_INTERNAL, "KV block pool: release of unreferenced block %d", id);
        if (--blocks_[(size_t)id].ref == 0) push_back(id);
    }
}

bool BlockPool::set_cached(BlockId id, const BlockHash &hash) {
    Block &b = blocks_.at((size_t)id);
    if (b.ref == 0) fail(VT_ERR_INTERNAL, "KV block pool: caching unreferenced block %d", id);
    if (b.cached) return b.hash == hash;
    if (!cached_.emplace(hash, id).second) return false;
    b.cached = true;
    b.hash = hash;
    return true;
}

std::vector<BlockId> BlockPool::free_queue() const {
    std::vector<BlockId> q;
    BlockId sentinel = (BlockId)num_blocks();
    for (BlockId id = blocks_[(size_t)sentinel].next; id != sentinel; id = blocks_[(size_t)id].next) q.push_back(id);
    return q;
}

void BlockPool::check() const {
    uint32_t n = num_blocks();
    std::vector<uint8_t> seen(n, 0);
    uint32_t walked = 0;
    BlockId sentinel = (BlockId)n;
    for (BlockId id = blocks_[(size_t)sentinel].next; id != sentinel; id = blocks_[(size_t)id].next) {
        if (id < 0 || id >= sentinel || seen[(size_t)id] || ++walked > n)
            fail(VT_ERR_INTERNAL, "KV block pool: free queue corrupt at block %d", id);
        if (blocks_[(size_t)blocks_[(size_t)id].next].prev != id)
            fail(VT_ERR_INTERNAL, "KV block pool: free queue links broken at block %d", id);
        if (blocks_[(size_t)id].ref != 0) fail(VT_ERR_INTERNAL, "KV block pool: block %d is free and used", id);
        seen[(size_t)id] = 1;
    }
    if (walked != num_free_) fail(VT_ERR_INTERNAL, "KV block pool: %u free counted, %u queued", num_free_, walked);
    uint32_t n_cached = 0, n_free_cached = 0;
    for (BlockId id = 0; id < sentinel; ++id) {
        const Block &b = blocks_[(size_t)id];
        if (b.ref == 0 && !seen[(size_t)id]) fail(VT_ERR_INTERNAL, "KV block pool: block %d is lost", id);
        if (!b.cached) continue;
        ++n_cached;
        n_free_cached += b.ref == 0;
        if (find_cached(b.hash) != id) fail(VT_ERR_INTERNAL, "KV block pool: block %d not in the hash map", id);
    }
    if (n_cached != cached_.size())
        fail(VT_ERR_INTERNAL, "KV block pool: %zu hashes, %u cached blocks", cached_.size(), n_cached);
    if (n_free_cached != num_free_cached_)
        fail(VT_ERR_INTERNAL, "KV block pool: %u free cached blocks counted, %u found", num_free_cached_, n_free_cached);
}


} // namespace vt
