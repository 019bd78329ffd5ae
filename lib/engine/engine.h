// The serving engine: continuous batching over a paged KV cache (vLLM v1's
// loop). One step = schedule (lib/sched) -> one forward pass over every
// scheduled token (runner, paged attention) -> sample the sequences that
// reached their last known token -> record tokens, emit events, retire the
// finished. Public face: include/vt/vt_engine.h.
//
// Threads: submit(), cancel() and stats() may be called from any thread;
// step() and poll() belong to one engine thread. Requests waiting in the
// inbox join the scheduler at the next step. Within a step, the sequences
// to sample are shared between the engine thread and n_threads - 1 helper
// threads (StepWorkers), each request's sampler, text and counters on one
// thread at a time; events are still emitted, in order, by the engine thread.
//
// Testing hook (not API): fault injection, read from the environment when
// the engine is made, so that tests can drive the failure path (fail_all)
// through the public ABI and vt-server:
//   VT_DEBUG_FAIL_FORWARD=N       every N-th forward pass of the engine fails;
//   VT_DEBUG_FAIL_FORWARD_ONCE=N  only its N-th forward pass fails;
//   VT_DEBUG_FAIL_DRAFT_ONCE=N    its draft model's N-th proposal fails (the
//                                 requests then decode without drafts).
// A failing pass throws vt::Error(VT_ERR_INTERNAL, "injected forward failure
// (VT_DEBUG_FAIL_FORWARD)") before any work, exactly where a real one would:
// step() then ends that step's requests with VT_FINISH_ERROR and starts the
// scheduler and KV bookkeeping over.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <functional>
#include <unordered_map>
#include <vector>

#include "engine/draft-model.h"
#include "engine/mtp.h"
#include "engine/request-output.h"
#include "engine/step-workers.h"
#include "kv/kv-cache-manager.h"
#include "runner/sequence.h"
#include "sched/scheduler.h"
#include "spec/draft-policy.h"
#include "spec/ngram.h"
#include "spec/suffix.h"

namespace vt {

struct EngineConfig {
    uint64_t kv_cache_bytes = 0;   // 0: what the devices hold, capped (engine/kv-plan.h, vt_context_params)
    uint32_t block_size = 16;
    uint32_t max_num_seqs = 64;
    uint32_t max_model_len = 0;    // 0: the model's training context, capped by the pool
    uint32_t max_batched_tokens = 512;
    // Decode priority (sched/scheduler.h): while sequences decode, a step's
    // prompt tokens are at most max(this floor, per decode * decodes). On
    // SmolLM2-135M, 2 threads, a decode step costs about as much as 2-3
    // prompt tokens per decoding sequence (B=4: 8.6 ms, B=16: 26 ms a step;
    // a prompt token 0.77 ms in 512-token batches), so 6 per decode keeps a
    // step that carries a prompt chunk within about 4x a decode step, and a
    // prompt's time to first token within about 1.5x its unshared prefill.
    // The floor keeps small batches from crawling through long prompts.
    uint32_t prefill_tokens_beside_decodes = 16;
    uint32_t prefill_tokens_per_decode = 6;
    bool prefix_caching = true;
    // Speculative decoding by n-gram prompt lookup (spec/ngram.h) or suffix
    // decoding (spec/suffix.h): the method whose k > 0 (at most one) drafts
    // up to k tokens per decoding request and step. Verification
    // samples each drafted position with the request's own chain, in
    // order, and keeps the draft while it agrees: for a draft that is one
    // token, not a distribution, that is exactly rejection sampling
    // (Leviathan et al. with q a point mass: accept d with p(d), else draw
    // from p without d), so the tokens are those the request draws without
    // speculation, greedy or sampled, seed for seed. Models with recurrent
    // layers are refused (VT_ERR_UNSUPPORTED): see sched/scheduler.h.
    // Whether a step drafts at all follows the load (spec/draft-policy.h).
    NgramConfig ngram;
    SuffixConfig suffix;
    // Or a draft model (engine/draft-model.h): draft_k greedy tokens of
    // draft_model, which must have the model's vocabulary and outlive the
    // engine; its KV pool holds as many tokens as the engine's own, out of
    // the same budget (engine/kv-plan.h).
    const Model *draft_model = nullptr;
    uint32_t draft_k = 0;
    // Or the model's own multi-token-prediction layer (engine/mtp.h): mtp_k
    // tokens chained from it; its KV cache is a layer of the pool.
    uint32_t mtp_k = 0;
    // Tests' view of the drafts: called for each draft a proposer makes,
    // with its request, the position of its first token and its tokens.
    std::function<void(uint64_t id, size_t pos, std::span<const int32_t> draft)> on_draft;
};

// Speculative decoding's counters (vLLM's spec_decode_* metrics), read
// through stats().
struct SpecStats {
    uint64_t drafts = 0;            // sequence-steps that verified a draft
    uint64_t draft_tokens = 0;      // tokens those drafts proposed
    uint64_t accepted_tokens = 0;   // of those, accepted
    std::vector<uint64_t> accepted_by_position;  // [i]: drafts whose token i was accepted
};

class Engine {
public:
    // Allocates the KV pool and logs its size in tokens. Errors:
    // VT_ERR_OUT_OF_MEMORY, VT_ERR_INVALID_ARGUMENT (a budget below one
    // block per layer, or a max_model_len the pool cannot hold).
    Engine(Context &ctx, const EngineConfig &cfg);
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // Queues a request (thread-safe); returns its id. Errors:
    // VT_ERR_INVALID_ARGUMENT, VT_ERR_CONTEXT_FULL (prompt > max_model_len).
    uint64_t submit(RequestSpec spec);
    void cancel(uint64_t id);  // thread-safe

