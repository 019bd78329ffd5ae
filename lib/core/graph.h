// A forward graph: nodes in execution order over tensors the graph owns
// (intermediates and inputs) or borrows (weights, KV caches). Models build it
// (lib/models), backends execute its nodes (lib/backend).
//
// Tensors have up to 4 dimensions (ne[0] contiguous). A view (view(),
// reshape()) is a tensor over another's memory with its own shape and
// strides; it owns nothing and keeps its base alive as long as it is read.
//
// Memory of owned tensors is planned after building: each lives from the node
// that defines it (or the start, for inputs) to its last use, and a first-fit
// allocator packs them into one arena, so a step needs a few MB instead of
// one buffer per intermediate. Building reuses the vectors' capacity: a decode
// loop that rebuilds the same graph allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/tensor.h"

namespace vt {

// Up to kMaxDims extents, trailing ones implied: {E, n} is (E, n, 1, 1).
using Shape = std::initializer_list<int64_t>;

class Graph {
public:
    explicit Graph(size_t max_tensors = 8192);

    // Forgets all nodes and tensors; keeps capacity.
    void reset();
    // Room for at least max_tensors tensors; only on an empty graph (after
    // reset()), since growing moves the tensors.
    void reserve(size_t max_tensors);

    // A tensor the caller fills after bind() (token ids, positions...).
    Tensor *input(DType type, Shape shape, const char *name = nullptr);

    // Appends a node of op O computing a new contiguous tensor; src holds
    // exactly OpTraits<O>::n_src entries (optional ones may be null).
    template <Op O>
    Tensor *op(DType type, Shape shape, std::initializer_list<Tensor *> src,
               const typename OpTraits<O>::Params &params = {}, const char *name = nullptr) {
        OpParams u{};
        OpTraits<O>::store(u, params);
        return add_node(O, type, shape, src, u, name);
    }

    // A view of base: shape ne with byte strides nb[1..] (nb[0] is the
    // element size), starting offset bytes into base.
    Tensor *view(Tensor *base, Shape shape, std::initializer_list<size_t> strides, size_t offset = 0);
    // base (contiguous) seen with another shape of the same element count.
    Tensor *reshape(Tensor *base, Shape shape);

    // Keeps t alive to the end (a result read after compute).
    void mark_output(Tensor *t);

    // Assigns arena offsets to owned tensors; returns the arena size needed.
    size_t plan();
    // Points owned tensors (and views of them) into an arena of at least
    // plan() bytes at base, in buffer (nullptr: plain host memory).
    void bind(uint8_t *base, vt_buffer *buffer = nullptr);

    const std::vector<Node> &nodes() const { return nodes_; }

private:
    struct Owned {
        size_t offset = 0;   // in the arena; for a view, into its base
        size_t size = 0;
        int def = -1;        // defining node, -1 for inputs
        int last_use = -1;   // last node reading it; INT32_MAX for outputs
        int view_of = -1;    // base tensor of a view of an owned tensor
    };
    Tensor *add_node(Op op, DType type, Shape shape, std::initializer_list<Tensor *> src, const OpParams &params,
                     const char *name);
    Tensor *new_tensor(DType type, Shape shape, const char *name, int def);
    int owned_index(const Tensor *t) const;
    // The tensor whose memory t uses: t itself, or the base of its view.
    int root_index(const Tensor *t) const;

    size_t max_tensors_;
    std::vector<Tensor> tensors_;   // capacity fixed: pointers stay valid
    std::vector<Owned> owned_;      // parallel to tensors_
    std::vector<Node> nodes_;
    std::vector<std::pair<size_t, size_t>> free_;  // scratch of plan(): (offset, size)
};

} // namespace vt
