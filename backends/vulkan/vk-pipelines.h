// Compute pipelines, one per SPIR-V variant (shaders/meson.build names
// them: "mmv_q4_k", "ew_add", ...), created at first use and kept for the
// device's life. Every pipeline has one descriptor set of n_bindings storage
// buffers (bindings 0..n-1) and kPushBytes of push constants.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>

namespace vt::vk {

struct Device;

constexpr uint32_t kPushBytes = 128;  // the minimum maxPushConstantsSize

struct Pipeline {
    VkPipeline pipe = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    uint32_t n_bindings = 0;
};

// The pipeline of variant `name`, with specialization constants 0 (the
// workgroup size) = wg and 1 = spec1 when wg > 0; nullptr (logged) when the
// variant is unknown or creation fails. Thread-safe; the result lives as
// long as the device.
const Pipeline *pipeline_get(Device &d, const char *name, uint32_t n_bindings, uint32_t wg = 0, uint32_t spec1 = 0);
// Whether the module has a SPIR-V variant of this name.
bool pipeline_exists(const char *name);
void pipelines_destroy(Device &d);

} // namespace vt::vk
