#include "engine/engine.h"

#include <algorithm>
#include <exception>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>

#include "core/error.h"
#include "core/log.h"
#include "core/threadpool.h"  // default_thread_count
#include "engine/kv-plan.h"

namespace vt {

namespace {
// The prefix-cache root of a request: KV computed with an adapter at one
// scale is shared only with requests of the same adapter and scale.
BlockHash lora_cache_key(const LoraAdapter *a, float scale) {
    if (!a) return {};
    uint32_t bits;
    std::memcpy(&bits, &scale, sizeof bits);
    const int32_t key[4] = {-1, (int32_t)(uint32_t)a->id(), (int32_t)(uint32_t)(a->id() >> 32), (int32_t)bits};
    return hash_block(BlockHash{}, key);
}

constexpr double kRateWindowSeconds = 10.0;

// A fault-injection period from the environment (engine.h): 0 when unset.
uint64_t debug_env_count(const char *name) {
    const char *v = std::getenv(name);
    if (!v || !*v) return 0;
    char *end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end || v[0] == '-') fail(VT_ERR_INVALID_ARGUMENT, "%s=%s is not a positive count", name, v);
    return n;
}

} // namespace

Engine::Engine(Context &ctx, const EngineConfig &cfg)
    : ctx_(ctx), model_(ctx.model()), block_size_(cfg.block_size ? cfg.block_size : 16) {
    const KvPlan plan = plan_kv(ctx, cfg);
    const std::vector<CacheGroup> &groups = plan.groups;
    const std::vector<uint32_t> &blocks = plan.blocks;
    const uint32_t max_num_seqs = plan.max_num_seqs, max_batched = plan.max_batched, max_len = plan.max_model_len;
    KvCacheConfig kv_cfg{block_size_,          0, cfg.prefix_caching, {}, plan.state_slots, plan.state_snapshots,
                         plan.state_checkpoints};
    for (size_t g = 0; g < groups.size(); ++g) kv_cfg.groups.push_back({blocks[g], groups[g].window});
    // The arena first: the plan left room for it on a device.
    if (plan.arena_bytes) ctx.reserve_arena(plan.arena_bytes);
    kv_pool_ = std::make_unique<PagedKv>(model_, blocks, block_size_, plan.state_slots_total(), true, cfg.mtp_k > 0);
    kv_cfg_ = kv_cfg;
    sched_cfg_.max_num_batched_tokens = max_batched;
    sched_cfg_.max_num_seqs = max_num_seqs;
    sched_cfg_.max_model_len = max_len;
    sched_cfg_.prefill_tokens_beside_decodes = cfg.prefill_tokens_beside_decodes;
    sched_cfg_.prefill_tokens_per_decode = cfg.prefill_tokens_per_decode;
    max_model_len_ = max_len;
    ngram_ = cfg.ngram;
    if ((ngram_.k > 0) + (cfg.suffix.k > 0) + (cfg.draft_k > 0) + (cfg.mtp_k > 0) > 1)
        fail(VT_ERR_INVALID_ARGUMENT, "speculative decoding: more than one of the n-gram, suffix, draft-model and "
             "multi-token-prediction proposers");
    if (cfg.draft_k && !cfg.draft_model) fail(VT_ERR_INVALID_ARGUMENT, "speculative decoding: no draft model");
    spec_k_ = ngram_.k ? ngram_.k : cfg.suffix.k ? cfg.suffix.k : cfg.draft_k ? cfg.draft_k : cfg.mtp_k;
    if (cfg.suffix.k) {
        if (cfg.suffix.max_depth < 2 || !(cfg.suffix.max_spec_factor >= 0) || !(cfg.suffix.min_token_prob >= 0) ||
            !(cfg.suffix.min_token_prob <= 1))
            fail(VT_ERR_INVALID_ARGUMENT, "speculative decoding: suffix tree depth %u (need >= 2), spec factor %g "
                 "(need >= 0), min token probability %g (need 0..1)", cfg.suffix.max_depth,
                 (double)cfg.suffix.max_spec_factor, (double)cfg.suffix.min_token_prob);
        suffix_ = std::make_unique<SuffixProposer>(cfg.suffix);
    }
    if (spec_k_ > 0) {
        if (ngram_.k && (ngram_.min_n == 0 || ngram_.min_n > ngram_.max_n))
            fail(VT_ERR_INVALID_ARGUMENT, "speculative decoding: n-gram sizes %u..%u (need 1 <= min <= max)",
                 ngram_.min_n, ngram_.max_n);
    }
    if (cfg.mtp_k) mtp_ = std::make_unique<MtpProposer>(ctx, *kv_pool_, max_len);
    on_draft_ = cfg.on_draft;
    if (cfg.draft_k) {
        // Its vocabulary was checked by vt_context_create (check_draft_vocabulary:
        // a compare of every token's piece, not repeated here).
        draft_ = std::make_unique<DraftModelProposer>(*cfg.draft_model, ctx, ctx.n_batch(), plan.draft_blocks,
                                                      block_size_, max_len, plan.draft_state_seqs);
    }
    spec_.accepted_by_position.assign(spec_k_, 0);
    fail_every_ = debug_env_count("VT_DEBUG_FAIL_FORWARD");
    fail_once_ = debug_env_count("VT_DEBUG_FAIL_FORWARD_ONCE");
    fail_draft_ = debug_env_count("VT_DEBUG_FAIL_DRAFT_ONCE");
    if (fail_every_ || fail_once_)
        VT_LOG_WARN("fault injection: forward passes fail (VT_DEBUG_FAIL_FORWARD=%llu, VT_DEBUG_FAIL_FORWARD_ONCE=%llu)",
                    (unsigned long long)fail_every_, (unsigned long long)fail_once_);
    kv_ = std::make_unique<KvCacheManager>(kv_cfg_);
    sched_ = std::make_unique<Scheduler>(*kv_, sched_cfg_);
    uint32_t total_blocks = 0;
    for (uint32_t b : blocks) total_blocks += b;
    stats_.struct_size = sizeof stats_;
    stats_.kv_block_size = block_size_;
    stats_.kv_blocks_total = total_blocks;
    stats_.max_model_len = max_len;
    stats_.kv_cache_bytes = kv_pool_->bytes();
    stats_.state_slots = plan.state_slots;
    stats_.state_snapshots = plan.state_snapshots;
    stats_.state_bytes = (uint64_t)plan.state_slots_total() * plan.slot_bytes;
    std::string layout;
    for (size_t g = 0; g < groups.size(); ++g) {
        char part[96];
        std::snprintf(part, sizeof part, "%s%u blocks for %zu %s layers", g ? ", " : "", blocks[g],
                      groups[g].layers.size(), cache_kind_name(groups[g].kind));
        layout += part;
    }
    if (draft_) {
        char part[160];
        std::snprintf(part, sizeof part, "; the draft model's %.2f GiB (%u blocks, %s)",
                      (double)draft_->pool_bytes() / (1 << 30), plan.draft_blocks,
                      cfg.draft_model->arch_name().c_str());
        layout += part;
    }
    if (plan.state_slots) {
        char part[192];
        std::snprintf(part, sizeof part, "%s%u state slots%s and %u snapshots of %.2f MiB for %zu recurrent layers",
                      layout.empty() ? "" : ", ", plan.state_slots,
                      plan.state_checkpoints ? " (each with a checkpoint for drafts)" : "", plan.state_snapshots,
                      (double)plan.slot_bytes / (1 << 20), state_slots(model_.cache_layers).layers.size());
        layout += part;
    }
    // The step's sequences are sampled by as many threads as the forward
    // pass computes on: the engine's and helpers that sleep between steps.
    const uint32_t n_threads = ctx.executor().n_threads();
    step_workers_ = std::make_unique<StepWorkers>((n_threads ? (int)n_threads : default_thread_count()) - 1);
    VT_LOG_INFO("KV cache: %.2f GiB of %u-token blocks on %s (%s; budget: %s); up to %u requests of %u tokens%s",
                (double)kv_pool_->bytes() / (1 << 30), block_size_, device_name(ctx.executor().device()).c_str(),
                layout.c_str(), plan.budget_source.c_str(), max_num_seqs, max_len,
                !cfg.prefix_caching ? "" : plan.state_slots && !plan.state_snapshots ? ", prefix caching off (no room for state snapshots)" : ", prefix caching on");
}

