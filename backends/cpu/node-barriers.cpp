// Which barriers between the nodes of a graph can go (barriers_after in
// cpu-ops.h). A barrier after node i is needed only when node i + 1 touches
// memory that a node since the last barrier touched, one of them writing
// (read after write, write after read, write after write), and the threads
// may touch different parts of it. Two accesses split alike by rows (thread
// ith takes rows split(n, ith, nth) of the same rows in both) never meet
// another thread's: a residual ADD, the RMS_NORM after it and the activation
// conversion of the MUL_MAT after that run on each thread's own rows. Q, K
// and V's products (one input, three outputs) and the two ROPEs need no
// barrier between them either. Ops whose access pattern is not described
// here keep a barrier on both sides.
#include "cpu-ops.h"
#include "matmul.h"
#include "ops-attention-paged.h"

namespace vt::cpu {

namespace {

// Bytes [lo, hi) read or written; rows > 0: split by rows, thread ith taking
// rows split(rows, ith, nth) of row_bytes each from lo.
struct Access {
    const uint8_t *lo, *hi;
    bool write;
    int64_t rows;
    size_t row_bytes;
};

bool conflict(const Access &a, const Access &b) {
    if (!(a.write || b.write) || a.lo >= b.hi || b.lo >= a.hi) return false;
    return !(a.rows > 0 && a.rows == b.rows && a.row_bytes == b.row_bytes && a.lo == b.lo);
}

// Memory from t.data to the end of its last element.
Access whole(const Tensor *t, bool write) {
    const uint8_t *p = static_cast<const uint8_t *>(t->data);
    size_t last = row_bytes(t->type, t->ne[0]);
    for (int d = 1; d < kMaxDims; ++d) last += (size_t)(t->ne[d] - 1) * t->nb[d];
    return {p, p + last, write, 0, 0};
}
// t (contiguous) as `rows` rows split among the threads.
Access by_rows(const Tensor *t, int64_t rows, bool write) {
    Access a = whole(t, write);
    if (t->is_contiguous() && rows > 0 && t->nbytes() % (size_t)rows == 0) {
        a.rows = rows;
        a.row_bytes = t->nbytes() / (size_t)rows;
    }
    return a;
}

// Fixed sizes: the plan is made every step, and a decode step allocates
// nothing on the heap.
struct Phase {
    static constexpr int kMax = 64;
    Access a[kMax];
    int n = 0;
    Phase() = default;
    Phase(std::initializer_list<Access> l) {
        for (const Access &x : l) push_back(x);
    }
    bool push_back(const Access &x) {
        if (n == kMax) return false;
        a[n++] = x;
        return true;
    }
    const Access *begin() const { return a; }
    const Access *end() const { return a + n; }
};
struct Phases {
    Phase p[2];
    int n = 0;  // 0: not described
    Phases() = default;
    Phases(std::initializer_list<Phase> l) {
        for (const Phase &x : l) p[n++] = x;
    }
};

// The phases of node n (separated by the op's own barriers), or none when
// its accesses are not described here.
Phases phases(const Node &n, bool acts_ready, const uint8_t *wdata, size_t wsize) {
    const Tensor *d = n.dst, *s0 = n.src[0], *s1 = n.src[1];
    const Access scratch_r{wdata, wdata + wsize, false, 0, 0}, scratch_w{wdata, wdata + wsize, true, 0, 0};
    auto reads_rest = [&](Phase &p, int from) {
        for (int i = from; i < kMaxSrc; ++i)
            if (n.src[i]) p.push_back(whole(n.src[i], false));
    };
    switch (n.op) {
    case Op::RMS_NORM: {  // rows split(nrows); the weight read whole
        Phase p{by_rows(s0, s0->nrows(), false), by_rows(d, d->nrows(), true)};
        reads_rest(p, 1);
        return {p};
    }
    case Op::ADD:
    case Op::MUL: {  // rows split(dst rows); a broadcast src1 read whole
        const int64_t r = d->nrows();
        Phase p{by_rows(s0, r, false), by_rows(d, r, true),
                same_shape(s0, s1) ? by_rows(s1, r, false) : whole(s1, false)};
        return {p};
    }
    case Op::SCALE:
    case Op::SWIGLU:
    case Op::GEGLU: {  // elements split(nelements)
        const int64_t e = d->nelements();
        Phase p{by_rows(d, e, true)};
        for (int i = 0; i < kMaxSrc; ++i)
            if (n.src[i]) p.push_back(by_rows(n.src[i], e, false));
        return {p};
    }
    case Op::ROPE: {  // tokens split(n_tok); positions and factors whole
        const int64_t t = s0->ne[2];
        Phase p{by_rows(s0, t, false), by_rows(d, t, true)};
        reads_rest(p, 1);
        return {p};
    }
    case Op::GET_ROWS: {  // output rows split(ids); the table read whole
        Phase p{by_rows(d, s1->ne[0], true), whole(s0, false), whole(s1, false)};
        return {p};
    }
    case Op::MUL_MAT: {
        if (!matmul::converts_acts(*s0)) return {{whole(s1, false), whole(s0, false), whole(d, true)}};
        // Phase 2: every thread reads all converted rows and writes its
        // columns of every output row.
        Phase dots{scratch_r, whole(s0, false), whole(d, true)};
        if (acts_ready) return {dots};
        // Phase 1 converts rows split(m) into rows of the scratch.
        const int64_t m = s1->nrows();
        const size_t stride = matmul::act_row_bytes(*s0, s1->ne[0]);
        const Access conv{wdata, wdata + stride * (size_t)m, true, m, stride};
        return {{by_rows(s1, m, false), conv}, dots};
    }
    case Op::ATTN_PAGED: {
        if (attn_is_latent(n)) return {};
        // Each thread's scratch is its own, but read the scratch as shared:
        // MUL_MAT's phases use it too.
        Phase attend{whole(s0, false), whole(d, true), scratch_w};
        reads_rest(attend, 3);
        if (!s1) return {attend};  // read-only: no phase 1, no barrier
        // Phase 1: tokens split(n_tok) write their K and V rows into the
        // pools (anywhere in them).
        const int64_t t = s0->ne[2];
        Phase write{by_rows(s1, t, false), by_rows(n.src[2], t, false), whole(n.src[3], true),
                    whole(n.src[4], true), whole(n.src[5], false), scratch_w};
        return {write, attend};
    }
    default: return {};
    }
}

bool conflicts(const Phase &p, const Phase &epoch) {
    for (const Access &a : p)
        for (const Access &b : epoch)
            if (conflict(a, b)) return true;
    return false;
}

} // namespace

void barriers_after(const Node *nodes, int n_nodes, const uint8_t *acts_ready, const uint8_t *wdata, size_t wsize,
                    uint8_t *after) {
    Phase epoch;  // what the nodes since the last barrier touch
    bool open = false;  // whether a node without a description came since it
    for (int i = 0; i < n_nodes; ++i) {
        after[i] = 0;
        const Phases ph = phases(nodes[i], acts_ready[i] != 0, wdata, wsize);
        if (i > 0 && (open || ph.n == 0 || conflicts(ph.p[0], epoch))) {
            after[i - 1] = 1;
            epoch.n = 0;
            open = false;
        }
        if (ph.n == 0) {
            open = true;
        } else if (ph.n == 1) {
            bool fits = true;
            for (const Access &a : ph.p[0]) fits = fits && epoch.push_back(a);
            // No room to remember them all: meet before the next node.
            if (!fits) open = true;
        } else {
            epoch = ph.p[1];  // the op's own barrier settled everything before
        }
    }
    // The last node needs none: run() returns when every thread is done.
}

} // namespace vt::cpu
