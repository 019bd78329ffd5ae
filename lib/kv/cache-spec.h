// What each layer of a model keeps per token, declared by its architecture
// (lib/models) and read by everything that sizes or lays out caches: the
// serving engine's paged pool, the single-sequence cache, the graph helpers
// that pick a layer's attention window. The KV manager serves layers of one
// spec as one group (vLLM's KVCacheSpec); today every kind keeps all of its
// blocks, and a sliding window only limits what attention reads.
#pragma once

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

// f16 K and V of one token over all layers: the one place that sizes KV.
inline uint64_t kv_bytes_per_token(const std::vector<LayerCacheSpec> &layers) {
    uint64_t n = 0;
    for (const LayerCacheSpec &l : layers) n += 2ull /* K and V */ * l.kv_row * 2 /* f16 */;
    return n;
}

// The attention window of a layer in positions, 0 for all.
inline int32_t attention_window(const LayerCacheSpec &l) {
    return l.kind == CacheKind::sliding_window ? (int32_t)l.window : 0;
}

} // namespace vt
