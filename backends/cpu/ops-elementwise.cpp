// Row gathers and element-wise ops.
#include <cmath>
#include <cstring>

#include "core/quant.h"
#include "core/quant/blocks.h"
#include "core/quant/kernels.h"
#include "core/quant/repack.h"
#include "cpu-ops.h"

namespace vt::cpu {

namespace {
// Row `row` of an _X16 matrix (rows interleaved in groups of 16), through
// blocks of its base type a chunk at a time.
void get_row_x16(const Tensor &w, int64_t row, float *out) {
    constexpr int64_t kChunk = 16;
    quant::BlockQ4_K tmp[kChunk]; // the largest base block
    const DType base = x16_base(w.type);
    const int64_t be = quant::x16_block_elems(base), nb = w.ne[0] / be;
    const uint8_t *group = static_cast<const uint8_t *>(w.data) + (size_t)(row / 16) * 16 * w.nb[1];
    for (int64_t b0 = 0; b0 < nb; b0 += kChunk) {
        const int64_t n = nb - b0 < kChunk ? nb - b0 : kChunk;
        quant::unpack_row_x16(base, group, w.ne[0], (int)(row % 16), b0, n, tmp);
        dequantize_row(base, tmp, out + b0 * be, n * be);
    }
}
} // namespace

void op_get_rows(const Node &n, const OpCtx &c) {
    const Tensor *w = n.src[0], *ids = n.src[1];
    Tensor *dst = n.dst;
    int64_t rows = ids->ne[0], b, e;
    split(rows, c.ith, c.nth, b, e);
    const int32_t *id = static_cast<const int32_t *>(ids->data);
    for (int64_t r = b; r < e; ++r) {
        const uint8_t *src = static_cast<const uint8_t *>(w->data) + (size_t)id[r] * w->nb[1];
        float *out = reinterpret_cast<float *>(static_cast<uint8_t *>(dst->data) + (size_t)r * dst->nb[1]);
        if (is_x16((uint32_t)w->type)) {
            get_row_x16(*w, id[r], out);
            continue;
        }
        if (w->type == DType::F32) std::memcpy(out, src, (size_t)w->ne[0] * sizeof(float));
        else dequantize_row(w->type, src, out, w->ne[0]);
    }
}

void op_add(const Node &n, const OpCtx &c) {
    const float *a = static_cast<const float *>(n.src[0]->data);
    const float *bsrc = static_cast<const float *>(n.src[1]->data);
    float *d = static_cast<float *>(n.dst->data);
    int64_t b, e;
    split(n.dst->nelements(), c.ith, c.nth, b, e);
    for (int64_t i = b; i < e; ++i) d[i] = a[i] + bsrc[i];
}

void op_swiglu(const Node &n, const OpCtx &c) {
    const float *g = static_cast<const float *>(n.src[0]->data);
    const float *u = static_cast<const float *>(n.src[1]->data);
    float *d = static_cast<float *>(n.dst->data);
    int64_t b, e;
    split(n.dst->nelements(), c.ith, c.nth, b, e);
    quant::active_kernels().swiglu(g + b, u + b, d + b, e - b);
}

} // namespace vt::cpu
