#include "backend/graph.h"

#include <algorithm>
#include <climits>

#include "core/error.h"

namespace vt {

namespace {
constexpr size_t kAlign = 64;  // cache line; also what AVX-512 loads like
size_t align_up(size_t n) { return (n + kAlign - 1) & ~(kAlign - 1); }
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

Tensor *Graph::new_tensor(DType type, int64_t ne0, int64_t ne1, const char *name, int def) {
    if (tensors_.size() == max_tensors_) fail(VT_ERR_INTERNAL, "graph has more than %zu tensors", max_tensors_);
    Tensor t;
    tensor_init(t, type, ne0, ne1, 1, 1, nullptr, name);
    tensors_.push_back(t);
    Owned o;
    o.size = align_up(t.nbytes());
    o.def = def;
    owned_.push_back(o);
    return &tensors_.back();
}

int Graph::owned_index(const Tensor *t) const {
    if (tensors_.empty() || t < &tensors_.front() || t > &tensors_.back()) return -1;
    return (int)(t - &tensors_.front());
}

Tensor *Graph::input(DType type, int64_t ne0, int64_t ne1, const char *name) {
    return new_tensor(type, ne0, ne1, name, -1);
}

Tensor *Graph::op(Op op, DType type, int64_t ne0, int64_t ne1, std::initializer_list<Tensor *> src,
                  OpParams params, const char *name) {
    if ((int)src.size() != op_n_src(op)) fail(VT_ERR_INTERNAL, "op %s takes %d sources", op_name(op), op_n_src(op));
    int idx = (int)nodes_.size();
    Node n{};
    n.op = op;
    n.params = params;
    int s = 0;
    for (Tensor *t : src) {
        n.src[s++] = t;
        int oi = owned_index(t);
        if (oi >= 0) owned_[oi].last_use = idx;
    }
    n.dst = new_tensor(type, ne0, ne1, name, idx);
    nodes_.push_back(n);
    return n.dst;
}

void Graph::mark_output(Tensor *t) {
    int oi = owned_index(t);
    if (oi >= 0) owned_[oi].last_use = INT32_MAX;
}

size_t Graph::plan() {
    // Walk nodes in order: allocate each node's output just before it runs
    // and release tensors right after their last reader. An output never
    // shares memory with the sources of its own node.
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
        if (o.def < 0) alloc(o);
    // Index the tensors by the node that defines them and by their last use.
    for (size_t ni = 0; ni < nodes_.size(); ++ni) {
        int di = owned_index(nodes_[ni].dst);
        alloc(owned_[di]);
        for (const Tensor *s : nodes_[ni].src) {
            int si = owned_index(s);
            if (si >= 0 && owned_[si].last_use == (int)ni) {
                owned_[si].last_use = -2;  // released; a repeated source is not released twice
                release(owned_[si]);
            }
        }
        if (owned_[di].last_use == -1) release(owned_[di]);  // never read: dead result
    }
    return top;
}

void Graph::bind(uint8_t *arena) {
    for (size_t i = 0; i < tensors_.size(); ++i) tensors_[i].data = arena + owned_[i].offset;
}

} // namespace vt
