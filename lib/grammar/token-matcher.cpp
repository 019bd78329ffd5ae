// Token masks over a compiled grammar (token-matcher.h).
#include "grammar/token-matcher.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "tokenizer/tokenizer.h"

namespace vt::grammar {

std::shared_ptr<const TokenVocab> TokenVocab::of(const Tokenizer &tok) {
    // Tokenizers are immutable, so one sorted vocabulary serves every grammar
    // compiled for a tokenizer while any of them lives.
    static std::mutex mu;
    static std::map<const Tokenizer *, std::weak_ptr<const TokenVocab>> cache;
    std::lock_guard<std::mutex> lock(mu);
    if (auto f = cache.find(&tok); f != cache.end()) {
        if (auto v = f->second.lock(); v && v->n_vocab == tok.n_vocab()) return v;
    }
    auto v = std::make_shared<TokenVocab>();
    v->n_vocab = tok.n_vocab();
    v->bytes.resize(v->n_vocab);
    for (uint32_t id = 0; id < v->n_vocab; ++id) {
        if (tok.is_eog(int32_t(id))) {
            v->eog.push_back(int32_t(id));
            continue;
        }
        v->bytes[id] = tok.token_to_piece(int32_t(id), /*render_special=*/false);
        if (!v->bytes[id].empty()) v->sorted.push_back(int32_t(id));
        v->max_len = std::max(v->max_len, v->bytes[id].size());
    }
    // std::string compares bytes as unsigned char.
    std::sort(v->sorted.begin(), v->sorted.end(),
              [&](int32_t a, int32_t b) { return v->bytes[a] < v->bytes[b]; });
    v->first_begin.assign(257, uint32_t(v->sorted.size()));
    for (size_t i = v->sorted.size(); i-- > 0;) v->first_begin[uint8_t(v->bytes[v->sorted[i]][0])] = uint32_t(i);
    for (int b = 255; b >= 0; --b) v->first_begin[b] = std::min(v->first_begin[b], v->first_begin[b + 1]);
    for (auto it = cache.begin(); it != cache.end();) it = it->second.expired() ? cache.erase(it) : std::next(it);
    cache[&tok] = v;
    return v;
}

void TokenSet::add_to(uint32_t *mask) const {
    if (!bits.empty()) {
        for (size_t k = 0; k < bits.size(); ++k) mask[k] |= bits[k];
    } else {
        for (int32_t id : ids) mask[id >> 5] |= uint32_t(1) << (id & 31);
    }
}

void walk_tokens(LazyDfa &dfa, uint32_t start, const TokenVocab &v, std::span<const uint32_t> idx,
                 std::vector<TokenVerdict> &verdicts) {
    verdicts.assign(idx.size(), TokenVerdict::rejected);
    std::vector<uint32_t> st(1, start);  // st[d]: the state after d bytes of the current token
    std::vector<char> out_seen(1, 0);    // out_seen[d]: a stack left the known context within d bytes
    const std::string *prev = nullptr;
    size_t valid = 0;  // st[0..valid] belong to prev's prefix
    for (size_t i = 0; i < idx.size();) {
        const std::string &t = v.bytes[v.sorted[idx[i]]];
        size_t L = t.size();
        size_t d = 0;
        if (prev) {
            size_t m = std::min({valid, prev->size(), L});
            while (d < m && (*prev)[d] == t[d]) ++d;
        }
        if (st.size() < L + 1) {
            st.resize(L + 1);
            out_seen.resize(L + 1);
        }
        bool died = false;
        while (d < L) {
            st[d + 1] = dfa.step(st[d], uint8_t(t[d]));
            const PdaState &s = dfa.state(st[d + 1]);
            out_seen[d + 1] = out_seen[d] || s.out;
            ++d;
            if (s.dead()) {
                died = true;
                break;
            }
        }
        valid = d;
        prev = &t;
        if (d == L) {
            const PdaState &e = dfa.state(st[L]);
            bool ok = !e.dead() || e.accept || e.out;
            verdicts[i] = ok ? TokenVerdict::accepted
                        : (L > 1 && out_seen[L - 1]) ? TokenVerdict::uncertain : TokenVerdict::rejected;
        } else {
            verdicts[i] = out_seen[d] ? TokenVerdict::uncertain : TokenVerdict::rejected;
        }
        ++i;
        if (!died) continue;
        // Every following token that starts with the d bytes that died
        // dies there too (or, if it is longer than t, after t's last byte);
        // a token with t's very bytes (a byte-fallback twin) fares as t.
        const TokenVerdict same = verdicts[i - 1];
        const TokenVerdict ext = out_seen[d] ? TokenVerdict::uncertain : TokenVerdict::rejected;
        while (i < idx.size()) {
            const std::string &u = v.bytes[v.sorted[idx[i]]];
            if (u.size() < d || std::memcmp(u.data(), t.data(), d) != 0) break;
            verdicts[i++] = u == t ? same : ext;
        }
    }
}


// The caller context of a rule's frames that the grammar fixes: a rule
// called from one place only (ignoring its own tail calls, e.g. X*'s loop)
// always returns there. Frames of other rules get kOutParent.
//
// With originals_only, the grammar is seen as it was before shared rules
// were copied (grammar-lower.cpp): only original positions, a rule's call
// sites counted through the copies' origins. That context is a prefix of
// the one every copy has, so a token cache computed with it holds for all
// copies of a position, which then only refine its uncertain tokens.
class StaticContext {
public:
    StaticContext(const Grammar &g, bool originals_only)
        : g_(g), rule_of_(g.elems.size()), sites_(g.rule_alts.size()) {
        for (uint32_t r = 0; r < g.rule_alts.size(); ++r) {
            for (uint32_t a : g.rule_alts[r]) {
                for (uint32_t p = a;; ++p) {
                    rule_of_[p] = r;
                    if (g.elems[p].kind == ElemKind::end) break;
                }
            }
        }
        for (uint32_t p = 0; p < g.elems.size(); ++p) {
            if (g.elems[p].kind != ElemKind::rule) continue;
            uint32_t r = g.elems[p].arg;
            bool self_tail = rule_of_[p] == r && g.elems[p + 1].kind == ElemKind::end;
            if (self_tail) continue;
            if (!originals_only) {
                sites_[r].push_back(p);
                continue;
            }
            uint32_t q = g.origin[p], orig = original_rule(r);
            if (std::find(sites_[orig].begin(), sites_[orig].end(), q) == sites_[orig].end()) sites_[orig].push_back(q);
        }
    }

