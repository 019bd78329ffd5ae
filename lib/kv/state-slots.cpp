#include "kv/state-slots.h"

#include <algorithm>

#include "core/error.h"

namespace vt {

StateSlotPool::StateSlotPool(uint32_t n_live, uint32_t n_snap, bool checkpoints)
    : n_live_(n_live), checkpoints_(checkpoints), snaps_(n_snap), owned_(n_live, -1) {
    for (uint32_t s = n_live; s-- > 0;) free_live_.push_back((int32_t)s);
}

int32_t StateSlotPool::take_live() {
    if (free_live_.empty()) return -1;
    const int32_t s = free_live_.back();
    free_live_.pop_back();
    return s;
}

void StateSlotPool::free_live(int32_t slot) {
    if (slot < 0 || (uint32_t)slot >= n_live_) fail(VT_ERR_INTERNAL, "state slots: freeing live slot %d", slot);
    if (const int32_t own = owned_[(size_t)slot]; own >= 0) snap(own).owner = -1;
    owned_[(size_t)slot] = -1;
    free_live_.push_back(slot);
    // A rollback (or a prefix hit's restore) queued for the sequence that
    // held it: the slot's next owner starts from its own state.
    std::erase_if(restores_, [&](const StateCopy &c) { return c.dst == slot; });
}

int32_t StateSlotPool::checkpoint_of(int32_t live) const {
    if (!checkpoints_ || live < 0 || (uint32_t)live >= n_live_)
        fail(VT_ERR_INTERNAL, "state slots: no checkpoint for live slot %d", live);
    return (int32_t)(n_live_ + snaps_.size()) + live;
}

void StateSlotPool::checkpoint(int32_t live) {
    const int32_t ck = checkpoint_of(live);
    // Just rolled back: the checkpoint already holds the state.
    if (std::any_of(restores_.begin(), restores_.end(), [&](const StateCopy &c) { return c.src == ck && c.dst == live; }))
        return;
    restores_.push_back({live, ck});
}

void StateSlotPool::rollback(int32_t live) {
    restores_.push_back({checkpoint_of(live), live});
}

int32_t StateSlotPool::find(const BlockHash &h) const {
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) return -1;
    return snaps_[(size_t)(it->second - (int32_t)n_live_)].ready ? it->second : -1;
}

void StateSlotPool::restore(int32_t s, int32_t live) {
    snap(s).used = ++clock_;
    restores_.push_back({s, live});
}

void StateSlotPool::forget(int32_t slot) {
    Snap &sn = snap(slot);
    if (sn.hash) by_hash_.erase(*sn.hash);
    if (sn.owner >= 0) owned_[(size_t)sn.owner] = -1;
    sn = Snap{};
}

bool StateSlotPool::save(int32_t live, const BlockHash &h, bool pinned) {
    if (auto it = by_hash_.find(h); it != by_hash_.end()) {
        snap(it->second).used = ++clock_;  // the same prefix is saved already (or is being saved)
        return true;
    }
    int32_t slot = pinned ? -1 : owned_[(size_t)live];
    if (slot < 0) {
        // A free snapshot, else the least recently used one no running
        // sequence may still replace.
        uint64_t oldest = UINT64_MAX;
        for (size_t i = 0; i < snaps_.size(); ++i) {
            const Snap &sn = snaps_[i];
            const int32_t id = (int32_t)(n_live_ + i);
            if (!sn.hash) {
                slot = id;
                break;
            }
            if (sn.owner < 0 && sn.ready && sn.used < oldest) {
                oldest = sn.used;
                slot = id;
            }
        }
    }
    if (slot < 0) return false;
    forget(slot);
    Snap &sn = snap(slot);
    sn.hash = h;
    sn.used = ++clock_;
    if (!pinned) {
        sn.owner = live;
        owned_[(size_t)live] = slot;
    }
    by_hash_[h] = slot;
    saves_.push_back({live, slot});
    return true;
}

void StateSlotPool::take_copies(std::vector<StateCopy> &restores, std::vector<StateCopy> &saves) {
    restores.swap(restores_);
    saves.swap(saves_);
    restores_.clear();
    saves_.clear();
}

void StateSlotPool::commit() {
    for (Snap &sn : snaps_)
        if (sn.hash) sn.ready = true;
}

void StateSlotPool::check() const {
    std::vector<uint8_t> seen(n_live_, 0);
    for (int32_t s : free_live_) {
        if (s < 0 || (uint32_t)s >= n_live_ || seen[(size_t)s])
            fail(VT_ERR_INTERNAL, "state slots: live slot %d is free twice or out of range", s);
        seen[(size_t)s] = 1;
    }
    size_t hashed = 0;
    for (size_t i = 0; i < snaps_.size(); ++i) {
        const Snap &sn = snaps_[i];
        const int32_t id = (int32_t)(n_live_ + i);
        if (sn.hash) {
            ++hashed;
            auto it = by_hash_.find(*sn.hash);
            if (it == by_hash_.end() || it->second != id)
                fail(VT_ERR_INTERNAL, "state slots: snapshot %d is not found by its hash", id);
        }
        if (sn.owner >= 0 && ((uint32_t)sn.owner >= n_live_ || owned_[(size_t)sn.owner] != id))
            fail(VT_ERR_INTERNAL, "state slots: snapshot %d's owner %d does not own it", id, sn.owner);
    }
    if (hashed != by_hash_.size()) fail(VT_ERR_INTERNAL, "state slots: %zu hashes for %zu snapshots", by_hash_.size(), hashed);
}

} // namespace vt
