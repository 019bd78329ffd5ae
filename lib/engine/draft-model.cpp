#include "engine/draft-model.h"

#include <algorithm>

#include "core/error.h"
#include "kv/cache-spec.h"
#include "sample/sampler.h"
#include "tokenizer/tokenizer.h"

namespace vt {

void check_draft_vocabulary(const Model &model, const Model &draft) {
    const Tokenizer &a = model.tokenizer(), &b = draft.tokenizer();
    if (a.n_vocab() != b.n_vocab() || model.hparams.n_vocab != draft.hparams.n_vocab)
        fail(VT_ERR_INVALID_ARGUMENT, "speculative decoding: the draft model's vocabulary has %u tokens (%u logits), "
             "the model's %u (%u)", b.n_vocab(), draft.hparams.n_vocab, a.n_vocab(), model.hparams.n_vocab);
    for (uint32_t id = 0; id < a.n_vocab(); ++id)
        if (a.token_to_piece((int32_t)id, true) != b.token_to_piece((int32_t)id, true))
            fail(VT_ERR_INVALID_ARGUMENT, "speculative decoding: the draft model's token %u is not the model's", id);
}

DraftModelProposer::DraftModelProposer(const Model &draft, Context &target, uint32_t n_batch, uint32_t n_blocks,
                                       uint32_t block_size, uint32_t max_len, uint32_t max_seqs)
    : draft_(draft),
      ctx_(draft.device() == target.executor().device()
               ? std::make_unique<Context>(draft, target, n_batch)
               : std::make_unique<Context>(draft, "", target.executor().n_threads(), n_batch)),
      block_size_(block_size), max_len_(max_len), pool_(n_blocks) {
    recurrent_ = !state_slots(draft.cache_layers).layers.empty();
    if (recurrent_ && max_seqs == 0)
        fail(VT_ERR_INVALID_ARGUMENT, "speculative decoding: no state slots for the draft model's recurrent layers");
    const uint32_t n_slots = recurrent_ ? 2 * max_seqs : 0;
    for (uint32_t s = n_slots; s >= 2; s -= 2) free_slots_.push_back((int32_t)(s - 2));
    // Every group gets the same blocks and one table per request: a sliding
    // group keeps positions it no longer reads (a draft model is small, and
    // its cache is a fraction of the target's).
    const size_t n_groups = cache_groups(draft.cache_layers).size();
    kv_ = std::make_unique<PagedKv>(draft, std::vector<uint32_t>(n_groups, n_blocks), block_size, n_slots);
}

DraftModelProposer::~DraftModelProposer() = default;

bool DraftModelProposer::reserve(Seq &s, size_t n) {
    if (recurrent_ && s.slot < 0) {
        if (free_slots_.empty()) return false;
        s.slot = free_slots_.back();
        free_slots_.pop_back();
    }
    if (kv_->groups().empty()) return true;
    const size_t need = (n + block_size_ - 1) / block_size_;
    if (need <= s.blocks.size()) return true;
    if (need - s.blocks.size() > pool_.num_free()) return false;
    pool_.allocate((uint32_t)(need - s.blocks.size()), s.blocks);
    return true;
}

void DraftModelProposer::release(Seq &s) {
    pool_.release(s.blocks);
    if (s.slot >= 0) free_slots_.push_back(s.slot);
}

size_t DraftModelProposer::resume_point(const Seq &s, size_t keep) const {
    if (!recurrent_ || keep == s.computed.size()) return keep;
    // The state has seen tokens past keep: back to the checkpoint when that
    // is within what agrees, else from the start.
    return s.checkpoint_at == 0 || s.checkpoint_at > keep ? 0 : s.checkpoint_at;
}

size_t DraftModelProposer::resume_at(Seq &s, size_t keep) {
    const size_t at = resume_point(s, keep);
    if (recurrent_ && keep != s.computed.size() && at > 0) {  // the state has seen more: its checkpoint back
        const StateCopy back{s.slot + 1, s.slot};
        kv_->copy_slots(std::span<const StateCopy>(&back, 1));
    }
    return at;
}

namespace {
// The tokens of computed that agree with tokens, at most all but tokens'
// last (whose logits a proposal needs, so it is always computed).
size_t agreeing(const std::vector<int32_t> &computed, std::span<const int32_t> tokens) {
    const size_t lim = tokens.empty() ? 0 : std::min(computed.size(), tokens.size() - 1);
    size_t keep = 0;
    while (keep < lim && computed[keep] == tokens[keep]) ++keep;
    return keep;
}
} // namespace

size_t DraftModelProposer::catch_up(uint64_t id, std::span<const int32_t> tokens) const {
    auto it = seqs_.find(id);
    return tokens.size() - (it == seqs_.end() ? 0 : resume_point(it->second, agreeing(it->second.computed, tokens)));
}

void DraftModelProposer::finish(uint64_t id) {
    auto it = seqs_.find(id);
    if (it == seqs_.end()) return;
    release(it->second);
    seqs_.erase(it);
}

void DraftModelProposer::clear() {
    for (auto &[id, s] : seqs_) release(s);
    seqs_.clear();
}

void DraftModelProposer::forward(std::span<const Part> parts, std::vector<int32_t> &greedy) {
    const size_t n_groups = kv_->groups().size();
    batch_.resize(parts.size());
    tables_.resize(parts.size());
    for (size_t i = 0; i < parts.size(); ++i) {
        tables_[i].assign(n_groups, parts[i].seq->blocks);
        Context::BatchSeq &b = batch_[i];
        b = Context::BatchSeq{};
        b.tokens = parts[i].tokens;
        b.start_pos = parts[i].start;
        b.block_tables = tables_[i];
        b.state_slot = parts[i].seq->slot;
        b.logits = parts[i].logits ? Context::Logits::last : Context::Logits::none;
    }
    const Tensor *logits = ctx_->forward(*kv_, batch_, max_len_);
    const size_t n_vocab = draft_.hparams.n_vocab;
    const float *row = static_cast<const float *>(logits->data);
    greedy.clear();
    for (const Part &p : parts) {
        if (!p.logits) continue;
        greedy.push_back((int32_t)first_max_index(row, n_vocab));
        row += n_vocab;
    }
}

void DraftModelProposer::propose(std::span<const Want> wants, std::vector<std::vector<int32_t>> &out) {
    out.assign(wants.size(), {});
    try {
        propose_all(wants, out);
    } catch (...) {
        clear();  // what the failed pass wrote is unknown: every request starts over
        throw;
    }
}

void DraftModelProposer::propose_all(std::span<const Want> wants, std::vector<std::vector<int32_t>> &out) {
    last_catch_up_ = 0;
    // The requests that draft: room for their tokens and the k - 1 drafted
    // ones fed back (the last drafted token is never computed here).
    uint32_t k_most = 0;
    struct Active {
        size_t want;
        Seq *seq;
        size_t at;  // the next of its tokens to compute
    };
    std::vector<Active> act;
    for (size_t i = 0; i < wants.size(); ++i) {
        const std::span<const int32_t> t = wants[i].tokens;
        const uint32_t k = wants[i].k;
        if (t.empty() || k == 0 || t.size() + k - 1 > max_len_) continue;
        Seq &s = seqs_[wants[i].id];
        if (!reserve(s, t.size() + k - 1)) continue;
        // What still agrees stays; the last token is always computed, for its logits.
        const size_t keep = resume_at(s, agreeing(s.computed, t));
        s.computed.assign(t.begin(), t.end());  // computed below, up to the last
        act.push_back({i, &s, keep});
        last_catch_up_ = std::max(last_catch_up_, t.size() - keep);
        k_most = std::max(k_most, k);
    }
    if (act.empty()) return;
    // Catch-up: each request's tokens from where they disagree, in passes of
    // at most n_batch tokens; a request's last chunk gives its first draft.
    std::vector<Part> parts;
    std::vector<size_t> owners;  // the active index of each part that wants logits
    std::vector<int32_t> greedy;
    const uint32_t n_batch = ctx_->n_batch();
    for (bool more = true; more;) {
        parts.clear();
        owners.clear();
        uint32_t budget = n_batch;
        more = false;
        for (size_t a = 0; a < act.size(); ++a) {
            Active &x = act[a];
            const std::span<const int32_t> t = wants[x.want].tokens;
            if (x.at == t.size()) continue;
            if (budget == 0) {
                more = true;
                continue;
            }
            const size_t take = std::min<size_t>(t.size() - x.at, budget);
            const bool last = x.at + take == t.size();
            parts.push_back({x.seq, t.subspan(x.at, take), (uint32_t)x.at, last});
            if (last) owners.push_back(a);
            x.at += take;
            budget -= (uint32_t)take;
            more |= !last;
        }
        if (parts.empty()) break;
        forward(parts, greedy);
        for (size_t j = 0; j < owners.size(); ++j) out[act[owners[j]].want].push_back(greedy[j]);
    }
    // The states have seen every known token: the checkpoint the next
    // proposal resumes from, before the drafted tokens go through.
    if (recurrent_) {
        std::vector<StateCopy> checkpoints;
        for (const Active &x : act) {
            if (wants[x.want].k < 2) continue;  // no drafted token goes through
            x.seq->checkpoint_at = wants[x.want].tokens.size();
            checkpoints.push_back({x.seq->slot, x.seq->slot + 1});
        }
        kv_->copy_slots(checkpoints);
    }
    // Then up to k - 1 steps of one token each, for the requests whose
    // drafts are shorter than their k: the last drafted token goes in.
    std::vector<int32_t> fed(act.size());
    std::vector<size_t> in_pass;
    for (uint32_t step = 1; step < k_most; ++step) {
        parts.clear();
        in_pass.clear();
        for (size_t a = 0; a < act.size(); ++a) {
            const Want &w = wants[act[a].want];
            if (step >= w.k) continue;
            std::vector<int32_t> &d = out[act[a].want];
            fed[a] = d.back();
            act[a].seq->computed.push_back(d.back());
            parts.push_back({act[a].seq, std::span<const int32_t>(&fed[a], 1), (uint32_t)(w.tokens.size() + step - 1),
                             true});
            in_pass.push_back(a);
        }
        forward(parts, greedy);
        for (size_t i = 0; i < in_pass.size(); ++i) out[act[in_pass[i]].want].push_back(greedy[i]);
    }
}

} // namespace vt
