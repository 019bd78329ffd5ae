// graph_compute: every node is recorded into the stream's one command
// buffer (a descriptor set per dispatch from a pool reset per graph, push
// constants for shapes and params, a global memory barrier between nodes),
// then submitted once and waited on with a fence: one submission per graph,
// not per op.
#include "vk-stream.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "vk-buffer.h"
#include "vk-device.h"
#include "vk-log.h"
#include "vk-ops.h"
#include "vk-pipelines.h"

namespace vt::vk {

namespace {

constexpr uint32_t kMaxBindings = 8;

struct Stream final : Recorder {
    Device *dev = nullptr;
    VkCommandPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    VkFence fence = VK_NULL_HANDLE;
    VkDescriptorPool dpool = VK_NULL_HANDLE;
    uint32_t dpool_sets = 0;  // capacity of dpool in sets (kMaxBindings descriptors each)

    ~Stream() override {
        VkDevice d = dev->dev;
        if (dpool) vkDestroyDescriptorPool(d, dpool, nullptr);
        if (fence) vkDestroyFence(d, fence, nullptr);
        if (pool) vkDestroyCommandPool(d, pool, nullptr);
    }

    Device &device() override { return *dev; }

    bool bind(const Tensor *t, Bind &b) override {
        size_t off = 0;
        const Buffer *vb = t ? buffer_of(*t, off) : nullptr;
        if (!vb || vb->dev != dev) {
            VK_LOG_ERROR("%s: tensor %s is not in this device's memory", dev->name.c_str(),
                         t && t->name ? t->name : "(unnamed)");
            return false;
        }
        const size_t align = (size_t)std::max<VkDeviceSize>(dev->caps.storage_align, 4);
        const size_t start = off / align * align, span = tensor_span(*t);
        b.buf = vb->buf;
        b.offset = start;
        b.rem = (uint32_t)(off - start);
        // Words, within the buffer (VkBuffer sizes are rounded up to 4).
        b.range = std::min<VkDeviceSize>((b.rem + span + 3) & ~(size_t)3, ((vb->size + 3) & ~(size_t)3) - start);
        if (off + span > vb->size || b.range > max_binding_bytes(*dev)) {
            VK_LOG_ERROR("%s: tensor %s ([%zu, +%zu) of a %zu-byte buffer) does not fit a binding", dev->name.c_str(),
                         t->name ? t->name : "(unnamed)", off, span, vb->size);
            return false;
        }
        return true;
    }

    vt_status dispatch(const char *name, uint32_t wg, std::initializer_list<Bind> binds, const void *push,
                       size_t push_bytes, uint64_t groups, uint32_t spec1) override {
        const Pipeline *p = pipeline_get(*dev, name, (uint32_t)binds.size(), wg, spec1);
        if (!p) return VT_ERR_INTERNAL;
        if (groups == 0) return VT_OK;
        const uint64_t gx_max = dev->caps.max_groups[0];
        const uint32_t gx = (uint32_t)std::min<uint64_t>(groups, gx_max);
        const uint64_t gy = (groups + gx - 1) / gx;
        if (gy > dev->caps.max_groups[1]) {
            VK_LOG_ERROR("%s: %s needs %llu workgroups, over the grid", dev->name.c_str(), name,
                         (unsigned long long)groups);
            return VT_ERR_UNSUPPORTED;
        }
        VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
        ai.descriptorPool = dpool;
        ai.descriptorSetCount = 1;
        ai.pSetLayouts = &p->set_layout;
        VkDescriptorSet set;
        VkResult r = vkAllocateDescriptorSets(dev->dev, &ai, &set);
        if (r != VK_SUCCESS) {
            VK_LOG_ERROR("%s: descriptor set: %s", dev->name.c_str(), result_name(r));
            return VT_ERR_OUT_OF_MEMORY;
        }
        VkDescriptorBufferInfo bi[kMaxBindings];
        VkWriteDescriptorSet w[kMaxBindings];
        uint32_t i = 0;
        for (const Bind &b : binds) {
            bi[i] = {b.buf, b.offset, b.range};
            w[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
            w[i].dstSet = set;
            w[i].dstBinding = i;
            w[i].descriptorCount = 1;
            w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
            w[i].pBufferInfo = &bi[i];
            ++i;
        }
        vkUpdateDescriptorSets(dev->dev, i, w, 0, nullptr);
        uint8_t pc[kPushBytes] = {};
        std::copy_n(static_cast<const uint8_t *>(push), std::min<size_t>(push_bytes, kPushBytes), pc);
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0, nullptr);
        vkCmdPushConstants(cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes, pc);
        vkCmdDispatch(cmd, gx, (uint32_t)gy, 1);
        return VT_OK;
    }

