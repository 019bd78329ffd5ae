// The CPU backend: runs a graph on a persistent thread pool. One pool job
// covers the whole graph; threads meet at a barrier between nodes (as ggml
// does), so there is no per-op wake-up.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "backend/backend-impl.h"
#include "core/error.h"
#include "core/log.h"
#include "core/quant.h"
#include "core/quant/kernels.h"
#include "core/quant/repack.h"
#include "cpu-ops.h"

namespace vt::cpu {
namespace {

struct CpuBackend {
    std::unique_ptr<ThreadPool> pool;
    uint8_t *wdata = nullptr;  // grows to the largest work size seen, then stays
    size_t wsize = 0;
};

struct GraphJob {
    CpuBackend *be;
    const Node *nodes;
    int n_nodes;
};

struct CpuOp {
    void (*run)(const Node &, const OpCtx &);
    bool (*supports)(const Node &);
    size_t (*work_size)(const Node &, int);
};
constexpr CpuOp kCpuOps[] = {
#define VT_OP(NAME, field, n_src, Params, desc) {op_##field, supports_##field, work_size_##field},
#include "core/ops.def"
#undef VT_OP
};
static_assert(sizeof(kCpuOps) / sizeof(kCpuOps[0]) == kOpCount, "one CPU entry per op");

void run_node(const Node &n, const OpCtx &c) { kCpuOps[(int)n.op].run(n, c); }

void graph_job(void *p, int ith, int nth) {
    auto *job = static_cast<GraphJob *>(p);
    OpCtx c{ith, nth, job->be->wdata, job->be->wsize, job->be->pool.get()};
    for (int i = 0; i < job->n_nodes; ++i) {
        run_node(job->nodes[i], c);
        c.barrier();
    }
}

} // namespace

size_t work_size(const Node &n, int nth) { return kCpuOps[(int)n.op].work_size(n, nth); }

bool supports(const Node &n) {
    if ((int)n.op < 0 || (int)n.op >= kOpCount) return false;
    return kCpuOps[(int)n.op].supports(n);
}

namespace {

const char *cpu_get_name(void *) { return "cpu"; }

bool cpu_supports_op(void *, const Node *node) { return supports(*node); }

vt_status cpu_graph_compute(void *ctx, const Node *nodes, int n_nodes) {
    auto *be = static_cast<CpuBackend *>(ctx);
    int nth = be->pool->size();
    size_t need = 0;
    for (int i = 0; i < n_nodes; ++i) {
        if (!supports(nodes[i])) {
            VT_LOG_ERROR("cpu backend: unsupported node %d (%s)", i, op_name(nodes[i].op));
            return VT_ERR_UNSUPPORTED;
        }
        size_t w = work_size(nodes[i], nth);
        if (w > need) need = w;
    }
    if (need > be->wsize) {
        // Attention scratch grows with the context, a little every decode
        // step: grow to the next power of two so the decode loop reallocates
        // only O(log n_ctx) times.
        size_t size = 4096;
        while (size < need) size *= 2;
        std::free(be->wdata);
        be->wsize = 0;
        be->wdata = static_cast<uint8_t *>(std::aligned_alloc(64, size));
        if (!be->wdata) return VT_ERR_OUT_OF_MEMORY;
        be->wsize = size;
    }
    GraphJob job{be, nodes, n_nodes};
    be->pool->run(graph_job, &job);
    return VT_OK;
}

void *cpu_alloc_host(void *, size_t size) { return std::aligned_alloc(64, (size + 63) & ~(size_t)63); }
void cpu_free_host(void *, void *ptr) { std::free(ptr); }

void cpu_free(void *ctx) {
    auto *be = static_cast<CpuBackend *>(ctx);
    std::free(be->wdata);
    delete be;
}

const vt_backend_i kCpuIface = {
    VT_BACKEND_API_VERSION, cpu_get_name, cpu_supports_op, cpu_graph_compute,
    cpu_alloc_host,         cpu_free_host, cpu_free,
};

} // namespace
} // namespace vt::cpu

extern "C" vt_backend *vt_backend_cpu_create(const vt_backend_params *params) {
    auto *be = new vt::cpu::CpuBackend();
    int n = params && params->n_threads > 0 ? (int)params->n_threads : vt::default_thread_count();
    be->pool = std::make_unique<vt::ThreadPool>(n);
    VT_LOG_INFO("cpu backend: %d threads, kernels %s", n, vt::cpu_kernel_isa());
    return new vt_backend{&vt::cpu::kCpuIface, be};
}
