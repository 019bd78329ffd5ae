// The module's view of one Vulkan physical device: what it can do (caps,
// queried once at enumeration) and, opened at first use, its logical
// device, compute queue, pipelines and staging memory. Owned by the
// registry (vk-backend.cpp) for the life of the process.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backend/backend-impl.h"
#include "vk-pipelines.h"

namespace vt::vk {

struct Caps {
    uint32_t api_version = 0;
    uint32_t subgroup_size = 0;        // the driver's (never assumed)
    bool subgroup_arith = false;       // subgroupAdd in compute shaders
    bool storage16 = false;            // storageBuffer16BitAccess (required)
    bool shader_f16 = false;           // shaderFloat16 (logged; f32 arithmetic throughout)
    bool int8_dot = false;             // shaderIntegerDotProduct (logged; not used yet)
    bool buffer_address = false;       // bufferDeviceAddress (logged; not used yet)
    bool memory_budget = false;        // VK_EXT_memory_budget
    VkDeviceSize max_storage_range = 0;  // maxStorageBufferRange: the most one binding sees
    VkDeviceSize storage_align = 0;      // minStorageBufferOffsetAlignment
    VkDeviceSize max_alloc = 0;          // maxMemoryAllocationSize
    uint32_t max_groups[3] = {0, 0, 0};  // maxComputeWorkGroupCount
    uint32_t max_wg_size = 0;            // min(maxComputeWorkGroupSize[0], invocations)
};

// Host-visible memory that set/get go through when device memory is not
// host-visible: chunks are copied in and vkCmdCopyBuffer'd, one at a time.
struct Staging {
    std::mutex mutex;
    VkBuffer buf = VK_NULL_HANDLE;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    uint8_t *mapped = nullptr;
    VkDeviceSize size = 0;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
};

struct Device {
    // Set at enumeration.
    VkInstance instance = VK_NULL_HANDLE;
    VkPhysicalDevice phys = VK_NULL_HANDLE;
    std::string name;         // "vulkan0"
    std::string description;  // deviceName
    vt_device_type type = VT_DEVICE_TYPE_OTHER;
    uint32_t queue_family = 0;
    Caps caps;
    VkPhysicalDeviceMemoryProperties mem_props{};
    int local_heap = -1;      // the largest DEVICE_LOCAL heap
    bool uma = false;         // tensors live in host-visible memory: set/get are memcpy
    uint32_t matvec_wg = 64;  // mul_mat_vec workgroup size (a multiple of the subgroup size)

    vt_device vtdev{};
    vt_buffer_type buft{};

    // Opened at first use (open()).
    std::once_flag open_once;
    bool open_ok = false;
    VkDevice dev = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
    std::mutex queue_mutex;  // vkQueueSubmit on one queue from several streams
    Staging staging;
    std::mutex pipelines_mutex;
    std::map<std::string, std::unique_ptr<Pipeline>> pipelines;

    ~Device();
};

// Fills d's caps from its physical device; false (logged) when it is not one
// the backend can use (Vulkan < 1.2, no compute queue, no 16-bit storage).
bool probe(Device &d);
// Opens the logical device once; false (logged) on failure. Thread-safe.
bool open(Device &d);
// Free bytes of the device-local heap (the budget extension), or its size.
uint64_t memory_free(const Device &d);
// A memory type among type_bits with all of `want`, preferring `prefer`;
// -1 when none.
int find_memory_type(const Device &d, uint32_t type_bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer);
// Submits cmd and waits for fence (reset before the submit). Thread-safe.
VkResult submit_wait(Device &d, VkCommandBuffer cmd, VkFence fence);

} // namespace vt::vk