    // One step; waits up to wait_ms for work when idle. Returns the tokens
    // computed. Throws vt::Error when the forward pass fails, after ending
    // that step's requests with VT_FINISH_ERROR.
    size_t step(uint32_t wait_ms);

    // The next queued event (requests without a callback), or null; valid
    // until the next poll() or step().
    const vt_request_output *poll();

    void stats(vt_engine_stats &out) const;  // thread-safe; writes every field

private:
    struct Request {
        uint64_t id = 0;
        RequestSpec spec;
        std::unique_ptr<RequestText> text;
        uint32_t n_output = 0;
        uint32_t n_cached = 0;
        bool admitted = false;   // n_cached is known
        uint32_t prompt_events = 1;  // prompt_logprobs: the next prompt position to report (0 has none)
        uint32_t n_drafted = 0, n_accepted = 0;  // speculative decoding's, this request's
        bool failed = false;     // its step failed: ends with VT_FINISH_ERROR
        vt_status error = VT_OK;
    };

    // One sequence to sample in a step (sample_and_record): one token, or
    // with a draft up to n_draft + 1 (its accepted tokens and one more).
    struct SampleJob {
        uint64_t id = 0;
        Request *r = nullptr;
        const float *row = nullptr;      // its logits: n_draft + 1 rows
        const int32_t *draft = nullptr;  // the draft's tokens (n_draft)
        uint32_t n_draft = 0;
        uint32_t n_accepted = 0;         // of evs, the draft's tokens (all but the model's own last one,
                                         // or all when it stopped at a draft token)
        std::vector<OwnedEvent> evs;     // one per token kept, in order
        bool stop = false, stop_string = false;
        std::exception_ptr error;  // anything but vt::Error, rethrown by the engine thread
    };
    struct SampleRun;  // a step's jobs on the pool
    void sample_one(SampleJob &j, const Tokenizer &tok, size_t n_vocab);
    // The engine's own greedy choice (no sampler): the first maximum.
    static int32_t greedy_token(const float *row, size_t n);
    static void sample_job(void *run, size_t i);

