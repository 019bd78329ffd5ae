// Open-addressing hash map from a 64-bit key to a 64-bit value, filled once
// at construction and then only read (concurrently). The tokenizer models
// probe one on every step of their inner loops (BPE: (left, right) -> merge;
// Unigram: (trie node, byte) -> child), where std::unordered_map's node
// chasing would dominate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vt::tok {

class U64Map {
public:
    // All ones is reserved as the empty marker; callers' keys (pairs of
    // non-negative 32-bit ids, node << 8 | byte) never reach it.
    static constexpr uint64_t kEmptyKey = ~uint64_t(0);

    // Inserts, or overwrites the value of an existing key.
    void set(uint64_t key, uint64_t value) {
        if ((count_ + 1) * 2 > slots_.size()) grow();
        Slot &s = slot_for(key);
        if (s.key == kEmptyKey) {
            s.key = key;
            ++count_;
        }
        s.value = value;
    }

    // The value of `key`, or nullptr.
    const uint64_t *find(uint64_t key) const {
        if (slots_.empty()) return nullptr;
        for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
            const Slot &s = slots_[i];
            if (s.key == key) return &s.value;
            if (s.key == kEmptyKey) return nullptr;
        }
    }

    size_t size() const { return count_; }

    void reserve(size_t n) {
        while (slots_.size() < 2 * n) grow();
    }

private:
    struct Slot {
        uint64_t key = kEmptyKey;
        uint64_t value = 0;
    };

    // Spreads the low bits of both halves of the key (murmur3's finalizer).
    static size_t mix(uint64_t k) {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdULL;
        k ^= k >> 33;
        return static_cast<size_t>(k);
    }

    Slot &slot_for(uint64_t key) {
        for (size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
            Slot &s = slots_[i];
            if (s.key == key || s.key == kEmptyKey) return s;
        }
    }

    void grow() {
        std::vector<Slot> old;
        old.swap(slots_);
        slots_.assign(old.empty() ? 16 : old.size() * 2, Slot{});
        mask_ = slots_.size() - 1;
        for (const Slot &s : old) {
            if (s.key != kEmptyKey) slot_for(s.key) = s;
        }
    }

    std::vector<Slot> slots_;
    size_t mask_ = 0;
    size_t count_ = 0;
};

} // namespace vt::tok
