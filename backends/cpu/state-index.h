// The state index of the recurrent ops (CONV1D_CAUSAL, GATED_DELTA_RULE): an
// i32 tensor (3, n_seqs), per sequence {slot, n_tokens, fresh}. A step's
// tokens are the sequences' tokens one sequence after another, in index
// order; each sequence reads and updates its own slot of a state pool.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace vt::cpu {

struct SeqRun {
    int64_t t0, n;  // its tokens [t0, t0 + n) of the step
    int64_t slot;
    bool fresh;     // starts at position 0: the slot's contents are not read
    bool valid;     // slot in the pool and tokens in the step
};

// Calls f(seq, run) for each sequence of the index, in order; returns the
// number of tokens the valid runs cover from the first, i.e. where the
// walk stopped. A negative count or one running past n_tok ends the walk
// (the tokens after it belong to no sequence); a slot outside [0, n_slots)
// makes that sequence invalid (its tokens are skipped, the walk goes on).
template <typename F>
int64_t for_each_seq(const Tensor *index, int64_t n_tok, int64_t n_slots, F f) {
    const int32_t *idx = static_cast<const int32_t *>(index->data);
    const int64_t n_seqs = index->ne[1];
    int64_t t0 = 0;
    for (int64_t s = 0; s < n_seqs; ++s) {
        const int64_t slot = idx[3 * s], n = idx[3 * s + 1];
        if (n < 0 || t0 + n > n_tok) break;
        f(s, SeqRun{t0, n, slot, idx[3 * s + 2] != 0, slot >= 0 && slot < n_slots});
        t0 += n;
    }
    return t0;
}

// Whether t is an i32 (3, n_seqs) index.
inline bool state_index_ok(const Tensor *t) {
    return t && t->type == DType::I32 && t->is_contiguous() && t->ne[0] == 3 && t->ne[2] == 1 && t->ne[3] == 1;
}

} // namespace vt::cpu
