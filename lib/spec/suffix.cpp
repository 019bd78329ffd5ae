#include "spec/suffix.h"

#include <algorithm>

namespace vt {

void SuffixIndex::append(uint64_t seq, std::span<const int32_t> tokens) {
    auto [it, added] = seqs_.try_emplace(seq);
    if (added) order_.push_back(seq);
    std::vector<int32_t> &s = it->second;
    for (int32_t t : tokens) {
        where_[t].push_back({seq, (uint32_t)s.size()});
        s.push_back(t);
    }
}

void SuffixIndex::drop_oldest() {
    if (order_.empty()) return;
    const uint64_t seq = order_.front();
    order_.pop_front();
    auto it = seqs_.find(seq);
    for (int32_t t : it->second) {  // its entries lead each of its tokens' lists
        auto w = where_.find(t);
        if (w == where_.end()) continue;
        while (!w->second.empty() && w->second.front().seq == seq) w->second.pop_front();
        if (w->second.empty()) where_.erase(w);
    }
    seqs_.erase(it);
}

size_t SuffixIndex::length(uint64_t seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? 0 : it->second.size();
}

namespace {

// An occurrence of the string being matched: its sequence's tokens and the
// position of its last token.
struct Occ {
    const std::vector<int32_t> *seq;
    uint64_t id;
    uint32_t end;
};

// The draft that continues the occurrences `occ` of a string of `depth`
// tokens (see suffix.h).
SuffixDraft walk(std::vector<Occ> occ, uint32_t depth, uint32_t max_tokens, const SuffixConfig &cfg) {
    SuffixDraft d;
    float p = 1.0f;
    struct Next {
        uint32_t count = 0;
        uint64_t id = 0;   // the most recent occurrence: sequence, then position
        uint32_t end = 0;
    };
    std::unordered_map<int32_t, Next> next;
    while (d.tokens.size() < max_tokens && depth < cfg.max_depth) {
        next.clear();
        for (const Occ &o : occ) {
            if (o.end + 1 >= o.seq->size()) continue;  // the sequence ends here
            Next &n = next[(*o.seq)[o.end + 1]];
            ++n.count;
            if (n.count == 1 || o.id > n.id || (o.id == n.id && o.end > n.end)) n.id = o.id, n.end = o.end;
        }
        if (next.empty()) break;
        auto best = next.begin();
        for (auto it = next.begin(); it != next.end(); ++it) {
            const Next &a = it->second, &b = best->second;
            if (a.count > b.count || (a.count == b.count && (a.id > b.id || (a.id == b.id && a.end > b.end)))) best = it;
        }
        p *= (float)best->second.count / (float)occ.size();
        if (p < cfg.min_token_prob) break;
        const int32_t t = best->first;
        d.tokens.push_back(t);
        d.score += p;
        size_t w = 0;
        for (const Occ &o : occ)
            if (o.end + 1 < o.seq->size() && (*o.seq)[o.end + 1] == t) occ[w++] = {o.seq, o.id, o.end + 1};
        occ.resize(w);
        ++depth;
    }
    return d;
}

} // namespace

SuffixDraft SuffixIndex::speculate(std::span<const int32_t> pattern, const SuffixConfig &cfg,
                                   uint32_t max_tokens) const {
    SuffixDraft best;
    const size_t n = pattern.size();
    if (n < 2 || max_tokens == 0) return best;
    auto w = where_.find(pattern[n - 1]);
    if (w == where_.end()) return best;
    std::vector<Occ> occ;
    occ.reserve(w->second.size());
    const std::vector<int32_t> *last = nullptr;
    uint64_t last_id = 0;
    for (const At &a : w->second) {
        if (!last || a.seq != last_id) last = &seqs_.at(a.seq), last_id = a.seq;
        occ.push_back({last, a.seq, a.pos});
    }
    for (uint32_t m = 1; m < n; ++m) {
        if (m > 1) {  // occurrences of the last m tokens: those of the last m - 1 preceded by pattern[n - m]
            size_t k = 0;
            for (const Occ &o : occ)
                if (o.end + 1 >= m && (*o.seq)[o.end + 1 - m] == pattern[n - m]) occ[k++] = o;
            occ.resize(k);
        }
        if (occ.empty()) break;
        const auto cap = (uint32_t)std::max(0.0f, (float)m * cfg.max_spec_factor + 1e-6f);
        SuffixDraft d = walk(occ, m, std::min(max_tokens, cap), cfg);
        if (d.score >= best.score) {
            best = std::move(d);
            best.match_len = m;
        }
    }
    return best;
}

std::vector<int32_t> SuffixProposer::propose(uint64_t id, std::span<const int32_t> tokens, uint32_t k_max) {
    SuffixIndex &own = running_[id];
    const size_t have = own.length(0);
    if (have > tokens.size()) {  // not this request's sequence any more: index it again
        own = SuffixIndex();
        own.append(0, tokens);
    } else if (have < tokens.size()) {
        own.append(0, tokens.subspan(have));
    }
    const uint32_t max_tokens = std::min(cfg_.k, k_max);
    const std::span<const int32_t> pattern = tokens.last(std::min<size_t>(cfg_.max_depth, tokens.size()));
    SuffixDraft d = own.speculate(pattern, cfg_, max_tokens);
    if (cfg_.max_cached && cache_.size()) {
        SuffixDraft c = cache_.speculate(pattern, cfg_, max_tokens);
        if (c.score > d.score) d = std::move(c);
    }
    return std::move(d.tokens);
}

void SuffixProposer::finish(uint64_t id, std::span<const int32_t> tokens, size_t n_prompt) {
    running_.erase(id);
    if (!cfg_.max_cached || tokens.size() <= n_prompt) return;
    cache_.append(next_cached_++, tokens.subspan(n_prompt));
    while (cache_.size() > cfg_.max_cached) cache_.drop_oldest();
}

} // namespace vt
