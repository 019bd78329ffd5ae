#include "sched/scheduler.h"

#include <algorithm>

#include "core/error.h"

namespace vt {

Scheduler::Scheduler(KvCacheManager &kv, const SchedulerConfig &cfg)
    : kv_(kv), max_batched_tokens_(cfg.max_num_batched_tokens), max_num_seqs_(cfg.max_num_seqs),
      max_model_len_(cfg.max_model_len), prefill_beside_decodes_(cfg.prefill_tokens_beside_decodes),
      prefill_per_decode_(cfg.prefill_tokens_per_decode) {
    const uint64_t capacity = std::min<uint64_t>(kv.max_seq_tokens(), UINT32_MAX);
    if (max_model_len_ == 0) max_model_len_ = (uint32_t)capacity;
    if (max_batched_tokens_ == 0 || max_num_seqs_ == 0)
        fail(VT_ERR_INVALID_ARGUMENT, "scheduler: the token budget and the sequence cap must be positive");
    if (max_model_len_ > capacity)
        fail(VT_ERR_INVALID_ARGUMENT,
             "scheduler: max_model_len %u needs %u KV blocks of %u tokens but the cache has only %llu; "
             "raise the KV memory budget or lower max_model_len",
             max_model_len_, (max_model_len_ + kv.block_size() - 1) / kv.block_size(), kv.block_size(),
             (unsigned long long)(capacity / kv.block_size()));
    // One step of one sequence must fit a sliding group: its first token's
    // window, then up to the token budget, each end in a partial block (or
    // a whole sequence, when that is less).
    for (uint32_t g = 0; g < kv.num_groups(); ++g) {
        if (kv.window(g) == 0) continue;
        const uint64_t need = std::min<uint64_t>(sliding_blocks_per_step(kv.window(g), max_batched_tokens_, kv.block_size()),
                                                 ((uint64_t)max_model_len_ + kv.block_size() - 1) / kv.block_size());
        if (kv.num_blocks(g) < need)
            fail(VT_ERR_INVALID_ARGUMENT,
                 "scheduler: a sliding window of %u tokens and steps of %u tokens need %llu KV blocks, the group has %u",
                 kv.window(g), max_batched_tokens_, (unsigned long long)need, kv.num_blocks(g));
    }
}

void Scheduler::add(SeqId id, std::vector<int32_t> prompt, uint32_t max_new_tokens, const BlockHash &cache_key,
                    bool read_prefix_cache) {
    if (seqs_.count(id)) fail(VT_ERR_INVALID_ARGUMENT, "scheduler: sequence %llu already exists", (unsigned long long)id);
    if (prompt.empty()) fail(VT_ERR_INVALID_ARGUMENT, "scheduler: sequence %llu has an empty prompt", (unsigned long long)id);
    if (max_new_tokens == 0)
        fail(VT_ERR_INVALID_ARGUMENT, "scheduler: sequence %llu asks for no new tokens", (unsigned long long)id);
    if (prompt.size() > max_model_len_)
        fail(VT_ERR_CONTEXT_FULL,
             "scheduler: the prompt of %zu tokens can never fit: the limit is %u tokens per sequence "
             "(max_model_len; KV cache of %u blocks of %u tokens)",
             prompt.size(), max_model_len_, (unsigned)(kv_.max_seq_tokens() / kv_.block_size()), kv_.block_size());
    Seq s;
    s.num_prompt = (uint32_t)prompt.size();
    s.tokens = std::move(prompt);
    s.max_new_tokens = max_new_tokens;
    s.cache_key = cache_key;
    s.read_prefix_cache = read_prefix_cache;
    seqs_.emplace(id, std::move(s));
    waiting_.push_back(id);
}

void Scheduler::cancel(SeqId id) {
    std::lock_guard<std::mutex> lock(cancel_mu_);
    cancel_requests_.push_back(id);
}

const std::vector<int32_t> *Scheduler::tokens(SeqId id) const {
    auto it = seqs_.find(id);
    return it == seqs_.end() ? nullptr : &it->second.tokens;
}

void Scheduler::drop(SeqId id) {
    kv_.free(id);
    seqs_.erase(id);
    auto r = std::find(running_.begin(), running_.end(), id);
    if (r != running_.end()) {
        running_.erase(r);
        return;
    }
    auto w = std::find(waiting_.begin(), waiting_.end(), id);
    if (w != waiting_.end()) waiting_.erase(w);
}

void Scheduler::process_cancels(SchedulerOutput &out) {
    std::vector<SeqId> ids;
    {
        std::lock_guard<std::mutex> lock(cancel_mu_);
        ids.swap(cancel_requests_);
    }
    for (SeqId id : ids) {
        if (!seqs_.count(id)) continue;  // already finished, or cancelled twice
        drop(id);
        out.cancelled.push_back(id);
    }
}

uint32_t Scheduler::set_draft(SeqId id, std::vector<int32_t> draft) {
    auto it = seqs_.find(id);
    if (it == seqs_.end() || !decoding(it->second)) return 0;
    if (kv_.state_slot(id) >= 0 && !kv_.checkpoints_states()) return 0;
    Seq &s = it->second;
    if (std::find(running_.begin(), running_.end(), id) == running_.end()) return 0;
    // A step adds the accepted draft tokens and one more: all of them must
    // fit the request's and the context's limits.
    const uint64_t generated = s.tokens.size() - s.num_prompt;
    const uint64_t room = std::min<uint64_t>(max_model_len_ - std::min<uint64_t>(s.tokens.size(), max_model_len_),
                                             s.max_new_tokens - std::min<uint64_t>(generated, s.max_new_tokens));
    draft.resize(std::min<uint64_t>(draft.size(), room > 0 ? room - 1 : 0));
    s.draft = std::move(draft);
    return (uint32_t)s.draft.size();
}

bool Scheduler::lend_room(SeqId id, uint32_t n) {
    auto it = seqs_.find(id);
    if (it == seqs_.end() || std::find(running_.begin(), running_.end(), id) == running_.end()) return false;
    const Seq &s = it->second;
    return kv_.allocate(id, s.tokens, s.num_computed, 0, {}, s.cache_key, n);
}

void Scheduler::take_room_back(SeqId id) {
    auto it = seqs_.find(id);
    if (it != seqs_.end()) kv_.trim(id, it->second.num_computed);
}

void Scheduler::preempt(SeqId id, SchedulerOutput &out) {
    kv_.free(id);
    seqs_.at(id).num_computed = 0;  // recomputed from the start (with prefix hits) when readmitted
    seqs_.at(id).draft.clear();
    seqs_.at(id).replay = 0;
    waiting_.push_front(id);
    out.preempted.push_back(id);
}

void Scheduler::emit(SeqId id, Seq &s, uint32_t n, SchedulerOutput &out, uint32_t n_draft) {
    ScheduledSeq ss;
    ss.id = id;
    ss.offset = (uint32_t)out.tokens.size();
    ss.n_tokens = s.replay + n + n_draft;
    ss.n_draft = n_draft;
    ss.n_replay = s.replay;
    ss.start_pos = s.num_computed - s.replay;
    ss.block_tables.resize(kv_.num_groups());
    for (uint32_t g = 0; g < kv_.num_groups(); ++g) {
        std::span<const BlockId> table = kv_.block_table(id, g);
        ss.block_tables[g].assign(table.begin(), table.end());
    }
    ss.state_slot = kv_.state_slot(id);
    ss.needs_logits = s.num_computed + n == s.tokens.size();
    const uint32_t known = s.replay + n;
    for (uint32_t i = 0; i < known + n_draft; ++i) {
        out.tokens.push_back(i < known ? s.tokens[ss.start_pos + i] : s.draft[i - known]);
        out.positions.push_back((int32_t)(ss.start_pos + i));
    }
    s.draft.clear();  // verified by this step; update() keeps what it accepts
    s.replay = 0;
    // The state the verification starts from, for a rollback (update()).
    if (n_draft && ss.state_slot >= 0) kv_.checkpoint_state(id);
    // Optimistically counted as computed now, so the next step can be
    // planned before this one's results are in (update() takes a draft's
    // rejected tokens back out).
    s.num_computed += n + n_draft;
    // A recurrent state ending on a block boundary is snapshotted for the
    // prefix cache; the one at the prompt's last full block is kept. Not
    // one that went through draft tokens: their blocks are not hashed, and
    // a rejection rolls it back.
    if (kv_.saves_states() && n_draft == 0 && s.num_computed % kv_.block_size() == 0)
        kv_.save_state(id, s.num_computed, s.num_computed == last_prompt_block(s));
    out.seqs.push_back(std::move(ss));
}

uint32_t Scheduler::last_prompt_block(const Seq &s) const {
    return (s.num_prompt - 1) / kv_.block_size() * kv_.block_size();
}

uint32_t Scheduler::align_chunk(const Seq &s, uint32_t n) const {
    // A prompt chunk that would pass the prompt's last full block ends
    // there, so that its state can be snapshotted (vLLM's "align" mode).
    const uint32_t b = last_prompt_block(s);
    return kv_.saves_states() && s.num_computed < b && s.num_computed + n > b ? b - s.num_computed : n;
}

SchedulerOutput Scheduler::schedule() {
    SchedulerOutput out;
    process_cancels(out);
    uint32_t budget = max_batched_tokens_;

    // Decode priority: the decode tokens of the running (a decode's token
    // and what it replays), and the prefill tokens the step may compute
    // beside them.
    uint32_t decodes_left = 0;
    for (SeqId id : running_)
        if (const Seq &s = seqs_.at(id); decoding(s)) decodes_left += 1 + s.replay;
    uint32_t prefill_left = UINT32_MAX;
    if (decodes_left > 0 && (prefill_beside_decodes_ || prefill_per_decode_))
        prefill_left = std::max<uint32_t>(prefill_beside_decodes_,
                                          (uint32_t)std::min<uint64_t>((uint64_t)prefill_per_decode_ * decodes_left,
                                                                       UINT32_MAX));
    // The prefill tokens a step may take now: within the cap, and leaving a
    // token for every decode not yet scheduled.
    auto prefill_room = [&] { return std::min(prefill_left, budget > decodes_left ? budget - decodes_left : 0u); };

    // Running sequences first, oldest first; the newest give way when the
    // pool runs dry. Victims come from the back, which is not scheduled yet.
    for (size_t i = 0; i < running_.size() && budget > 0;) {
        SeqId id = running_[i];
        Seq &s = seqs_.at(id);
        const bool decode = decoding(s);
        const uint32_t pending = s.num_computed < s.tokens.size() ? (uint32_t)s.tokens.size() - s.num_computed : 0;
        uint32_t n = std::min<uint32_t>(pending, decode ? budget : prefill_room());
        if (!decode) n = align_chunk(s, n);
        // A decode's replayed tokens go with its token or not at all.
        if (decode && budget < 1 + s.replay) n = 0;
        // A decode's draft takes the budget the other decodes leave.
        const uint32_t own = decode ? 1 + s.replay : 0;
        const uint32_t n_draft =
            decode && n ? std::min<uint32_t>((uint32_t)s.draft.size(), budget > decodes_left ? budget - decodes_left : 0)
                        : 0;
        if (n == 0) {  // its sampled token is not in yet (schedule() twice without update()), or no room
            ++i;
            continue;
        }
        bool scheduled = false;
        for (;;) {
            if (kv_.allocate(id, s.tokens, s.num_computed, n, {}, s.cache_key, n_draft)) {
                scheduled = true;
                break;
            }
            SeqId victim = running_.back();
            running_.pop_back();
            // It needs no tokens this step any more.
            if (const Seq &v = seqs_.at(victim); decoding(v)) decodes_left -= 1 + v.replay;
            preempt(victim, out);
            if (victim == id) break;
        }
        if (!scheduled) break;  // it preempted itself: everything after it is gone too
        if (decode) decodes_left -= own;
        else prefill_left -= prefill_left == UINT32_MAX ? 0 : n;
        budget -= own ? own + n_draft : n;
        emit(id, s, n, out, n_draft);
        ++i;
    }

    // Then waiting sequences, first come first served; a step that had to
    // preempt admits nobody, or the victims would be readmitted at once.
    while (out.preempted.empty() && !waiting_.empty() && prefill_room() > 0 && running_.size() < max_num_seqs_) {
        SeqId id = waiting_.front();
        Seq &s = seqs_.at(id);
        PrefixHit hit = s.read_prefix_cache ? kv_.find_prefix(s.tokens, s.cache_key) : PrefixHit{};
        s.num_computed = hit.num_tokens;
        const uint32_t n = align_chunk(s, std::min<uint32_t>((uint32_t)s.tokens.size() - hit.num_tokens, prefill_room()));
        if (!kv_.allocate(id, s.tokens, hit.num_tokens, n, hit, s.cache_key)) {
            s.num_computed = 0;
            break;
        }
        waiting_.pop_front();
        running_.push_back(id);
        emit(id, s, n, out);
        budget -= n;
        prefill_left -= prefill_left == UINT32_MAX ? 0 : n;
    }
    kv_.take_state_copies(out.state_restores, out.state_saves);
    return out;
}

std::vector<FinishedSeq> Scheduler::update(const SchedulerOutput &out, std::span<const SampledToken> sampled) {
    kv_.commit_state_saves();  // the step ran: its snapshots are written
    std::vector<FinishedSeq> finished;
    size_t k = 0;
    for (const ScheduledSeq &ss : out.seqs) {
        if (!ss.needs_logits) continue;
        size_t m = 0;  // its tokens: one, or a draft's accepted ones and one more
        while (k + m < sampled.size() && sampled[k + m].id == ss.id) ++m;
        if (m == 0 || m > ss.n_draft + 1)
            fail(VT_ERR_INVALID_ARGUMENT, "scheduler: %zu sampled tokens for sequence %llu, which verified %u draft tokens",
                 m, (unsigned long long)ss.id, ss.n_draft);
        const std::span<const SampledToken> ts = sampled.subspan(k, m);
        k += m;
        for (size_t j = 0; j + 1 < m; ++j)
            if (ts[j].stop)
                fail(VT_ERR_INVALID_ARGUMENT, "scheduler: sequence %llu stopped before its last sampled token",
                     (unsigned long long)ss.id);
        auto it = seqs_.find(ss.id);
        if (it == seqs_.end()) continue;  // cannot happen: sequences leave only in schedule() and here
        Seq &s = it->second;
        if (ss.n_draft) {
            // The KV of the known tokens and the accepted draft tokens
            // stays; the rejected ones' goes.
            const uint32_t kept = ss.start_pos + (ss.n_tokens - ss.n_draft) - 1 + (uint32_t)m;
            s.num_computed = kept;
            kv_.trim(ss.id, kept);
            // The recurrent state went through the rejected ones too: it goes
            // back to where the step started, and the kept tokens replay.
            if (m <= ss.n_draft && ss.state_slot >= 0) {
                kv_.rollback_state(ss.id);
                s.replay = kept - ss.start_pos;
            }
        }
        for (const SampledToken &t : ts) s.tokens.push_back(t.token);
        bool length = s.tokens.size() - s.num_prompt >= s.max_new_tokens || s.tokens.size() >= max_model_len_;
        if (ts.back().stop || length) {
            finished.push_back({ss.id, ts.back().stop ? FinishReason::stop : FinishReason::length, std::move(s.tokens),
                                s.num_prompt});
            drop(ss.id);
        }
    }
    if (k != sampled.size())
        fail(VT_ERR_INVALID_ARGUMENT, "scheduler: %zu sampled tokens for %zu sequences that needed logits",
             sampled.size(), k);
    return finished;
}

void Scheduler::check() const {
    kv_.check();
    for (SeqId id : waiting_)
        if (!kv_.block_table(id).empty())
            fail(VT_ERR_INTERNAL, "scheduler: waiting sequence %llu holds blocks", (unsigned long long)id);
    if (running_.size() + waiting_.size() != seqs_.size())
        fail(VT_ERR_INTERNAL, "scheduler: %zu sequences, %zu running, %zu waiting", seqs_.size(), running_.size(),
             waiting_.size());
    uint32_t bs = kv_.block_size();
    for (SeqId id : running_) {
        const Seq &s = seqs_.at(id);
        size_t need = (s.num_computed + bs - 1) / bs;
        for (uint32_t g = 0; g < kv_.num_groups(); ++g)
            if (kv_.block_table(id, g).size() != need)
                fail(VT_ERR_INTERNAL, "scheduler: sequence %llu has %u computed tokens but %zu blocks in group %u",
                     (unsigned long long)id, s.num_computed, kv_.block_table(id, g).size(), g);
    }
}

} // namespace vt
