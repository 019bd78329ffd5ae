// Copies between layouts: a strided view made contiguous (CPY) and rows
// joined along ne[0] (CONCAT). DeepSeek's attention splits projections into
// parts (q_nope | q_pe, c_kv | k_pe) and joins them again.
#include <cstring>

#include "cpu-ops.h"

namespace vt::cpu {

bool supports_cpy(const Node &n) { return f32_rows(n.src[0]) && is_f32(n.dst) && same_shape(n.src[0], n.dst); }
size_t work_size_cpy(const Node &, int) { return 0; }

void op_cpy(const Node &n, const OpCtx &c) {
    const Tensor &s = *n.src[0];
    float *d = static_cast<float *>(n.dst->data);
    int64_t b, e;
    split(s.nrows(), c.ith, c.nth, b, e);
    for (int64_t r = b; r < e; ++r) std::memcpy(d + r * s.ne[0], row_at(&s, r), (size_t)s.ne[0] * sizeof(float));
}

bool supports_concat(const Node &n) {
    const Tensor *a = n.src[0], *b = n.src[1], *d = n.dst;
    if (!(f32_rows(a) && f32_rows(b) && is_f32(d) && d->ne[0] == a->ne[0] + b->ne[0])) return false;
    for (int i = 1; i < kMaxDims; ++i)
        if (a->ne[i] != d->ne[i] || b->ne[i] != d->ne[i]) return false;
    return true;
}
size_t work_size_concat(const Node &, int) { return 0; }

void op_concat(const Node &n, const OpCtx &c) {
    const Tensor &a = *n.src[0], &b = *n.src[1];
    float *d = static_cast<float *>(n.dst->data);
    const int64_t w = a.ne[0] + b.ne[0];
    int64_t r0, r1;
    split(a.nrows(), c.ith, c.nth, r0, r1);
    for (int64_t r = r0; r < r1; ++r) {
        std::memcpy(d + r * w, row_at(&a, r), (size_t)a.ne[0] * sizeof(float));
        std::memcpy(d + r * w + a.ne[0], row_at(&b, r), (size_t)b.ne[0] * sizeof(float));
    }
}

} // namespace vt::cpu