Engine::~Engine() = default;

uint64_t Engine::submit(RequestSpec spec) {
    const Tokenizer &tok = model_.tokenizer();
    const uint32_t n_vocab = model_.hparams.n_vocab;
    const uint32_t max_len = max_model_len_;
    if (spec.prompt.empty()) fail(VT_ERR_INVALID_ARGUMENT, "the prompt is empty");
    for (size_t i = 0; i < spec.prompt.size(); ++i)
        if (spec.prompt[i] < 0 || (uint32_t)spec.prompt[i] >= n_vocab)
            fail(VT_ERR_INVALID_ARGUMENT, "prompt token %zu is %d, outside the vocabulary [0, %u)", i, spec.prompt[i],
                 n_vocab);
    if (spec.prompt.size() >= max_len)
        fail(VT_ERR_CONTEXT_FULL, "the prompt has %zu tokens; this context allows %u per request (prompt and output)",
             spec.prompt.size(), max_len);
    for (int32_t t : spec.stop_tokens)
        if (t < 0 || (uint32_t)t >= n_vocab) fail(VT_ERR_INVALID_ARGUMENT, "stop token %d is outside the vocabulary", t);
    auto r = std::make_unique<Request>();
    r->spec = std::move(spec);
    r->text = std::make_unique<RequestText>(tok, r->spec);  // keeps a reference to r->spec's stop strings
    std::lock_guard<std::mutex> lk(inbox_mu_);
    r->id = next_id_++;
    const uint64_t id = r->id;
    inbox_.push_back(std::move(r));
    inbox_cv_.notify_one();
    return id;
}