    uint32_t original_rule(uint32_t r) const { return rule_of_[g_.origin[g_.rule_alts[r][0]]]; }

    uint32_t rule_of(uint32_t pos) const { return rule_of_[pos]; }

    // The parent node of frames of rule r, interned in `arena`.
    uint32_t parent_of(uint32_t r, StackArena &arena, int depth = 0) const {
        if (r == g_.root && sites_[r].empty()) return kRootParent;
        if (sites_[r].size() != 1 || depth > 64) return kOutParent;
        uint32_t q = sites_[r][0];
        uint32_t caller = parent_of(rule_of_[q], arena, depth + 1);
        if (g_.elems[q + 1].kind == ElemKind::end) return caller;
        return arena.intern(q + 1, caller);
    }

private:
    const Grammar &g_;
    std::vector<uint32_t> rule_of_;
    std::vector<std::vector<uint32_t>> sites_;
};


CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocab> v)
    : g_(std::move(g)), v_(std::move(v)), pos_index_(g_->elems.size(), UINT32_MAX) {
    const Grammar &gr = *g_;
    const TokenVocab &vo = *v_;
    StaticContext ctx(gr, false), ctx_orig(gr, true);
    // One arena and one lazy DFA for the whole compilation: positions reach
    // the same states (a string's characters, whitespace) over and over.
    StackArena arena;
    Pda pda(gr, arena);
    LazyDfa dfa(pda);
    std::vector<TokenVerdict> verdicts;
    PdaState s0;
    // First once per original position, with the context all its copies
    // share: accepted and rejected tokens are final for every copy; only the
    // uncertain ones are matched again with the copy's own context.
    struct Base {
        std::vector<int32_t> accepted;    // token ids
        std::vector<uint32_t> uncertain;  // indices into vocab.sorted, ascending
    };
    std::unordered_map<uint32_t, Base> bases;
    std::vector<uint32_t> idx;
    auto base_of = [&](uint32_t o) -> const Base & {
        auto [it, fresh] = bases.try_emplace(o);
        if (!fresh) return it->second;
        s0.tops.assign(1, arena.intern(o, ctx_orig.parent_of(ctx_orig.rule_of(o), arena)));
        s0.accept = s0.out = false;
        const ByteSet &first = gr.sets[gr.elems[o].arg];
        idx.clear();
        for (int b = 0; b < 256; ++b) {
            if (!first.has(uint8_t(b))) continue;
            for (uint32_t i = vo.first_begin[b]; i < vo.first_begin[b + 1]; ++i) idx.push_back(i);
        }
        walk_tokens(dfa, dfa.add(s0), vo, idx, verdicts);
        for (size_t k = 0; k < idx.size(); ++k) {
            if (verdicts[k] == TokenVerdict::accepted) it->second.accepted.push_back(vo.sorted[idx[k]]);
            if (verdicts[k] == TokenVerdict::uncertain) it->second.uncertain.push_back(idx[k]);
        }
        return it->second;
    };
    size_t words = (vo.n_vocab + 31) / 32;
    std::vector<int32_t> accepted;
    // A copy deep in a repetition chain shares the cache of the copy with
    // max_len + 1 left (grammar-ir.h); those are filled in after the rest.
    const size_t far = vo.max_len + 1;
    auto far_in_chain = [&](uint32_t p) { return !gr.copies_left.empty() && gr.copies_left[p] > far; };
    // A copy with k left differs from the copy outside it (k + 1 left) only
    // for tokens of k bytes or more (a shorter one cannot use up k copies):
    // copies are derived outside in, each walking only those tokens.
    std::vector<uint32_t> outer;
    if (!gr.next_copy.empty()) {
        outer.assign(gr.elems.size(), UINT32_MAX);
        for (uint32_t q = 0; q < gr.elems.size(); ++q)
            if (gr.next_copy[q] != UINT32_MAX && !far_in_chain(q)) outer[gr.next_copy[q]] = q;
    }
    auto derived = [&](uint32_t p) { return !outer.empty() && outer[p] != UINT32_MAX; };
    for (uint32_t p = 0; p < gr.elems.size(); ++p) {
        if (gr.elems[p].kind != ElemKind::bytes || far_in_chain(p) || derived(p)) continue;
        const Base &base = base_of(gr.origin[p]);
        PositionMask pm;
        accepted = base.accepted;
        uint32_t parent = ctx.parent_of(ctx.rule_of(p), arena);
        if (parent == kOutParent || base.uncertain.empty()) {
            pm.uncertain = base.uncertain;
        } else {
            s0.tops.assign(1, arena.intern(p, parent));
            s0.accept = s0.out = false;
            walk_tokens(dfa, dfa.add(s0), vo, base.uncertain, verdicts);
            for (size_t k = 0; k < base.uncertain.size(); ++k) {
                if (verdicts[k] == TokenVerdict::accepted) accepted.push_back(vo.sorted[base.uncertain[k]]);
                if (verdicts[k] == TokenVerdict::uncertain) pm.uncertain.push_back(base.uncertain[k]);
            }
        }
        if (accepted.size() * 32 >= vo.n_vocab) {
            pm.accepted.bits.assign(words, 0);
            for (int32_t id : accepted) pm.accepted.bits[id >> 5] |= uint32_t(1) << (id & 31);
        } else {
            pm.accepted.ids = accepted;
        }
        pos_index_[p] = uint32_t(masks_.size());
        masks_.push_back(std::move(pm));
    }
    if (!outer.empty()) derive_chain_copies(outer, ctx, arena, dfa);
    for (uint32_t p = 0; p < gr.elems.size(); ++p) {
        if (gr.elems[p].kind != ElemKind::bytes || !far_in_chain(p)) continue;
        uint32_t q = p;
        while (far_in_chain(q) && pos_index_[q] == UINT32_MAX) q = gr.next_copy[q];
        pos_index_[p] = pos_index_[q];
    }
}

