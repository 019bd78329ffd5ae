// Draft-model proposals for speculative decoding (vLLM's "draft_model"
// method, llama.cpp's --model-draft): a smaller model with the target's
// vocabulary runs k greedy steps for every drafting request, batched, and
// the target's step verifies them (engine.h). The draft is greedy, a point
// mass, so the engine's row-by-row verification stays exact rejection
// sampling: the tokens are the target's, greedy or sampled, seed for seed;
// the draft model only decides how many of them a step makes.
//
// The draft keeps its own paged KV (runner/paged-kv.h) over blocks of the
// same size as the engine's, one table per request for all its cache
// groups, grown as the request grows and given back when it finishes. It
// remembers the tokens it has computed per request; at each proposal the
// part that still agrees with the request's tokens stays, and the rest (the
// target rejected a draft token, or the request was preempted and its
// output recomputed alike) is computed again: positions are overwritten in
// place, so a rejected draft costs nothing to roll back. The first proposal
// of a request computes its prompt (a draft-model prefill, in chunks of the
// context's n_batch).
//
// A draft model with recurrent layers (a small Qwen3.5 drafting a large one)
// keeps a state per request, which the drafted tokens move past what the
// next proposal keeps: it is copied to a checkpoint once the request's known
// tokens are in, before the draft's own tokens go through, and a proposal
// that keeps fewer tokens than the state has seen starts from the
// checkpoint again (as the engine does for the model's own states,
// sched/scheduler.h). Two slots per request.
//
// A request the pool has no room for gets no draft that step (it decodes a
// token as without speculation); the engine sizes the pool to hold as many
// tokens as its own (engine/kv-plan.h).
//
// Not thread-safe: the engine's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block-pool.h"
#include "model/model.h"
#include "runner/paged-kv.h"
#include "runner/sequence.h"

namespace vt {

// A draft's tokens are the model's: the same vocabulary, piece for piece
// (as llama.cpp's speculative decoding checks). Throws
// VT_ERR_INVALID_ARGUMENT naming the first difference.
void check_draft_vocabulary(const Model &model, const Model &draft);

class DraftModelProposer {
public:
    // draft computes with target's executor (threads and stream) where both
    // are on one device, else on its own device with as many threads; forward
    // passes of at most n_batch tokens; its pool has n_blocks blocks of
    // block_size tokens in every cache group; a request reaches at most
    // max_len positions; a draft with recurrent layers holds states for at
    // most max_seqs requests. Errors: VT_ERR_OUT_OF_MEMORY,
    // VT_ERR_INVALID_ARGUMENT (a recurrent draft and max_seqs 0).
    DraftModelProposer(const Model &draft, Context &target, uint32_t n_batch, uint32_t n_blocks, uint32_t block_size,
                       uint32_t max_len, uint32_t max_seqs);
    ~DraftModelProposer();

    struct Want {
        uint64_t id = 0;
        std::span<const int32_t> tokens;  // the request's tokens so far (prompt and output)
        uint32_t k = 0;                   // the most tokens to draft for it
    };
    // Up to want.k tokens for each want, computed together: out[i] is the
    // draft of wants[i], empty where the pool had no room for it (or k is 0).
    void propose(std::span<const Want> wants, std::vector<std::vector<int32_t>> &out);
    // How many of tokens a proposal for request id would compute before it
    // drafts: all of them for a request never seen.
    size_t catch_up(uint64_t id, std::span<const int32_t> tokens) const;
    // The request ended (or the engine started over): its blocks go back.
    void finish(uint64_t id);
    void clear();

    // The most tokens one request of the last proposal had to catch up on
    // (its first proposal: its prompt; later ones: the tokens after its
    // last accepted draft token).
    size_t last_catch_up() const { return last_catch_up_; }

    uint64_t pool_bytes() const { return kv_->bytes(); }
    uint32_t blocks_free() const { return pool_.num_free(); }

private:
    struct Seq {
        std::vector<BlockId> blocks;   // positions 0 .. blocks.size() * block_size - 1
        std::vector<int32_t> computed; // the tokens whose K/V the draft's cache holds, by position
        // Recurrent layers: its live slot (its state has seen computed) and
        // the checkpoint beside it (live + 1), the state after its first
        // checkpoint_at tokens; -1 and 0 without.
        int32_t slot = -1;
        size_t checkpoint_at = 0;
    };
    void propose_all(std::span<const Want> wants, std::vector<std::vector<int32_t>> &out);
    // Grows s's table to cover n positions (and gives it state slots where
    // the draft has recurrent layers); false when the pool is short.
    bool reserve(Seq &s, size_t n);
    // Where s's state can resume for tokens that agree with computed up to
    // keep: keep itself, or its checkpoint, or 0 (a fresh state). Without
    // recurrent layers, keep.
    size_t resume_point(const Seq &s, size_t keep) const;
    // The same, the checkpoint restored into the live slot where it is taken.
    size_t resume_at(Seq &s, size_t keep);
    void release(Seq &s);
    // One forward pass over parts (tokens at start positions of their
    // sequences, each wanting its last row's logits or none); the greedy
    // token of each part that wanted logits, in order.
    struct Part {
        Seq *seq;
        std::span<const int32_t> tokens;
        uint32_t start;
        bool logits;
    };
    void forward(std::span<const Part> parts, std::vector<int32_t> &greedy);

    const Model &draft_;
    std::unique_ptr<Context> ctx_;
    uint32_t block_size_, max_len_;
    std::unique_ptr<PagedKv> kv_;
    BlockPool pool_;
    bool recurrent_ = false;
    std::vector<int32_t> free_slots_;  // live slots (even): each with its checkpoint after it
    std::unordered_map<uint64_t, Seq> seqs_;
    size_t last_catch_up_ = 0;
    // forward() scratch
    std::vector<Context::BatchSeq> batch_;
    std::vector<std::vector<std::vector<BlockId>>> tables_;
};

} // namespace vt
