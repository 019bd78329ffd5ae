#include "runner/paged-kv.h"

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
    // On the model's device. The CPU's buffers of this size come straight
    // from mmap: pages cost nothing until blocks are first used.
    vt_device *dev = model.device();
    buffer_ = buffer_alloc(dev, bytes_, "KV cache");
    if (!device_is_host(dev)) {
        // Device memory starts undefined; attention never reads a slot
        // before it is written, but a NaN there would survive a zero weight.
        vt_status st = buffer_->iface->clear(buffer_.get(), 0);
        if (st != VT_OK) fail(st, "cannot clear the KV cache on %s", device_name(dev).c_str());
    }
    k_.resize(n_layer);
    v_.resize(n_layer);
    uint8_t *p = static_cast<uint8_t *>(buffer_->iface->get_base(buffer_.get()));
    for (size_t l = 0; l < n_layer; ++l) {
        const int64_t kv_row = model.cache_layers[l].kv_row, n_blocks = blocks_[layer_group_[l]];
        const size_t layer_bytes = (size_t)(n_blocks * block_size) * row_bytes(DType::F16, kv_row);
        tensor_init(k_[l], DType::F16, block_size, kv_row, n_blocks, 1, p, "k_pool");
        k_[l].buffer = buffer_.get();
        p += layer_bytes;
        tensor_init(v_[l], DType::F16, kv_row, n_blocks * block_size, 1, 1, p, "v_pool");
        v_[l].buffer = buffer_.get();
        p += layer_bytes;
    }
}

PagedKv::~PagedKv() = default;

} // namespace vt
