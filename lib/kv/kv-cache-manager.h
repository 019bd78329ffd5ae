// Paged KV cache bookkeeping for many sequences: each sequence has a block
// table (block ids, in position order), full blocks are shared through the
// prefix cache, and a sequence's blocks go back to the pool when it is freed.
// Exposes block ids only: no tensors, no backend (the runner maps token
// position p of a sequence to slot kv_slot(table, p, block_size)).
//
// Cache groups (vLLM's hybrid allocator): the layers of one cache spec share
// a group, with a pool and a block table per sequence of its own. A
// sliding-window group holds only the blocks its window still needs: a block
// wholly before the window of a sequence's next token goes back to the pool
// (its table entry becomes kNoBlock) and stays in the prefix cache until
// evicted. A prefix hit must then be a hit in every group: all blocks of a
// full-attention group, the window's blocks of a sliding one.
//
// State slots (recurrent layers: Mamba, linear attention; kv/state-slots.h):
// a model with such layers keeps one fixed-size state per sequence instead
// of rows per token. A sequence takes a live slot when it is given its first
// blocks and holds it until freed; admission therefore needs a free slot as
// well as blocks. A state is valid at one position only, so a prefix hit
// must also end where a snapshot of the state was saved (save_state), and
// resumes from a copy of it.
//
// Prefix caching: block i of a sequence is keyed by
// hash_block(hash of block i-1, its block_size token ids), with block 0
// chained to the sequence's root (a zero hash, or its LoRA adapter's key),
// so a hit on block i implies hits on 0..i-1.
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
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block-pool.h"
#include "kv/state-slots.h"

namespace vt {

using SeqId = uint64_t;

// A table entry for a block a sliding window no longer needs.
constexpr BlockId kNoBlock = -1;

struct KvGroupConfig {
    uint32_t num_blocks = 0;  // see kv_blocks_for_budget()
    uint32_t window = 0;      // a sliding window in positions; 0: full attention
};

struct KvCacheConfig {
    uint32_t block_size = 16;         // tokens per block, every group
    uint32_t num_blocks = 0;          // with no groups: one full-attention group of num_blocks
    bool prefix_caching = true;
    std::vector<KvGroupConfig> groups;
    uint32_t state_slots = 0;         // recurrent layers' live slots (0: the model has none)
    uint32_t state_snapshots = 0;     // their snapshots for the prefix cache (0: no prefix hits)
    bool state_checkpoints = false;   // a checkpoint per live slot (speculative decoding; kv/state-slots.h)
};

// How many blocks a byte budget holds, where bytes_per_token is what one
// token's K and V take over all layers (f16: 2 * n_layer * n_embd_kv * 2).
uint32_t kv_blocks_for_budget(uint64_t budget_bytes, uint64_t bytes_per_token, uint32_t block_size);

// Blocks a sliding-window group must have free for one step of n_tokens of
// one sequence: the first token's window and the step's tokens, each end in
// a partial block.
inline uint64_t sliding_blocks_per_step(uint32_t window, uint32_t n_tokens, uint32_t block_size) {
    return ((uint64_t)window + n_tokens + block_size - 1) / block_size + 1;
}

// The cache slot of position pos of a sequence with this block table.
inline int64_t kv_slot(std::span<const BlockId> table, uint32_t pos, uint32_t block_size) {
    return (int64_t)table[pos / block_size] * block_size + pos % block_size;
}

// The chained prefix-cache key of one full block.
BlockHash hash_block(const BlockHash &parent, std::span<const int32_t> block_tokens);

// Cached blocks covering a prefix of a prompt. Valid only until the pool
// changes (the next allocate or free), so pass it to allocate() at once.
struct PrefixHit {
    std::vector<std::vector<BlockId>> blocks;  // per group: the table's first entries (kNoBlock before a window)
    std::vector<BlockHash> hashes;  // hashes[i] is the key of block i of every group
    uint32_t num_tokens = 0;        // hashes.size() * block_size
};

class KvCacheManager {
public:
    // Errors: VT_ERR_INVALID_ARGUMENT on a zero block size or block count.
    explicit KvCacheManager(const KvCacheConfig &cfg);

    uint32_t block_size() const { return block_size_; }
    uint32_t num_groups() const { return (uint32_t)groups_.size(); }
    uint32_t window(uint32_t g = 0) const { return groups_.at(g).window; }
    uint32_t num_blocks(uint32_t g = 0) const { return groups_.at(g).pool.num_blocks(); }
    uint32_t num_free_blocks(uint32_t g = 0) const { return groups_.at(g).pool.num_free(); }
    const BlockPool &pool(uint32_t g = 0) const { return groups_.at(g).pool; }
    // The most tokens one sequence can hold: what its full-attention groups'
    // pools hold (a sliding window needs only its window's blocks).
    uint64_t max_seq_tokens() const;

    // The longest prefix of tokens whose blocks every group has cached (see
    // above), in whole blocks; with state slots, ending at a block whose
    // state snapshot is saved. At most tokens.size() - 1 tokens are hit, so
    // that the last one is always computed: its logits are needed. Takes no
    // reference.
    // root keys block 0 (chained from it): sequences whose KV depends on
    // more than their tokens (a LoRA adapter) share blocks only with those
    // of the same root.
    PrefixHit find_prefix(std::span<const int32_t> tokens, const BlockHash &root = {}) const;

