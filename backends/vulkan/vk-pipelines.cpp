#include "vk-pipelines.h"

#include <cstring>
#include <string>

#include "vk-device.h"
#include "vk-log.h"

namespace vt::vk {

namespace {
struct SpirvModule {
    const char *name;
    const uint32_t *code;
    size_t bytes;
};
#include "vk-spirv.inc"  // kSpirvModules (generated)

const SpirvModule *find_module(const char *name) {
    for (const SpirvModule &m : kSpirvModules)
        if (std::strcmp(m.name, name) == 0) return &m;
    return nullptr;
}

void destroy(VkDevice dev, Pipeline &p) {
    if (p.pipe) vkDestroyPipeline(dev, p.pipe, nullptr);
    if (p.layout) vkDestroyPipelineLayout(dev, p.layout, nullptr);
    if (p.set_layout) vkDestroyDescriptorSetLayout(dev, p.set_layout, nullptr);
    p = Pipeline{};
}

bool create(Device &d, const SpirvModule &m, uint32_t n_bindings, uint32_t wg, uint32_t spec1, Pipeline &p) {
    VkDescriptorSetLayoutBinding b[8];
    if (n_bindings > 8) return false;
    for (uint32_t i = 0; i < n_bindings; ++i) {
        b[i] = {};
        b[i].binding = i;
        b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        b[i].descriptorCount = 1;
        b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.bindingCount = n_bindings;
    dl.pBindings = b;
    if (vkCreateDescriptorSetLayout(d.dev, &dl, nullptr, &p.set_layout) != VK_SUCCESS) return false;
    VkPushConstantRange pc{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &p.set_layout;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &pc;
    if (vkCreatePipelineLayout(d.dev, &pl, nullptr, &p.layout) != VK_SUCCESS) return false;

    VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    sm.codeSize = m.bytes;
    sm.pCode = m.code;
    VkShaderModule mod;
    if (vkCreateShaderModule(d.dev, &sm, nullptr, &mod) != VK_SUCCESS) return false;
    // Constant 1 only where the shader has it (spec1 > 0).
    const uint32_t values[2] = {wg, spec1};
    const VkSpecializationMapEntry entries[2] = {{0, 0, sizeof(uint32_t)}, {1, sizeof(uint32_t), sizeof(uint32_t)}};
    VkSpecializationInfo spec{spec1 > 0 ? 2u : 1u, entries, sizeof values, values};
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = mod;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = wg > 0 ? &spec : nullptr;
    ci.layout = p.layout;
    const VkResult r = vkCreateComputePipelines(d.dev, VK_NULL_HANDLE, 1, &ci, nullptr, &p.pipe);
    vkDestroyShaderModule(d.dev, mod, nullptr);
    if (r != VK_SUCCESS) {
        VK_LOG_ERROR("%s: pipeline %s: %s", d.name.c_str(), m.name, result_name(r));
        return false;
    }
    p.n_bindings = n_bindings;
    return true;
}
} // namespace

bool pipeline_exists(const char *name) { return find_module(name) != nullptr; }

const Pipeline *pipeline_get(Device &d, const char *name, uint32_t n_bindings, uint32_t wg, uint32_t spec1) {
    std::string key = std::string(name) + "/" + std::to_string(wg) + "/" + std::to_string(spec1);
    std::lock_guard<std::mutex> lock(d.pipelines_mutex);
    auto it = d.pipelines.find(key);
    if (it != d.pipelines.end()) return it->second.get();
    const SpirvModule *m = find_module(name);
    if (!m) {
        VK_LOG_ERROR("%s: no shader variant %s", d.name.c_str(), name);
        return nullptr;
    }
    auto p = std::make_unique<Pipeline>();
    if (!create(d, *m, n_bindings, wg, spec1, *p)) {
        destroy(d.dev, *p);
        VK_LOG_ERROR("%s: cannot create pipeline %s", d.name.c_str(), name);
        return nullptr;
    }
    const Pipeline *out = p.get();
    d.pipelines.emplace(std::move(key), std::move(p));
    return out;
}

void pipelines_destroy(Device &d) {
    for (auto &kv : d.pipelines) destroy(d.dev, *kv.second);
    d.pipelines.clear();
}

} // namespace vt::vk
