// The CPU backend (built into libvt): one device, "cpu", whose buffers are
// host memory; its stream runs a graph on a persistent thread pool. One pool job
// covers the whole graph; threads meet at a barrier between nodes (as ggml
// does) where the next node depends on another thread's work
// (barriers_after), so there is no per-op wake-up.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend-impl.h"
#include "core/error.h"
#include "core/log.h"
#include "cpu/kernels/kernels.h"
#include "cpu-ops.h"
#include "cpu-weights.h"

namespace vt::cpu {
namespace {

struct CpuBackend {
    std::unique_ptr<ThreadPool> pool;
    uint8_t *wdata = nullptr;  // grows to the largest work size seen, then stays
    size_t wsize = 0;
    std::vector<uint8_t> uses_scratch, acts_ready, barrier_after;  // per node of the graph being computed
};

struct GraphJob {
    CpuBackend *be;
    const Node *nodes;
    int n_nodes;
    const uint8_t *acts_ready;     // per node: OpCtx::acts_ready
    const uint8_t *barrier_after;  // per node: barriers_after
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
        c.acts_ready = job->acts_ready[i] != 0;
        run_node(job->nodes[i], c);
        if (job->barrier_after[i]) c.barrier();
    }
}

} // namespace

size_t work_size(const Node &n, int nth) { return kCpuOps[(int)n.op].work_size(n, nth); }

bool supports(const Node &n) {
    if ((int)n.op < 0 || (int)n.op >= kOpCount) return false;
    return kCpuOps[(int)n.op].supports(n);
}