    // Grows seq's tables to hold num_computed + num_new tokens: first the hit
    // blocks (only for a sequence holding no blocks, with num_computed ==
    // hit.num_tokens), then fresh blocks from each pool, evicting the least
    // recently freed cached ones (and, for a sequence holding none, a state
    // slot where the model has them); a sliding group first gives back the
    // blocks before the window of position num_computed. Every block that
    // these tokens fill is then registered in the prefix cache. tokens are
    // all the sequence's known tokens (they are hashed); num_computed +
    // num_new <= tokens.size(). Returns false, adding nothing, when a pool
    // has too few free blocks (the caller preempts someone or waits).
    // num_lookahead: room for that many tokens more, past the known ones
    // (speculative decoding's draft tokens), which are neither hashed nor
    // registered: their blocks join the prefix cache when a later call
    // covers them with known tokens, so a rejected draft's KV is never
    // served to another sequence. Errors: VT_ERR_INTERNAL on inconsistent
    // counts.
    bool allocate(SeqId seq, std::span<const int32_t> tokens, uint32_t num_computed, uint32_t num_new,
                  const PrefixHit &hit = {}, const BlockHash &root = {}, uint32_t num_lookahead = 0);

    // Gives back seq's blocks past those that hold its first num_tokens
    // tokens (the room of a draft's rejected tokens), last first; they were
    // never registered in the prefix cache (see allocate). Errors:
    // VT_ERR_INTERNAL when num_tokens would drop a registered block.
    void trim(SeqId seq, uint32_t num_tokens);

    // Returns seq's blocks to the pools, last block first, so that a prompt's
    // tail is evicted before its (more shareable) head. Unknown seq: no-op.
    void free(SeqId seq);

    // seq's block table in group g (empty when it holds none); valid until
    // the next allocate() or free().
    std::span<const BlockId> block_table(SeqId seq, uint32_t g = 0) const;
    // seq's live state slot, or -1 (no slots, or seq holds nothing).
    int32_t state_slot(SeqId seq) const;
    uint32_t num_state_slots() const { return slots_ ? slots_->num_live() : 0; }
    // Whether states are snapshotted for prefix hits (slots, snapshots and
    // prefix caching): the scheduler then ends prompt chunks on the
    // prompt's last full block, where the snapshot a later hit needs is.
    bool saves_states() const { return slots_ && slots_->num_snapshots() > 0 && prefix_caching_; }
    uint32_t num_free_state_slots() const { return slots_ ? slots_->num_free_live() : 0; }
    // Whether sequences with a state slot may verify drafts: their state can
    // be checkpointed before the step and rolled back after it.
    bool checkpoints_states() const { return slots_ && slots_->has_checkpoints(); }
    // seq's state goes to its checkpoint before the step just planned runs
    // (it verifies a draft). Errors: VT_ERR_INTERNAL without a slot or checkpoints.
    void checkpoint_state(SeqId seq);
    // seq's checkpoint goes back into its live slot before the next step
    // (its verification rejected a draft token). Errors: as checkpoint_state.
    void rollback_state(SeqId seq);
    // seq's state will be at position pos (a multiple of the block size,
    // its tokens hashed) when the step ends: snapshot it for the prefix
    // cache. pinned: the prompt's last full block, kept when seq moves on.
    // Nothing without snapshots or prefix caching.
    void save_state(SeqId seq, uint32_t pos, bool pinned);
    // The state copies the runner must make for the step just planned:
    // restores of prefix hits before its forward pass, saves after it.
    void take_state_copies(std::vector<StateCopy> &restores, std::vector<StateCopy> &saves) {
        if (slots_) slots_->take_copies(restores, saves);
    }
    // The step's saves are made: their snapshots may be hit from now on.
    void commit_state_saves() {
        if (slots_) slots_->commit();
    }

    // Prefix-cache hit rate: known tokens of sequences given their first
    // blocks (admitted or re-admitted after preemption), and of those, the
    // tokens served from the cache.
    uint64_t prefix_query_tokens() const { return query_tokens_; }
    uint64_t prefix_hit_tokens() const { return hit_tokens_; }

    // Verifies the pool and that each block's reference count equals the
    // number of tables holding it. VT_ERR_INTERNAL if not.
    void check() const;

private:
    struct Group {
        uint32_t window;
        BlockPool pool;
    };
    struct SeqBlocks {
        std::vector<std::vector<BlockId>> tables;  // per group
        std::vector<BlockHash> hashes;  // keys of block 0 .. hashes.size() - 1, all full
        int32_t slot = -1;              // its live state slot, when the model has them
    };
    // Blocks of a sliding group before the window of position pos.
    uint32_t blocks_before_window(const Group &g, uint64_t pos) const;

    uint32_t block_size_;
    bool prefix_caching_;
    std::vector<Group> groups_;
    std::unordered_map<SeqId, SeqBlocks> seqs_;
    std::unique_ptr<StateSlotPool> slots_;  // null without recurrent layers
    uint64_t query_tokens_ = 0, hit_tokens_ = 0;
};

} // namespace vt
