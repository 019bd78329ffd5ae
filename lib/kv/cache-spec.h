// What each layer of a model keeps per token, declared by its architecture
// (lib/models) and read by everything that sizes or lays out caches: the
// serving engine's paged pool, the single-sequence cache, the graph helpers
// that pick a layer's attention window. The KV manager serves the layers of
// one spec as one group (vLLM's KVCacheSpec): a group has a block pool and a
// block table per sequence of its own, and a sliding-window group holds only
// the blocks its window needs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace vt {

enum class CacheKind : uint8_t {
    full_attention,  // every past position
    sliding_window,  // the last `window` positions (the query's own included)
};

struct LayerCacheSpec {
    CacheKind kind = CacheKind::full_attention;
    uint32_t window = 0;   // sliding_window: positions a query sees
    uint32_t kv_row = 0;   // K (and V) values per token: head_dim * n_head_kv
};

// The layers that share a cache spec: full-attention groups first, then
// sliding ones by window.
struct CacheGroup {
    CacheKind kind = CacheKind::full_attention;
    uint32_t window = 0;
    std::vector<uint32_t> layers;
    uint64_t bytes_per_token = 0;  // f16 K and V of its layers: the one place that sizes KV
};

inline std::vector<CacheGroup> cache_groups(const std::vector<LayerCacheSpec> &layers) {
    std::vector<CacheGroup> groups;
    for (uint32_t l = 0; l < layers.size(); ++l) {
        const LayerCacheSpec &s = layers[l];
        const uint32_t window = s.kind == CacheKind::sliding_window ? s.window : 0;
        CacheGroup *g = nullptr;
        for (CacheGroup &c : groups)
            if (c.kind == s.kind && c.window == window) g = &c;
        if (!g) {
            groups.push_back({s.kind, window, {}, 0});
            g = &groups.back();
        }
        g->layers.push_back(l);
        g->bytes_per_token += 2ull /* K and V */ * s.kv_row * 2 /* f16 */;
    }
    std::stable_sort(groups.begin(), groups.end(), [](const CacheGroup &a, const CacheGroup &b) {
        return a.kind == b.kind ? a.window < b.window : a.kind == CacheKind::full_attention;
    });
    return groups;
}

// The attention window of a layer in positions, 0 for all.
inline int32_t attention_window(const LayerCacheSpec &l) {
    return l.kind == CacheKind::sliding_window ? (int32_t)l.window : 0;
}

} // namespace vt