void Engine::cancel(uint64_t id) {
    std::lock_guard<std::mutex> lk(inbox_mu_);
    inbox_cancels_.push_back(id);
    inbox_cv_.notify_one();
}

void Engine::admit_inbox() {
    std::vector<std::unique_ptr<Request>> incoming;
    std::vector<uint64_t> cancels;
    {
        std::lock_guard<std::mutex> lk(inbox_mu_);
        incoming.swap(inbox_);
        cancels.swap(inbox_cancels_);
    }
    const uint32_t max_len = max_model_len_;
    for (std::unique_ptr<Request> &r : incoming) {
        const uint64_t id = r->id;
        const uint32_t room = max_len - (uint32_t)r->spec.prompt.size();
        const uint32_t max_new = r->spec.max_tokens ? std::min(r->spec.max_tokens, room) : room;
        try {
            sched_->add(id, r->spec.prompt, max_new, lora_cache_key(r->spec.lora.get(), r->spec.lora_scale),
                        !r->spec.prompt_logprobs);
        } catch (const Error &e) {
            // submit() checked what add() checks; should it still refuse,
            // the request ends here with its own error, the others go on.
            r->failed = true;
            r->error = e.status();
            OwnedEvent ev;
            ev.out.token = -1;
            emit(*r, std::move(ev), VT_FINISH_ERROR);
            continue;
        }
        requests_.emplace(id, std::move(r));
    }
    for (uint64_t id : cancels)
        if (requests_.count(id)) sched_->cancel(id);
}

void Engine::emit(Request &r, OwnedEvent &&ev, vt_finish_reason reason) {
    vt_request_output &o = ev.out;
    o.struct_size = sizeof o;
    o.request_id = r.id;
    o.user_data = r.spec.user_data;
    o.finish_reason = reason;
    o.status = r.failed ? r.error : VT_OK;
    o.n_prompt_tokens = (uint32_t)r.spec.prompt.size();
    o.n_output_tokens = r.n_output;
    o.n_cached_tokens = r.n_cached;
    o.n_draft_tokens = r.n_drafted;
    o.n_accepted_tokens = r.n_accepted;
    if (r.spec.callback) {
        ev.fix_pointers();
        r.spec.callback(&ev.out, r.spec.user_data);
    } else {
        queue_.push_back(std::move(ev));
    }
}

void Engine::finish(uint64_t id, vt_finish_reason reason, vt_status status) {
    auto it = requests_.find(id);
    if (it == requests_.end()) return;
    Request &r = *it->second;
    if (status != VT_OK) {
        r.failed = true;
        r.error = status;
    }
    OwnedEvent ev;
    ev.out.token = -1;
    emit(r, std::move(ev), r.failed ? VT_FINISH_ERROR : reason);
    if (suffix_) suffix_->finish(id, {}, 0);  // cancelled or failed: its output is not kept
    if (draft_) draft_->finish(id);
    requests_.erase(it);
    std::lock_guard<std::mutex> lk(stats_mu_);
    ++stats_.requests_finished;
}

const vt_request_output *Engine::poll() {
    if (queue_.empty()) return nullptr;
    polled_ = std::move(queue_.front());
    queue_.pop_front();
    polled_.fix_pointers();
    return &polled_.out;
}

