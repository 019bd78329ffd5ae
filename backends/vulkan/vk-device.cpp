// Physical-device probing and the lazily opened logical device.
#include "vk-device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "vk-log.h"
#include "vk-pipelines.h"

namespace vt::vk {

namespace {
bool has_extension(VkPhysicalDevice phys, const char *name) {
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> ext(n);
    vkEnumerateDeviceExtensionProperties(phys, nullptr, &n, ext.data());
    for (const VkExtensionProperties &e : ext)
        if (std::strcmp(e.extensionName, name) == 0) return true;
    return false;
}

vt_device_type device_type(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return VT_DEVICE_TYPE_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return VT_DEVICE_TYPE_IGPU;
    default: return VT_DEVICE_TYPE_OTHER;  // CPU (lavapipe), virtual, other
    }
}
} // namespace

bool probe(Device &d) {
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(d.phys, &props);
    d.description = props.deviceName;
    d.type = device_type(props.deviceType);
    d.caps.api_version = props.apiVersion;
    if (props.apiVersion < VK_API_VERSION_1_2) {
        VK_LOG_INFO("%s: Vulkan %u.%u < 1.2, skipped", props.deviceName, VK_API_VERSION_MAJOR(props.apiVersion),
                    VK_API_VERSION_MINOR(props.apiVersion));
        return false;
    }

    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(d.phys, &nq, nullptr);
    std::vector<VkQueueFamilyProperties> qf(nq);
    vkGetPhysicalDeviceQueueFamilyProperties(d.phys, &nq, qf.data());
    // A compute family; one without graphics first (a dedicated compute
    // queue does not share the graphics engine's time slices).
    int family = -1;
    for (uint32_t i = 0; i < nq; ++i) {
        if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (family < 0 || !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = (int)i;
        if (!(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) break;
    }
    if (family < 0) {
        VK_LOG_INFO("%s: no compute queue, skipped", props.deviceName);
        return false;
    }
    d.queue_family = (uint32_t)family;

    VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &sg};
    vkGetPhysicalDeviceProperties2(d.phys, &p2);
    d.caps.subgroup_size = sg.subgroupSize;
    d.caps.subgroup_arith = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                            (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                            (sg.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);

    VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &f12};
    if (props.apiVersion >= VK_API_VERSION_1_3) f12.pNext = &f13;
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
    vkGetPhysicalDeviceFeatures2(d.phys, &f2);
    d.caps.storage16 = f11.storageBuffer16BitAccess;
    d.caps.shader_f16 = f12.shaderFloat16;
    d.caps.buffer_address = f12.bufferDeviceAddress;
    d.caps.int8_dot = props.apiVersion >= VK_API_VERSION_1_3 && f13.shaderIntegerDotProduct;
    d.caps.memory_budget = has_extension(d.phys, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    if (!d.caps.storage16) {
        VK_LOG_INFO("%s: no 16-bit storage buffer access (every weight shader reads u16 words), skipped",
                    props.deviceName);
        return false;
    }

    const VkPhysicalDeviceLimits &lim = props.limits;
    d.caps.max_storage_range = lim.maxStorageBufferRange;
    d.caps.storage_align = lim.minStorageBufferOffsetAlignment;
    for (int i = 0; i < 3; ++i) d.caps.max_groups[i] = lim.maxComputeWorkGroupCount[i];
    d.caps.max_wg_size = std::min(lim.maxComputeWorkGroupSize[0], lim.maxComputeWorkGroupInvocations);
    VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 p2m{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &m3};
    vkGetPhysicalDeviceProperties2(d.phys, &p2m);
    d.caps.max_alloc = m3.maxMemoryAllocationSize;

    vkGetPhysicalDeviceMemoryProperties(d.phys, &d.mem_props);
    for (uint32_t h = 0; h < d.mem_props.memoryHeapCount; ++h) {
        const VkMemoryHeap &heap = d.mem_props.memoryHeaps[h];
        if ((heap.flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            (d.local_heap < 0 || heap.size > d.mem_props.memoryHeaps[d.local_heap].size))
            d.local_heap = (int)h;
    }
    if (d.local_heap < 0) d.local_heap = 0;
    // On a device sharing host memory (integrated GPUs, CPU devices such as
    // lavapipe) tensors live in host-visible memory and set/get are a
    // memcpy; a discrete GPU's host-visible VRAM (ReBAR) is slow to read
    // back, so there tensors are device-local and copies go through staging.
    const bool shared_memory = d.type == VT_DEVICE_TYPE_IGPU || props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    d.uma = shared_memory && find_memory_type(d, ~0u, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, 0) >= 0;
    // Test switches, so that lavapipe runs the paths other devices take:
    // VT_VULKAN_STAGING=1 the discrete GPU's (device memory, staged copies),
    // VT_VULKAN_SUBGROUP=0 the shared-memory reductions of devices without
    // subgroup arithmetic.
    const char *staging = std::getenv("VT_VULKAN_STAGING"), *subgroup = std::getenv("VT_VULKAN_SUBGROUP");
    if (staging && std::strcmp(staging, "1") == 0) d.uma = false;
    if (subgroup && std::strcmp(subgroup, "0") == 0) d.caps.subgroup_arith = false;

    // The mat-vec workgroup: a power of two of at least 64 threads and one subgroup.
    uint32_t wg = 64;
    while (wg < d.caps.subgroup_size && wg < 1024) wg *= 2;
    while (wg > d.caps.max_wg_size && wg > 1) wg /= 2;
    d.matvec_wg = wg;

    VK_LOG_INFO("%s: Vulkan %u.%u, subgroup %u%s, fp16 %d, int dot %d, bda %d, budget %d, binding <= %llu MiB, "
                "alloc <= %llu MiB, %s",
                props.deviceName, VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion),
                d.caps.subgroup_size, d.caps.subgroup_arith ? " (arithmetic)" : "", d.caps.shader_f16,
                d.caps.int8_dot, d.caps.buffer_address, d.caps.memory_budget,
                (unsigned long long)(d.caps.max_storage_range >> 20), (unsigned long long)(d.caps.max_alloc >> 20),
                d.uma ? "host-visible tensors" : "staged copies");
    return true;
}

int find_memory_type(const Device &d, uint32_t type_bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) {
    int found = -1;
    for (uint32_t i = 0; i < d.mem_props.memoryTypeCount; ++i) {
        const VkMemoryPropertyFlags f = d.mem_props.memoryTypes[i].propertyFlags;
        if (!(type_bits & (1u << i)) || (f & want) != want) continue;
        if ((f & prefer) == prefer) return (int)i;
        if (found < 0) found = (int)i;
    }
    return found;
}

uint64_t memory_free(const Device &d) {
    const uint64_t total = d.mem_props.memoryHeaps[d.local_heap].size;
    if (!d.caps.memory_budget) return total;
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 mp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2, &budget};
    vkGetPhysicalDeviceMemoryProperties2(d.phys, &mp);
    const uint64_t b = budget.heapBudget[d.local_heap], u = budget.heapUsage[d.local_heap];
    return b > u ? b - u : 0;
}

namespace {
bool open_device(Device &d) {
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = d.queue_family;
    q.queueCount = 1;
    q.pQueuePriorities = &prio;
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    f11.storageBuffer16BitAccess = VK_TRUE;
    VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
    std::vector<const char *> ext;
    if (d.caps.memory_budget) ext.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f2};
    ci.queueCreateInfoCount = 1;
    ci.pQueueCreateInfos = &q;
    ci.enabledExtensionCount = (uint32_t)ext.size();
    ci.ppEnabledExtensionNames = ext.data();
    VkResult r = vkCreateDevice(d.phys, &ci, nullptr, &d.dev);
    if (r != VK_SUCCESS) {
        VK_LOG_ERROR("%s: vkCreateDevice: %s", d.name.c_str(), result_name(r));
        d.dev = VK_NULL_HANDLE;
        return false;
    }
    vkGetDeviceQueue(d.dev, d.queue_family, 0, &d.queue);
    return true;
}
} // namespace

bool open(Device &d) {
    std::call_once(d.open_once, [&] { d.open_ok = open_device(d); });
    return d.open_ok;
}

VkResult submit_wait(Device &d, VkCommandBuffer cmd, VkFence fence) {
    VkResult r = vkResetFences(d.dev, 1, &fence);
    if (r != VK_SUCCESS) return r;
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    {
        std::lock_guard<std::mutex> lock(d.queue_mutex);
        r = vkQueueSubmit(d.queue, 1, &si, fence);
    }
    if (r != VK_SUCCESS) return r;
    return vkWaitForFences(d.dev, 1, &fence, VK_TRUE, UINT64_MAX);
}

Device::~Device() {
    if (dev == VK_NULL_HANDLE) return;
    vkDeviceWaitIdle(dev);
    pipelines_destroy(*this);
    if (staging.fence) vkDestroyFence(dev, staging.fence, nullptr);
    if (staging.pool) vkDestroyCommandPool(dev, staging.pool, nullptr);
    if (staging.buf) vkDestroyBuffer(dev, staging.buf, nullptr);
    if (staging.mem) vkFreeMemory(dev, staging.mem, nullptr);
    vkDestroyDevice(dev, nullptr);
}

} // namespace vt::vk
