// The C++ side of the backend interface (backend-impl.h) for the rest of
// libvt: the device list, owners that free through the module that made an
// object, and tensor data copies that throw vt::Error.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend-impl.h"

namespace vt {

// Every device: "cpu" first, then those of the modules found (vt_device.h
// says where), in load order. Loads the modules on the first call;
// thread-safe. The devices live as long as the process.
const std::vector<vt_device *> &devices();

// The device named name ("cpu", "vulkan0"); nullptr or "" is the CPU.
// Throws vt::Error(VT_ERR_NOT_FOUND) listing the names there are.
vt_device *find_device(const char *name);
vt_device *cpu_device();

vt_device_props device_props(vt_device *dev);
std::string device_name(vt_device *dev);
// Whether the device computes on host memory (the CPU).
bool device_is_host(vt_device *dev);
// The registry (backend) name of a device: "cpu", "vulkan".
const char *device_backend(vt_device *dev);

// Frees b through its module; a buffer from buffer_alloc leaves the device's
// count of bytes in use (device_bytes_in_use).
void buffer_free(vt_buffer *b);
struct BufferFree {
    void operator()(vt_buffer *b) const { buffer_free(b); }
};
using BufferPtr = std::unique_ptr<vt_buffer, BufferFree>;

struct StreamFree {
    void operator()(vt_stream *s) const {
        if (s) s->iface->free(s);
    }
};
using StreamPtr = std::unique_ptr<vt_stream, StreamFree>;

// A buffer of size bytes of dev's memory; what names the use in the error.
// Throws vt::Error(VT_ERR_OUT_OF_MEMORY).
BufferPtr buffer_alloc(vt_device *dev, size_t size, const char *what);
// Bytes of dev's memory held by live buffers that buffer_alloc made (weights,
// KV pools, compute arenas): what libvt itself has taken there.
uint64_t device_bytes_in_use(vt_device *dev);
// Memory a new allocation can still take on dev now. Host memory (the CPU):
// what the process can still have (its cgroup's limit included). A device:
// its own free count where the driver reports one (Vulkan's memory budget),
// and never more than its total less what libvt holds there, so a driver
// that reports no budget still sees the weights it was given.
uint64_t device_memory_room(vt_device *dev);
// Throws vt::Error(VT_ERR_INTERNAL) when the device cannot make one.
StreamPtr stream_create(vt_device *dev, uint32_t n_threads);

// Copies n bytes between host memory and t's data from byte offset on
// (t contiguous over them): a memcpy for host memory (t.buffer null or a
// host buffer), the buffer's set/get otherwise. Throw vt::Error.
void tensor_set(const Tensor &t, const void *src, size_t offset, size_t n);
void tensor_get(const Tensor &t, void *dst, size_t offset, size_t n);
// Whether t's data is host memory the CPU may read and write.
bool tensor_is_host(const Tensor &t);

} // namespace vt