size_t Engine::step(uint32_t wait_ms) {
    {
        std::unique_lock<std::mutex> lk(inbox_mu_);
        if (wait_ms && inbox_.empty() && inbox_cancels_.empty() && !sched_->has_work())
            inbox_cv_.wait_for(lk, std::chrono::milliseconds(wait_ms),
                               [&] { return !inbox_.empty() || !inbox_cancels_.empty(); });
    }
    admit_inbox();
    SchedulerOutput so = sched_->schedule();
    for (SeqId id : so.cancelled) finish(id, VT_FINISH_CANCELLED);
    {
        std::lock_guard<std::mutex> lk(stats_mu_);
        stats_.preemptions += so.preempted.size();
    }
    if (so.empty()) {
        update_stats(0);
        return 0;
    }
    for (const ScheduledSeq &s : so.seqs) {
        Request &r = *requests_.at(s.id);
        if (!r.admitted) {
            r.admitted = true;
            r.n_cached = s.start_pos;  // the prefix-cache hit of its first admission
        }
    }
    if (!stepped_) {
        stepped_ = true;
        first_step_ = std::chrono::steady_clock::now();
    }
    const Tensor *logits = nullptr;
    const auto t_forward = std::chrono::steady_clock::now();
    try {
        logits = run_forward(so);
    } catch (const Error &e) {
        fail_all(e.status());
        throw;
    } catch (const std::bad_alloc &) {
        fail_all(VT_ERR_OUT_OF_MEMORY);
        throw;
    } catch (...) {
        fail_all(VT_ERR_INTERNAL);
        throw;
    }
    if (spec_k_) observe_decode_step(so, std::chrono::steady_clock::now() - t_forward);
    sample_and_record(so, static_cast<const float *>(logits->data), model_.hparams.n_vocab);
    update_stats(so.num_tokens());
    return so.num_tokens();
}

void Engine::observe_decode_step(const SchedulerOutput &so, std::chrono::steady_clock::duration took) {
    // The draft policy fits decode steps only: a prompt chunk's tokens go
    // through wider tiles at another cost per token.
    for (const ScheduledSeq &s : so.seqs)
        if (!s.needs_logits || s.n_tokens != s.n_replay + 1 + s.n_draft ||
            s.start_pos < requests_.at(s.id)->spec.prompt.size())
            return;
    draft_policy_.observe_step((uint32_t)so.num_tokens(), std::chrono::duration<double>(took).count());
}

void Engine::maybe_inject_failure() {
    if (!fail_every_ && !fail_once_) return;
    ++forward_passes_;
    if ((fail_every_ && forward_passes_ % fail_every_ == 0) || forward_passes_ == fail_once_)
        fail(VT_ERR_INTERNAL, "injected forward failure (VT_DEBUG_FAIL_FORWARD)");
}

const Tensor *Engine::run_forward(const SchedulerOutput &so) {
    maybe_inject_failure();
    batch_.clear();
    for (const ScheduledSeq &s : so.seqs) {
        Context::BatchSeq b;
        b.tokens = std::span<const int32_t>(so.tokens.data() + s.offset, s.n_tokens);
        b.start_pos = s.start_pos;
        b.block_tables = s.block_tables;
        b.state_slot = s.state_slot;
        const Request &r = *requests_.at(s.id);
        b.logits = s.needs_logits ? Context::Logits::last : Context::Logits::none;
        b.n_last = 1 + s.n_draft;  // a verification's rows: its last sampled token's and the draft's
        if (wants_prompt_rows(r, s)) b.logits = Context::Logits::all;
        b.lora = r.spec.lora.get();
        b.lora_scale = r.spec.lora_scale;
        batch_.push_back(b);
    }
    // Recurrent layers' states: prefix hits resume from their snapshots,
    // drafts' checkpoints are taken and rejected drafts rolled back before
    // the pass; states that end it on a block boundary are snapshotted after.
    kv_pool_->copy_slots(so.state_restores);
    Context::Pass pass;
    pass.hidden_out = mtp_ != nullptr;  // the multi-token-prediction layer reads them (mtp_step)
    const Tensor *logits = ctx_.forward(*kv_pool_, batch_, max_model_len_, pass);
    kv_pool_->copy_slots(so.state_saves);
    return logits;
}

