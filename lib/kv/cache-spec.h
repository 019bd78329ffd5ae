// What each layer of a model keeps per token, declared by its architecture
// (lib/models) and read by everything that sizes or lays out caches: the
// serving engine's paged pool, the single-sequence cache, the graph helpers
// that pick a layer's attention window. The KV manager serves the layers of
// one spec as one group (vLLM's KVCacheSpec): a group has a block pool and a
// block table per sequence of its own, and a sliding-window group holds only
// the blocks its window needs. A latent group (DeepSeek MLA) keeps every
// position as full attention does, in one row per token instead of a K and a
// V row: the KV manager sees a group with no window.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace vt {

enum class CacheKind : uint8_t {
    full_attention,  // every past position
    sliding_window,  // the last `window` positions (the query's own included)
    latent,          // every past position, one row per token that is both key and value:
                     // MLA's [c_kv (kv_lora_rank), k_pe (rope dims)], read by
                     // Op::ATTN_PAGED's latent mode; no V cache
    recurrent,       // no rows per token: a fixed-size f32 state per sequence (a slot), the
                     // conv tail and the recurrent state of a linear-attention or Mamba layer
                     // (Op::CONV1D_CAUSAL, Op::GATED_DELTA_RULE); not paged
};

// A layer whose shared_from is not kOwnCache owns no cache: it reads the
// pool of an earlier layer of the same kind, window and row (Gemma 4's KV
// sharing: its last layers attend to the keys and values an earlier layer
// wrote, and write none). Everything that sizes or lays out caches counts
// each pool once: such a layer is in no cache group, has no bytes of its
// own, and the runner hands it its source's tensors and block table.
constexpr uint32_t kOwnCache = UINT32_MAX;

struct LayerCacheSpec {
    CacheKind kind = CacheKind::full_attention;
    uint32_t window = 0;   // sliding_window: positions a query sees; 0 for the other kinds
    uint32_t kv_row = 0;   // K (and V) values per token: head_dim * n_head_kv; latent: the
                           // cached row, kv_lora_rank + rope dims (times n_head_kv, 1 for MLA)
    // recurrent: the f32 values of one sequence's slot.
    uint32_t conv_floats = 0;   // the conv tail: (kernel - 1) * conv channels
    uint32_t state_floats = 0;  // the recurrent state (Gated DeltaNet: n_v_heads * dk * dv)
    uint32_t shared_from = kOwnCache;  // the layer whose pool this one reads (see kOwnCache)
};

inline bool is_shared(const LayerCacheSpec &s) { return s.shared_from != kOwnCache; }

// The layer whose pool layer l reads: l itself, or the layer it shares.
inline uint32_t cache_owner(const std::vector<LayerCacheSpec> &layers, uint32_t l) {
    return is_shared(layers[l]) ? layers[l].shared_from : l;
}

// Bytes one token takes in a layer's cache: f16 K and V rows, or a latent
// layer's one f16 row; none for a recurrent layer (its state is per sequence).
inline uint64_t layer_bytes_per_token(const LayerCacheSpec &s) {
    if (s.kind == CacheKind::recurrent || is_shared(s)) return 0;
    return (s.kind == CacheKind::latent ? 1ull : 2ull /* K and V */) * s.kv_row * 2 /* f16 */;
}

// Bytes one sequence's slot takes in a recurrent layer (f32 conv tail and
// state); 0 for the other kinds.
inline uint64_t layer_bytes_per_slot(const LayerCacheSpec &s) {
    return s.kind == CacheKind::recurrent ? ((uint64_t)s.conv_floats + s.state_floats) * 4 : 0;
}

// Whether a layer has a V cache (a latent layer reads its values from K).
inline bool has_v_cache(const LayerCacheSpec &s) { return s.kind != CacheKind::latent; }

// For logs: "full-attention", "sliding-window", "latent".
inline const char *cache_kind_name(CacheKind k) {
    switch (k) {
    case CacheKind::full_attention: return "full-attention";
    case CacheKind::sliding_window: return "sliding-window";
    case CacheKind::latent: return "latent";
    case CacheKind::recurrent: return "recurrent";
    }
    return "?";
}

// The layers that share a paged cache spec: full-attention groups first,
// then a latent one, then sliding ones by window. Recurrent layers are in
// no paged group: their slots are state_slots()'s; nor are shared layers
// (their owner's group serves them).
struct CacheGroup {
    CacheKind kind = CacheKind::full_attention;
    uint32_t window = 0;
    std::vector<uint32_t> layers;
    uint64_t bytes_per_token = 0;  // the sum of its layers' layer_bytes_per_token: the one place that sizes KV
};

inline std::vector<CacheGroup> cache_groups(const std::vector<LayerCacheSpec> &layers) {
    std::vector<CacheGroup> groups;
    for (uint32_t l = 0; l < layers.size(); ++l) {
        const LayerCacheSpec &s = layers[l];
        if (s.kind == CacheKind::recurrent || is_shared(s)) continue;
        const uint32_t window = s.kind == CacheKind::sliding_window ? s.window : 0;
        CacheGroup *g = nullptr;
        for (CacheGroup &c : groups)
            if (c.kind == s.kind && c.window == window) g = &c;
        if (!g) {
            groups.push_back({s.kind, window, {}, 0});
            g = &groups.back();
        }
        g->layers.push_back(l);
        g->bytes_per_token += layer_bytes_per_token(s);
    }
    auto rank = [](CacheKind k) { return k == CacheKind::full_attention ? 0 : k == CacheKind::latent ? 1 : 2; };
    std::stable_sort(groups.begin(), groups.end(), [&](const CacheGroup &a, const CacheGroup &b) {
        return rank(a.kind) != rank(b.kind) ? rank(a.kind) < rank(b.kind) : a.window < b.window;
    });
    return groups;
}

// The recurrent layers, whose state lives in a slot per sequence (the KV
// manager's state slots; vLLM's MambaSpec): one slot holds every such
// layer's conv tail and state.
struct StateSlots {
    std::vector<uint32_t> layers;
    uint64_t bytes_per_slot = 0;  // the sum of their layer_bytes_per_slot
};

inline StateSlots state_slots(const std::vector<LayerCacheSpec> &layers) {
    StateSlots s;
    for (uint32_t l = 0; l < layers.size(); ++l)
        if (layers[l].kind == CacheKind::recurrent) {
            s.layers.push_back(l);
            s.bytes_per_slot += layer_bytes_per_slot(layers[l]);
        }
    return s;
}

// The attention window of a layer in positions, 0 for all.
inline int32_t attention_window(const LayerCacheSpec &l) {
    return l.kind == CacheKind::sliding_window ? (int32_t)l.window : 0;
}

} // namespace vt
