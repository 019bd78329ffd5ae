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

void run_node(const Node &n, const OpCtx &c) {
    switch (n.op) {
    case Op::GET_ROWS: op_get_rows(n, c); break;
    case Op::RMS_NORM: op_rms_norm(n, c); break;
    case Op::MUL_MAT: op_mul_mat(n, c); break;
    case Op::ADD: op_add(n, c); break;
    case Op::ROPE: op_rope(n, c); break;
    case Op::ATTN: op_attn(n, c); break;
    case Op::SWIGLU: op_swiglu(n, c); break;
    case Op::ATTN_PAGED: op_attn_paged(n, c); break;
    case Op::COUNT: break;
    }
}

void graph_job(void *p, int ith, int nth) {
    auto *job = static_cast<GraphJob *>(p);
    OpCtx c{ith, nth, job->be->wdata, job->be->wsize, job->be->pool.get()};
    for (int i = 0; i < job->n_nodes; ++i) {
        run_node(job->nodes[i], c);
        c.barrier();
    }
}

} // namespace

size_t work_size(const Node &n, int nth) {
    switch (n.op) {
    case Op::MUL_MAT: return mul_mat_work_size(n, nth);
    case Op::ATTN: return attn_work_size(n, nth);
    case Op::ATTN_PAGED: return attn_paged_work_size(n, nth);
    default: return 0;
    }
}

// An _X16 matrix is read in whole groups of 16 rows and whole blocks.
static bool whole_x16_groups(const Tensor &w) {
    return quant::x16_fits(x16_base(w.type), w.ne[0], w.ne[1]) && w.is_contiguous();
}

bool supports(const Node &n) {
    auto f32 = [](const Tensor *t) { return t->type == DType::F32 && t->is_contiguous(); };
    switch (n.op) {
    case Op::GET_ROWS:  // _X16 rows are interleaved in whole groups of 16
        return n.src[1]->type == DType::I32 && f32(n.dst) && n.src[0]->nb[0] == dtype_info(n.src[0]->type).block_bytes &&
               (!is_x16((uint32_t)n.src[0]->type) || whole_x16_groups(*n.src[0]));
    case Op::RMS_NORM:
    case Op::ADD:
    case Op::SWIGLU: return f32(n.src[0]) && f32(n.src[1]) && f32(n.dst);
    case Op::MUL_MAT:
        if (is_x16((uint32_t)n.src[0]->type))
            return quant::active_kernels().gemm[(int)n.src[0]->type] != nullptr && whole_x16_groups(*n.src[0]) &&
                   f32(n.src[1]) && f32(n.dst);
        return vec_dot_fn(n.src[0]->type) != nullptr && f32(n.src[1]) && f32(n.dst);
    case Op::ROPE: {
        const int n_rot = n.params.i[0], head_dim = n.params.i[2];
        return f32(n.src[0]) && n.src[1]->type == DType::I32 && f32(n.dst) && (n.params.i[1] == 0 || n.params.i[1] == 2) &&
               head_dim > 0 && head_dim <= 1024 && n.src[0]->ne[0] % head_dim == 0 && n_rot > 0 && n_rot % 2 == 0 &&
               n_rot <= head_dim && n.src[1]->ne[0] == n.src[0]->ne[1];
    }
    case Op::ATTN: {
        const int64_t head_dim = n.params.i[1], n_past = n.params.i[0];
        if (!(f32(n.src[0]) && f32(n.src[1]) && f32(n.src[2]) && n.src[3]->type == DType::F16 &&
              n.src[4]->type == DType::F16 && f32(n.dst) && head_dim > 0 && n_past >= 0))
            return false;
        const int64_t q_row = n.src[0]->ne[0], kv_row = n.src[1]->ne[0], n_tok = n.src[0]->ne[1];
        if (q_row % head_dim || kv_row % head_dim || n.src[2]->ne[0] != kv_row) return false;
        const int64_t n_head = q_row / head_dim, n_head_kv = kv_row / head_dim;
        // The caches must hold every position this step writes.
        // K^T: (n_ctx, kv_row); V: (kv_row, n_ctx), both with contiguous rows.
        return n_head_kv > 0 && n_head % n_head_kv == 0 && n.src[3]->ne[1] == kv_row && n.src[4]->ne[0] == kv_row &&
               n.src[3]->nb[0] == 2 && n.src[4]->nb[0] == 2 && n_past + n_tok <= n.src[3]->ne[0] &&
               n_past + n_tok <= n.src[4]->ne[1];
    }
    case Op::ATTN_PAGED: return attn_paged_supported(n);
    case Op::COUNT: break;
    }
    return false;
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
