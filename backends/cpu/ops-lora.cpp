// LORA: one adapter's low-rank update of the token rows of its requests,
// dst[:, t] = y[:, t] + s * (B . (A . x_t)) for the listed rows t, y copied
// for the rest (ops.def). The graph adds one such node per adapter present in
// a step after each base projection, as vLLM's Punica shrink/expand does per
// token segment; A (k, r) and B (r = 4..64 columns) are small, so at decode
// the node's fixed costs (barriers, passes over memory) matter more than its
// flops.
//
// Shrink, u = A . x_t, is matmul::dot_rows, the kernels of MUL_MAT: its
// outputs do not depend on how many rows share the product. Expand reads B
// transposed (r rows of n, f32: the loader stores it so) as r scaled row
// additions, u[0] * Bt[0] + u[1] * Bt[1] + ..., vectorized along n; a dot of
// r (often 8) values per output would leave the vector units idle. Every
// element is summed in the same order whichever thread computes it, so a
// token gets the same bits whatever it is batched with.
//
// One barrier (none when no row is listed: then dst = y):
//  1. every thread copies its share of dst from y, and computes u for its
//     share of the listed rows (converting each x row for A's kernels into
//     its own scratch);
//  2. every thread takes a slice of n and, for each listed row, writes
//     y + s * z into that slice.
#include <algorithm>
#include <cstring>

#include "cpu-ops.h"
#include "matmul.h"

