#include "core/tensor.h"

namespace vt {

static const char *const kOpNames[] = {
#define VT_OP(NAME, field, n_src, Params, desc) #NAME,
#include "core/ops.def"
#undef VT_OP
};
static const int kOpNSrc[] = {
#define VT_OP(NAME, field, n_src, Params, desc) n_src,
#include "core/ops.def"
#undef VT_OP
};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == kOpCount, "op tables out of sync");

const char *op_name(Op op) { return (int)op >= 0 && (int)op < kOpCount ? kOpNames[(int)op] : "?"; }
int op_n_src(Op op) { return (int)op >= 0 && (int)op < kOpCount ? kOpNSrc[(int)op] : 0; }

bool Tensor::is_contiguous() const {
    size_t expect = dtype_info(type).block_bytes;
    if (nb[0] != expect) return false;
    expect = row_bytes(type, ne[0]);
    for (int d = 1; d < kMaxDims; ++d) {
        if (ne[d] > 1 && nb[d] != expect) return false;
        expect *= (size_t)ne[d];
    }
    return true;
}

void tensor_init(Tensor &t, DType type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
                 void *data, const char *name) {
    t.type = type;
    t.ne[0] = ne0;
    t.ne[1] = ne1;
    t.ne[2] = ne2;
    t.ne[3] = ne3;
    t.nb[0] = dtype_info(type).block_bytes;
    t.nb[1] = row_bytes(type, ne0);
    t.nb[2] = t.nb[1] * (size_t)ne1;
    t.nb[3] = t.nb[2] * (size_t)ne2;
    t.data = data;
    t.name = name;
    t.buffer = nullptr;
    t.layout = 0;
}

} // namespace vt
