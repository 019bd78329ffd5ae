// A stand-in backend module for the loader and fallback tests. Built three
// ways (FAKE_KIND):
//   0 "fake": one device, "fake0", whose memory libvt must treat as a
//     device's (is_host false: reached only through set/get, at a base
//     address the CPU must never dereference) and which supports no op, so
//     every node of a model runs on the CPU through GraphExecutor's copies;
//   1 "fakeold": a registry of another backend interface version;
//   2 "fakenone": no usable device (init returns NULL).
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/backend-impl.h"

namespace {

const vt_backend_host *g_host = nullptr;

// Memory behind a fake address: base = the real pointer XOR a mask, so a
// stray dereference of a tensor's data by libvt crashes the test.
constexpr uintptr_t kMask = (uintptr_t)1 << 62;

struct FakeBuffer {
    uint8_t *mem;
};

// The device's memory: VT_FAKE_MEMORY_MIB (default 1024) MiB, of which the
// live buffers take their sizes; an allocation past it fails, as on a GPU,
// and the free count is reported (memory_free), as a driver's budget is.
std::atomic<uint64_t> g_allocated{0};
uint64_t memory_total() {
    static const uint64_t total = [] {
        const char *v = std::getenv("VT_FAKE_MEMORY_MIB");
        const uint64_t mib = v && *v ? std::strtoull(v, nullptr, 10) : 1024;
        return (mib ? mib : 1024) << 20;
    }();
    return total;
}

void buf_free(vt_buffer *b) {
    g_allocated -= b->size;
    std::free(static_cast<FakeBuffer *>(b->context)->mem);
    delete static_cast<FakeBuffer *>(b->context);
    delete b;
}
void *buf_base(vt_buffer *b) {
    return reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(static_cast<FakeBuffer *>(b->context)->mem) ^ kMask);
}
vt_status buf_set(vt_buffer *b, const void *src, size_t offset, size_t n) {
    if (offset + n > b->size) return VT_ERR_INTERNAL;
    std::memcpy(static_cast<FakeBuffer *>(b->context)->mem + offset, src, n);
    return VT_OK;
}
vt_status buf_get(vt_buffer *b, void *dst, size_t offset, size_t n) {
    if (offset + n > b->size) return VT_ERR_INTERNAL;
    std::memcpy(dst, static_cast<FakeBuffer *>(b->context)->mem + offset, n);
    return VT_OK;
}
vt_status buf_clear(vt_buffer *b, uint8_t v) {
    std::memset(static_cast<FakeBuffer *>(b->context)->mem, v, b->size);
    return VT_OK;
}
const vt_buffer_i kBuf = {buf_free, buf_base, buf_set, buf_get, buf_clear};

vt_device g_dev;
vt_buffer_type g_buft;
vt_backend_reg g_reg;

const char *buft_name(vt_buffer_type *) { return "fake"; }
vt_buffer *buft_alloc(vt_buffer_type *bt, size_t size) {
    if (size > memory_total() - g_allocated) return nullptr;
    auto *mem = static_cast<uint8_t *>(std::calloc(1, size));
    if (!mem) return nullptr;
    g_allocated += size;
    return new vt_buffer{&kBuf, bt, new FakeBuffer{mem}, size};
}
size_t buft_align(vt_buffer_type *) { return 256; }
// Small, so that a model's weights take several buffers.
size_t buft_max(vt_buffer_type *) { return (size_t)8 << 20; }
bool buft_is_host(vt_buffer_type *) { return false; }
const vt_buffer_type_i kBuft = {buft_name, buft_alloc, buft_align, buft_max, buft_is_host, nullptr};

void dev_props(vt_device *, vt_device_props *p) {
    p->name = "fake0";
    p->description = "a test device that computes nothing";
    p->type = VT_DEVICE_TYPE_OTHER;
    p->memory_total = memory_total();
    p->memory_free = memory_total() - g_allocated;
}
vt_buffer_type *dev_buft(vt_device *) { return &g_buft; }
bool dev_supports_op(vt_device *, const vt::Node *) { return false; }
bool dev_supports_buft(vt_device *, vt_buffer_type *bt) { return bt == &g_buft; }
vt_stream *dev_stream(vt_device *dev, const vt_stream_params *);

vt_status stream_compute(vt_stream *, const vt::Node *, int n_nodes) {
    // Never asked: it supports no op.
    if (g_host) g_host->log(VT_LOG_LEVEL_ERROR, "fake backend: asked to compute");
    return n_nodes ? VT_ERR_UNSUPPORTED : VT_OK;
}
void stream_free(vt_stream *s) { delete s; }
const vt_stream_i kStream = {stream_free, stream_compute};
vt_stream *dev_stream(vt_device *dev, const vt_stream_params *) { return new vt_stream{&kStream, dev, nullptr}; }

const vt_device_i kDev = {dev_props, dev_buft, dev_supports_op, dev_supports_buft, nullptr, dev_stream};

const char *reg_name(vt_backend_reg *) { return "fake"; }
size_t reg_count(vt_backend_reg *) { return 1; }
vt_device *reg_dev(vt_backend_reg *, size_t i) { return i == 0 ? &g_dev : nullptr; }

#ifndef FAKE_API_VERSION
#define FAKE_API_VERSION VT_BACKEND_API_VERSION
#endif
const vt_backend_reg_i kReg = {FAKE_API_VERSION, reg_name, reg_count, reg_dev, nullptr};

} // namespace

extern "C" __attribute__((visibility("default"))) vt_backend_reg *vt_backend_init(const vt_backend_host *host) {
    g_host = host;
#if FAKE_KIND == 2
    return nullptr;
#else
    g_reg = vt_backend_reg{&kReg, nullptr};
    g_dev = vt_device{&kDev, &g_reg, nullptr};
    g_buft = vt_buffer_type{&kBuft, &g_dev, nullptr};
    return &g_reg;
#endif
}