void CompiledGrammar::derive_chain_copies(const std::vector<uint32_t> &outer, const StaticContext &ctx,
                                          StackArena &arena, LazyDfa &dfa) {
    const Grammar &gr = *g_;
    const TokenVocab &vo = *v_;
    // Outside in: a copy after its outer copy. (Chains nest, X{m,n} inside
    // Y{m,n}: a position's level is read from the link that names it.)
    std::vector<uint32_t> order, path;
    std::vector<char> queued(gr.elems.size(), 0);
    for (uint32_t p = 0; p < gr.elems.size(); ++p) {
        if (gr.elems[p].kind != ElemKind::bytes || outer[p] == UINT32_MAX || queued[p]) continue;
        path.clear();
        for (uint32_t q = p; q != UINT32_MAX && pos_index_[q] == UINT32_MAX && !queued[q]; q = outer[q]) {
            queued[q] = 1;
            path.push_back(q);
        }
        order.insert(order.end(), path.rbegin(), path.rend());
    }
    // Per first-byte set: its tokens (indices into sorted), longest first,
    // so that "k bytes or more" is a prefix.
    std::unordered_map<uint32_t, std::vector<uint32_t>> by_length;
    std::vector<uint32_t> idx, acc_ids, unc;
    std::vector<TokenVerdict> walked;
    for (uint32_t p : order) {
        const size_t k = gr.copies_left[outer[p]] - 1;  // copies left at p, in the chain of that link
        const uint32_t set = gr.elems[p].arg;
        auto [it, fresh] = by_length.try_emplace(set);
        if (fresh) {
            const ByteSet &first = gr.sets[set];
            for (int b = 0; b < 256; ++b)
                if (first.has(uint8_t(b)))
                    for (uint32_t i = vo.first_begin[b]; i < vo.first_begin[b + 1]; ++i) it->second.push_back(i);
            std::stable_sort(it->second.begin(), it->second.end(), [&](uint32_t x, uint32_t y) {
                return vo.bytes[vo.sorted[x]].size() > vo.bytes[vo.sorted[y]].size();
            });
        }
        const std::vector<uint32_t> &all = it->second;
        size_t n = 0;
        while (n < all.size() && vo.bytes[vo.sorted[all[n]]].size() >= k) ++n;
        idx.assign(all.begin(), all.begin() + (ptrdiff_t)n);
        std::sort(idx.begin(), idx.end());
        PdaState s0;
        s0.tops.assign(1, arena.intern(p, ctx.parent_of(ctx.rule_of(p), arena)));
        walk_tokens(dfa, dfa.add(s0), vo, idx, walked);
        // The outer copy's sets, with the walked tokens' verdicts replaced.
        PositionMask pm = masks_[pos_index_[outer[p]]];
        auto walked_pos = [&](uint32_t i) { return std::binary_search(idx.begin(), idx.end(), i); };
        std::vector<uint32_t> &U = pm.uncertain;
        U.erase(std::remove_if(U.begin(), U.end(), walked_pos), U.end());
        if (!pm.accepted.bits.empty()) {
            for (uint32_t i : idx) pm.accepted.bits[vo.sorted[i] >> 5] &= ~(uint32_t(1) << (vo.sorted[i] & 31));
        } else {
            auto &ids = pm.accepted.ids;
            std::vector<int32_t> drop;
            for (uint32_t i : idx) drop.push_back(vo.sorted[i]);
            std::sort(drop.begin(), drop.end());
            ids.erase(std::remove_if(ids.begin(), ids.end(),
                                     [&](int32_t id) { return std::binary_search(drop.begin(), drop.end(), id); }),
                      ids.end());
        }
        unc.clear();
        for (size_t j = 0; j < idx.size(); ++j) {
            const int32_t id = vo.sorted[idx[j]];
            if (walked[j] == TokenVerdict::uncertain) unc.push_back(idx[j]);
            if (walked[j] != TokenVerdict::accepted) continue;
            if (!pm.accepted.bits.empty()) {
                pm.accepted.bits[id >> 5] |= uint32_t(1) << (id & 31);
            } else {
                pm.accepted.ids.push_back(id);
            }
        }
        std::sort(pm.accepted.ids.begin(), pm.accepted.ids.end());
        size_t mid = U.size();
        U.insert(U.end(), unc.begin(), unc.end());
        std::inplace_merge(U.begin(), U.begin() + (ptrdiff_t)mid, U.end());
        pos_index_[p] = uint32_t(masks_.size());
        masks_.push_back(std::move(pm));
    }
}

