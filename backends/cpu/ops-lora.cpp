// LORA: one adapter's low-rank update of the token rows of its requests,
// dst[:, t] = y[:, t] + s * (B . (A . x_t)) for the listed rows t, y copied
// for the rest (ops.def). The graph adds one such node per adapter present in
// a step after each base projection, as vLLM's Punica shrink/expand does per
// token segment; A (k, r) and B (r, n) are small (r = 4..64).
//
// Both products are matmul::dot_rows, the kernels of MUL_MAT, whose outputs
// do not depend on how many rows share a product nor on which slice of the
// weight rows a thread takes: a token gets the same bits whichever rows and
// thread count it is batched with, as vt promises a request's tokens.
//
// Phases (two barriers, none when no row is listed: then dst = y; the op
// runs once per projection and adapter per step, so at decode the per-node
// cost matters more than the flops):
//  1. every thread copies its share of dst from y and converts its share of
//     the listed x rows for A's kernels into the scratch;
//  2. U = A . X (r values per listed row), the threads tiling r x n_rows:
//     each takes a slice of A's rows and, when r is smaller than the thread
//     count, of the listed rows too (so rank 4 still keeps 16 threads busy);
//  3. each thread takes a slice of B's n rows and, chunk by chunk of listed
//     rows, converts the chunk's U rows for B itself (r values a row: cheaper
//     than a barrier), dots its slice into private scratch and writes
//     y + s * z into its slice of each listed row of dst.
#include <algorithm>
#include <cstring>

#include "cpu-ops.h"
#include "matmul.h"

