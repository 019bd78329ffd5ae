// The ops of core/ops.def on Vulkan: which nodes the device computes
// (supports_node) and how each is recorded (record_node), against the
// Recorder the stream provides (vk-stream.cpp).
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "backend/backend-impl.h"

namespace vt::vk {

struct Device;

// A tensor as a storage-buffer binding: the range starts at the tensor's
// offset rounded down to minStorageBufferOffsetAlignment; rem is the bytes
// from there to the tensor's first byte (shaders add it, in elements).
struct Bind {
    VkBuffer buf = VK_NULL_HANDLE;
    VkDeviceSize offset = 0, range = 0;
    uint32_t rem = 0;
};

class Recorder {
public:
    virtual ~Recorder() = default;
    virtual Device &device() = 0;
    // Resolves t (in this device's memory) to a binding; false (logged) when
    // it is not, or when it does not fit one binding.
    virtual bool bind(const vt::Tensor *t, Bind &b) = 0;
    // Records one dispatch of `groups` workgroups (split over two grid
    // dimensions when needed) of pipeline `name`; push holds push_bytes of
    // push constants. wg sets the workgroup-size specialization constant,
    // spec1 (when wg is set) constant 1.
    virtual vt_status dispatch(const char *name, uint32_t wg, std::initializer_list<Bind> binds, const void *push,
                               size_t push_bytes, uint64_t groups, uint32_t spec1 = 0) = 0;
    // Makes every shader write so far visible to what follows.
    virtual void barrier() = 0;
};

bool supports_node(const Device &d, const vt::Node &n);
vt_status record_node(Recorder &r, const vt::Node &n);
// The dispatches record_node makes for n (each takes one descriptor set):
// 2 for ATTN_PAGED, one per row range of a MUL_MAT/GET_ROWS weight, else 1.
uint32_t dispatch_count(const Device &d, const vt::Node &n);

// The bytes from a tensor's first to past its last byte.
size_t tensor_span(const vt::Tensor &t);
// The largest span one binding may take on d (maxStorageBufferRange, capped
// at 2^31 so that byte offsets fit the shaders' 32-bit arithmetic).
size_t max_binding_bytes(const Device &d);

} // namespace vt::vk