    void barrier() override {
        VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb,
                             0, nullptr, 0, nullptr);
    }

    // A descriptor pool of at least `sets` sets, reset for this graph.
    bool descriptors_for(uint32_t sets) {
        if (dpool && sets <= dpool_sets) {
            vkResetDescriptorPool(dev->dev, dpool, 0);
            return true;
        }
        if (dpool) vkDestroyDescriptorPool(dev->dev, dpool, nullptr);
        dpool = VK_NULL_HANDLE;
        uint32_t cap = 256;
        while (cap < sets) cap *= 2;
        VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, cap * kMaxBindings};
        VkDescriptorPoolCreateInfo ci{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
        ci.maxSets = cap;
        ci.poolSizeCount = 1;
        ci.pPoolSizes = &ps;
        if (vkCreateDescriptorPool(dev->dev, &ci, nullptr, &dpool) != VK_SUCCESS) {
            dpool = VK_NULL_HANDLE;
            dpool_sets = 0;
            return false;
        }
        dpool_sets = cap;
        return true;
    }
};

Stream *ctx(vt_stream *s) { return static_cast<Stream *>(s->context); }

void stream_free(vt_stream *s) {
    delete ctx(s);
    delete s;
}

vt_status graph_compute(vt_stream *vs, const Node *nodes, int n_nodes) {
    Stream &s = *ctx(vs);
    Device &d = *s.dev;
    uint32_t sets = 0;  // one descriptor set per dispatch
    for (int i = 0; i < n_nodes; ++i) {
        if (!supports_node(d, nodes[i])) {
            VK_LOG_ERROR("%s: unsupported node %d (%s)", d.name.c_str(), i, op_name(nodes[i].op));
            return VT_ERR_UNSUPPORTED;
        }
        sets += dispatch_count(d, nodes[i]);
    }
    if (n_nodes == 0) return VT_OK;
    if (!s.descriptors_for(sets)) return VT_ERR_OUT_OF_MEMORY;
    vkResetCommandBuffer(s.cmd, 0);
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    vkBeginCommandBuffer(s.cmd, &bi);
    vt_status st = VT_OK;
    for (int i = 0; i < n_nodes && st == VT_OK; ++i) {
        st = record_node(s, nodes[i]);
        // Nodes are in dependency order; a global barrier after each keeps it
        // simple and correct (tracking which node reads what could drop some).
        s.barrier();
    }
    // Results visible to the host (mapped memory) and to staging copies.
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT;
    vkCmdPipelineBarrier(s.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
    vkEndCommandBuffer(s.cmd);
    if (st != VT_OK) return st;
    const VkResult r = submit_wait(d, s.cmd, s.fence);
    if (r != VK_SUCCESS) {
        VK_LOG_ERROR("%s: graph submit: %s", d.name.c_str(), result_name(r));
        return VT_ERR_INTERNAL;
    }
    return VT_OK;
}

const vt_stream_i kStreamVtable = {stream_free, graph_compute};

} // namespace

vt_stream *stream_create(Device &d) {
    if (!open(d)) return nullptr;
    auto s = std::make_unique<Stream>();
    s->dev = &d;
    VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = d.queue_family;
    VkResult r = vkCreateCommandPool(d.dev, &pi, nullptr, &s->pool);
    if (r == VK_SUCCESS) {
        VkCommandBufferAllocateInfo ci{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
        ci.commandPool = s->pool;
        ci.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ci.commandBufferCount = 1;
        r = vkAllocateCommandBuffers(d.dev, &ci, &s->cmd);
    }
    if (r == VK_SUCCESS) {
        VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
        r = vkCreateFence(d.dev, &fi, nullptr, &s->fence);
    }
    if (r != VK_SUCCESS || !s->descriptors_for(256)) {
        VK_LOG_ERROR("%s: stream creation: %s", d.name.c_str(), result_name(r));
        return nullptr;
    }
    return new vt_stream{&kStreamVtable, &d.vtdev, s.release()};
}

} // namespace vt::vk