    void admit_inbox();
    void maybe_inject_failure();
    const Tensor *run_forward(const SchedulerOutput &so);
    void sample_and_record(const SchedulerOutput &so, const float *logits, size_t n_vocab);
    // Drafts for the sequences that go on decoding (EngineConfig::ngram,
    // ::suffix, ::draft_model).
    void propose_drafts(const std::vector<SampleJob> &jobs);
    // Hands a proposer's draft to the scheduler (and to EngineConfig::on_draft).
    void set_draft(uint64_t id, std::vector<int32_t> draft);
    // The multi-token-prediction layer's step (engine/mtp.h): its rows for
    // every sequence of the step, then the drafts of those the policy picks.
    void mtp_step(const SchedulerOutput &so, const std::vector<SampleJob> &jobs);
    // Which of jobs draft next step, in order, and how many tokens each: the
    // policy's pick (all, one probe or none) of the requests that take drafts.
    struct Drafter {
        const SampleJob *job;
        uint32_t k;
    };
    std::vector<Drafter> drafting_requests(const std::vector<SampleJob> &jobs);
    // A step of decodes only (drafts included) and its forward time, for
    // the draft policy; nothing for a step that computed prompt tokens.
    void observe_decode_step(const SchedulerOutput &so, std::chrono::steady_clock::duration took);
    // A request with prompt_logprobs whose scheduled chunk holds prompt
    // positions still to report gets every row of its chunk.
    bool wants_prompt_rows(const Request &r, const ScheduledSeq &s) const;
    void emit_prompt_logprobs(Request &r, const ScheduledSeq &s, const float *rows, size_t n_vocab);
    void fail_all(vt_status st);
    void emit(Request &r, OwnedEvent &&ev, vt_finish_reason reason);
    void finish(uint64_t id, vt_finish_reason reason, vt_status status = VT_OK);
    void update_stats(size_t n_tokens);

    Context &ctx_;
    const Model &model_;
    uint32_t block_size_;
    std::unique_ptr<PagedKv> kv_pool_;
    KvCacheConfig kv_cfg_;
    SchedulerConfig sched_cfg_;
    // Fixed at construction and read by submit() on any thread: fail_all()
    // replaces kv_ and sched_ on the engine thread, so submit() must not
    // reach into them.
    uint32_t max_model_len_ = 0;
    NgramConfig ngram_;
    std::unique_ptr<SuffixProposer> suffix_;  // EngineConfig::suffix; engine thread only
    std::unique_ptr<DraftModelProposer> draft_;  // EngineConfig::draft_model; engine thread only
    std::unique_ptr<MtpProposer> mtp_;           // EngineConfig::mtp_k; engine thread only
    std::function<void(uint64_t, size_t, std::span<const int32_t>)> on_draft_;
    uint32_t spec_k_ = 0;                     // the drafting method's k; 0: no speculation
    DraftPolicy draft_policy_;  // engine thread only
    size_t probe_turn_ = 0;     // which request a probe step drafts for (DraftPolicy::Drafts::probe)
    std::unique_ptr<KvCacheManager> kv_;
    // Prefix-cache counters of the pools fail_all replaced (stats go on).
    uint64_t prefix_query_base_ = 0, prefix_hit_base_ = 0;
    std::unique_ptr<Scheduler> sched_;

    std::unordered_map<uint64_t, std::unique_ptr<Request>> requests_;  // engine thread only

    // Inbox and ids, shared with submitting threads.
    mutable std::mutex inbox_mu_;
    std::condition_variable inbox_cv_;
    std::vector<std::unique_ptr<Request>> inbox_;
    std::vector<uint64_t> inbox_cancels_;
    uint64_t next_id_ = 1;

    // Events of requests without a callback.
    std::deque<OwnedEvent> queue_;
    OwnedEvent polled_;

    // Fault injection (see the top of this file); engine thread only.
    uint64_t fail_every_ = 0;  // VT_DEBUG_FAIL_FORWARD
    uint64_t fail_once_ = 0;   // VT_DEBUG_FAIL_FORWARD_ONCE
    uint64_t fail_draft_ = 0;  // VT_DEBUG_FAIL_DRAFT_ONCE
    uint64_t proposals_ = 0;   // draft-model proposals so far
    uint64_t forward_passes_ = 0;

    // Step scratch, reused.
    std::vector<Context::BatchSeq> batch_;
    // The threads that sample a step's sequences (see sample_and_record).
    std::unique_ptr<StepWorkers> step_workers_;

    // Counters; guarded by stats_mu_ for readers on other threads.
    mutable std::mutex stats_mu_;
    vt_engine_stats stats_{};
    SpecStats spec_;
    uint32_t sched_waiting_ = 0;  // the scheduler's waiting queue after the last step
    std::deque<std::pair<std::chrono::steady_clock::time_point, size_t>> recent_;  // (step end, tokens)
    bool stepped_ = false;                                  // engine thread only
    std::chrono::steady_clock::time_point first_step_;      // start of the first step with work
};


} // namespace vt
