// Batches of sequences with state slots for the recurrent ops' tests
// (CONV1D_CAUSAL, GATED_DELTA_RULE, SSM_SCAN): each sequence's tokens this
// step, the (3, n_seqs) {slot, n_tokens, fresh} index the ops read, and
// distinct slots of a pool picked at random.
#pragma once

#include "unit/ops-harness.h"

#include <algorithm>
#include <cstring>

namespace {

struct SeqSpec {
    int64_t n;   // tokens this step
    bool fresh;  // starts at position 0
};

// One step's index over a pool of n_slots slots: sequence i takes slot
// slots[i]; its tokens start at t0[i].
struct StepIndex {
    std::vector<int32_t> index;  // (3, n_seqs): slot, n_tokens, fresh
    std::vector<int64_t> t0;
    int64_t n_tok = 0;
};
inline StepIndex step_index(const std::vector<SeqSpec> &seqs, const std::vector<int32_t> &slots) {
    StepIndex s;
    for (size_t i = 0; i < seqs.size(); ++i) {
        s.index.insert(s.index.end(), {slots[i], (int32_t)seqs[i].n, seqs[i].fresh ? 1 : 0});
        s.t0.push_back(s.n_tok);
        s.n_tok += seqs[i].n;
    }
    return s;
}

// n distinct slots of a pool of n_slots, in shuffled order.
inline std::vector<int32_t> pick_slots(size_t n, int64_t n_slots, std::mt19937 &rng) {
    std::vector<int32_t> all((size_t)n_slots);
    for (int64_t i = 0; i < n_slots; ++i) all[(size_t)i] = (int32_t)i;
    std::shuffle(all.begin(), all.end(), rng);
    all.resize(n);
    return all;
}

// Bytes of a float vector (run_both's snapshots).
inline Bytes bytes_of(const std::vector<float> &v) {
    Bytes b(v.size() * sizeof(float));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

} // namespace
