// Runs a model's graph on its device. Nodes the device does not support
// (vt_device_i::supports_op), or whose sources lie in memory it cannot
// read, run on the CPU instead: their device-resident sources are copied
// to host scratch, the node computes there, and what it wrote is copied
// back. Each such node is counted, and the first of each op is logged, so a
// new architecture runs on a GPU before its last op is ported there.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace vt {

class GraphExecutor {
public:
    // Throws vt::Error when a stream cannot be made.
    GraphExecutor(vt_device *device, uint32_t n_threads);

    vt_device *device() const { return device_; }

    // Computes nodes in order. Throws vt::Error with the backend's status.
    void compute(const std::vector<Node> &nodes);

    // Nodes run on the CPU for the device so far, and the bytes copied for them.
    uint64_t fallback_nodes() const { return fallback_nodes_; }
    uint64_t fallback_bytes() const { return fallback_bytes_; }

private:
    bool runs_on_device(const Node &n) const;
    void run(vt_stream *stream, const Node *nodes, int n_nodes);
    void run_on_cpu(const Node &n);

    vt_device *device_;
    uint32_t n_threads_;
    bool host_;  // the device computes on host memory: no splitting
    StreamPtr stream_;
    StreamPtr cpu_stream_;  // made at the first fallback
    std::vector<std::vector<uint8_t>> scratch_;  // per source of a fallback node, and its dst
    std::vector<bool> logged_;                   // per op: fallback logged
    uint64_t fallback_nodes_ = 0, fallback_bytes_ = 0;
};

} // namespace vt
