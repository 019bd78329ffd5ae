// CPU kernels, one function per op, split into files by op family. Each runs
// on every pool thread with (ith, nth) and takes its share of the work;
// ctx.barrier() synchronizes the threads inside an op with several phases.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.h"
#include "core/threadpool.h"

namespace vt::cpu {

struct OpCtx {
    int ith;
    int nth;
    uint8_t *wdata;   // scratch shared by all threads of the op
    size_t wsize;
    ThreadPool *pool;
    void barrier() const { pool->barrier(); }
};

// Scratch bytes the op needs with nth threads.
size_t work_size(const Node &node, int nth);
bool supports(const Node &node);

void op_get_rows(const Node &n, const OpCtx &c);
void op_rms_norm(const Node &n, const OpCtx &c);
void op_mul_mat(const Node &n, const OpCtx &c);
void op_add(const Node &n, const OpCtx &c);
void op_rope(const Node &n, const OpCtx &c);
void op_attn(const Node &n, const OpCtx &c);
void op_swiglu(const Node &n, const OpCtx &c);
void op_attn_paged(const Node &n, const OpCtx &c);
size_t attn_work_size(const Node &n, int nth);
size_t attn_paged_work_size(const Node &n, int nth);
bool attn_paged_supported(const Node &n);
size_t mul_mat_work_size(const Node &n, int nth);

// [begin, end) of n items for thread ith of nth.
inline void split(int64_t n, int ith, int nth, int64_t &begin, int64_t &end) {
    begin = n * ith / nth;
    end = n * (ith + 1) / nth;
}

} // namespace vt::cpu
