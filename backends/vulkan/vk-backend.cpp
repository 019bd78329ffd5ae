// The module's entry point and registry: one Vulkan instance, one vt device
// per usable physical device ("vulkan0", "vulkan1", ... in enumeration
// order; see probe() for what makes one usable).
#include <cstring>
#include <memory>
#include <vector>

#include "backend/backend-impl.h"
#include "vk-buffer.h"
#include "vk-device.h"
#include "vk-log.h"
#include "vk-ops.h"
#include "vk-stream.h"

namespace vt::vk {

namespace {

struct Registry {
    VkInstance instance = VK_NULL_HANDLE;
    std::vector<std::unique_ptr<Device>> devices;
    vt_backend_reg reg{};

    ~Registry() {
        devices.clear();  // before the instance they came from
        if (instance) vkDestroyInstance(instance, nullptr);
    }
};

// ---- device vtable ------------------------------------------------------------

Device *dev_of(vt_device *d) { return static_cast<Device *>(d->context); }

void dev_props(vt_device *vd, vt_device_props *p) {
    Device *d = dev_of(vd);
    p->name = d->name.c_str();
    p->description = d->description.c_str();
    p->type = d->type;
    p->memory_total = d->mem_props.memoryHeaps[d->local_heap].size;
    p->memory_free = memory_free(*d);
}

vt_buffer_type *dev_buft(vt_device *vd) { return &dev_of(vd)->buft; }

bool dev_supports_op(vt_device *vd, const Node *n) { return n && supports_node(*dev_of(vd), *n); }

bool dev_supports_buft(vt_device *vd, vt_buffer_type *t) { return t == &dev_of(vd)->buft; }

vt_stream *dev_stream(vt_device *vd, const vt_stream_params *) { return stream_create(*dev_of(vd)); }

// No buffer_from_host_ptr: using a file mapping in place would need
// VK_EXT_external_memory_host; weights are uploaded instead.
const vt_device_i kDeviceVtable = {dev_props, dev_buft, dev_supports_op, dev_supports_buft, nullptr, dev_stream};

// ---- registry vtable ----------------------------------------------------------

Registry *reg_of(vt_backend_reg *r) { return static_cast<Registry *>(r->context); }

const char *reg_name(vt_backend_reg *) { return "vulkan"; }
size_t reg_count(vt_backend_reg *r) { return reg_of(r)->devices.size(); }
vt_device *reg_get(vt_backend_reg *r, size_t i) {
    Registry *g = reg_of(r);
    return i < g->devices.size() ? &g->devices[i]->vtdev : nullptr;
}
void reg_free(vt_backend_reg *r) { delete reg_of(r); }

const vt_backend_reg_i kRegVtable = {VT_BACKEND_API_VERSION, reg_name, reg_count, reg_get, reg_free};

bool instance_has_extension(const char *name) {
    uint32_t n = 0;
    vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> ext(n);
    vkEnumerateInstanceExtensionProperties(nullptr, &n, ext.data());
    for (const VkExtensionProperties &e : ext)
        if (std::strcmp(e.extensionName, name) == 0) return true;
    return false;
}

Registry *create_registry() {
    uint32_t inst_version = VK_API_VERSION_1_0;
    vkEnumerateInstanceVersion(&inst_version);
    if (inst_version < VK_API_VERSION_1_2) {
        VK_LOG_INFO("the Vulkan loader is %u.%u; the backend needs 1.2", VK_API_VERSION_MAJOR(inst_version),
                    VK_API_VERSION_MINOR(inst_version));
        return nullptr;
    }
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "vt";
    app.pEngineName = "vt";
    app.apiVersion = VK_API_VERSION_1_2;
    std::vector<const char *> ext;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    // Portability drivers (MoltenVK) are listed only when asked for.
    if (instance_has_extension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        ext.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
        ci.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    ci.pApplicationInfo = &app;
    ci.enabledExtensionCount = (uint32_t)ext.size();
    ci.ppEnabledExtensionNames = ext.data();
    auto g = std::make_unique<Registry>();
    VkResult r = vkCreateInstance(&ci, nullptr, &g->instance);
    if (r != VK_SUCCESS) {
        g->instance = VK_NULL_HANDLE;
        VK_LOG_INFO("no Vulkan instance (%s)", result_name(r));
        return nullptr;
    }
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(g->instance, &n, nullptr);
    std::vector<VkPhysicalDevice> phys(n);
    vkEnumeratePhysicalDevices(g->instance, &n, phys.data());
    for (VkPhysicalDevice p : phys) {
        auto d = std::make_unique<Device>();
        d->instance = g->instance;
        d->phys = p;
        if (!probe(*d)) continue;
        d->name = "vulkan" + std::to_string(g->devices.size());
        d->vtdev = vt_device{&kDeviceVtable, &g->reg, d.get()};
        buffer_type_init(*d);
        VK_LOG_INFO("%s: %s", d->name.c_str(), d->description.c_str());
        g->devices.push_back(std::move(d));
    }
    if (g->devices.empty()) {
        VK_LOG_INFO("no usable Vulkan device (%u found)", n);
        return nullptr;
    }
    g->reg = vt_backend_reg{&kRegVtable, g.get()};
    return g.release();
}

} // namespace
} // namespace vt::vk

extern "C" __attribute__((visibility("default"))) vt_backend_reg *vt_backend_init(const vt_backend_host *host) {
    if (host) vt::vk::log_set_host(host->log);
    if (!host || host->api_version != VT_BACKEND_API_VERSION) {
        VK_LOG_ERROR("backend interface version %u, this module is %u", host ? host->api_version : 0u,
                     (unsigned)VT_BACKEND_API_VERSION);
        return nullptr;
    }
    try {
        vt::vk::Registry *g = vt::vk::create_registry();
        return g ? &g->reg : nullptr;
    } catch (const std::exception &e) {  // nothing may unwind into libvt
        VK_LOG_ERROR("init: %s", e.what());
        return nullptr;
    }
}
