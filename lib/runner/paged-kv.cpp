#include "runner/paged-kv.h"

#include <algorithm>

#include "backend/backend.h"
#include "core/error.h"

namespace vt {

PagedKv::PagedKv(const Model &model, const std::vector<uint32_t> &blocks_per_group, uint32_t block_size)
    : block_size_(block_size), groups_(cache_groups(model.cache_layers)), blocks_(blocks_per_group) {
    if (blocks_.size() != groups_.size())
        fail(VT_ERR_INTERNAL, "KV cache: %zu block counts for %zu cache groups", blocks_.size(), groups_.size());
    if (block_size == 0) fail(VT_ERR_INVALID_ARGUMENT, "a KV cache needs a block size");
    const size_t n_layer = model.cache_layers.size();
    layer_group_.assign(n_layer, 0);
    for (uint32_t g = 0; g < groups_.size(); ++g) {
        if (blocks_[g] == 0) fail(VT_ERR_INVALID_ARGUMENT, "KV cache group %u has no blocks", g);
        for (uint32_t l : groups_[g].layers) layer_group_[l] = g;
        bytes_ += (uint64_t)blocks_[g] * block_size * groups_[g].bytes_per_token;
    }
    // Each layer's K and V on its layer's device (Model::layer_device: the
    // model's, or the CPU for layers n_gpu_layers leaves there), one buffer
    // per device. The CPU's buffers of this size come straight from mmap:
    // pages cost nothing until blocks are first used.
    k_.resize(n_layer);
    v_.resize(n_layer);
    std::vector<vt_device *> devs;
    std::vector<size_t> dev_bytes;
    std::vector<size_t> layer_dev(n_layer);
    for (size_t l = 0; l < n_layer; ++l) {
        vt_device *d = model.layer_device((uint32_t)l);
        size_t i = (size_t)(std::find(devs.begin(), devs.end(), d) - devs.begin());
        if (i == devs.size()) {
            devs.push_back(d);
            dev_bytes.push_back(0);
        }
        layer_dev[l] = i;
        dev_bytes[i] += (size_t)blocks_[layer_group_[l]] * block_size * layer_bytes_per_token(model.cache_layers[l]);
    }
    std::vector<uint8_t *> at;
    for (size_t i = 0; i < devs.size(); ++i) {
        buffers_.push_back(buffer_alloc(devs[i], dev_bytes[i], "KV cache"));
        vt_buffer *b = buffers_.back().get();
        if (!device_is_host(devs[i])) {
            // Device memory starts undefined; attention never reads a slot
            // before it is written, but a NaN there would survive a zero weight.
            vt_status st = b->iface->clear(b, 0);
            if (st != VT_OK) fail(st, "cannot clear the KV cache on %s", device_name(devs[i]).c_str());
        }
        at.push_back(static_cast<uint8_t *>(b->iface->get_base(b)));
    }
    for (size_t l = 0; l < n_layer; ++l) {
        const int64_t kv_row = model.cache_layers[l].kv_row, n_blocks = blocks_[layer_group_[l]];
        const size_t pool_bytes = (size_t)(n_blocks * block_size) * row_bytes(DType::F16, kv_row);
        vt_buffer *b = buffers_[layer_dev[l]].get();
        uint8_t *&p = at[layer_dev[l]];
        tensor_init(k_[l], DType::F16, block_size, kv_row, n_blocks, 1, p, "k_pool");
        k_[l].buffer = b;
        p += pool_bytes;
        if (!has_v_cache(model.cache_layers[l])) {
            tensor_init(v_[l], DType::F16, 0, 0, 1, 1, nullptr, "v_pool (none: latent)");
            continue;
        }
        tensor_init(v_[l], DType::F16, kv_row, n_blocks * block_size, 1, 1, p, "v_pool");
        v_[l].buffer = b;
        p += pool_bytes;
    }
}

PagedKv::~PagedKv() = default;

} // namespace vt