namespace vt::cpu {

namespace {
constexpr size_t kAlign = 64;
size_t align_up(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }
// Listed rows per product in phase 3: enough for the gemm tiles, and the
// private scratch stays small (chunk x a thread's slice of n floats).
constexpr int64_t kChunk = 64;

struct LoraLayout {
    int64_t k, r, n_out, m, n_rows;
    size_t a_bytes;   // one listed x row as A's kernels read it
    size_t b_bytes;   // one U row as B's kernels read it
    int64_t slice;    // the most rows of B one thread takes
    size_t off_u, off_thread, per_thread, total;  // byte offsets into the scratch
};

// Rows of B thread ith takes (whole groups of 16 for an _X16 B).
void b_rows(const Tensor &b, int ith, int nth, int64_t &rb, int64_t &re) {
    matmul::split_rows(b, b.ne[1], ith, nth, rb, re);
}

LoraLayout lora_layout(const Node &n, int nth) {
    const Tensor &a = *n.src[2], &b = *n.src[3];
    LoraLayout l;
    l.k = a.ne[0];
    l.r = a.ne[1];
    l.n_out = b.ne[1];
    l.m = n.src[0]->ne[1];
    l.n_rows = n.src[4]->ne[0];
    l.a_bytes = matmul::converts_acts(a) ? matmul::act_row_bytes(a, l.k) : (size_t)l.k * sizeof(float);
    l.b_bytes = matmul::converts_acts(b) ? matmul::act_row_bytes(b, l.r) : 0;
    l.slice = 0;
    for (int i = 0; i < nth; ++i) {
        int64_t rb, re;
        b_rows(b, i, nth, rb, re);
        l.slice = std::max(l.slice, re - rb);
    }
    // Scratch: the listed x rows, U (n_rows x r f32), then each thread's
    // converted U chunk and its z chunk.
    l.off_u = align_up((size_t)l.n_rows * l.a_bytes);
    l.off_thread = l.off_u + align_up((size_t)(l.n_rows * l.r) * sizeof(float));
    l.per_thread = align_up((size_t)kChunk * l.b_bytes) + align_up((size_t)(kChunk * l.slice) * sizeof(float));
    l.total = l.off_thread + (size_t)nth * l.per_thread;
    return l;
}

// A plain 2-D weight the matmul kernels read, rows of whole blocks.
bool lora_weight_ok(const Tensor &w) {
    return w.ne[2] == 1 && w.ne[3] == 1 && w.ne[0] % dtype_info(w.type).block_elems == 0 && matmul::weight_ok(w);
}

// Thread ith's tile of U = A . X in phase 2: A rows [rb, re) (whole groups
// of 16 for an _X16 A) and listed rows [tb, te). The threads are laid out
// as pa A-row parts times pt token parts; any left over idle.
void u_tile(const Tensor &a, int64_t n_rows, int ith, int nth, int64_t &rb, int64_t &re, int64_t &tb, int64_t &te) {
    const int64_t unit = is_x16(a) ? 16 : 1, units = a.ne[1] / unit;
    const int64_t pa = std::min<int64_t>(nth, units), pt = nth / pa;
    rb = re = tb = te = 0;
    if (ith >= pa * pt) return;
    split(units, (int)(ith % pa), (int)pa, rb, re);
    rb *= unit;
    re *= unit;
    split(n_rows, (int)(ith / pa), (int)pt, tb, te);
}
} // namespace

bool supports_lora(const Node &n) {
    const Tensor *y = n.src[0], *x = n.src[1], *a = n.src[2], *b = n.src[3], *rows = n.src[4], *s = n.src[5];
    const Tensor *d = n.dst;
    if (!(y && x && a && b && rows && s && d)) return false;
    // y and dst: contiguous f32 (n, m); x: f32 rows (k, m), any row stride.
    if (!(is_f32(y) && is_f32(d) && same_shape(y, d) && y->ne[2] == 1 && y->ne[3] == 1)) return false;
    if (!(x->type == DType::F32 && x->nb[0] == sizeof(float) && x->ne[1] == y->ne[1] && x->ne[2] == 1 && x->ne[3] == 1))
        return false;
    if (!(a->ne[1] >= 1 && lora_weight_ok(*a) && lora_weight_ok(*b) && x->ne[0] == a->ne[0] && b->ne[0] == a->ne[1] &&
          b->ne[1] == y->ne[0]))
        return false;
    // The row list and its scales: one of each per listed row, n_rows <= m.
    return rows->type == DType::I32 && rows->is_contiguous() && rows->ne[1] == 1 && rows->ne[2] == 1 &&
           rows->ne[3] == 1 && rows->ne[0] <= y->ne[1] && s->type == DType::F32 && s->is_contiguous() &&
           s->ne[0] == rows->ne[0] && s->ne[1] == 1 && s->ne[2] == 1 && s->ne[3] == 1;
}

size_t work_size_lora(const Node &n, int nth) { return lora_layout(n, nth).total; }

void op_lora(const Node &n, const OpCtx &c) {
    const Tensor &y = *n.src[0], &x = *n.src[1], &a = *n.src[2], &b = *n.src[3];
    const int32_t *rows = static_cast<const int32_t *>(n.src[4]->data);
    const float *scales = static_cast<const float *>(n.src[5]->data);
    const LoraLayout l = lora_layout(n, c.nth);
    const float *ys = static_cast<const float *>(y.data);
    float *dst = static_cast<float *>(n.dst->data);
    auto listed = [&](int64_t i) { return rows[i] >= 0 && rows[i] < l.m; };

    // Phase 1: dst = y; the listed x rows (zeros in a skipped entry's slot:
    // its products are computed and never written out).
    int64_t b0, e0;
    split(l.m, c.ith, c.nth, b0, e0);
    if (e0 > b0) std::memcpy(dst + b0 * l.n_out, ys + b0 * l.n_out, (size_t)((e0 - b0) * l.n_out) * sizeof(float));
    if (l.n_rows == 0) return;  // a plain copy: every thread returns here, no barrier is left waiting
    uint8_t *xs = c.wdata;
    split(l.n_rows, c.ith, c.nth, b0, e0);
    for (int64_t i = b0; i < e0; ++i) {
        if (!listed(i)) {
            std::memset(xs + (size_t)i * l.a_bytes, 0, l.a_bytes);
            continue;
        }
        const float *xt =
            reinterpret_cast<const float *>(static_cast<const uint8_t *>(x.data) + (size_t)rows[i] * x.nb[1]);
        if (matmul::converts_acts(a)) matmul::convert_act_row(a, xt, xs + (size_t)i * l.a_bytes, l.k);
        else std::memcpy(xs + (size_t)i * l.a_bytes, xt, (size_t)l.k * sizeof(float));
    }
    c.barrier();

    // Phase 2: U = A . X, row i of U the r values of listed row i.
    float *u = reinterpret_cast<float *>(c.wdata + l.off_u);
    int64_t rb, re, tb, te;
    u_tile(a, l.n_rows, c.ith, c.nth, rb, re, tb, te);
    if (te > tb)
        matmul::dot_rows(a, static_cast<const uint8_t *>(a.data), xs + (size_t)tb * l.a_bytes, l.a_bytes, te - tb,
                         u + tb * l.r, (size_t)l.r, rb, re);
    c.barrier();

    // Phase 3: this thread's rows [rb, re) of B with every listed row, a
    // chunk at a time; z lands in private scratch as (chunk, re - rb), so
    // B's rows are passed from rb on, as rows [0, re - rb).
    b_rows(b, c.ith, c.nth, rb, re);
    if (re <= rb) return;
    const int64_t w = re - rb;
    uint8_t *mine = c.wdata + l.off_thread + (size_t)c.ith * l.per_thread;
    uint8_t *ub = mine;
    float *z = reinterpret_cast<float *>(mine + align_up((size_t)kChunk * l.b_bytes));
    const uint8_t *bbase = static_cast<const uint8_t *>(b.data) + (size_t)rb * b.nb[1];
    for (int64_t i0 = 0; i0 < l.n_rows; i0 += kChunk) {
        const int64_t cnt = std::min(kChunk, l.n_rows - i0);
        const uint8_t *act = reinterpret_cast<const uint8_t *>(u + i0 * l.r);
        size_t stride = (size_t)l.r * sizeof(float);
        if (matmul::converts_acts(b)) {
            for (int64_t j = 0; j < cnt; ++j) matmul::convert_act_row(b, u + (i0 + j) * l.r, ub + (size_t)j * l.b_bytes, l.r);
            act = ub;
            stride = l.b_bytes;
        }
        matmul::dot_rows(b, bbase, act, stride, cnt, z, (size_t)w, 0, w);
        for (int64_t j = 0; j < cnt; ++j) {
            if (!listed(i0 + j)) continue;
            const float sc = scales[i0 + j];
            const int64_t off = (int64_t)rows[i0 + j] * l.n_out + rb;
            const float *zj = z + j * w;
            for (int64_t o = 0; o < w; ++o) {
                // Two statements, two roundings: no compiler fuses them
                // into a multiply-add (clang's default contracts only
                // within one expression; GCC's ISO mode not at all).
                const float p = sc * zj[o];
                dst[off + o] = ys[off + o] + p;
            }
        }
    }
}

} // namespace vt::cpu