// One sequence's token of a step: sampled, checked against the stops and
// turned into its event. Touches only its own request (its sampler, text and
// counters) and reads the shared tokenizer, so the jobs of a step run on any
// threads, each request on one.
void Engine::sample_one(SampleJob &j, const Tokenizer &tok, size_t n_vocab) {
    Request &r = *j.r;
    j.evs.reserve(j.n_draft + 1);
    // Row i predicts the token after draft token i - 1 (row 0: after the
    // last sampled token). Each is drawn by the request's chain as it would
    // be without a draft; the draft goes on while it agrees (engine.h).
    for (uint32_t i = 0; i <= j.n_draft; ++i) {
        const float *row = j.row + (size_t)i * n_vocab;
        OwnedEvent &ev = j.evs.emplace_back();
        ev.out.token = -1;  // stays so when sampling fails: the event then carries no token
        try {
            const int32_t t = r.spec.sampler ? r.spec.sampler->sample(row, n_vocab) : greedy_token(row, n_vocab);
            if (r.spec.sampler) r.spec.sampler->accept(t);
            ev.out.token = t;
            if (r.spec.logprobs || r.spec.top_logprobs)
                token_logprobs(row, n_vocab, t, r.spec.top_logprobs, ev.out.logprob, ev.top_tokens, ev.top_logprobs);
            j.stop = (!r.spec.ignore_eos && tok.is_eog(t)) ||
                     std::find(r.spec.stop_tokens.begin(), r.spec.stop_tokens.end(), t) != r.spec.stop_tokens.end();
            if (!j.stop) j.stop = j.stop_string = r.text->push(t, ev.text);
            // A grammar that can take nothing more ends the request now
            // rather than after one more step for its end-of-generation token.
            if (!j.stop && r.spec.sampler && r.spec.sampler->grammar_completed()) j.stop = true;
        } catch (const Error &e) {
            r.failed = true;
            r.error = e.status();
            j.stop = true;
        } catch (...) {
            j.error = std::current_exception();  // rethrown on the engine thread
        }
        ++r.n_output;
        const bool agrees = i < j.n_draft && !j.error && ev.out.token == j.draft[i];
        j.n_accepted += agrees;
        if (j.stop || !agrees) break;
    }
}

struct Engine::SampleRun {
    Engine *engine;
    std::vector<SampleJob> *jobs;
    const Tokenizer *tok;
    size_t n_vocab;
};

void Engine::sample_job(void *p, size_t i) {
    auto *run = static_cast<SampleRun *>(p);
    run->engine->sample_one((*run->jobs)[i], *run->tok, run->n_vocab);
}

int32_t Engine::greedy_token(const float *row, size_t n) {
    // Comparing one element after the other, a NaN first element is never
    // replaced (nothing compares greater than NaN) and other NaNs are never
    // taken: first_max_index's answer but for that case.
    return row[0] != row[0] ? 0 : (int32_t)first_max_index(row, n);
}

void Engine::sample_and_record(const SchedulerOutput &so, const float *logits, size_t n_vocab) {
    const Tokenizer &tok = model_.tokenizer();
    std::vector<SampleJob> jobs;
    jobs.reserve(so.seqs.size());
    size_t row = 0;
    uint64_t prompt_computed = 0;
    for (const ScheduledSeq &s : so.seqs) {
        Request &r = *requests_.at(s.id);
        const uint32_t n_prompt = (uint32_t)r.spec.prompt.size();
        prompt_computed += std::min(s.start_pos + s.n_tokens, n_prompt) - std::min(s.start_pos, n_prompt);
        if (wants_prompt_rows(r, s)) {
            // Row i predicts the token after position start_pos + i.
            emit_prompt_logprobs(r, s, logits + row * n_vocab, n_vocab);
            row += s.n_tokens;
            if (!s.needs_logits) continue;
            --row;  // the last row is also the one to sample from
        }
        if (!s.needs_logits) continue;
        SampleJob j;
        j.id = s.id;
        j.r = &r;
        j.row = logits + row * n_vocab;
        j.n_draft = s.n_draft;
        j.draft = so.tokens.data() + s.offset + (s.n_tokens - s.n_draft);
        row += 1 + s.n_draft;
        jobs.push_back(std::move(j));
    }
    // The step's sequences sample in parallel: each job touches only its
    // own request, so the tokens are those of sampling them one by one.
    if (jobs.size() >= 2 && step_workers_ && step_workers_->n_helpers() > 0) {
        SampleRun run{this, &jobs, &tok, n_vocab};
        step_workers_->run(jobs.size(), sample_job, &run);
    } else {
        for (SampleJob &j : jobs) sample_one(j, tok, n_vocab);
    }
    for (SampleJob &j : jobs)
        if (j.error) std::rethrow_exception(j.error);
    std::vector<SampledToken> sampled;
    sampled.reserve(jobs.size());
    for (const SampleJob &j : jobs)
        for (size_t i = 0; i < j.evs.size(); ++i)
            sampled.push_back({j.id, j.evs[i].out.token < 0 ? 0 : j.evs[i].out.token, j.stop && i + 1 == j.evs.size()});
    std::unordered_map<uint64_t, FinishReason> finished;
    for (FinishedSeq &f : sched_->update(so, sampled)) {
        finished.emplace(f.id, f.reason);
        if (suffix_) suffix_->finish(f.id, f.tokens, f.num_prompt);
        if (draft_) draft_->finish(f.id);
    }
    for (SampleJob &j : jobs) {
        const uint64_t id = j.id;
        Request &r = *j.r;
        if (j.n_draft) {
            r.n_drafted += j.n_draft;
            r.n_accepted += j.n_accepted;
        }
        for (size_t i = 0; i + 1 < j.evs.size(); ++i) emit(r, std::move(j.evs[i]), VT_FINISH_NONE);
        OwnedEvent &last = j.evs.back();
        auto f = finished.find(id);
        if (f == finished.end()) {
            emit(r, std::move(last), VT_FINISH_NONE);
            continue;
        }
        // Ended for length (or a stop token): nothing more can match a stop
        // string, so the held-back text is shown.
        if (!j.stop_string) r.text->flush(last.text);
        const vt_finish_reason reason = r.failed ? VT_FINISH_ERROR
                                        : f->second == FinishReason::length ? VT_FINISH_LENGTH
                                                                            : VT_FINISH_STOP;
        emit(r, std::move(last), reason);
        requests_.erase(id);
    }
    {
        std::lock_guard<std::mutex> lk(stats_mu_);
        stats_.prompt_tokens += prompt_computed;
        stats_.generated_tokens += sampled.size();
        stats_.requests_finished += finished.size();
        for (const SampleJob &j : jobs) {
            if (!j.n_draft) continue;
            const size_t accepted = j.n_accepted;
            ++spec_.drafts;
            spec_.draft_tokens += j.n_draft;
            spec_.accepted_tokens += accepted;
            for (size_t i = 0; i < accepted; ++i) ++spec_.accepted_by_position[i];
            draft_policy_.observe_verification(j.n_draft, (uint32_t)accepted);
        }
    }
    if (mtp_) mtp_step(so, jobs);
    else if (spec_k_) propose_drafts(jobs);
}

