// Matrix multiplication dst = x * W^T for weights in any block format.
// Phase 1 converts the activations once per row to the weight type's
// vec_dot_type (llama.cpp does the same, which is what makes our results
// agree with it; some _X16 gemms take those values as f32, kernels.h); phase 2
// splits the weight rows across threads, so each thread streams a disjoint
// slice of the weights (decode is bound by that memory traffic). With
// several tokens, a table's gemm tiles (when it has them for the type) dot
// each loaded weight block with several activation rows at once; their
// results are bit-identical to the vec_dot loop's, so prefill and decode
// agree exactly. Weights in a load-time layout (_X16) always go through the
// gemm, decode included.
#include <cstring>

#include "core/quant.h"
#include "cpu/kernels/kernels.h"
#include "cpu-ops.h"
#include "matmul.h"

namespace vt::cpu {

namespace {
// Below this many tokens the gemm tiles would be mostly edge (1-token) tiles.
constexpr int64_t kGemmMinTokens = 4;

// The activation rows the kernels read: vec_dot_type's, or f32 rounded
// through it for the gemms that take them so (kernels.h).
bool f32_acts(const Tensor &w) { return quant::active_kernels().gemm_f32_acts[kernel_slot(w)]; }
DType act_type(const Tensor &w) { return f32_acts(w) ? DType::F32 : vec_dot_type(w.type); }

// x through type t and back (t's own rounding, as the vec_dot would see it).
void round_through(DType t, const float *x, float *out, int64_t k) { quant::active_kernels().round[(int)t](x, out, k); }
} // namespace

namespace matmul {

bool converts_acts(const Tensor &w) { return vec_dot_type(w.type) != DType::F32; }

bool same_acts(const Tensor &w, const Tensor &w2) {
    return converts_acts(w) && converts_acts(w2) && act_type(w) == act_type(w2) &&
           vec_dot_type(w.type) == vec_dot_type(w2.type);
}

size_t act_row_bytes(const Tensor &w, int64_t k) { return row_bytes(act_type(w), k); }

void convert_act_row(const Tensor &w, const float *x, uint8_t *out, int64_t k) {
    if (f32_acts(w)) round_through(vec_dot_type(w.type), x, reinterpret_cast<float *>(out), k);
    else quantize_row(act_type(w), x, out, k);
}

void split_rows(const Tensor &w, int64_t n_rows, int ith, int nth, int64_t &b, int64_t &e) {
    if (!is_x16(w)) return split(n_rows, ith, nth, b, e);
    split(n_rows / 16, ith, nth, b, e);
    b *= 16;
    e *= 16;
}

void dot_rows(const Tensor &w, const uint8_t *wbase, const uint8_t *act, size_t act_stride, int64_t m, float *out,
              size_t ldo, int64_t b, int64_t e) {
    const int slot = kernel_slot(w);
    if (e <= b || slot < 0) return;  // slot < 0: an _X16 layout of no type (supports_ refuses it)
    const int64_t k = w.ne[0];
    const quant::GemmFn gemm = quant::active_kernels().gemm[slot];
    // _X16 weights always go through the gemm, decode included, and so do
    // the types whose gemm reads f32 activations (the rows are those); the
    // tiles do their own cache blocking over these rows.
    if (is_x16(w) || f32_acts(w) || (gemm && m >= kGemmMinTokens)) {
        gemm(k, wbase + (size_t)b * w.nb[1], w.nb[1], e - b, act, act_stride, m, out + b, ldo);
        return;
    }
    // Rows in blocks so that a block of weights stays in cache while it is
    // dotted with every activation row.
    constexpr int64_t kRowBlock = 16;
    const VecDotFn dot = vec_dot_fn(w.type);
    for (int64_t r0 = b; r0 < e; r0 += kRowBlock) {
        const int64_t r1 = r0 + kRowBlock < e ? r0 + kRowBlock : e;
        for (int64_t t = 0; t < m; ++t) {
            const void *a = act + (size_t)t * act_stride;
            float *o = out + (size_t)t * ldo;
            for (int64_t r = r0; r < r1; ++r) o[r] = dot(k, wbase + (size_t)r * w.nb[1], a);
        }
    }
}

} // namespace matmul

size_t work_size_mul_mat(const Node &n, int) {
    const Tensor &w = *n.src[0];
    const size_t act = matmul::converts_acts(w) ? matmul::act_row_bytes(w, n.src[1]->ne[0]) * (size_t)n.src[1]->nrows() : 0;
    return (act + 63) & ~(size_t)63;
}

bool matmul::weight_ok(const Tensor &w) {
    if (is_x16(w)) {
        Tensor one = w;
        one.ne[2] = one.ne[3] = 1;
        return quant::active_kernels().gemm[kernel_slot(w)] != nullptr && whole_x16_groups(one);
    }
    return w.layout == 0 && vec_dot_fn(w.type) != nullptr && w.nb[0] == dtype_info(w.type).block_bytes;
}

bool supports_mul_mat(const Node &n) {
    const Tensor *w = n.src[0], *x = n.src[1];
    if (!(is_f32(x) && is_f32(n.dst) && x->ne[0] == w->ne[0] && n.dst->ne[0] == w->ne[1] &&
          n.dst->nrows() == x->nrows()))
        return false;
    return w->ne[2] == 1 && w->ne[3] == 1 && matmul::weight_ok(*w);
}

void op_mul_mat(const Node &n, const OpCtx &c) {
    const Tensor *w = n.src[0], *x = n.src[1];
    const int64_t k = x->ne[0];
    const int64_t m = x->nrows();     // activation rows (tokens)
    const int64_t n_out = w->ne[1];   // weight rows (output features)

    const uint8_t *act = static_cast<const uint8_t *>(x->data);
    size_t act_stride = x->nb[1];
    if (matmul::converts_acts(*w)) {
        act_stride = matmul::act_row_bytes(*w, k);
        if (!c.acts_ready) {
            int64_t b, e;
            split(m, c.ith, c.nth, b, e);
            for (int64_t r = b; r < e; ++r)
                matmul::convert_act_row(*w, static_cast<const float *>(x->data) + r * k,
                                        c.wdata + (size_t)r * act_stride, k);
            c.barrier();
        }
        act = c.wdata;
    }
    int64_t b, e;
    matmul::split_rows(*w, n_out, c.ith, c.nth, b, e);
    matmul::dot_rows(*w, static_cast<const uint8_t *>(w->data), act, act_stride, m, static_cast<float *>(n.dst->data),
                     (size_t)n_out, b, e);
}

namespace {
bool overlaps(const Tensor *a, const Tensor *b) {
    const uint8_t *a0 = static_cast<const uint8_t *>(a->data), *b0 = static_cast<const uint8_t *>(b->data);
    return a0 < b0 + b->nbytes() && b0 < a0 + a->nbytes();
}
} // namespace

void acts_converted_before(const Node *nodes, int n_nodes, const uint8_t *uses_scratch, uint8_t *ready) {
    int last = -1;  // the last node that used the scratch
    for (int i = 0; i < n_nodes; ++i) {
        const Node &n = nodes[i];
        ready[i] = 0;
        if (n.op == Op::MUL_MAT && last >= 0 && nodes[last].op == Op::MUL_MAT && nodes[last].src[1] == n.src[1] &&
            matmul::same_acts(*nodes[last].src[0], *n.src[0])) {
            bool clean = true;
            for (int j = last + 1; j < i && clean; ++j) clean = !overlaps(nodes[j].dst, n.src[1]);
            ready[i] = clean;
        }
        if (uses_scratch[i]) last = i;
    }
}

} // namespace vt::cpu
