// The state slots of a model's recurrent layers (Gated DeltaNet, Mamba), as
// the KV manager serves them: live slots, one per running sequence, and
// snapshots that let the prefix cache resume a sequence from a cached block
// boundary (vLLM's "align" mode for Mamba prefix caching, SGLang's radix
// nodes with a state).
//
// A recurrent state is valid at one position only: the end of the step that
// wrote it. A snapshot is a copy of a live slot taken when a step ends on a
// block boundary, keyed by the prefix-cache hash of the block that ends
// there (which chains every earlier block and the root: a LoRA adapter's
// key too), so a hit on that block resumes from the copy. Each running
// sequence keeps at most one snapshot it may replace as it moves on (its
// latest boundary) plus the pinned one at its prompt's last full block (the
// point a follow-up turn or a shared system prompt resumes from); pinned
// snapshots and those of finished sequences are evicted least recently used
// first. Pure bookkeeping: the runner does the copies the lists name
// (restores before the step's forward pass, saves after it).
//
// Speculative decoding adds a checkpoint per live slot: a verification
// advances the state through the draft's tokens, so the state it started
// from is copied aside before the pass (checkpoint) and copied back when the
// verification rejects a draft token (rollback, before the next pass, which
// then computes the accepted tokens again; sched/scheduler.h). vLLM instead
// keeps the state after every drafted position (its kernels write k + 1 of
// them); a copy aside needs no change to the recurrent ops, and writes one
// state per step where that writes k + 1.
//
// Not thread-safe: driven by the scheduler's thread only.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "kv/block-pool.h"

namespace vt {

// One slot-to-slot copy of every recurrent layer's conv tail and state.
struct StateCopy {
    int32_t src = -1, dst = -1;
};

class StateSlotPool {
public:
    // Live slots are 0 .. n_live - 1, snapshots n_live .. n_live + n_snap - 1,
    // then with checkpoints one per live slot: live slot l's is
    // n_live + n_snap + l.
    StateSlotPool(uint32_t n_live, uint32_t n_snap, bool checkpoints = false);

    uint32_t num_live() const { return n_live_; }
    uint32_t num_snapshots() const { return (uint32_t)snaps_.size(); }
    uint32_t num_free_live() const { return (uint32_t)free_live_.size(); }
    bool has_checkpoints() const { return checkpoints_; }
    // Every slot: live, snapshots and checkpoints.
    uint32_t num_slots() const { return n_live_ + num_snapshots() + (checkpoints_ ? n_live_ : 0); }

    // A free live slot, or -1.
    int32_t take_live();
    // Gives a live slot back; the snapshot its sequence owned stays cached,
    // and copies still queued into it are dropped.
    void free_live(int32_t slot);

    // Live slot `live`'s state goes to its checkpoint before the next forward
    // pass (a verification starts from it). Needs checkpoints.
    void checkpoint(int32_t live);
    // Its checkpoint goes back into live slot `live` before the next forward
    // pass (a verification rejected a draft token). Needs checkpoints.
    void rollback(int32_t live);

    // The snapshot slot holding the state after the block with this hash, or
    // -1 (none, or one whose copy is still to be made by the running step).
    int32_t find(const BlockHash &h) const;
    // Restores snapshot `snap` into live slot `live` before the next forward.
    void restore(int32_t snap, int32_t live);
    // Records that live slot `live` (its sequence's) ends the step at the
    // block with hash h: unless a snapshot of h exists, a snapshot slot is
    // taken (the sequence's own replaceable one when pinned is false, else a
    // free or the least recently used one) and a save is queued. Returns
    // false when no snapshot slot can be had (all held by running sequences).
    bool save(int32_t live, const BlockHash &h, bool pinned);
    // The copies queued since the last call: restores (before the forward)
    // and saves (after it).
    void take_copies(std::vector<StateCopy> &restores, std::vector<StateCopy> &saves);
    // The step's saves are written: their snapshots may now be hit.
    void commit();

    // Verifies the free list, the hash map and the owners. VT_ERR_INTERNAL.
    void check() const;

private:
    struct Snap {
        std::optional<BlockHash> hash;  // none: free
        int32_t owner = -1;             // the live slot that may replace it, or -1
        bool ready = false;             // its save has been done
        uint64_t used = 0;              // LRU clock
    };
    Snap &snap(int32_t slot) { return snaps_.at((size_t)(slot - (int32_t)n_live_)); }
    void forget(int32_t slot);
    int32_t checkpoint_of(int32_t live) const;

    uint32_t n_live_;
    bool checkpoints_;
    std::vector<int32_t> free_live_;    // taken from the back: slot 0 first
    std::vector<Snap> snaps_;
    std::vector<int32_t> owned_;        // per live slot: its replaceable snapshot, or -1
    std::unordered_map<BlockHash, int32_t, BlockHashHasher> by_hash_;
    std::vector<StateCopy> restores_, saves_;
    uint64_t clock_ = 0;
};

} // namespace vt