void Engine::set_draft(uint64_t id, std::vector<int32_t> draft) {
    if (on_draft_)
        if (const std::vector<int32_t> *tokens = sched_->tokens(id)) on_draft_(id, tokens->size(), draft);
    sched_->set_draft(id, std::move(draft));
}

std::vector<Engine::Drafter> Engine::drafting_requests(const std::vector<SampleJob> &jobs) {
    std::vector<Drafter> out;
    uint32_t decodes = 0, drafters = 0;  // the requests that decode next step; of those, the ones that draft
    for (const SampleJob &j : jobs)
        if (sched_->tokens(j.id)) ++decodes, drafters += !j.r->spec.no_speculation;
    const DraftPolicy::Drafts which = draft_policy_.draft_now(decodes);
    if (which == DraftPolicy::Drafts::none || drafters == 0) return out;
    // A probe drafts for one of them, in turn; with a draft model, for one
    // that its cache is current on, if any: for another, the probe would
    // first compute the tokens the draft model has not seen (its prompt, for
    // a new request: 50-90 ms of SmolLM2's Q4_0 on 2 cores, where a drafted
    // step takes 13), and the probe is skipped. The policy's step fit needs
    // no probes (the batch's size varies by itself), only its acceptance
    // does, and a draft model's changes little with the text.
    uint32_t probe = which == DraftPolicy::Drafts::probe ? (uint32_t)(probe_turn_++ % drafters) : 0;
    if (which == DraftPolicy::Drafts::probe && draft_) {
        size_t best = SIZE_MAX;
        uint32_t n = 0;
        for (const SampleJob &j : jobs) {
            const std::vector<int32_t> *tokens = sched_->tokens(j.id);
            if (!tokens || j.r->spec.no_speculation) continue;
            const size_t behind = draft_->catch_up(j.id, *tokens);
            if (behind < best) best = behind, probe = n;
            ++n;
        }
        if (best > spec_k_ + 1) return out;
    }
    uint32_t nth = 0;
    for (const SampleJob &j : jobs) {
        if (!sched_->tokens(j.id) || j.r->spec.no_speculation) continue;  // finished, or never drafts
        if (which == DraftPolicy::Drafts::probe && nth++ != probe) continue;
        out.push_back({&j, j.r->spec.spec_k ? std::min(j.r->spec.spec_k, spec_k_) : spec_k_});
    }
    return out;
}

