// Tensors and compute graphs. Plain structs with a C-compatible layout,
// because they cross the C vtable of backends (lib/backend/backend-impl.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/op-params.h"

// Backend memory (lib/backend/backend-impl.h); a tensor names the buffer
// holding it.
extern "C" typedef struct vt_buffer vt_buffer;

namespace vt {

enum class Op : int32_t {
#define VT_OP(NAME, field, n_src, Params, desc) NAME,
#include "core/ops.def"
#undef VT_OP
    COUNT
};
constexpr int kOpCount = (int)Op::COUNT;
const char *op_name(Op op);
int op_n_src(Op op);

constexpr int kMaxDims = 4;
// The most sources of a node (GATED_DELTA_RULE takes 7). Part of Node, which
// crosses the backend vtable: changing it bumps VT_BACKEND_API_VERSION.
constexpr int kMaxSrc = 8;

// A strided view of memory. ne[0] is the contiguous dimension; nb[] are byte
// strides (nb[0] = element or block bytes). A tensor does not own its data.
struct Tensor {
    DType type;
    int64_t ne[kMaxDims];
    size_t nb[kMaxDims];
    void *data;
    const char *name;  // static or owned by the model; may be nullptr
    // The backend buffer holding data (data = its base + an offset), or
    // nullptr for plain host memory no backend allocated (tests, scratch).
    vt_buffer *buffer;
    // 0: the GGUF row layout of type. Any other value is a layout private to
    // the backend of buffer (the CPU's _X16 weights, backends/cpu/kernels/
    // x16-layout.h), written by its buffer type's prepare_weight and read
    // only by its kernels; the bytes are those of the rows of type.
    uint32_t layout;

    int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    int64_t nrows() const { return ne[1] * ne[2] * ne[3]; }
    size_t nbytes() const { return row_bytes(type, ne[0]) * (size_t)nrows(); }
    bool is_contiguous() const;
};

// Sets ne and contiguous strides for a tensor of type t.
void tensor_init(Tensor &t, DType type, int64_t ne0, int64_t ne1 = 1, int64_t ne2 = 1,
                 int64_t ne3 = 1, void *data = nullptr, const char *name = nullptr);

// Parameters of a node: the member named by the op's field in ops.def.
union OpParams {
    NoParams none;
#define VT_OP(NAME, field, n_src, Params, desc) Params field;
#include "core/ops.def"
#undef VT_OP
};

// The parameter type of each op, so that Graph::op<Op::X> takes exactly it.
template <Op> struct OpTraits;
#define VT_OP(NAME, field, n_src_, Params_, desc)                                  \
    template <> struct OpTraits<Op::NAME> {                                         \
        using Params = Params_;                                                     \
        static constexpr int n_src = n_src_;                                        \
        static void store(OpParams &u, const Params &p) { u.field = p; }            \
    };
#include "core/ops.def"
#undef VT_OP

struct Node {
    Op op;
    Tensor *dst;
    Tensor *src[kMaxSrc];
    OpParams params;
};

} // namespace vt
