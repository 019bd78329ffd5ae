// The KV tensors of a paged cache, per layer: a K pool (block_size, kv_row,
// n_blocks) f16, each block's keys transposed (one row of block_size per key
// dimension: the attention kernel's scores then need no horizontal sums),
// and a V pool (kv_row, n_slots) f16, one row per slot; slot = block *
// block_size + offset. The layers of one cache group (kv/cache-spec.h)
// share block ids: each group has its own number of blocks, and block b of
// a group is block b of each of its layers' pools. A latent layer
// (CacheKind::latent) has the K pool alone: its V tensor has no elements
// and no data (ne (0, 0, 1, 1), data and buffer null), and its attention
// reads values from K (Op::ATTN_PAGED's latent mode).
// Owned by the runner; the KV manager (lib/kv) hands out block ids only.
// Both the serving engine (many sequences, blocks from the KV manager) and
// vt_seq (one sequence) keep their K/V here, so every forward pass goes
// through one attention kernel (Op::ATTN_PAGED).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/tensor.h"
#include "kv/cache-spec.h"
#include "kv/state-slots.h"
#include "model/model.h"

namespace vt {

class PagedKv {
public:
    // Allocates blocks_per_group[g] blocks of block_size tokens for every
    // layer of group g of cache_groups(model.cache_layers), on the layer's
    // device (Model::layer_device). On the CPU the pages are untouched (and cost nothing) until
    // first written. A device's pools share buffers of at most its largest
    // allocation. allocate false: the tensors' shapes only (null data), for
    // planning a graph. Errors: VT_ERR_INVALID_ARGUMENT (a group without
    // blocks, a zero block size), VT_ERR_OUT_OF_MEMORY (also: one layer's
    // pool over the device's largest allocation).
    // n_slots: the state slots of the model's recurrent layers (0 without
    // such layers): layer l's k() is then its conv-tail pool (conv_floats,
    // n_slots) f32 and v() its state pool (state_floats, n_slots) f32.
    // with_mtp: the model's multi-token-prediction layer's cache too
    // (Model::mtp_cache), layer cache_layers.size(), on the last layer's device.
    PagedKv(const Model &model, const std::vector<uint32_t> &blocks_per_group, uint32_t block_size,
            uint32_t n_slots = 0, bool allocate = true, bool with_mtp = false);
    ~PagedKv();
    PagedKv(const PagedKv &) = delete;
    PagedKv &operator=(const PagedKv &) = delete;

    uint32_t block_size() const { return block_size_; }
    const std::vector<CacheGroup> &groups() const { return groups_; }
    uint32_t num_blocks(uint32_t g) const { return blocks_.at(g); }
    // The paged group of a layer; kNoGroup for a recurrent one.
    static constexpr uint32_t kNoGroup = UINT32_MAX;
    uint32_t layer_group(uint32_t layer) const { return layer_group_.at(layer); }
    uint32_t num_layers() const { return (uint32_t)layer_group_.size(); }
    uint32_t num_slots() const { return n_slots_; }
    // Copies slot src to slot dst in every recurrent layer (conv tail and
    // state), in order: prefix hits' snapshots and their saves
    // (kv/state-slots.h). Throws vt::Error.
    void copy_slots(std::span<const StateCopy> copies);
    uint64_t bytes() const { return bytes_; }  // every group's blocks * block_size * bytes_per_token, and the slots
    // Per layer; a layer that shares another's cache (LayerCacheSpec::
    // shared_from) has its owner's tensors (the same memory) and group.
    std::vector<Tensor> &k() { return k_; }
    std::vector<Tensor> &v() { return v_; }    // empty for a latent layer

private:
    PagedKv(const Model &model, const std::vector<LayerCacheSpec> &layers, const std::vector<uint32_t> &blocks_per_group,
            uint32_t block_size, uint32_t n_slots, bool allocate);

    uint32_t block_size_;
    std::vector<CacheGroup> groups_;
    std::vector<uint32_t> blocks_, layer_group_;
    uint32_t n_slots_ = 0;
    uint64_t bytes_ = 0;
    std::vector<BufferPtr> buffers_;  // per device, one or more: its layers' K and V pools
    std::vector<Tensor> k_, v_;
};

// The largest KV pool the devices of m's cache layers can take now, in bytes
// of the whole pool (its per-device shares summed), keeping arena_bytes free
// on arena_dev (the device a context computes on). A device's part is 90%
// of its room (device_memory_room; the driver's own allocations and
// fragmentation keep the rest, as vLLM's gpu_memory_utilization), the CPU's
// a quarter of the available memory. Each device's share of the pool is that
// of its layers in a pool of tokens_per_slot tokens of KV rows per state
// slot of the recurrent layers (ignored without such layers). source, when
// given, says which bound held, for messages.
uint64_t kv_memory_limit(const Model &m, vt_device *arena_dev, size_t arena_bytes, uint64_t tokens_per_slot,
                         std::string *source = nullptr);

} // namespace vt