namespace vt::cpu {

namespace {
constexpr size_t kAlign = 64;
size_t align_up(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }
// Listed rows per shrink product: enough for the gemm tiles, and the
// per-thread scratch of converted x rows stays small.
constexpr int64_t kChunk = 16;
// Slices of n in whole cache lines of f32.
constexpr int64_t kLine = 16;

struct LoraLayout {
    int64_t k, r, n_out, m, n_rows;
    size_t a_bytes;     // one listed x row as A's kernels read it
    size_t off_thread;  // each thread's x chunk and z slice after U
    size_t per_thread, total;
};

LoraLayout lora_layout(const Node &n, int nth) {
    const Tensor &a = *n.src[2];
    LoraLayout l;
    l.k = a.ne[0];
    l.r = a.ne[1];
    l.n_out = n.src[3]->ne[0];
    l.m = n.src[0]->ne[1];
    l.n_rows = n.src[4]->ne[0];
    l.a_bytes = align_up(matmul::converts_acts(a) ? matmul::act_row_bytes(a, l.k) : (size_t)l.k * sizeof(float));
    l.off_thread = align_up((size_t)(l.n_rows * l.r) * sizeof(float));  // U: n_rows x r f32
    l.per_thread = (size_t)kChunk * l.a_bytes + align_up((size_t)l.n_out * sizeof(float));
    l.total = l.off_thread + (size_t)nth * l.per_thread;
    return l;
}

// A plain 2-D weight the matmul kernels read, rows of whole blocks.
bool lora_weight_ok(const Tensor &w) {
    return w.ne[2] == 1 && w.ne[3] == 1 && w.ne[0] % dtype_info(w.type).block_elems == 0 && matmul::weight_ok(w);
}

// z[0, w) = u[0] * bt[0] + ... + u[r-1] * bt[r-1], rows ld floats apart, in
// that order for every element.
void expand(const float *__restrict bt, size_t ld, const float *__restrict u, int64_t r, int64_t w,
            float *__restrict z) {
    for (int64_t o = 0; o < w; ++o) z[o] = u[0] * bt[o];
    for (int64_t j = 1; j < r; ++j) {
        const float uj = u[j];
        const float *__restrict row = bt + (size_t)j * ld;
        for (int64_t o = 0; o < w; ++o) {
            const float p = uj * row[o];  // two statements: never contracted into a multiply-add
            z[o] += p;
        }
    }
}
} // namespace

bool supports_lora(const Node &n) {
    const Tensor *y = n.src[0], *x = n.src[1], *a = n.src[2], *bt = n.src[3], *rows = n.src[4], *s = n.src[5];
    const Tensor *d = n.dst;
    if (!(y && x && a && bt && rows && s && d)) return false;
    // y and dst: contiguous f32 (n, m); x: f32 rows (k, m), any row stride.
    if (!(is_f32(y) && is_f32(d) && same_shape(y, d) && y->ne[2] == 1 && y->ne[3] == 1)) return false;
    if (!(x->type == DType::F32 && x->nb[0] == sizeof(float) && x->ne[1] == y->ne[1] && x->ne[2] == 1 && x->ne[3] == 1))
        return false;
    // A any matmul weight (k, r); B transposed, contiguous f32 (n, r).
    if (!(a->ne[1] >= 1 && lora_weight_ok(*a) && x->ne[0] == a->ne[0] && is_f32(bt) && bt->ne[0] == y->ne[0] &&
          bt->ne[1] == a->ne[1] && bt->ne[2] == 1 && bt->ne[3] == 1))
        return false;
    // The row list and its scales: one of each per listed row, n_rows <= m.
    return rows->type == DType::I32 && rows->is_contiguous() && rows->ne[1] == 1 && rows->ne[2] == 1 &&
           rows->ne[3] == 1 && rows->ne[0] <= y->ne[1] && s->type == DType::F32 && s->is_contiguous() &&
           s->ne[0] == rows->ne[0] && s->ne[1] == 1 && s->ne[2] == 1 && s->ne[3] == 1;
}

size_t work_size_lora(const Node &n, int nth) { return lora_layout(n, nth).total; }

void op_lora(const Node &n, const OpCtx &c) {
    const Tensor &y = *n.src[0], &x = *n.src[1], &a = *n.src[2], &bt = *n.src[3];
    const int32_t *rows = static_cast<const int32_t *>(n.src[4]->data);
    const float *scales = static_cast<const float *>(n.src[5]->data);
    const LoraLayout l = lora_layout(n, c.nth);
    const float *ys = static_cast<const float *>(y.data);
    float *dst = static_cast<float *>(n.dst->data);
    auto listed = [&](int64_t i) { return rows[i] >= 0 && rows[i] < l.m; };

    // Phase 1: dst = y, and u for this thread's listed rows (zeros for a
    // skipped entry: never written out).
    int64_t b0, e0;
    split(l.m, c.ith, c.nth, b0, e0);
    if (e0 > b0) std::memcpy(dst + b0 * l.n_out, ys + b0 * l.n_out, (size_t)((e0 - b0) * l.n_out) * sizeof(float));
    if (l.n_rows == 0) return;  // a plain copy: every thread returns here, no barrier is left waiting
    float *u = reinterpret_cast<float *>(c.wdata);
    uint8_t *mine = c.wdata + l.off_thread + (size_t)c.ith * l.per_thread;
    uint8_t *xs = mine;
    float *z = reinterpret_cast<float *>(mine + (size_t)kChunk * l.a_bytes);
    split(l.n_rows, c.ith, c.nth, b0, e0);
    for (int64_t i0 = b0; i0 < e0; i0 += kChunk) {
        const int64_t cnt = std::min(kChunk, e0 - i0);
        for (int64_t j = 0; j < cnt; ++j) {
            uint8_t *xj = xs + (size_t)j * l.a_bytes;
            if (!listed(i0 + j)) {
                std::memset(xj, 0, l.a_bytes);
                continue;
            }
            const float *xt =
                reinterpret_cast<const float *>(static_cast<const uint8_t *>(x.data) + (size_t)rows[i0 + j] * x.nb[1]);
            if (matmul::converts_acts(a)) matmul::convert_act_row(a, xt, xj, l.k);
            else std::memcpy(xj, xt, (size_t)l.k * sizeof(float));
        }
        matmul::dot_rows(a, static_cast<const uint8_t *>(a.data), xs, l.a_bytes, cnt, u + i0 * l.r, (size_t)l.r, 0,
                         l.r);
    }
    c.barrier();

    // Phase 2: this thread's slice [ob, oe) of n for every listed row.
    int64_t ob, oe;
    split((l.n_out + kLine - 1) / kLine, c.ith, c.nth, ob, oe);
    ob *= kLine;
    oe = std::min(oe * kLine, l.n_out);
    if (oe <= ob) return;
    const float *bts = static_cast<const float *>(bt.data) + ob;
    const size_t ld = bt.nb[1] / sizeof(float);
    for (int64_t i = 0; i < l.n_rows; ++i) {
        if (!listed(i)) continue;
        expand(bts, ld, u + i * l.r, l.r, oe - ob, z);
        const float sc = scales[i];
        const int64_t off = (int64_t)rows[i] * l.n_out + ob;
        for (int64_t o = 0; o < oe - ob; ++o) {
            const float p = sc * z[o];
            dst[off + o] = ys[off + o] + p;
        }
    }
}

} // namespace vt::cpu
