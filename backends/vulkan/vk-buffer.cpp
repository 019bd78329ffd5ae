// Buffer type and buffers: allocation, the fake address space, and host
// copies (memcpy into mapped memory, or chunks through the staging buffer).
#include "vk-buffer.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "vk-device.h"
#include "vk-log.h"

namespace vt::vk {

namespace {
static_assert(sizeof(void *) == 8, "fake device addresses need a 64-bit address space");

// Fake addresses start at 2^56: above any user-space pointer on x86-64 and
// AArch64 (non-canonical there), so they never alias host memory.
constexpr uint64_t kAddressStart = 1ull << 56;
constexpr uint64_t kAddressAlign = 64 * 1024;
constexpr VkDeviceSize kStagingBytes = 16u << 20;

std::mutex g_addr_mutex;
uint64_t g_next_address = kAddressStart;
std::map<uint64_t, Buffer *> g_buffers;  // by base

uint64_t reserve_range(size_t size) {
    const uint64_t span = (size + 2 * kAddressAlign - 1) / kAddressAlign * kAddressAlign;  // plus a gap
    const uint64_t base = g_next_address;
    g_next_address += span;
    return base;
}

// ---- staging -------------------------------------------------------------------

bool staging_ready(Device &d) {
    Staging &s = d.staging;
    if (s.buf) return true;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = kStagingBytes;
    bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (vkCreateBuffer(d.dev, &bi, nullptr, &s.buf) != VK_SUCCESS) return false;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d.dev, s.buf, &req);
    // Coherent (no flushes); cached where offered, since get reads it back.
    const int type = find_memory_type(d, req.memoryTypeBits,
                                      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                      VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = (uint32_t)type;
    if (type < 0 || vkAllocateMemory(d.dev, &ai, nullptr, &s.mem) != VK_SUCCESS) return false;
    vkBindBufferMemory(d.dev, s.buf, s.mem, 0);
    void *p = nullptr;
    if (vkMapMemory(d.dev, s.mem, 0, VK_WHOLE_SIZE, 0, &p) != VK_SUCCESS) return false;
    s.mapped = static_cast<uint8_t *>(p);
    s.size = kStagingBytes;
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = d.queue_family;
    if (vkCreateCommandPool(d.dev, &pi, nullptr, &s.pool) != VK_SUCCESS) return false;
    VkCommandBufferAllocateInfo ci{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ci.commandPool = s.pool;
    ci.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ci.commandBufferCount = 1;
    if (vkAllocateCommandBuffers(d.dev, &ci, &s.cmd) != VK_SUCCESS) return false;
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    return vkCreateFence(d.dev, &fi, nullptr, &s.fence) == VK_SUCCESS;
}

// Records f(cmd) into the staging command buffer and runs it to completion.
template <class F>
vt_status staging_run(Device &d, F &&f) {
    Staging &s = d.staging;
    vkResetCommandBuffer(s.cmd, 0);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkBeginCommandBuffer(s.cmd, &bi);
    f(s.cmd);
    vkEndCommandBuffer(s.cmd);
    const VkResult r = submit_wait(d, s.cmd, s.fence);
    if (r != VK_SUCCESS) {
        VK_LOG_ERROR("%s: staging copy: %s", d.name.c_str(), result_name(r));
        return VT_ERR_INTERNAL;
    }
    return VT_OK;
}

// ---- buffer vtable -------------------------------------------------------------

Buffer *ctx(vt_buffer *b) { return static_cast<Buffer *>(b->context); }

void buf_free(vt_buffer *b) {
    Buffer *vb = ctx(b);
    {
        std::lock_guard<std::mutex> lock(g_addr_mutex);
        g_buffers.erase(vb->base);
    }
    VkDevice dev = vb->dev->dev;
    if (vb->mapped) vkUnmapMemory(dev, vb->mem);
    vkDestroyBuffer(dev, vb->buf, nullptr);
    vkFreeMemory(dev, vb->mem, nullptr);
    delete vb;
    delete b;
}

void *buf_base(vt_buffer *b) { return reinterpret_cast<void *>(ctx(b)->base); }

bool in_range(const Buffer *vb, size_t offset, size_t n) { return offset <= vb->size && n <= vb->size - offset; }

// Copies n bytes between host memory and [offset, offset + n) of b, in
// either direction: a memcpy for mapped memory, else chunks through the
// device's staging buffer.
vt_status host_copy(vt_buffer *b, uint8_t *host, size_t offset, size_t n, bool to_device) {
    Buffer *vb = ctx(b);
    if (!in_range(vb, offset, n)) {
        VK_LOG_ERROR("buffer %s: [%zu, +%zu) outside a buffer of %zu bytes", to_device ? "set" : "get", offset, n,
                     vb->size);
        return VT_ERR_INVALID_ARGUMENT;
    }
    if (vb->mapped) {
        if (to_device) std::memcpy(vb->mapped + offset, host, n);
        else std::memcpy(host, vb->mapped + offset, n);
        return VT_OK;
    }
    Device &d = *vb->dev;
    std::lock_guard<std::mutex> lock(d.staging.mutex);
    if (!staging_ready(d)) return VT_ERR_OUT_OF_MEMORY;
    for (size_t done = 0; done < n;) {
        const size_t c = std::min(n - done, (size_t)d.staging.size);
        if (to_device) std::memcpy(d.staging.mapped, host + done, c);
        const VkBufferCopy region = to_device ? VkBufferCopy{0, offset + done, c} : VkBufferCopy{offset + done, 0, c};
        VkBuffer from = to_device ? d.staging.buf : vb->buf, to = to_device ? vb->buf : d.staging.buf;
        vt_status st = staging_run(d, [&](VkCommandBuffer cmd) { vkCmdCopyBuffer(cmd, from, to, 1, &region); });
        if (st != VT_OK) return st;
        if (!to_device) std::memcpy(host + done, d.staging.mapped, c);
        done += c;
    }
    return VT_OK;
}

vt_status buf_set(vt_buffer *b, const void *src, size_t offset, size_t n) {
    return host_copy(b, static_cast<uint8_t *>(const_cast<void *>(src)), offset, n, true);
}

vt_status buf_get(vt_buffer *b, void *dst, size_t offset, size_t n) {
    return host_copy(b, static_cast<uint8_t *>(dst), offset, n, false);
}

vt_status buf_clear(vt_buffer *b, uint8_t value) {
    Buffer *vb = ctx(b);
    if (vb->mapped) {
        std::memset(vb->mapped, value, vb->size);
        return VT_OK;
    }
    Device &d = *vb->dev;
    std::lock_guard<std::mutex> lock(d.staging.mutex);
    if (!staging_ready(d)) return VT_ERR_OUT_OF_MEMORY;
    const uint32_t word = value * 0x01010101u;
    return staging_run(d, [&](VkCommandBuffer cmd) { vkCmdFillBuffer(cmd, vb->buf, 0, VK_WHOLE_SIZE, word); });
}

const vt_buffer_i kBufferVtable = {buf_free, buf_base, buf_set, buf_get, buf_clear};

// ---- buffer type vtable --------------------------------------------------------

Device *dev_of(vt_buffer_type *t) { return static_cast<Device *>(t->context); }

const char *buft_name(vt_buffer_type *t) { return dev_of(t)->name.c_str(); }

size_t buft_alignment(vt_buffer_type *t) { return (size_t)std::max<VkDeviceSize>(dev_of(t)->caps.storage_align, 64); }

size_t buft_max_size(vt_buffer_type *t) {
    const Device *d = dev_of(t);
    return (size_t)std::min<VkDeviceSize>(d->caps.max_alloc, d->mem_props.memoryHeaps[d->local_heap].size);
}

bool buft_is_host(vt_buffer_type *) { return false; }  // base + offset is a fake address

vt_buffer *buft_alloc(vt_buffer_type *t, size_t size) {
    Device &d = *dev_of(t);
    if (!open(d)) return nullptr;
    if (size > buft_max_size(t)) {
        VK_LOG_ERROR("%s: a buffer of %zu bytes is over the largest allocation (%zu)", d.name.c_str(), size,
                     buft_max_size(t));
        return nullptr;
    }
    auto *vb = new Buffer();
    vb->dev = &d;
    vb->size = size;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = std::max<VkDeviceSize>((size + 3) & ~(size_t)3, 4);  // fills and bindings work in words
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    VkResult r = vkCreateBuffer(d.dev, &bi, nullptr, &vb->buf);
    int type = -1;
    VkMemoryRequirements req{};
    if (r == VK_SUCCESS) {
        vkGetBufferMemoryRequirements(d.dev, vb->buf, &req);
        type = d.uma ? find_memory_type(d, req.memoryTypeBits,
                                        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
                     : find_memory_type(d, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
        if (type < 0) r = VK_ERROR_FEATURE_NOT_PRESENT;
    }
    if (r == VK_SUCCESS) {
        VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
        ai.allocationSize = req.size;
        ai.memoryTypeIndex = (uint32_t)type;
        r = vkAllocateMemory(d.dev, &ai, nullptr, &vb->mem);
    }
    if (r == VK_SUCCESS) r = vkBindBufferMemory(d.dev, vb->buf, vb->mem, 0);
    if (r == VK_SUCCESS && d.uma) {
        void *p = nullptr;
        r = vkMapMemory(d.dev, vb->mem, 0, VK_WHOLE_SIZE, 0, &p);
        vb->mapped = static_cast<uint8_t *>(p);
    }
    if (r != VK_SUCCESS) {
        VK_LOG_ERROR("%s: allocating %zu bytes: %s", d.name.c_str(), size, result_name(r));
        if (vb->mem) vkFreeMemory(d.dev, vb->mem, nullptr);
        if (vb->buf) vkDestroyBuffer(d.dev, vb->buf, nullptr);
        delete vb;
        return nullptr;
    }
    {
        std::lock_guard<std::mutex> lock(g_addr_mutex);
        vb->base = reserve_range(size);
        g_buffers[vb->base] = vb;
    }
    return new vt_buffer{&kBufferVtable, t, vb, size};
}

const vt_buffer_type_i kBufferTypeVtable = {buft_name, buft_alloc, buft_alignment, buft_max_size, buft_is_host,
                                             nullptr};  // weights are read in the file's layouts
} // namespace

void buffer_type_init(Device &d) {
    d.buft.iface = &kBufferTypeVtable;
    d.buft.device = &d.vtdev;
    d.buft.context = &d;
}

const Buffer *buffer_of(const vt::Tensor &t, size_t &offset) {
    const uint64_t a = reinterpret_cast<uint64_t>(t.data);
    if (t.buffer && t.buffer->iface == &kBufferVtable) {
        const Buffer *vb = static_cast<const Buffer *>(t.buffer->context);
        if (a >= vb->base && a - vb->base <= vb->size) {
            offset = (size_t)(a - vb->base);
            return vb;
        }
        return nullptr;
    }
    std::lock_guard<std::mutex> lock(g_addr_mutex);
    auto it = g_buffers.upper_bound(a);
    if (it == g_buffers.begin()) return nullptr;
    --it;
    const Buffer *vb = it->second;
    if (a - vb->base > vb->size) return nullptr;
    offset = (size_t)(a - vb->base);
    return vb;
}

} // namespace vt::vk
