#include "runner/paged-kv.h"

#include <sys/mman.h>

#include "core/error.h"
#include "kv/cache-spec.h"

namespace vt {

PagedKv::PagedKv(const Model &model, uint32_t num_blocks, uint32_t block_size)
    : block_size_(block_size), num_blocks_(num_blocks) {
    if (num_blocks == 0 || block_size == 0)
        fail(VT_ERR_INVALID_ARGUMENT, "a KV cache of %u blocks of %u tokens holds nothing", num_blocks, block_size);
    const uint64_t slots = (uint64_t)num_blocks * block_size;
    bytes_ = slots * kv_bytes_per_token(model.cache_layers);
    // Straight from mmap, not the heap: pages cost nothing until blocks are
    // first used, however large the budget, and malloc debugging
    // (MALLOC_PERTURB_) does not write the whole pool.
    mem_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem_ == MAP_FAILED) {
        mem_ = nullptr;
        fail(VT_ERR_OUT_OF_MEMORY, "cannot map a KV cache of %.2f GiB", (double)bytes_ / (1 << 30));
    }
    const size_t n_layer = model.cache_layers.size();
    k_.resize(n_layer);
    v_.resize(n_layer);
    uint8_t *p = static_cast<uint8_t *>(mem_);
    for (size_t l = 0; l < n_layer; ++l) {
        const int64_t kv_row = model.cache_layers[l].kv_row;
        const size_t layer_bytes = (size_t)slots * row_bytes(DType::F16, kv_row);
        tensor_init(k_[l], DType::F16, block_size, kv_row, num_blocks, 1, p, "k_pool");
        p += layer_bytes;
        tensor_init(v_[l], DType::F16, kv_row, (int64_t)slots, 1, 1, p, "v_pool");
        p += layer_bytes;
    }
}

PagedKv::~PagedKv() {
    if (mem_) munmap(mem_, bytes_);
}

} // namespace vt
