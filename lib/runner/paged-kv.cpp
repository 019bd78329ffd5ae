#include "runner/paged-kv.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "backend/backend.h"
#include "core/error.h"
#include "core/pages.h"  // available_memory_bytes

namespace vt {

namespace {
// The layers a pool holds: the model's, and with_mtp its MTP layer's after them.
std::vector<LayerCacheSpec> pool_layers(const Model &model, bool with_mtp) {
    std::vector<LayerCacheSpec> l = model.cache_layers;
    if (with_mtp) {
        if (model.mtp_cache.empty())
            fail(VT_ERR_INTERNAL, "%s: a KV cache for a multi-token-prediction layer it does not have",
                 model.arch_name().c_str());
        l.insert(l.end(), model.mtp_cache.begin(), model.mtp_cache.end());
    }
    return l;
}
} // namespace

PagedKv::PagedKv(const Model &model, const std::vector<uint32_t> &blocks_per_group, uint32_t block_size,
                 uint32_t n_slots, bool allocate, bool with_mtp)
    : PagedKv(model, pool_layers(model, with_mtp), blocks_per_group, block_size, n_slots, allocate) {}

PagedKv::PagedKv(const Model &model, const std::vector<LayerCacheSpec> &layers,
                 const std::vector<uint32_t> &blocks_per_group, uint32_t block_size, uint32_t n_slots, bool allocate)
    : block_size_(block_size), groups_(cache_groups(layers)), blocks_(blocks_per_group), n_slots_(n_slots) {
    if (blocks_.size() != groups_.size())
        fail(VT_ERR_INTERNAL, "KV cache: %zu block counts for %zu cache groups", blocks_.size(), groups_.size());
    if (block_size == 0) fail(VT_ERR_INVALID_ARGUMENT, "a KV cache needs a block size");
    const size_t n_layer = layers.size();
    layer_group_.assign(n_layer, kNoGroup);
    for (uint32_t g = 0; g < groups_.size(); ++g) {
        if (blocks_[g] == 0) fail(VT_ERR_INVALID_ARGUMENT, "KV cache group %u has no blocks", g);
        for (uint32_t l : groups_[g].layers) layer_group_[l] = g;
        bytes_ += (uint64_t)blocks_[g] * block_size * groups_[g].bytes_per_token;
    }
    // A layer that shares another's cache uses its owner's group (block ids
    // and index) and, below, its owner's pools.
    for (uint32_t l = 0; l < n_layer; ++l)
        if (is_shared(layers[l])) layer_group_[l] = layer_group_[cache_owner(layers, l)];
    const StateSlots slots = state_slots(layers);
    if (!slots.layers.empty() && n_slots == 0)
        fail(VT_ERR_INVALID_ARGUMENT, "the model's %zu recurrent layers need state slots", slots.layers.size());
    bytes_ += (uint64_t)n_slots * slots.bytes_per_slot;
    // Each layer's K and V on its layer's device (Model::layer_device: the
    // model's, or the CPU for layers n_gpu_layers leaves there), packed into
    // as few buffers as the device's largest allocation allows (a GPU's KV
    // pool is often larger than one allocation may be). The CPU's buffers of
    // this size come straight from mmap: pages cost nothing until blocks are
    // first used.
    k_.resize(n_layer);
    v_.resize(n_layer);
    struct Pool {
        Tensor *t;
        vt_device *dev;
        size_t bytes;
    };
    std::vector<Pool> pools;
    for (size_t l = 0; l < n_layer; ++l) {
        const LayerCacheSpec &spec = layers[l];
        vt_device *d = model.layer_device((uint32_t)l);  // past the blocks: the last one's device
        if (is_shared(spec)) continue;  // its owner's tensors: share_pools()
        if (spec.kind == CacheKind::recurrent) {
            // A slot per sequence: the conv tail in K's place, the state in V's.
            // Either may be empty (LFM2's short conv has no state beyond its
            // tail): that pool then has no elements and no data, as a latent
            // layer's V, and takes no room in a buffer.
            tensor_init(k_[l], DType::F32, spec.conv_floats, n_slots, 1, 1, nullptr, "conv_state");
            tensor_init(v_[l], DType::F32, spec.state_floats, n_slots, 1, 1, nullptr, "recurrent_state");
            if (spec.conv_floats) pools.push_back({&k_[l], d, (size_t)spec.conv_floats * n_slots * 4});
            if (spec.state_floats) pools.push_back({&v_[l], d, (size_t)spec.state_floats * n_slots * 4});
            continue;
        }
        const int64_t kv_row = spec.kv_row, n_blocks = blocks_[layer_group_[l]];
        const size_t pool_bytes = (size_t)(n_blocks * block_size) * row_bytes(DType::F16, kv_row);
        tensor_init(k_[l], DType::F16, block_size, kv_row, n_blocks, 1, nullptr, "k_pool");
        pools.push_back({&k_[l], d, pool_bytes});
        if (!has_v_cache(spec)) {
            tensor_init(v_[l], DType::F16, 0, 0, 1, 1, nullptr, "v_pool (none: latent)");
            continue;
        }
        tensor_init(v_[l], DType::F16, kv_row, n_blocks * block_size, 1, 1, nullptr, "v_pool");
        pools.push_back({&v_[l], d, pool_bytes});
    }
    // Views of the owners' pools (the same data once allocated): a shared
    // layer's attention reads what its owner wrote and writes nothing.
    auto share_pools = [&] {
        for (size_t l = 0; l < n_layer; ++l)
            if (is_shared(layers[l])) {
                k_[l] = k_[layers[l].shared_from];
                v_[l] = v_[layers[l].shared_from];
            }
    };
    if (!allocate) {  // shapes only
        share_pools();
        return;
    }
    std::vector<bool> placed(pools.size(), false);
    for (size_t first = 0; first < pools.size(); ++first) {
        if (placed[first]) continue;
        vt_device *d = pools[first].dev;
        vt_buffer_type *bt = d->iface->get_buffer_type(d);
        const size_t max = bt->iface->get_max_size(bt), align = bt->iface->get_alignment(bt);
        // This buffer takes the device's next pools in layer order while they fit.
        std::vector<size_t> members;
        size_t size = 0;
        for (size_t i = first; i < pools.size(); ++i) {
            if (placed[i] || pools[i].dev != d) continue;
            if (pools[i].bytes > max)
                fail(VT_ERR_OUT_OF_MEMORY,
                     "KV cache: one layer's pool of %.2f MiB is over %s's largest allocation (%.2f MiB): "
                     "give a smaller kv_cache_bytes", (double)pools[i].bytes / (1 << 20), device_name(d).c_str(),
                     (double)max / (1 << 20));
            const size_t at = (size + align - 1) / align * align;
            if (at + pools[i].bytes > max) continue;
            members.push_back(i);
            size = at + pools[i].bytes;
        }
        buffers_.push_back(buffer_alloc(d, size, "KV cache"));
        vt_buffer *b = buffers_.back().get();
        if (!device_is_host(d)) {
            // Device memory starts undefined; attention never reads a slot
            // before it is written, but a NaN there would survive a zero weight.
            vt_status st = b->iface->clear(b, 0);
            if (st != VT_OK) fail(st, "cannot clear the KV cache on %s", device_name(d).c_str());
        }
        uint8_t *base = static_cast<uint8_t *>(b->iface->get_base(b));
        size_t at = 0;
        for (size_t i : members) {
            at = (at + align - 1) / align * align;
            pools[i].t->data = base + at;
            pools[i].t->buffer = b;
            at += pools[i].bytes;
            placed[i] = true;
        }
    }
    share_pools();
}

PagedKv::~PagedKv() = default;

void PagedKv::copy_slots(std::span<const StateCopy> copies) {
    std::vector<uint8_t> staging;
    for (const StateCopy &c : copies) {
        if (c.src < 0 || c.dst < 0 || (uint32_t)c.src >= n_slots_ || (uint32_t)c.dst >= n_slots_)
            fail(VT_ERR_INTERNAL, "state copy from slot %d to %d of %u", c.src, c.dst, n_slots_);
        for (size_t l = 0; l < k_.size(); ++l) {
            if (layer_group_[l] != kNoGroup) continue;
            for (Tensor *t : {&k_[l], &v_[l]}) {
                const size_t row = (size_t)t->ne[0] * sizeof(float);
                if (row == 0) continue;
                if (tensor_is_host(*t)) {
                    uint8_t *base = static_cast<uint8_t *>(t->data);
                    std::memcpy(base + (size_t)c.dst * row, base + (size_t)c.src * row, row);
                } else {
                    staging.resize(row);
                    tensor_get(*t, staging.data(), (size_t)c.src * row, row);
                    tensor_set(*t, staging.data(), (size_t)c.dst * row, row);
                }
            }
        }
    }
}

uint64_t kv_memory_limit(const Model &m, vt_device *arena_dev, size_t arena_bytes, uint64_t tokens_per_slot,
                         std::string *source) {
    // Each device's share of the pool: its layers' KV rows of tokens_per_slot
    // tokens and their state slot.
    std::vector<vt_device *> devs;
    std::vector<uint64_t> per_token;
    uint64_t total = 0;
    for (uint32_t l = 0; l < m.cache_layers.size(); ++l) {
        vt_device *d = m.layer_device(l);
        size_t i = (size_t)(std::find(devs.begin(), devs.end(), d) - devs.begin());
        if (i == devs.size()) {
            devs.push_back(d);
            per_token.push_back(0);
        }
        const uint64_t b = layer_bytes_per_token(m.cache_layers[l]) * tokens_per_slot +
                           layer_bytes_per_slot(m.cache_layers[l]);
        per_token[i] += b;
        total += b;
    }
    uint64_t limit = UINT64_MAX;
    for (size_t i = 0; i < devs.size(); ++i) {
        uint64_t room;
        char why[160];
        if (device_is_host(devs[i])) {
            const uint64_t avail = available_memory_bytes();  // the cgroup's room too
            room = avail ? avail / 4 : (1ull << 30);
            std::snprintf(why, sizeof why, "a quarter of the available memory (%.0f MiB)", (double)avail / (1 << 20));
        } else {
            const uint64_t free_now = device_memory_room(devs[i]);
            const uint64_t arena = devs[i] == arena_dev ? arena_bytes : 0;
            const uint64_t usable = free_now / 10 * 9;
            room = usable > arena ? usable - arena : 0;
            std::snprintf(why, sizeof why, "90%% of %s's free memory (%.0f MiB) less the compute arena (%.1f MiB)",
                          device_name(devs[i]).c_str(), (double)free_now / (1 << 20), (double)arena / (1 << 20));
        }
        // The whole pool whose share on this device is room.
        const uint64_t whole = per_token[i] ? (uint64_t)((double)room * (double)total / (double)per_token[i]) : UINT64_MAX;
        if (whole < limit) {
            limit = whole;
            if (source) *source = why;
        }
    }
    return limit;
}

} // namespace vt
