// The pool of paged-KV blocks: ids, reference counts, the prefix-cache map
// (block hash -> block) and the free queue that doubles as the LRU eviction
// order. Pure bookkeeping: a block is an id; the runner owns the memory
// (block b holds token slots b*block_size .. b*block_size+block_size-1).
//
// NOTE: a block with no references stays in the free queue *with* its hash,
// so a later request can still hit it; it is only forgotten when allocate()
// takes it from the head of the queue (eviction). The queue is intrusive and
// doubly linked, so a cache hit removes a block from the middle in O(1).
//
// Not thread-safe: one owner (the scheduler's thread) drives it.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace vt {

using BlockId = int32_t;

// XXH3-128 of (parent hash, token ids of one full block). 128 bits because a
// collision would silently hand one prompt another prompt's KV.
struct BlockHash {
    uint64_t lo = 0, hi = 0;
    bool operator==(const BlockHash &) const = default;
};

struct BlockHashHasher {
    size_t operator()(const BlockHash &h) const { return (size_t)h.lo; }
};

class BlockPool {
public:
    // Errors: VT_ERR_INVALID_ARGUMENT when num_blocks is 0 or above INT32_MAX.
    explicit BlockPool(uint32_t num_blocks);

    uint32_t num_blocks() const { return (uint32_t)blocks_.size() - 1; }
    // Blocks nobody references, cached or not: what allocate() may take.
    uint32_t num_free() const { return num_free_; }

    // Appends n blocks taken from the head of the free queue (least recently
    // freed first) to out; each drops its cached hash, if any, and returns
    // with one reference. Errors: VT_ERR_INTERNAL when n > num_free().
    void allocate(uint32_t n, std::vector<BlockId> &out);

    // The cached block holding this hash, or -1.
    BlockId find_cached(const BlockHash &hash) const;

    // Adds a reference (a prefix-cache hit); an unreferenced block leaves
    // the free queue so it can no longer be evicted.
    void acquire(BlockId id);

    // Drops one reference from each block, in the order given; a block that
    // reaches zero joins the tail of the free queue, so the first one listed
    // is evicted first. Errors: VT_ERR_INTERNAL on a block with no reference.
    void release(std::span<const BlockId> ids);

    // Registers a referenced, full block under its hash so that later
    // requests can share it. Returns false (and leaves the block uncached)
    // when another block already holds this hash: block tables stay
    // append-only, so the duplicate is simply not shared.
    bool set_cached(BlockId id, const BlockHash &hash);

    uint32_t ref_count(BlockId id) const { return blocks_.at((size_t)id).ref; }
    bool is_cached(BlockId id) const { return blocks_.at((size_t)id).cached; }
    uint32_t num_cached() const { return (uint32_t)cached_.size(); }
    // Cached blocks that nobody references (evictable, still hit-able).
    uint32_t num_free_cached() const { return num_free_cached_; }

    // The free queue from head (next evicted) to tail; for tests.
    std::vector<BlockId> free_queue() const;

    // Verifies the invariants (free queue == blocks with no reference, each
    // once; the hash map and per-block hashes agree). VT_ERR_INTERNAL if not.
    void check() const;

private:
    struct Block {
        uint32_t ref = 0;
        int32_t prev = -1, next = -1;  // free-queue links while ref == 0
        bool cached = false;
        BlockHash hash;
    };

    void unlink(BlockId id);
    void push_back(BlockId id);

    // blocks_[num_blocks()] is the queue's sentinel: its next is the head,
    // its prev the tail.
    std::vector<Block> blocks_;
    uint32_t num_free_ = 0;
    uint32_t num_free_cached_ = 0;  // of the free ones, those holding a hash
    std::unordered_map<BlockHash, BlockId, BlockHashHasher> cached_;
};

} // namespace vt
