// How the serving engine's KV pool is sized (vLLM's hybrid allocator and its
// gpu_memory_utilization, llama.cpp's --fit): one byte budget split between
// the model's cache groups, the budget by default derived from the memory of
// the devices the pool lives on, after the weights and the compute arena a
// full step needs. Computed when a context is made (so that a budget that
// cannot fit fails there, with what fits) and again by the engine at its
// first submit, when it allocates the pool. A model with recurrent layers
// also gets a state slot per running sequence out of the same budget.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv/cache-spec.h"
#include "runner/sequence.h"

namespace vt {

struct EngineConfig;

struct KvPlan {
    std::vector<CacheGroup> groups;
    std::vector<uint32_t> blocks;  // per group
    uint32_t block_size = 16;
    uint32_t max_num_seqs = 64;
    uint32_t max_batched = 512;
    uint32_t max_model_len = 0;    // tokens per request, after the pool caps a default one
    // Where a default budget came from: "a quarter of the available memory"
    // or "90% of vulkan0's free memory after ..." (for the load line).
    std::string budget_source;
    size_t arena_bytes = 0;        // the compute arena of a full step on the context's device
    // Recurrent layers: one slot per running sequence, taken off the budget
    // first (at most half of it); max_num_seqs is then at most state_slots.
    uint32_t state_slots = 0;
    // With prefix caching, snapshots of states at block boundaries (up to
    // two per live slot, within the same half; kv/state-slots.h).
    uint32_t state_snapshots = 0;
    uint64_t slot_bytes = 0;
    // With speculative decoding, a checkpoint slot per live slot, from the
    // same half (kv/state-slots.h).
    bool state_checkpoints = false;
    // Every state slot: live, snapshots and checkpoints.
    uint32_t state_slots_total() const { return state_slots * (state_checkpoints ? 2 : 1) + state_snapshots; }
    // A draft model's KV (EngineConfig::draft_model): blocks of block_size
    // tokens in each of its cache groups, as many tokens as the model's
    // full-attention groups hold (within a device's largest allocation),
    // taken from the same budget.
    uint32_t draft_blocks = 0;
    // A draft model with recurrent layers: the requests it holds states for
    // (two slots each: engine/draft-model.h), from the half the model's
    // slots come from; max_num_seqs is then at most this.
    uint32_t draft_state_seqs = 0;
};

// The plan for ctx and cfg. Throws vt::Error: VT_ERR_OUT_OF_MEMORY when an
// explicit kv_cache_bytes does not fit in a device's memory, or when the
// memory left holds no block (the message says how much fits);
// VT_ERR_INVALID_ARGUMENT as the engine's limits (max_model_len over the pool).
KvPlan plan_kv(Context &ctx, const EngineConfig &cfg);

} // namespace vt
