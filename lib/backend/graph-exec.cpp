#include "backend/graph-exec.h"

#include "core/error.h"
#include "core/log.h"

namespace vt {

namespace {

// Bytes from t.data to the end of its last element (strided views included).
size_t extent(const Tensor &t) {
    size_t last = row_bytes(t.type, t.ne[0]);
    for (int d = 1; d < kMaxDims; ++d) last += (size_t)(t.ne[d] - 1) * t.nb[d];
    return last;
}

// Sources an op writes in place (ATTN_PAGED stores the new K/V into the
// pools it reads; the recurrent ops update their state pools).
bool writes_source(Op op, int i) {
    switch (op) {
    case Op::ATTN_PAGED: return i == 3 || i == 4;
    case Op::CONV1D_CAUSAL: return i == 3;
    case Op::GATED_DELTA_RULE: return i == 5;
    case Op::SSM_SCAN: return i == 5;
    default: return false;
    }
}

} // namespace

GraphExecutor::GraphExecutor(vt_device *device, uint32_t n_threads)
    : device_(device), n_threads_(n_threads), host_(device_is_host(device)),
      stream_(stream_create(device, n_threads)), logged_(kOpCount, false) {}

bool GraphExecutor::runs_on_device(const Node &n) const {
    if (!device_->iface->supports_op(device_, &n)) return false;
    const Tensor *ts[kMaxSrc + 1];
    ts[0] = n.dst;
    for (int i = 0; i < kMaxSrc; ++i) ts[i + 1] = n.src[i];
    for (const Tensor *t : ts) {
        if (!t) continue;
        if (!t->buffer) return false;  // plain host memory: only the CPU reads it
        if (!device_->iface->supports_buft(device_, t->buffer->buft)) return false;
    }
    return true;
}

void GraphExecutor::run(vt_stream *stream, const Node *nodes, int n_nodes) {
    vt_status st = stream->iface->graph_compute(stream, nodes, n_nodes);
    if (st != VT_OK) fail(st, "device %s failed to compute the graph", device_name(stream->device).c_str());
}

void GraphExecutor::run_on_cpu(const Node &n) {
    if (!cpu_stream_) cpu_stream_ = stream_create(cpu_device(), n_threads_);
    if (!logged_[(int)n.op]) {
        logged_[(int)n.op] = true;
        VT_LOG_WARN("%s cannot run %s (%s): it runs on the CPU, with copies", device_name(device_).c_str(),
                    op_name(n.op), dtype_name(n.src[0] ? n.src[0]->type : n.dst->type));
    }
    fallback_nodes_.fetch_add(1, std::memory_order_relaxed);
    Node h = n;
    Tensor copies[kMaxSrc + 1];
    scratch_.resize(kMaxSrc + 1);
    auto to_host = [&](Tensor *t, int slot, bool read) -> Tensor * {
        if (!t || tensor_is_host(*t)) return t;
        const size_t bytes = extent(*t);
        scratch_[(size_t)slot].resize(bytes);
        copies[slot] = *t;
        copies[slot].data = scratch_[(size_t)slot].data();
        copies[slot].buffer = nullptr;
        if (read) {
            tensor_get(*t, copies[slot].data, 0, bytes);
            fallback_bytes_.fetch_add(bytes, std::memory_order_relaxed);
        }
        return &copies[slot];
    };
    for (int i = 0; i < kMaxSrc; ++i) h.src[i] = to_host(n.src[i], i, true);
    h.dst = to_host(n.dst, kMaxSrc, false);
    run(cpu_stream_.get(), &h, 1);
    auto back = [&](Tensor *dev, Tensor *host) {
        if (dev == host) return;
        const size_t bytes = extent(*dev);
        tensor_set(*dev, host->data, 0, bytes);
        fallback_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    };
    back(n.dst, h.dst);
    for (int i = 0; i < kMaxSrc; ++i)
        if (writes_source(n.op, i)) back(n.src[i], h.src[i]);
}

void GraphExecutor::compute(const std::vector<Node> &nodes) {
    if (host_) {
        run(stream_.get(), nodes.data(), (int)nodes.size());
        return;
    }
    // Runs of device nodes go to the device in one call each.
    size_t i = 0;
    while (i < nodes.size()) {
        size_t j = i;
        while (j < nodes.size() && runs_on_device(nodes[j])) ++j;
        if (j > i) run(stream_.get(), nodes.data() + i, (int)(j - i));
        if (j < nodes.size()) run_on_cpu(nodes[j++]);
        i = j;
    }
}

} // namespace vt