TokenMatcher::TokenMatcher(std::shared_ptr<const CompiledGrammar> cg)
    : cg_(std::move(cg)), pda_(cg_->grammar(), arena_), dfa_(pda_) {
    reset();
}

TokenMatcher::TokenMatcher(const TokenMatcher &o)
    : cg_(o.cg_), arena_(o.arena_), pda_(cg_->grammar(), arena_), state_(o.state_), terminated_(o.terminated_),
      dfa_(pda_) {}

void TokenMatcher::reset() {
    arena_.clear();
    terminated_ = false;
    pda_.start(state_);
}

void TokenMatcher::fill_mask(uint32_t *mask) {
    const TokenVocab &v = cg_->vocab();
    size_t words = (v.n_vocab + 31) / 32;
    std::memset(mask, 0, words * sizeof(uint32_t));
    if (terminated_) return;
    if (state_.accept) {
        for (int32_t id : v.eog) mask[id >> 5] |= uint32_t(1) << (id & 31);
    }
    // Group the tops by position: each distinct position's cache entry once.
    std::vector<uint32_t> tops = state_.tops;
    std::sort(tops.begin(), tops.end(), [&](uint32_t a, uint32_t b) { return arena_[a].pos < arena_[b].pos; });
    size_t mark = arena_.size();
    PdaState sub;
    std::vector<TokenVerdict> verdicts;
    std::vector<uint32_t> todo;
    for (size_t i = 0; i < tops.size();) {
        uint32_t pos = arena_[tops[i]].pos;
        sub.tops.clear();
        sub.accept = sub.out = false;
        while (i < tops.size() && arena_[tops[i]].pos == pos) sub.tops.push_back(tops[i++]);
        const PositionMask &pm = cg_->at(pos);
        pm.accepted.add_to(mask);
        todo.clear();
        for (uint32_t k : pm.uncertain) {
            int32_t id = v.sorted[k];
            if (!((mask[id >> 5] >> (id & 31)) & 1)) todo.push_back(k);
        }
        if (todo.empty()) continue;
        walk_tokens(dfa_, dfa_.add(sub), v, todo, verdicts);
        for (size_t k = 0; k < todo.size(); ++k) {
            if (verdicts[k] != TokenVerdict::accepted) continue;
            int32_t id = v.sorted[todo[k]];
            mask[id >> 5] |= uint32_t(1) << (id & 31);
        }
    }
    dfa_.clear();  // its states name nodes that go now
    arena_.truncate(mark);
}

