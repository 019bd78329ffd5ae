// What the scheduler's tests share (test-sched.cpp, test-spec.cpp): a
// one-group KV pool of 4-token blocks, scheduler limits, and the identity
// of a sequence's prefix that a K/V slot written at its position must hold.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/scheduler.h"

namespace sched_harness {

constexpr uint32_t kBlock = 4;

inline vt::KvCacheConfig kv_cfg(uint32_t num_blocks) {
    vt::KvCacheConfig c;
    c.block_size = kBlock;
    c.num_blocks = num_blocks;
    return c;
}

inline vt::SchedulerConfig sched_cfg(uint32_t budget, uint32_t max_seqs = 8, uint32_t max_len = 0,
                                     uint32_t prefill_floor = 0, uint32_t prefill_per_decode = 0) {
    vt::SchedulerConfig c;
    c.max_num_batched_tokens = budget;
    c.max_num_seqs = max_seqs;
    c.max_model_len = max_len;
    c.prefill_tokens_beside_decodes = prefill_floor;
    c.prefill_tokens_per_decode = prefill_per_decode;
    return c;
}

// Identity of a sequence's first p+1 tokens: what a K/V slot written at
// position p must hold for the attention over it to be right.
inline uint64_t prefix_print(const std::vector<int32_t> &t, size_t p) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i <= p; ++i) h = (h ^ (uint64_t)(uint32_t)t[i]) * 1099511628211ull;
    return h;
}

} // namespace sched_harness
