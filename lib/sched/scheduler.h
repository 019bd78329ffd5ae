// Continuous batching, as in vLLM v1: one step is one forward pass over a
// batch that mixes prefill chunks and decode tokens of many sequences, under
// a token budget and a sequence cap. There are no prefill or decode modes:
// each sequence simply has tokens whose KV is not computed yet, and a step
// computes as many of them as the budget allows (chunked prefill).
//
// The engine loop:
//     SchedulerOutput out = sched.schedule();
//     logits = runner.forward(out);                  // one pass
//     sampled = sampler(logits of out's needs_logits sequences);
//     finished = sched.update(out, sampled);
//
// Policy. Running sequences are served first, in admission order; when the
// KV pool runs out, the newest running sequence is preempted: its blocks are
// freed and it goes back to the front of the waiting queue, to be recomputed
// later (its freed blocks often still hit the prefix cache). Waiting
// sequences are then admitted first come, first served, while budget, the
// sequence cap and blocks last; none are admitted in a step that preempted.
//
// Decode priority (vLLM's long_prefill_token_threshold, in spirit). A step
// runs as long as its slowest part: were it to compute a whole 512-token
// prompt chunk beside the running decodes, every running sequence's next
// token would wait for that chunk. So while any running sequence decodes
// (all its tokens but the last sampled one are computed), the step's
// prefill tokens (prompt chunks, recomputes after preemption, admissions)
// are capped at max(prefill_tokens_beside_decodes, prefill_tokens_per_decode
// * decodes): the chunk grows with the decode batch, whose own step time
// grows with it, so a prompt slows each decode step by a bounded factor and
// still moves on every step. Decodes are never held back for prefill: the
// budget a prefill takes leaves room for every decode after it. With no
// decode running, prompts get the whole budget (an idle server's TTFT).
//
// Speculative decoding (vLLM v1's way): a decoding sequence may carry a
// draft, k proposed tokens after its last sampled one (set_draft, from a
// proposer of the engine). The step then computes 1 + k tokens for it,
// counted against the budget like any others (a verification is one
// forward pass over the batch), and update() takes the tokens the
// verification kept: the draft's accepted prefix and one token of the
// model's own. The rejected tokens' KV is abandoned: the sequence's computed
// count goes back to what the kept tokens cover and the blocks past it are
// given back (KvCacheManager::allocate keeps draft tokens out of the prefix
// cache).
//
// A sequence with recurrent layers has one state, which the verification
// carries through every draft token. Its state is checkpointed before the
// step (KvCacheManager::checkpoint_state); when a draft token is rejected
// the checkpoint is rolled back, the KV of the kept tokens stays, and the
// sequence's next step computes the kept tokens again before its new one
// (they replay: the attention layers rewrite the same K/V, the recurrent
// layers catch up), with a new draft after them. A rejection thus costs
// 1 + accepted tokens more in the next step's batch, where decoding is
// bound by reading the weights, not by tokens. Such a step saves no state
// snapshot for the prefix cache: its state is speculative.
//
// Pure bookkeeping: no tensors. Thread-safety: cancel() may be called from
// any thread; everything else belongs to the engine's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/kv-cache-manager.h"

namespace vt {

struct SchedulerConfig {
    uint32_t max_num_batched_tokens = 2048;  // token budget of one step
    uint32_t max_num_seqs = 256;             // running sequences at most
    uint32_t max_model_len = 0;              // tokens per sequence; 0: all the KV blocks
    // Decode priority (above): prefill tokens of a step that decodes are at
    // most max(prefill_tokens_beside_decodes, prefill_tokens_per_decode *
    // decodes). 0 and 0: no cap, prompts share the whole budget.
    uint32_t prefill_tokens_beside_decodes = 0;
    uint32_t prefill_tokens_per_decode = 0;
};

// One sequence's share of a step.
struct ScheduledSeq {
    SeqId id = 0;
    uint32_t offset = 0;    // first of its tokens in SchedulerOutput::tokens / positions
    uint32_t n_tokens = 0;  // tokens computed this step
    uint32_t start_pos = 0; // tokens already in its KV; its positions are start_pos .. start_pos+n_tokens-1
    std::vector<std::vector<BlockId>> block_tables;  // per KV cache group; each covers start_pos + n_tokens tokens
    int32_t state_slot = -1;    // its recurrent layers' state slot (KvCacheManager::state_slot), or -1
    bool needs_logits = false;  // the step reaches its last known token: sample the next one
    uint32_t n_draft = 0;       // of n_tokens, the draft's tokens after its last sampled one (they
                                // need logits too: the step verifies them)
    uint32_t n_replay = 0;      // of n_tokens, the first: kept tokens computed again after a rejected
                                // draft rolled its recurrent state back (above); no logits
};

// One step: what the runner computes.
struct SchedulerOutput {
    std::vector<ScheduledSeq> seqs;  // running ones first, then newly admitted
    std::vector<int32_t> tokens;     // (total tokens) the sequences' tokens, concatenated
    std::vector<int32_t> positions;  // (total tokens) position of each token in its sequence
    std::vector<SeqId> preempted;    // lost their KV in this step; they will be recomputed
    std::vector<SeqId> cancelled;    // removed in this step; their blocks are free
    // Recurrent layers' state copies (kv/state-slots.h): before the forward
    // pass, prefix hits' snapshots into live slots, rolled-back states and
    // the checkpoints of states that verify a draft; after it, snapshots of
    // states that end this step on a block boundary.
    std::vector<StateCopy> state_restores, state_saves;

