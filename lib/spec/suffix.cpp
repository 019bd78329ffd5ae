#include "spec/suffix.h"

#include <algorithm>

namespace vt {

void SuffixIndex::append(uint64_t seq, std::span<const int32_t> tokens) {
    auto [it, added] = seqs_.try_emplace(seq);
    Seq &s = it->second;
    if (added) {
        order_.push_back(seq);
        s.serial = next_serial_++;
    }
    for (int32_t t : tokens) {
        s.tokens.push_back(t);
        ++count_[t];
        if (s.tokens.size() >= 2) add_pair(s, (uint32_t)s.tokens.size() - 1);
    }
}

void SuffixIndex::add_pair(const Seq &s, uint32_t pos) {
    const int32_t a = s.tokens[pos - 1], b = s.tokens[pos];
    pairs_[pair_key(a, b)].at.push_back({&s, pos});
    Followers &fs = followers_[a];
    Follower &f = fs.by[b];
    ++f.count;
    f.latest = {&s, pos};  // appends are the most recent occurrences
    if (!fs.stale && (fs.by.size() == 1 || b == fs.best || f.beats(fs.by.at(fs.best)))) fs.best = b;
}

void SuffixIndex::drop_oldest() {
    if (order_.empty()) return;
    auto it = seqs_.find(order_.front());
    order_.pop_front();
    const Seq &s = it->second;
    for (size_t i = 0; i < s.tokens.size(); ++i) {
        const int32_t b = s.tokens[i];
        if (--count_[b] == 0) count_.erase(b);
        if (i == 0) continue;
        const int32_t a = s.tokens[i - 1];
        // This sequence's occurrences lead the pair's list: all of them go at
        // the pair's first one, and the list with them if nothing is left.
        auto p = pairs_.find(pair_key(a, b));
        if (p != pairs_.end()) {
            Pairs &ps = p->second;
            while (ps.head < ps.at.size() && ps.at[ps.head].seq == &s) ++ps.head;
            if (ps.head == ps.at.size()) {
                pairs_.erase(p);
            } else if (ps.head > 32 && 2 * ps.head > ps.at.size()) {  // keep the list's dead front small
                ps.at.erase(ps.at.begin(), ps.at.begin() + ps.head);
                ps.head = 0;
            }
        }
        // Its latest occurrence is this sequence's only when it was the last.
        auto f = followers_.find(a);
        Followers &fs = f->second;
        if (--fs.by[b].count == 0) fs.by.erase(b);
        if (fs.by.empty()) followers_.erase(f);
        else if (b == fs.best) fs.stale = true;
    }
    seqs_.erase(it);
}

size_t SuffixIndex::length(uint64_t seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? 0 : it->second.tokens.size();
}

namespace {

using Occ = SuffixIndex::Occ;

// Continues draft d (probability p so far) from the occurrences `occ` of a
// string of `depth` tokens (see suffix.h).
SuffixDraft walk(std::vector<Occ> occ, uint32_t depth, uint32_t max_tokens, const SuffixConfig &cfg, SuffixDraft d,
                 float p) {
    struct Next {
        uint32_t count = 0;
        Occ latest{};  // the most recent occurrence followed by this token
    };
    std::unordered_map<int32_t, Next> next;
    while (d.tokens.size() < max_tokens && depth < cfg.max_depth) {
        next.clear();
        for (const Occ &o : occ) {
            if (o.end + 1 >= o.seq->size()) continue;  // the sequence ends here
            Next &n = next[(*o.seq)[o.end + 1]];
            if (n.count++ == 0 || o.after(n.latest)) n.latest = o;
        }
        if (next.empty()) break;
        auto best = next.begin();
        for (auto it = next.begin(); it != next.end(); ++it) {
            const Next &a = it->second, &b = best->second;
            if (a.count > b.count || (a.count == b.count && a.latest.after(b.latest))) best = it;
        }
        p *= (float)best->second.count / (float)occ.size();
        if (p < cfg.min_token_prob) break;
        const int32_t t = best->first;
        d.tokens.push_back(t);
        d.score += p;
        size_t w = 0;
        for (const Occ &o : occ)
            if (o.end + 1 < o.seq->size() && (*o.seq)[o.end + 1] == t) occ[w++] = {o.seq, o.serial, o.end + 1};
        occ.resize(w);
        ++depth;
    }
    return d;
}

uint32_t draft_cap(uint32_t match_len, const SuffixConfig &cfg, uint32_t max_tokens) {
    return std::min(max_tokens, (uint32_t)std::max(0.0f, (float)match_len * cfg.max_spec_factor + 1e-6f));
}

} // namespace

std::vector<SuffixIndex::Occ> SuffixIndex::occurrences(const Pairs &ps) {
    std::vector<Occ> occ;
    occ.reserve(ps.at.size() - ps.head);
    for (size_t i = ps.head; i < ps.at.size(); ++i) occ.push_back({&ps.at[i].seq->tokens, ps.at[i].seq->serial, ps.at[i].pos});
    return occ;
}

// The draft of match length 1 (the last token t alone): its first token from
// the counts of the pairs (t, u), the rest from the occurrences of the chosen
// pair.
SuffixDraft SuffixIndex::after_one(int32_t t, const SuffixConfig &cfg, uint32_t max_tokens) const {
    SuffixDraft d;
    auto f = followers_.find(t);
    if (max_tokens == 0 || f == followers_.end()) return d;
    const Followers &fs = f->second;
    if (fs.stale) {
        const Follower *b = nullptr;
        for (const auto &[v, fw] : fs.by)
            if (!b || fw.beats(*b)) fs.best = v, b = &fw;
        fs.stale = false;
    }
    const int32_t u = fs.best;
    const float p = (float)fs.by.at(u).count / (float)count_.at(t);
    if (p < cfg.min_token_prob) return d;
    d.tokens.push_back(u);
    d.score = p;
    if (max_tokens == 1 || cfg.max_depth <= 2) return d;
    return walk(occurrences(pairs_.at(pair_key(t, u))), 2, max_tokens, cfg, std::move(d), p);
}

SuffixDraft SuffixIndex::speculate(std::span<const int32_t> pattern, const SuffixConfig &cfg,
                                   uint32_t max_tokens) const {
    SuffixDraft best;
    const size_t n = pattern.size();
    if (n < 2 || max_tokens == 0 || !count_.count(pattern[n - 1])) return best;
    best = after_one(pattern[n - 1], cfg, draft_cap(1, cfg, max_tokens));
    best.match_len = 1;
    auto pr = n >= 3 ? pairs_.find(pair_key(pattern[n - 2], pattern[n - 1])) : pairs_.end();
    if (pr == pairs_.end()) return best;
    std::vector<Occ> occ = occurrences(pr->second);
    for (uint32_t m = 2; m < n; ++m) {
        if (m > 2) {  // occurrences of the last m tokens: those of the last m - 1 preceded by pattern[n - m]
            size_t k = 0;
            for (const Occ &o : occ)
                if (o.end + 1 >= m && (*o.seq)[o.end + 1 - m] == pattern[n - m]) occ[k++] = o;
            occ.resize(k);
        }
        if (occ.empty()) break;
        SuffixDraft d = walk(occ, m, draft_cap(m, cfg, max_tokens), cfg, {}, 1.0f);
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