namespace {

// ---- buffers: host memory ------------------------------------------------

// Large buffers (the KV pool, big arenas) come straight from mmap (a
// PageBuffer, MAP_NORESERVE): pages cost nothing until first written, however
// large the budget, and malloc debugging (MALLOC_PERTURB_) does not write
// them all. They are offered to huge pages as the weights are
// (core/pages.h): attention reads a pool's blocks scattered, a TLB miss per
// 4 KiB page otherwise (perf-attention, 512 sequences at depth 192, 75 MB of
// pool from memory, 2 threads, alternating: 3.32-3.71 -> 3.16-3.33 ms).
constexpr size_t kMapAtLeast = (size_t)1 << 20;

struct HostBuffer {
    void *ptr;
    bool owned;                         // from the heap: freed with the buffer
    std::unique_ptr<PageBuffer> pages;  // or the memory is these (weights in the CPU's layouts, large buffers)
};

void buf_free(vt_buffer *b) {
    auto *h = static_cast<HostBuffer *>(b->context);
    if (h->owned) std::free(h->ptr);
    delete h;
    delete b;
}
void *buf_base(vt_buffer *b) { return static_cast<HostBuffer *>(b->context)->ptr; }
vt_status buf_set(vt_buffer *b, const void *src, size_t offset, size_t n) {
    std::memcpy(static_cast<uint8_t *>(buf_base(b)) + offset, src, n);
    return VT_OK;
}
vt_status buf_get(vt_buffer *b, void *dst, size_t offset, size_t n) {
    std::memcpy(dst, static_cast<const uint8_t *>(buf_base(b)) + offset, n);
    return VT_OK;
}
vt_status buf_clear(vt_buffer *b, uint8_t value) {
    std::memset(buf_base(b), value, b->size);
    return VT_OK;
}
const vt_buffer_i kBufferIface = {buf_free, buf_base, buf_set, buf_get, buf_clear};

vt_buffer_type g_buft{};  // set up with the device below

vt_buffer *wrap(void *ptr, size_t size, bool owned) {
    return new vt_buffer{&kBufferIface, &g_buft, new HostBuffer{ptr, owned, nullptr}, size};
}
vt_buffer *wrap(std::unique_ptr<PageBuffer> pages, size_t size) {
    void *p = pages->data();
    return new vt_buffer{&kBufferIface, &g_buft, new HostBuffer{p, false, std::move(pages)}, size};
}

const char *buft_name(vt_buffer_type *) { return "cpu"; }
vt_buffer *buft_alloc(vt_buffer_type *, size_t size) {
    size = (size + 63) & ~(size_t)63;
    if (size >= kMapAtLeast) {
        std::unique_ptr<PageBuffer> pages = PageBuffer::allocate(size);
        return pages ? wrap(std::move(pages), size) : nullptr;
    }
    void *p = std::aligned_alloc(64, size);
    return p ? wrap(p, size, true) : nullptr;
}
size_t buft_alignment(vt_buffer_type *) { return 64; }
size_t buft_max_size(vt_buffer_type *) { return SIZE_MAX; }
bool buft_is_host(vt_buffer_type *) { return true; }
const vt_buffer_type_i kBufferTypeIface = {buft_name, buft_alloc, buft_alignment, buft_max_size, buft_is_host,
                                            prepare_weight};

// ---- stream: the thread pool -----------------------------------------------

vt_status stream_compute(vt_stream *s, const Node *nodes, int n_nodes) {
    auto *be = static_cast<CpuBackend *>(s->context);
    int nth = be->pool->size();
    size_t need = 0;
    be->uses_scratch.resize((size_t)n_nodes);
    be->acts_ready.resize((size_t)n_nodes);
    for (int i = 0; i < n_nodes; ++i) {
        if (!supports(nodes[i])) {
            VT_LOG_ERROR("cpu backend: unsupported node %d (%s)", i, op_name(nodes[i].op));
            return VT_ERR_UNSUPPORTED;
        }
        size_t w = work_size(nodes[i], nth);
        be->uses_scratch[(size_t)i] = w > 0;
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
    acts_converted_before(nodes, n_nodes, be->uses_scratch.data(), be->acts_ready.data());
    be->barrier_after.resize((size_t)n_nodes);
    barriers_after(nodes, n_nodes, be->acts_ready.data(), be->wdata, be->wsize, be->barrier_after.data());
    GraphJob job{be, nodes, n_nodes, be->acts_ready.data(), be->barrier_after.data()};
    be->pool->run(graph_job, &job);
    return VT_OK;
}

void stream_free(vt_stream *s) {
    auto *be = static_cast<CpuBackend *>(s->context);
    std::free(be->wdata);
    delete be;
    delete s;
}

const vt_stream_i kStreamIface = {stream_free, stream_compute};

// ---- the device ----------------------------------------------------------------

vt_device g_device{};
vt_backend_reg g_reg{};
std::string g_description;

std::string cpu_model_name() {
    std::FILE *f = std::fopen("/proc/cpuinfo", "r");
    std::string name = "CPU";
    if (!f) return name;
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
        if (std::strncmp(line, "model name", 10) != 0) continue;
        const char *colon = std::strchr(line, ':');
        if (!colon) break;
        name = colon + 1;
        while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.erase(0, 1);
        while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
        break;
    }
    std::fclose(f);
    return name;
}

void dev_props(vt_device *, vt_device_props *p) {
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    p->name = "cpu";
    p->description = g_description.c_str();
    p->type = VT_DEVICE_TYPE_CPU;
    p->memory_total = (uint64_t)sysconf(_SC_PHYS_PAGES) * page;
    p->memory_free = (uint64_t)sysconf(_SC_AVPHYS_PAGES) * page;
}
vt_buffer_type *dev_buft(vt_device *) { return &g_buft; }
bool dev_supports_op(vt_device *, const Node *node) { return supports(*node); }
bool dev_supports_buft(vt_device *, vt_buffer_type *bt) { return bt->iface->is_host(bt); }
vt_buffer *dev_from_host_ptr(vt_device *, void *ptr, size_t size) { return wrap(ptr, size, false); }
vt_stream *dev_stream(vt_device *dev, const vt_stream_params *params) {
    auto *be = new CpuBackend();
    int n = params && params->n_threads > 0 ? (int)params->n_threads : default_thread_count();
    be->pool = std::make_unique<ThreadPool>(n);
    VT_LOG_INFO("cpu backend: %d threads, kernels %s", n, cpu_kernel_isa());
    return new vt_stream{&kStreamIface, dev, be};
}
const vt_device_i kDeviceIface = {dev_props, dev_buft, dev_supports_op, dev_supports_buft, dev_from_host_ptr,
                                  dev_stream};

const char *reg_name(vt_backend_reg *) { return "cpu"; }
size_t reg_count(vt_backend_reg *) { return 1; }
vt_device *reg_device(vt_backend_reg *, size_t i) { return i == 0 ? &g_device : nullptr; }
const vt_backend_reg_i kRegIface = {VT_BACKEND_API_VERSION, reg_name, reg_count, reg_device, nullptr};

} // namespace

vt_buffer *wrap_pages(std::unique_ptr<PageBuffer> pages) {
    const size_t size = pages->size();
    return wrap(std::move(pages), size);
}

} // namespace vt::cpu

// The built-in backend's registry (lib/backend/registry.cpp lists it first).
extern "C" vt_backend_reg *vt_backend_cpu_reg(void) {
    using namespace vt::cpu;
    static std::once_flag once;
    std::call_once(once, [] {
        g_description = cpu_model_name() + " (kernels: " + vt::cpu_kernel_isa() + ")";
        g_reg = vt_backend_reg{&kRegIface, nullptr};
        g_device = vt_device{&kDeviceIface, &g_reg, nullptr};
        g_buft = vt_buffer_type{&kBufferTypeIface, &g_device, nullptr};
    });
    return &g_reg;
}
