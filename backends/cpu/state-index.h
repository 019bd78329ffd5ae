// The state index of the recurrent ops (CONV1D_CAUSAL, GATED_DELTA_RULE,
// SSM_SCAN): an
// i32 tensor (3, n_seqs), per sequence {slot, n_tokens, fresh}. A step's
// tokens are the sequences' tokens one sequence after another, in index
// order; each sequence reads and updates its own slot of a state pool.
#pragma once

#include <cstdint>
#include <cstring>

#include "cpu-ops.h"
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

// The per-head recurrences (GATED_DELTA_RULE, SSM_SCAN) on thread ith of nth:
// units (sequence, head) dealt out round-robin, so that a prompt's heads
// spread over the threads as a decode batch's do; unit(run, h) for each of
// this thread's units of a valid sequence. dst holds row_floats outputs per
// head and token ((row, n_heads, n_tok)): an invalid sequence's rows and the
// tokens no sequence covers are zeroed here.
template <typename F>
void for_each_head_unit(const Tensor *index, int64_t n_tok, int64_t n_slots, int64_t n_heads, int64_t row_floats,
                        float *dst, int ith, int nth, F unit) {
    const int64_t covered = for_each_seq(index, n_tok, n_slots, [&](int64_t seq, const SeqRun &r) {
        for (int64_t h = 0; h < n_heads; ++h) {
            if ((seq * n_heads + h) % nth != ith) continue;
            if (r.valid) {
                unit(r, h);
            } else {
                for (int64_t t = r.t0; t < r.t0 + r.n; ++t)
                    std::memset(dst + (t * n_heads + h) * row_floats, 0, (size_t)row_floats * sizeof(float));
            }
        }
    });
    int64_t t0, t1;
    split(n_tok - covered, ith, nth, t0, t1);
    if (t1 > t0)
        std::memset(dst + (covered + t0) * n_heads * row_floats, 0,
                    (size_t)((t1 - t0) * n_heads * row_floats) * sizeof(float));
}

// Whether t is an i32 (3, n_seqs) index.
inline bool state_index_ok(const Tensor *t) {
    return t && t->type == DType::I32 && t->is_contiguous() && t->ne[0] == 3 && t->ne[2] == 1 && t->ne[3] == 1;
}

} // namespace vt::cpu
