// Runs a model's graph on its device. Nodes the device does not support
// (vt_device_i::supports_op), or whose sources lie in memory it cannot
// read, run on the CPU instead: their device-resident sources are copied
// to host scratch, the node computes there, and what it wrote is copied
// back. Each such node is counted, and the first of each op is logged, so a
// new architecture runs on a GPU before its last op is ported there. The
// layers n_gpu_layers leaves on the CPU run so too: their weights are host
// memory, but the activations are in the arena on the device.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace vt {

class GraphExecutor {
public:
    // Throws vt::Error when a stream cannot be made.
    GraphExecutor(vt_device *device, uint32_t n_threads);

    vt_device *device() const { return device_; }
    // The host threads asked for (0: the backend's default).
    uint32_t n_threads() const { return n_threads_; }

    // Computes nodes in order. Throws vt::Error with the backend's status.
    void compute(const std::vector<Node> &nodes);

    // Fallbacks so far (nodes run on the CPU, with copies, for the device),
    // and the bytes copied for them. Any thread may read them.
    uint64_t fallback_nodes() const { return fallback_nodes_.load(std::memory_order_relaxed); }
    uint64_t fallback_bytes() const { return fallback_bytes_.load(std::memory_order_relaxed); }

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
    std::atomic<uint64_t> fallback_nodes_{0}, fallback_bytes_{0};
};

} // namespace vt
