// CPU kernels, three functions per op of ops.def, split into files by op
// family: op_<field> computes the node, supports_<field> says whether its
// types and shapes are ones the kernel handles, work_size_<field> the scratch
// bytes it needs. The declarations and the backend's dispatch table are
// generated from ops.def, so an op without its three functions fails to
// build. Each op_ function runs on every pool thread with (ith, nth) and
// takes its share of the work; ctx.barrier() synchronizes the threads inside
// an op with several phases.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.h"
#include "core/threadpool.h"
#include "cpu/kernels/x16-layout.h"

namespace vt::cpu {

struct OpCtx {
    int ith;
    int nth;
    uint8_t *wdata;   // scratch shared by all threads of the op
    size_t wsize;
    ThreadPool *pool;
    // MUL_MAT: wdata already holds this node's activations, converted by the
    // MUL_MAT before it (the same input and weight form, e.g. Q, K and V of
    // one layer): skip the conversion (acts_converted_before decides).
    bool acts_ready = false;
    void barrier() const { pool->barrier(); }
};

// For each node, whether it may take the converted activations that an
// earlier MUL_MAT left in the scratch (OpCtx::acts_ready): the last node
// before it that used the scratch is a MUL_MAT of the same input, converted
// the same way, and no node in between wrote over that input. uses_scratch:
// per node, work_size > 0 (stream_compute has them).
void acts_converted_before(const Node *nodes, int n_nodes, const uint8_t *uses_scratch, uint8_t *ready);

// For each node, whether the threads must meet at a barrier after it
// (node-barriers.cpp): only when the next node touches memory that a node
// since the last barrier touched, one of them writing, and not on the same
// thread's own rows. acts_ready from acts_converted_before; wdata/wsize: the
// scratch the nodes share. The last node gets none (run() waits for all).
void barriers_after(const Node *nodes, int n_nodes, const uint8_t *acts_ready, const uint8_t *wdata, size_t wsize,
                    uint8_t *after);

#define VT_OP(NAME, field, n_src, Params, desc)                                    \
    void op_##field(const Node &n, const OpCtx &c);                                 \
    bool supports_##field(const Node &n);                                           \
    size_t work_size_##field(const Node &n, int nth);
#include "core/ops.def"
#undef VT_OP

// Dispatch over the generated table.
bool supports(const Node &node);
size_t work_size(const Node &node, int nth);

// Checks shared by the supports_ functions.
inline bool is_f32(const Tensor *t) { return t && t->type == DType::F32 && t->is_contiguous(); }
inline bool same_shape(const Tensor *a, const Tensor *b) {
    for (int d = 0; d < kMaxDims; ++d)
        if (a->ne[d] != b->ne[d]) return false;
    return true;
}
// Row r (of nrows()) of t, whose rows are contiguous at any strides.
inline const float *row_at(const Tensor *t, int64_t r) {
    const int64_t n1 = t->ne[1], n2 = t->ne[2];
    return reinterpret_cast<const float *>(static_cast<const uint8_t *>(t->data) + (size_t)(r % n1) * t->nb[1] +
                                           (size_t)(r / n1 % n2) * t->nb[2] + (size_t)(r / (n1 * n2)) * t->nb[3]);
}
// f32 with contiguous rows (a view of whole rows or of parts of rows).
inline bool f32_rows(const Tensor *t) { return t && t->type == DType::F32 && t->nb[0] == sizeof(float); }

// src1 of ADD/MUL: in every dimension src0's extent or 1 (broadcast).
inline bool broadcast_ok(const Node &n) {
    const Tensor *a = n.src[0], *b = n.src[1];
    if (!(is_f32(a) && is_f32(b) && is_f32(n.dst) && same_shape(a, n.dst))) return false;
    for (int d = 0; d < kMaxDims; ++d)
        if (b->ne[d] != a->ne[d] && b->ne[d] != 1) return false;
    return true;
}

// Whether w is in an _X16 layout (kernels/x16-layout.h).
inline bool is_x16(const Tensor &w) { return w.layout == quant::kLayoutX16; }
// The kernel tables' slot for w: its type, or its type's _X16 layout.
inline int kernel_slot(const Tensor &w) { return is_x16(w) ? quant::x16_slot(w.type) : (int)w.type; }
// An _X16 matrix is read in whole groups of 16 rows and whole blocks.
bool whole_x16_groups(const Tensor &w);

// [begin, end) of n items for thread ith of nth.
inline void split(int64_t n, int ith, int nth, int64_t &begin, int64_t &end) {
    begin = n * ith / nth;
    end = n * (ith + 1) / nth;
}

} // namespace vt::cpu
