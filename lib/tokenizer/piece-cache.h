// Memo of a model's result for short pieces: words repeat, so most pieces
// of a text were tokenized before (HF's BPE and Unigram keep a 10k-entry
// cache for the same reason).
//
// Model::tokenize is const and runs on many threads at once, so each thread
// owns its caches and the hot path takes no lock: a direct-mapped table per
// (thread, model), found by the model's serial number (never its address,
// which a later model may reuse). A thread keeps the caches of its last few
// models and recycles the oldest.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace vt::tok {

class PieceCache {
public:
    static constexpr size_t kMaxKey = 26;  // bytes of piece
    static constexpr size_t kMaxIds = 8;   // ids of result

    static size_t hash(std::string_view key) { return std::hash<std::string_view>{}(key); }

    // Appends the cached ids of `key` to `out`; false on a miss.
    bool get(std::string_view key, size_t h, std::vector<int32_t> &out) const {
        const Slot &s = slots_[h & (kSlots - 1)];
        if (s.key_len != key.size() || s.hash != static_cast<uint32_t>(h)) return false;
        if (std::memcmp(s.key, key.data(), key.size()) != 0) return false;
        out.insert(out.end(), s.ids, s.ids + s.n_ids);
        return true;
    }

    // Remembers the result of `key` when both fit in a slot.
    void put(std::string_view key, size_t h, const int32_t *ids, size_t n) {
        if (key.empty() || key.size() > kMaxKey || n > kMaxIds) return;
        Slot &s = slots_[h & (kSlots - 1)];
        s.hash = static_cast<uint32_t>(h);
        s.key_len = static_cast<uint8_t>(key.size());
        s.n_ids = static_cast<uint8_t>(n);
        std::memcpy(s.key, key.data(), key.size());
        std::memcpy(s.ids, ids, n * sizeof(int32_t));
    }

    static bool fits(std::string_view key) { return !key.empty() && key.size() <= kMaxKey; }

    // A fresh serial number for a model that owns caches.
    static uint64_t new_owner() {
        static std::atomic<uint64_t> next{1};
        return next.fetch_add(1, std::memory_order_relaxed);
    }

    // The calling thread's cache for model `owner` (created empty on first use).
    static PieceCache &for_owner(uint64_t owner) {
        struct Entry {
            uint64_t owner = 0;
            std::unique_ptr<PieceCache> cache;
        };
        struct PerThread {
            std::array<Entry, 4> entries;
            size_t last = 0;     // most recently used, checked first
            size_t victim = 0;   // next to recycle
        };
        thread_local PerThread t;
        if (t.entries[t.last].owner == owner) return *t.entries[t.last].cache;
        for (size_t i = 0; i < t.entries.size(); ++i) {
            if (t.entries[i].owner == owner) {
                t.last = i;
                return *t.entries[i].cache;
            }
        }
        Entry &e = t.entries[t.victim];
        t.last = t.victim;
        t.victim = (t.victim + 1) % t.entries.size();
        if (e.cache) {
            e.cache->clear();
        } else {
            e.cache = std::make_unique<PieceCache>();
        }
        e.owner = owner;
        return *e.cache;
    }

    PieceCache() : slots_(kSlots) {}
    void clear() { std::fill(slots_.begin(), slots_.end(), Slot{}); }

private:
    static constexpr size_t kSlots = 8192;

    // One cache line: a piece and its ids (key_len 0 marks an empty slot).
    struct Slot {
        uint32_t hash = 0;
        uint8_t key_len = 0;
        uint8_t n_ids = 0;
        char key[kMaxKey];
        int32_t ids[kMaxIds];
    };
    static_assert(sizeof(Slot) == 64, "a slot is one cache line");

    std::vector<Slot> slots_;
};

// Appends the ids of `piece` to `out` from the calling thread's cache of
// `owner`, computing them with encode(piece, out) on a miss (and keeping
// short results).
template <class Encode>
void tokenize_cached(uint64_t owner, std::string_view piece, std::vector<int32_t> &out, Encode &&encode) {
    if (!PieceCache::fits(piece)) {
        encode(piece, out);
        return;
    }
    const size_t hash = PieceCache::hash(piece);
    PieceCache &cache = PieceCache::for_owner(owner);
    if (cache.get(piece, hash, out)) return;
    const size_t first = out.size();
    encode(piece, out);
    cache.put(piece, hash, out.data() + first, out.size() - first);
}

} // namespace vt::tok