void Engine::mtp_step(const SchedulerOutput &so, const std::vector<SampleJob> &jobs) {
    const auto t0 = std::chrono::steady_clock::now();
    std::unordered_map<uint64_t, uint32_t> k_of;
    for (const Drafter &d : drafting_requests(jobs)) k_of[d.job->id] = d.k;
    // Every sequence of the step that goes on: the positions it computed
    // and kept (a verification's accepted tokens, not the rejected ones
    // after them; a prompt chunk all), each with the token after it and the
    // model's hidden state there: its rows in the step's block tables. A
    // drafting one also gets room for the chain's positions in its blocks,
    // given back below, and its tables as they are then.
    const std::span<const float> hidden = ctx_.hidden();
    const size_t E = model_.hparams.n_embd;
    std::vector<std::vector<std::vector<BlockId>>> lent_tables;
    lent_tables.reserve(so.seqs.size());
    std::vector<MtpProposer::Part> parts;
    std::vector<uint64_t> ids, lent;
    for (const ScheduledSeq &s : so.seqs) {
        const std::vector<int32_t> *tokens = sched_->tokens(s.id);
        if (!tokens) continue;  // finished in this step
        const uint32_t end = s.needs_logits ? (uint32_t)tokens->size() - 1 : s.start_pos + s.n_tokens;
        if (end <= s.start_pos) continue;
        auto k = k_of.find(s.id);
        MtpProposer::Part p;
        p.k = k == k_of.end() ? 0 : k->second;
        p.tables = s.block_tables;  // they cover its kept positions (the trimmed blocks lay past them)
        if (p.k > 1 && sched_->lend_room(s.id, p.k - 1)) {
            lent.push_back(s.id);
            std::vector<std::vector<BlockId>> &t = lent_tables.emplace_back();
            for (uint32_t g = 0; g < kv_->num_groups(); ++g) {
                const std::span<const BlockId> b = kv_->block_table(s.id, g);
                t.emplace_back(b.begin(), b.end());
            }
            p.tables = t;
        } else {
            p.k = std::min(p.k, 1u);
        }
        p.start = s.start_pos;
        p.next = std::span<const int32_t>(tokens->data() + s.start_pos + 1, end - s.start_pos);
        p.hidden = hidden.data() + (size_t)s.offset * E;
        p.state_slot = s.state_slot;
        parts.push_back(p);
        ids.push_back(s.id);
    }
    std::vector<std::vector<int32_t>> drafts;
    try {
        mtp_->step(parts, drafts);
    } catch (const std::exception &e) {
        // The requests go on without drafts, as with a failing draft model.
        for (uint64_t id : lent) sched_->take_room_back(id);
        VT_LOG_WARN("speculative decoding: the multi-token-prediction layer failed (%s); decoding goes on without "
                    "drafts", e.what());
        mtp_.reset();
        spec_k_ = 0;
        return;
    }
    for (uint64_t id : lent) sched_->take_room_back(id);
    for (size_t i = 0; i < parts.size(); ++i)
        if (!drafts[i].empty()) set_draft(ids[i], std::move(drafts[i]));
    if (!k_of.empty())
        draft_policy_.observe_proposal((uint32_t)k_of.size(), spec_k_,
                                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

void Engine::propose_drafts(const std::vector<SampleJob> &jobs) {
    const std::vector<Drafter> drafting = drafting_requests(jobs);
    if (drafting.empty()) return;
    const auto t0 = std::chrono::steady_clock::now();
    const uint32_t asked = (uint32_t)drafting.size();
    std::vector<DraftModelProposer::Want> wants;  // a draft model's, proposed together below
    for (const Drafter &d : drafting) {
        const SampleJob &j = *d.job;
        const std::vector<int32_t> *tokens = sched_->tokens(j.id);
        const uint32_t k = d.k;
        if (draft_) {
            wants.push_back({j.id, *tokens, k});
            continue;
        }
        std::vector<int32_t> draft =
            suffix_ ? suffix_->propose(j.id, *tokens, k) : propose_ngram(*tokens, ngram_, k);
        if (!draft.empty()) set_draft(j.id, std::move(draft));
    }
    if (!wants.empty()) {
        std::vector<std::vector<int32_t>> drafts;
        try {
            if (++proposals_ == fail_draft_) fail(VT_ERR_INTERNAL, "injected draft failure (VT_DEBUG_FAIL_DRAFT_ONCE)");
            draft_->propose(wants, drafts);
        } catch (const std::exception &e) {
            // The requests go on without drafts: a draft model that cannot
            // compute (its arena on a full device) costs speed, not output.
            VT_LOG_WARN("speculative decoding: the draft model failed (%s); decoding goes on without drafts", e.what());
            draft_.reset();
            spec_k_ = 0;
            return;
        }
        for (size_t i = 0; i < wants.size(); ++i)
            if (!drafts[i].empty()) set_draft(wants[i].id, std::move(drafts[i]));
    }
    // What making the drafts cost goes into the policy beside the steps',
    // but for a draft model's first proposals of a request, which compute
    // its prompt once (a prefill, not the cost of drafting again).
    if (!draft_ || draft_->last_catch_up() <= spec_k_ + 1)
        draft_policy_.observe_proposal(asked, spec_k_,
                                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

bool Engine::wants_prompt_rows(const Request &r, const ScheduledSeq &s) const {
    return r.spec.prompt_logprobs && r.prompt_events < r.spec.prompt.size() && s.start_pos < r.prompt_events &&
           r.prompt_events <= s.start_pos + s.n_tokens;
}

void Engine::emit_prompt_logprobs(Request &r, const ScheduledSeq &s, const float *rows, size_t n_vocab) {
    const uint32_t n_prompt = (uint32_t)r.spec.prompt.size();
    for (uint32_t i = 0; i < s.n_tokens; ++i) {
        const uint32_t next = s.start_pos + i + 1;
        // Positions reported before a preemption are not reported again.
        if (next != r.prompt_events || next >= n_prompt) continue;
        OwnedEvent ev;
        ev.out.token = r.spec.prompt[next];
        ev.out.is_prompt = true;
        token_logprobs(rows + (size_t)i * n_vocab, n_vocab, ev.out.token, r.spec.prompt_top_logprobs, ev.out.logprob,
                       ev.top_tokens, ev.top_logprobs);
        ++r.prompt_events;
        emit(r, std::move(ev), VT_FINISH_NONE);
    }
}

void Engine::fail_all(vt_status st) {
    // The failed pass may have left blocks that the prefix cache already
    // lists half written: end every request and start the pool over.
    std::vector<uint64_t> ids;
    for (auto &[id, r] : requests_) ids.push_back(id);
    for (uint64_t id : ids) finish(id, VT_FINISH_ERROR, st);
    if (draft_) draft_->clear();
    sched_.reset();
    // The counters are the engine's, not the pool's: they go on from here.
    prefix_query_base_ += kv_->prefix_query_tokens();
    prefix_hit_base_ += kv_->prefix_hit_tokens();
    kv_ = std::make_unique<KvCacheManager>(kv_cfg_);
    sched_ = std::make_unique<Scheduler>(*kv_, sched_cfg_);
    update_stats(0);  // stats() shows the empty pool, not the failed step's
}

void Engine::update_stats(size_t n_tokens) {
    size_t n_inbox;
    {
        std::lock_guard<std::mutex> lk(inbox_mu_);
        n_inbox = inbox_.size();
    }
    uint32_t blocks_used = 0, blocks_cached = 0;
    for (uint32_t g = 0; g < kv_->num_groups(); ++g) {
        blocks_used += kv_->pool(g).num_blocks() - kv_->pool(g).num_free();
        blocks_cached += kv_->pool(g).num_free_cached();
    }
    std::lock_guard<std::mutex> lk(stats_mu_);
    const auto now = std::chrono::steady_clock::now();
    if (n_tokens) {
        ++stats_.steps;
        recent_.emplace_back(now, n_tokens);
    }
    while (!recent_.empty() && std::chrono::duration<double>(now - recent_.front().first).count() > kRateWindowSeconds)
        recent_.pop_front();
    size_t window_tokens = 0;
    for (auto &e : recent_) window_tokens += e.second;
    // Over the window, or over the time since the first step while that is
    // shorter: a young engine's rate is not diluted by seconds it never ran.
    const double span = stepped_ ? std::min(kRateWindowSeconds, std::chrono::duration<double>(now - first_step_).count())
                                 : 0.0;
    stats_.tokens_per_second = span > 0 ? (double)window_tokens / span : 0.0;
    stats_.n_running = (uint32_t)sched_->num_running();
    sched_waiting_ = (uint32_t)sched_->num_waiting();
    stats_.n_waiting = (uint32_t)(sched_waiting_ + n_inbox);
    stats_.kv_blocks_used = blocks_used;
    stats_.kv_blocks_cached = blocks_cached;
    stats_.prefix_query_tokens = prefix_query_base_ + kv_->prefix_query_tokens();
    stats_.prefix_hit_tokens = prefix_hit_base_ + kv_->prefix_hit_tokens();
}

void Engine::stats(vt_engine_stats &out) const {
    size_t n_inbox;
    {
        std::lock_guard<std::mutex> lk(inbox_mu_);
        n_inbox = inbox_.size();
    }
    std::lock_guard<std::mutex> lk(stats_mu_);
    out = stats_;
    out.struct_size = sizeof out;
    out.spec_num_drafts = spec_.drafts;
    out.spec_num_draft_tokens = spec_.draft_tokens;
    out.spec_num_accepted_tokens = spec_.accepted_tokens;
    for (size_t i = 0; i < spec_.accepted_by_position.size() && i < VT_SPEC_MAX_TOKENS; ++i)
        out.spec_num_accepted_per_position[i] = spec_.accepted_by_position[i];
    // Requests submitted since the last step are waiting too.
    out.n_waiting = (uint32_t)(sched_waiting_ + n_inbox);
}

} // namespace vt
