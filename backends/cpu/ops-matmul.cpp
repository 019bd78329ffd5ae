// Matrix multiplication dst = x * W^T for weights in any block format.
// Phase 1 converts the activations once per row to the weight type's
// vec_dot_type (llama.cpp does the same, which is what makes our results
// agree with it; F16_X16 takes the f16-rounded values as f32); phase 2
// splits the weight rows across threads, so each thread streams a disjoint
// slice of the weights (decode is bound by that memory traffic). With
// several tokens, a table's gemm tiles (when it has them for the type) dot
// each loaded weight block with several activation rows at once; their results are bit-identical to the vec_dot loop's, so
// prefill and decode agree exactly. Weights in a load-time layout (_X16)
// always go through the gemm, decode included.
#include <cstring>

#include "core/quant.h"
#include "core/quant/kernels.h"
#include "cpu-ops.h"

namespace vt::cpu {

namespace {
// Below this many tokens the gemm tiles would be mostly edge (1-token) tiles.
constexpr int64_t kGemmMinTokens = 4;

// The activation rows the kernels read: vec_dot_type's, or f16-rounded f32
// for the weights whose gemm takes them so (kernels.h).
DType act_type(DType w) { return quant::gemm_rounds_to_f16(w) ? DType::F32 : vec_dot_type(w); }
// Whether phase 1 writes them (else the kernels read the f32 input).
bool converts_acts(DType w) { return act_type(w) != DType::F32 || quant::gemm_rounds_to_f16(w); }

void round_to_f16(const float *x, float *out, int64_t k) {
    constexpr int64_t kChunk = 256;
    uint16_t h[kChunk];
    for (int64_t i = 0; i < k; i += kChunk) {
        const int64_t n = k - i < kChunk ? k - i : kChunk;
        quantize_row(DType::F16, x + i, h, n);
        dequantize_row(DType::F16, h, out + i, n);
    }
}
} // namespace

size_t mul_mat_work_size(const Node &n, int) {
    const DType w = n.src[0]->type;
    const size_t act = converts_acts(w) ? row_bytes(act_type(w), n.src[1]->ne[0]) * (size_t)n.src[1]->nrows() : 0;
    return (act + 63) & ~(size_t)63;
}

void op_mul_mat(const Node &n, const OpCtx &c) {
    const Tensor *w = n.src[0], *x = n.src[1];
    Tensor *dst = n.dst;
    const int64_t k = x->ne[0];
    const int64_t m = x->nrows();     // activation rows (tokens)
    const int64_t n_out = w->ne[1];   // weight rows (output features)
    const DType vdt = act_type(w->type);
    const bool round_f16 = quant::gemm_rounds_to_f16(w->type);
    const quant::GemmFn gemm = quant::active_kernels().gemm[(int)w->type];

    const uint8_t *act = static_cast<const uint8_t *>(x->data);
    size_t act_stride = x->nb[1];
    if (converts_acts(w->type)) {
        act_stride = row_bytes(vdt, k);
        int64_t b, e;
        split(m, c.ith, c.nth, b, e);
        for (int64_t r = b; r < e; ++r) {
            const float *src = static_cast<const float *>(x->data) + r * k;
            if (round_f16) round_to_f16(src, reinterpret_cast<float *>(c.wdata + (size_t)r * act_stride), k);
            else quantize_row(vdt, src, c.wdata + (size_t)r * act_stride, k);
        }
        c.barrier();
        act = c.wdata;
    }

    int64_t b, e;
    split(n_out, c.ith, c.nth, b, e);
    const uint8_t *wbase = static_cast<const uint8_t *>(w->data);
    float *out = static_cast<float *>(dst->data);
    if (is_x16((uint32_t)w->type)) {
        // Threads split whole groups of 16 rows.
        split(n_out / 16, c.ith, c.nth, b, e);
        gemm(k, wbase + (size_t)(16 * b) * w->nb[1], w->nb[1], 16 * (e - b), act, act_stride, m, out + 16 * b,
             (size_t)n_out);
        return;
    }
    if (gemm && m >= kGemmMinTokens) {
        // The tiles do their own cache blocking over this thread's rows.
        gemm(k, wbase + (size_t)b * w->nb[1], w->nb[1], e - b, act, act_stride, m, out + b, (size_t)n_out);
        return;
    }
    // Rows in blocks so that a block of weights stays in cache while it is
    // dotted with every activation row.
    constexpr int64_t kRowBlock = 16;
    const VecDotFn dot = vec_dot_fn(w->type);
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
