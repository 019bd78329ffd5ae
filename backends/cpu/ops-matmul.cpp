// Matrix multiplication dst = x * W^T for weights in any block format.
// Phase 1 converts the activations once per row to the weight type's
// vec_dot_type (llama.cpp does the same, which is what makes our results
// agree with it); phase 2 splits the weight rows across threads, so each
// thread streams a disjoint slice of the weights (decode is bound by that
// memory traffic). With several tokens, a table's gemm tiles (when it has
// them for the type) dot each loaded weight block with several activation
// rows at once; their results are bit-identical to the vec_dot loop's, so
// prefill and decode agree exactly.
#include <cstring>

#include "core/quant.h"
#include "core/quant/kernels.h"
#include "core/quant/repack.h"
#include "cpu-ops.h"

namespace vt::cpu {

namespace {
// Below this many tokens the gemm tiles would be mostly edge (1-token) tiles.
constexpr int64_t kGemmMinTokens = 4;
// Q4_0_X4 rows unpacked at a time for the gemm tiles (a multiple of 4).
constexpr int64_t kUnpackRows = 128;

bool unpacks(const Node &n) { return n.src[0]->type == DType::Q4_0_X4 && n.src[1]->nrows() >= kGemmMinTokens; }

size_t act_bytes(const Node &n) {
    const DType vdt = vec_dot_type(n.src[0]->type);
    return vdt == DType::F32 ? 0 : row_bytes(vdt, n.src[1]->ne[0]) * (size_t)n.src[1]->nrows();
}
size_t unpack_bytes(const Node &n) { return (act_bytes(n) + 63) & ~(size_t)63; }

// Prefill with a Q4_0_X4 weight: rows go back to Q4_0 a block at a time,
// into this thread's scratch, for Q4_0's gemm tiles (bit-identical to the
// decode kernel, which is bit-identical to Q4_0's dot). The unpacking is a
// copy per weight block, paid once per step for all its tokens.
void mul_mat_unpacked(const Node &n, const OpCtx &c, const uint8_t *act, size_t act_stride, int64_t b, int64_t e) {
    const Tensor *w = n.src[0];
    const int64_t k = n.src[1]->ne[0], m = n.src[1]->nrows(), n_out = w->ne[1];
    const size_t row = row_bytes(DType::Q4_0, k);
    uint8_t *scratch = c.wdata + unpack_bytes(n) + (size_t)c.ith * kUnpackRows * row;
    const quant::Kernels &kt = quant::active_kernels();
    const quant::GemmFn gemm = kt.gemm[(int)DType::Q4_0];
    const VecDotFn dot = kt.dot[(int)DType::Q4_0];
    float *out = static_cast<float *>(n.dst->data);
    for (int64_t r0 = b; r0 < e; r0 += kUnpackRows) {
        const int64_t nr = e - r0 < kUnpackRows ? e - r0 : kUnpackRows;
        quant::unpack_q4_0_x4(static_cast<const uint8_t *>(w->data) + (size_t)r0 * w->nb[1], scratch, row, k, nr);
        if (gemm) {
            gemm(k, scratch, row, nr, act, act_stride, m, out + r0, (size_t)n_out);
            continue;
        }
        for (int64_t t = 0; t < m; ++t)
            for (int64_t r = 0; r < nr; ++r) out[t * n_out + r0 + r] = dot(k, scratch + r * row, act + t * act_stride);
    }
}
} // namespace

size_t mul_mat_work_size(const Node &n, int nth) {
    size_t need = unpack_bytes(n);
    if (unpacks(n)) need += (size_t)nth * kUnpackRows * row_bytes(DType::Q4_0, n.src[1]->ne[0]);
    return need;
}

void op_mul_mat(const Node &n, const OpCtx &c) {
    const Tensor *w = n.src[0], *x = n.src[1];
    Tensor *dst = n.dst;
    const int64_t k = x->ne[0];
    const int64_t m = x->nrows();     // activation rows (tokens)
    const int64_t n_out = w->ne[1];   // weight rows (output features)
    const DType vdt = vec_dot_type(w->type);
    const VecDotFn dot = vec_dot_fn(w->type);
    const quant::GemmFn gemm = quant::active_kernels().gemm[(int)w->type];

    const uint8_t *act = static_cast<const uint8_t *>(x->data);
    size_t act_stride = x->nb[1];
    if (vdt != DType::F32) {
        act_stride = row_bytes(vdt, k);
        int64_t b, e;
        split(m, c.ith, c.nth, b, e);
        for (int64_t r = b; r < e; ++r)
            quantize_row(vdt, static_cast<const float *>(x->data) + r * k, c.wdata + (size_t)r * act_stride, k);
        c.barrier();
        act = c.wdata;
    }

    // Rows in blocks so that a block of weights stays in cache while it is
    // dotted with every activation row.
    constexpr int64_t kRowBlock = 16;
    int64_t b, e;
    split(n_out, c.ith, c.nth, b, e);
    const uint8_t *wbase = static_cast<const uint8_t *>(w->data);
    float *out = static_cast<float *>(dst->data);
    if (w->type == DType::Q4_0_X4) {
        // Threads split whole groups of 4 rows.
        split(n_out / 4, c.ith, c.nth, b, e);
        b *= 4;
        e *= 4;
        if (m >= kGemmMinTokens) {
            mul_mat_unpacked(n, c, act, act_stride, b, e);
            return;
        }
        const quant::GemvFn gemv = quant::active_kernels().gemv[(int)w->type];
        for (int64_t t = 0; t < m; ++t)
            gemv(k, wbase + (size_t)b * w->nb[1], w->nb[1], e - b, act + (size_t)t * act_stride, out + t * n_out + b);
        return;
    }
    if (gemm && m >= kGemmMinTokens) {
        // The tiles do their own cache blocking over this thread's rows.
        gemm(k, wbase + (size_t)b * w->nb[1], w->nb[1], e - b, act, act_stride, m, out + b, (size_t)n_out);
        return;
    }
    for (int64_t r0 = b; r0 < e; r0 += kRowBlock) {
        const int64_t r1 = r0 + kRowBlock < e ? r0 + kRowBlock : e;
        for (int64_t t = 0; t < m; ++t) {
            const void *a = act + (size_t)t * act_stride;
            float *o = out + t * n_out;
            for (int64_t r = r0; r < r1; ++r) o[r] = dot(k, wbase + (size_t)r * w->nb[1], a);
        }
    }
}

} // namespace vt::cpu
