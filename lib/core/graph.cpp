#include "core/graph.h"

#include <algorithm>
#include <climits>

#include "core/error.h"

namespace vt {

namespace {
constexpr size_t kAlign = 64;  // cache line; also what AVX-512 loads like
size_t align_up(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }
constexpr int kBorrowedView = -3;  // Owned::def of a view of memory the graph does not own

void shape_of(Shape shape, int64_t ne[kMaxDims]) {
    if (shape.size() == 0 || shape.size() > (size_t)kMaxDims)
        fail(VT_ERR_INTERNAL, "a graph tensor has 1 to %d dimensions, not %zu", kMaxDims, shape.size());
    int d = 0;
    for (int64_t n : shape) {
        if (n <= 0) fail(VT_ERR_INTERNAL, "graph tensor dimension %d is %lld", d, (long long)n);
        ne[d++] = n;
    }
    for (; d < kMaxDims; ++d) ne[d] = 1;
}
} // namespace

Graph::Graph(size_t max_tensors) : max_tensors_(max_tensors) {
    tensors_.reserve(max_tensors_);
    owned_.reserve(max_tensors_);
    nodes_.reserve(max_tensors_);
}

void Graph::reset() {
    tensors_.clear();
    owned_.clear();
    nodes_.clear();
}

void Graph::reserve(size_t max_tensors) {
    if (max_tensors <= max_tensors_) return;
    if (!tensors_.empty()) fail(VT_ERR_INTERNAL, "a graph grows only while empty");
    max_tensors_ = max_tensors;
    tensors_.reserve(max_tensors_);
    owned_.reserve(max_tensors_);
    nodes_.reserve(max_tensors_);
}

Tensor *Graph::new_tensor(DType type, Shape shape, const char *name, int def) {
    if (tensors_.size() == max_tensors_) fail(VT_ERR_INTERNAL, "graph has more than %zu tensors", max_tensors_);
    int64_t ne[kMaxDims];
    shape_of(shape, ne);
    Tensor t;
    tensor_init(t, type, ne[0], ne[1], ne[2], ne[3], nullptr, name);
    tensors_.push_back(t);
    Owned o;
    o.size = align_up(t.nbytes());
    o.def = def;
    owned_.push_back(o);
    return &tensors_.back();
}

int Graph::owned_index(const Tensor *t) const {
    if (!t || tensors_.empty() || t < &tensors_.front() || t > &tensors_.back()) return -1;
    const int i = (int)(t - &tensors_.front());
    return owned_[i].def == kBorrowedView ? -1 : i;
}

int Graph::root_index(const Tensor *t) const {
    int i = owned_index(t);
    while (i >= 0 && owned_[i].view_of >= 0) i = owned_[i].view_of;
    return i;
}

Tensor *Graph::input(DType type, Shape shape, const char *name) { return new_tensor(type, shape, name, -1); }

Tensor *Graph::add_node(Op op, DType type, Shape shape, std::initializer_list<Tensor *> src, const OpParams &params,
                        const char *name) {
    if ((int)src.size() != op_n_src(op)) fail(VT_ERR_INTERNAL, "op %s takes %d sources", op_name(op), op_n_src(op));
    int idx = (int)nodes_.size();
    Node n{};
    n.op = op;
    n.params = params;
    int s = 0;
    for (Tensor *t : src) {
        n.src[s++] = t;
        int ri = root_index(t);
        // An output stays an output, whatever reads it after it was marked.
        if (ri >= 0 && owned_[ri].last_use != INT32_MAX) owned_[ri].last_use = idx;
    }
    n.dst = new_tensor(type, shape, name, idx);
    nodes_.push_back(n);
    return n.dst;
}

Tensor *Graph::view(Tensor *base, Shape shape, std::initializer_list<size_t> strides, size_t offset) {
    if (tensors_.size() == max_tensors_) fail(VT_ERR_INTERNAL, "graph has more than %zu tensors", max_tensors_);
    if (strides.size() + 1 != shape.size())
        fail(VT_ERR_INTERNAL, "a view of %zu dimensions takes %zu strides", shape.size(), shape.size() - 1);
    int64_t ne[kMaxDims];
    shape_of(shape, ne);
    Tensor t = *base;
    size_t last = 0;  // offset of the view's last byte, to keep it inside base
    for (int d = 0; d < kMaxDims; ++d) t.ne[d] = ne[d];
    t.nb[0] = dtype_info(base->type).block_bytes;
    int d = 1;
    for (size_t nb : strides) t.nb[d++] = nb;
    for (; d < kMaxDims; ++d) t.nb[d] = t.nb[d - 1] * (size_t)t.ne[d - 1];
    for (d = 1; d < kMaxDims; ++d) last += (size_t)(t.ne[d] - 1) * t.nb[d];
    last += row_bytes(base->type, t.ne[0]);
    const size_t base_bytes = base->nbytes();
    if (offset + last > base_bytes)
        fail(VT_ERR_INTERNAL, "view of %zu bytes at %zu past its base's %zu", last, offset, base_bytes);
    const int bi = owned_index(base);
    Owned o;
    if (bi < 0) {
        o.def = kBorrowedView;
        t.data = static_cast<uint8_t *>(base->data) + offset;
    } else {
        o.def = owned_[bi].def;
        o.view_of = bi;
        o.offset = offset;
        t.data = nullptr;
    }
    tensors_.push_back(t);
    owned_.push_back(o);
    return &tensors_.back();
}

Tensor *Graph::reshape(Tensor *base, Shape shape) {
    if (!base->is_contiguous()) fail(VT_ERR_INTERNAL, "reshape of a non-contiguous tensor");
    int64_t ne[kMaxDims];
    shape_of(shape, ne);
    if (ne[0] * ne[1] * ne[2] * ne[3] != base->nelements())
        fail(VT_ERR_INTERNAL, "reshape changes the element count (%lld -> %lld)", (long long)base->nelements(),
             (long long)(ne[0] * ne[1] * ne[2] * ne[3]));
    const size_t nb1 = row_bytes(base->type, ne[0]);
    switch (shape.size()) {
    case 1: return view(base, shape, {});
    case 2: return view(base, shape, {nb1});
    case 3: return view(base, shape, {nb1, nb1 * (size_t)ne[1]});
    default: return view(base, shape, {nb1, nb1 * (size_t)ne[1], nb1 * (size_t)(ne[1] * ne[2])});
    }
}

void Graph::mark_output(Tensor *t) {
    int ri = root_index(t);
    if (ri >= 0) owned_[ri].last_use = INT32_MAX;
}

size_t Graph::plan() {
    // Walk nodes in order: allocate each node's output just before it runs
    // and release tensors right after their last reader. An output never
    // shares memory with the sources of its own node. Views take no memory
    // of their own: their readers count as readers of the base.
    free_.clear();
    size_t top = 0;
    auto alloc = [&](Owned &o) {
        for (size_t i = 0; i < free_.size(); ++i) {
            if (free_[i].second >= o.size) {
                o.offset = free_[i].first;
                free_[i].first += o.size;
                free_[i].second -= o.size;
                if (free_[i].second == 0) free_.erase(free_.begin() + (ptrdiff_t)i);
                return;
            }
        }
        o.offset = top;
        top += o.size;
    };
    auto release = [&](const Owned &o) {
        auto it = std::lower_bound(free_.begin(), free_.end(), std::make_pair(o.offset, (size_t)0));
        it = free_.insert(it, {o.offset, o.size});
        // Merge with the next and previous free blocks.
        auto next = it + 1;
        if (next != free_.end() && it->first + it->second == next->first) {
            it->second += next->second;
            free_.erase(next);
        }
        if (it != free_.begin()) {
            auto prev = it - 1;
            if (prev->first + prev->second == it->first) {
                prev->second += it->second;
                free_.erase(it);
            }
        }
    };
    // Inputs live from the start.
    for (Owned &o : owned_)
        if (o.def == -1 && o.view_of < 0) alloc(o);
    for (size_t ni = 0; ni < nodes_.size(); ++ni) {
        int di = owned_index(nodes_[ni].dst);
        alloc(owned_[di]);
        for (const Tensor *s : nodes_[ni].src) {
            int si = root_index(s);
            if (si >= 0 && owned_[si].last_use == (int)ni) {
                owned_[si].last_use = -2;  // released; a repeated source is not released twice
                release(owned_[si]);
            }
        }
        if (owned_[di].last_use == -1) release(owned_[di]);  // never read: dead result
    }
    return top;
}

void Graph::bind(uint8_t *arena, vt_buffer *buffer) {
    // Bases come before their views in tensors_, so one pass resolves chains.
    for (size_t i = 0; i < tensors_.size(); ++i) {
        const Owned &o = owned_[i];
        if (o.def == kBorrowedView) continue;
        if (o.view_of >= 0) tensors_[i].data = static_cast<uint8_t *>(tensors_[(size_t)o.view_of].data) + o.offset;
        else tensors_[i].data = arena + o.offset;
        tensors_[i].buffer = buffer;
    }
}

} // namespace vt
