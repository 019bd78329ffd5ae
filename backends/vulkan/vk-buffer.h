// Device memory as vt buffers. A buffer is one VkBuffer over one
// allocation; its base (get_base) is a fake address: unique per buffer,
// non-canonical (a CPU dereference faults at once instead of reading
// garbage) and 64 KiB-aligned, drawn from a process-wide counter, so that
// tensor.data = base + offset maps back to (VkBuffer, offset) on the device.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>

#include "backend/backend-impl.h"

namespace vt::vk {

struct Device;

struct Buffer {
    Device *dev = nullptr;
    VkBuffer buf = VK_NULL_HANDLE;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    uint8_t *mapped = nullptr;  // host-visible memory (Device::uma), else nullptr
    uint64_t base = 0;          // the fake address of byte 0
    size_t size = 0;            // bytes usable (VkBuffer size may be rounded up)
};

// Sets up d.buft (its vtable and context).
void buffer_type_init(Device &d);
// The buffer holding tensor t and t's byte offset in it: t.buffer when it
// is one of this module's, else the buffer whose address range holds t.data
// (a graph may bind tensors without naming their buffer). nullptr when the
// tensor is not in this module's memory.
const Buffer *buffer_of(const vt::Tensor &t, size_t &offset);

} // namespace vt::vk
