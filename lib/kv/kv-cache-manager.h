// Paged KV cache bookkeeping for many sequences: each sequence has a block
// table (block ids, in position order), full blocks are shared through the
// prefix cache, and a sequence's blocks go back to the pool when it is freed.
// Exposes block ids only: no tensors, no backend (the runner maps token
// position p of a sequence to slot kv_slot(table, p, block_size)).
//
// Prefix caching: block i of a sequence is keyed by
// hash_block(hash of block i-1, its block_size token ids), with block 0
// chained to a zero hash, so a hit on block i implies hits on 0..i-1.
//
// NOTE: blocks are registered in the prefix cache when allocate() gives them
// out, before the step that fills them runs (as vLLM v1 does). Another
// sequence scheduled in the same step may therefore hit them, so the runner
// must write every layer's new K/V for the whole batch before that layer's
// attention reads the cache.
//
// Not thread-safe: driven by the scheduler's thread only.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block-pool.h"

namespace vt {

using SeqId = uint64_t;

struct KvCacheConfig {
    uint32_t block_size = 16;    // tokens per block
    uint32_t num_blocks = 0;     // see kv_blocks_for_budget()
    bool prefix_caching = true;
};

// How many blocks a byte budget holds, where bytes_per_token is what one
// token's K and V take over all layers (f16: 2 * n_layer * n_embd_kv * 2).
uint32_t kv_blocks_for_budget(uint64_t budget_bytes, uint64_t bytes_per_token, uint32_t block_size);

// The cache slot of position pos of a sequence with this block table.
inline int64_t kv_slot(std::span<const BlockId> table, uint32_t pos, uint32_t block_size) {
    return (int64_t)table[pos / block_size] * block_size + pos % block_size;
}

// The chained prefix-cache key of one full block.
BlockHash hash_block(const BlockHash &parent, std::span<const int32_t> block_tokens);

// Cached blocks covering a prefix of a prompt. Valid only until the pool
// changes (the next allocate or free), so pass it to allocate() at once.
struct PrefixHit {
    std::vector<BlockId> blocks;
    std::vector<BlockHash> hashes;  // hashes[i] is the key of blocks[i]
    uint32_t num_tokens = 0;        // blocks.size() * block_size
};

class KvCacheManager {
public:
    // Errors: VT_ERR_INVALID_ARGUMENT on a zero block size or block count.
    explicit KvCacheManager(const KvCacheConfig &cfg);

    uint32_t block_size() const { return block_size_; }
    uint32_t num_blocks() const { return pool_.num_blocks(); }
    uint32_t num_free_blocks() const { return pool_.num_free(); }
    const BlockPool &pool() const { return pool_; }

    // The longest run of cached full blocks at the start of tokens. At most
    // tokens.size() - 1 tokens are hit, so that the last one is always
    // computed: its logits are needed. Takes no reference.
    PrefixHit find_prefix(std::span<const int32_t> tokens) const;

    // Grows seq's table to hold num_computed + num_new tokens: first the hit
    // blocks (only for a sequence holding no blocks, with num_computed ==
    // hit.num_tokens), then fresh blocks from the pool, evicting the least
    // recently freed cached ones. Every block that these tokens fill is then
    // registered in the prefix cache. tokens are all the sequence's known
    // tokens (they are hashed); num_computed + num_new <= tokens.size().
    // Returns false, changing nothing, when the pool has too few free blocks
    // (the caller preempts someone or waits).
    // Errors: VT_ERR_INTERNAL on inconsistent counts.
    bool allocate(SeqId seq, std::span<const int32_t> tokens, uint32_t num_computed, uint32_t num_new,
                  const PrefixHit &hit = {});

    // Returns seq's blocks to the pool, last block first, so that a prompt's
    // tail is evicted before its (more shareable) head. Unknown seq: no-op.
    void free(SeqId seq);

    // seq's block table (empty when it holds none); valid until the next
    // allocate() or free().
    std::span<const BlockId> block_table(SeqId seq) const;

    // Prefix-cache hit rate: known tokens of sequences given their first
    // blocks (admitted or re-admitted after preemption), and of those, the
    // tokens served from the cache.
    uint64_t prefix_query_tokens() const { return query_tokens_; }
    uint64_t prefix_hit_tokens() const { return hit_tokens_; }

    // Verifies the pool and that each block's reference count equals the
    // number of tables holding it. VT_ERR_INTERNAL if not.
    void check() const;

private:
    struct SeqBlocks {
        std::vector<BlockId> table;
        std::vector<BlockHash> hashes;  // keys of table[0 .. hashes.size()), all full
    };

    uint32_t block_size_;
    bool prefix_caching_;
    BlockPool pool_;
    std::unordered_map<SeqId, SeqBlocks> seqs_;
    uint64_t query_tokens_ = 0, hit_tokens_ = 0;
};

} // namespace vt
