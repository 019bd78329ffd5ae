// A forward graph: nodes in execution order over tensors the graph owns
// (intermediates and inputs) or borrows (weights, KV caches).
//
// Memory of owned tensors is planned after building: each lives from the node
// that defines it (or the start, for inputs) to its last use, and a first-fit
// allocator packs them into one arena, so a step needs a few MB instead of
// one buffer per intermediate. Building reuses the vectors' capacity: a decode
// loop that rebuilds the same graph allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace vt {

class Graph {
public:
    explicit Graph(size_t max_tensors = 8192);

    // Forgets all nodes and tensors; keeps capacity.
    void reset();

    // A tensor the caller fills after bind() (token ids, positions...).
    Tensor *input(DType type, int64_t ne0, int64_t ne1 = 1, const char *name = nullptr);

    // Appends a node computing a new contiguous f32/i32 tensor of shape ne.
    Tensor *op(Op op, DType type, int64_t ne0, int64_t ne1, std::initializer_list<Tensor *> src,
               OpParams params = {}, const char *name = nullptr);

    // Keeps t alive to the end (a result read after compute).
    void mark_output(Tensor *t);

    // Assigns arena offsets to owned tensors; returns the arena size needed.
    size_t plan();
    // Points owned tensors into an arena of at least plan() bytes.
    void bind(uint8_t *arena);

    const std::vector<Node> &nodes() const { return nodes_; }

private:
    struct Owned {
        size_t offset = 0;
        size_t size = 0;
        int def = -1;        // defining node, -1 for inputs
        int last_use = -1;   // last node reading it; INT32_MAX for outputs
    };
    Tensor *new_tensor(DType type, int64_t ne0, int64_t ne1, const char *name, int def);
    int owned_index(const Tensor *t) const;

    size_t max_tensors_;
    std::vector<Tensor> tensors_;   // capacity fixed: pointers stay valid
    std::vector<Owned> owned_;      // parallel to tensors_
    std::vector<Node> nodes_;
    std::vector<std::pair<size_t, size_t>> free_;  // scratch of plan(): (offset, size)
};

} // namespace vt