    bool empty() const { return seqs.empty(); }
    size_t num_tokens() const { return tokens.size(); }
};

// The token sampled for a sequence that needed logits, and whether the
// sampler ends it there (end-of-generation token, stop string). A sequence
// that carried a draft has 1 to n_draft + 1 of them in a row: the accepted
// draft tokens and the model's next one; only the last may stop.
struct SampledToken {
    SeqId id = 0;
    int32_t token = 0;
    bool stop = false;
};

enum class FinishReason { stop, length };

struct FinishedSeq {
    SeqId id = 0;
    FinishReason reason = FinishReason::stop;
    std::vector<int32_t> tokens;  // its prompt and output, moved out as it leaves
    size_t num_prompt = 0;
};

class Scheduler {
public:
    // Borrows kv for its lifetime. Errors: VT_ERR_INVALID_ARGUMENT when
    // max_model_len tokens do not fit in the whole pool (such a sequence
    // could never finish) or a limit is zero.
    Scheduler(KvCacheManager &kv, const SchedulerConfig &cfg);

    uint32_t max_model_len() const { return max_model_len_; }

    // Queues a request; it generates at most max_new_tokens tokens and stops
    // at max_model_len tokens in all. Errors: VT_ERR_INVALID_ARGUMENT on a
    // duplicate id, an empty prompt or max_new_tokens == 0;
    // VT_ERR_CONTEXT_FULL when the prompt is longer than max_model_len: it
    // can never fit.
    // cache_key roots its prefix-cache keys (KvCacheManager::find_prefix):
    // zero for the base model, its adapter's key with a LoRA.
    // read_prefix_cache false: the whole prompt is computed (a request that
    // wants every prompt token's logits); its blocks are still cached.
    void add(SeqId id, std::vector<int32_t> prompt, uint32_t max_new_tokens, const BlockHash &cache_key = {},
             bool read_prefix_cache = true);

    // Asks to drop a sequence; the next schedule() frees its blocks and lists
    // it in cancelled. Unknown or finished ids are ignored. Thread-safe.
    void cancel(SeqId id);

    // Proposes draft tokens for a running sequence that decodes (its only
    // uncomputed token is the last sampled one), to be verified by the next
    // step. Cut to what the sequence may still generate (a step adds up to
    // draft.size() + 1 tokens); ignored for other sequences, and for ones
    // with recurrent state when the KV manager keeps no checkpoints of it.
    // Returns the draft tokens kept.
    uint32_t set_draft(SeqId id, std::vector<int32_t> draft);

    // Room in a running sequence's blocks for n positions past its known
    // tokens, lent for a pass between steps (a multi-token-prediction
    // layer's draft chain, engine/mtp.h) and given back before the next
    // schedule(); never registered in the prefix cache. False (nothing
    // lent) when the pool is short or the sequence is not running.
    bool lend_room(SeqId id, uint32_t n);
    void take_room_back(SeqId id);

    // Plans the next step. The output is empty when nothing can run.
    SchedulerOutput schedule();

    // Records the step's results: sampled holds one token per sequence of
    // out with needs_logits, in out's order. Returns the sequences that
    // finished; their blocks are already free and their ids are forgotten.
    // Errors: VT_ERR_INVALID_ARGUMENT when sampled does not match out.
    std::vector<FinishedSeq> update(const SchedulerOutput &out, std::span<const SampledToken> sampled);

    size_t num_waiting() const { return waiting_.size(); }
    size_t num_running() const { return running_.size(); }
    bool has_work() const { return !waiting_.empty() || !running_.empty(); }

    // All known tokens of a live sequence (prompt, then generated), or null.
    const std::vector<int32_t> *tokens(SeqId id) const;
    // Running sequences, oldest admitted first.
    const std::vector<SeqId> &running() const { return running_; }
    const std::deque<SeqId> &waiting() const { return waiting_; }

    // Verifies KV invariants and that every running sequence's block table
    // exactly covers its computed tokens. VT_ERR_INTERNAL if not.
    void check() const;

private:
    struct Seq {
        std::vector<int32_t> tokens;
        uint32_t num_prompt = 0;
        uint32_t num_computed = 0;  // tokens whose KV is in the cache, counting the step just scheduled
        uint32_t max_new_tokens = 0;
        BlockHash cache_key;
        bool read_prefix_cache = true;
        std::vector<int32_t> draft;  // proposed tokens for the next step (set_draft)
        // Tokens before num_computed whose KV is kept but which its rolled-back
        // recurrent state has not seen: its next step computes them first.
        uint32_t replay = 0;
    };

    void preempt(SeqId id, SchedulerOutput &out);
    void drop(SeqId id);
    // Schedules s's replayed tokens, its next n known tokens, then its draft
    // (n_draft tokens).
    void emit(SeqId id, Seq &s, uint32_t n, SchedulerOutput &out, uint32_t n_draft = 0);
    void process_cancels(SchedulerOutput &out);
    // The prompt's last full-block boundary (where a later prefix hit ends).
    uint32_t last_prompt_block(const Seq &s) const;
    // n prompt tokens of s this step, cut to end on that boundary when
    // recurrent states are snapshotted (KvCacheManager::saves_states).
    uint32_t align_chunk(const Seq &s, uint32_t n) const;

    KvCacheManager &kv_;
    // Whether s is a decode: only its last sampled token is not computed.
    static bool decoding(const Seq &s) {
        return s.tokens.size() > s.num_prompt && s.num_computed + 1 == s.tokens.size();
    }

    uint32_t max_batched_tokens_, max_num_seqs_, max_model_len_;
    uint32_t prefill_beside_decodes_, prefill_per_decode_;
    std::unordered_map<SeqId, Seq> seqs_;
    std::deque<SeqId> waiting_;
    std::vector<SeqId> running_;  // admission order: the back is preempted first
    std::mutex cancel_mu_;
    std::vector<SeqId> cancel_requests_;  // guarded by cancel_mu_
};

} // namespace vt