bool TokenMatcher::accept_bytes(std::string_view bytes) { return step_bytes(bytes, true); }

bool TokenMatcher::step_bytes(std::string_view bytes, bool commit) {
    if (terminated_) return false;
    size_t mark = arena_.size();
    PdaState cur = state_, next;
    for (size_t k = 0; k < bytes.size(); ++k) {
        pda_.advance(cur, uint8_t(bytes[k]), next);
        // A string of the language may end on the last byte, nowhere else.
        if (next.dead() && !(next.accept && k + 1 == bytes.size())) {
            arena_.truncate(mark);
            return false;
        }
        std::swap(cur, next);
    }
    if (commit) {
        state_ = std::move(cur);
    } else {
        arena_.truncate(mark);
    }
    return true;
}

bool TokenMatcher::check(int32_t token, bool commit) {
    const TokenVocab &v = cg_->vocab();
    if (terminated_ || token < 0 || uint32_t(token) >= v.n_vocab) return false;
    if (std::find(v.eog.begin(), v.eog.end(), token) != v.eog.end()) {
        if (!state_.accept) return false;
        if (commit) terminated_ = true;
        return true;
    }
    const std::string &b = v.bytes[size_t(token)];
    if (b.empty()) return false;
    return step_bytes(b, commit);
}

} // namespace vt::grammar
