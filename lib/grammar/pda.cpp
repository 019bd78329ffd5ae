// Stack arena and automaton steps (pda.h).
#include "grammar/pda.h"

#include <algorithm>

namespace vt::grammar {

namespace {
inline uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}
} // namespace

size_t StackArena::find_slot(uint64_t key) const {
    size_t mask = keys_.size() - 1;
    size_t i = mix(key) & mask;
    while (keys_[i] != kEmpty && keys_[i] != key) i = (i + 1) & mask;
    return i;
}

void StackArena::grow() {
    size_t cap = keys_.empty() ? 1024 : keys_.size() * 2;
    keys_.assign(cap, kEmpty);
    vals_.assign(cap, 0);
    for (uint32_t id = 0; id < nodes_.size(); ++id) {
        uint64_t key = uint64_t(nodes_[id].pos) << 32 | nodes_[id].parent;
        size_t i = find_slot(key);
        keys_[i] = key;
        vals_[i] = id;
    }
}

uint32_t StackArena::intern(uint32_t pos, uint32_t parent) {
    if ((nodes_.size() + 1) * 2 > keys_.size()) grow();
    uint64_t key = uint64_t(pos) << 32 | parent;
    size_t i = find_slot(key);
    if (keys_[i] == key) return vals_[i];
    uint32_t id = uint32_t(nodes_.size());
    nodes_.push_back({pos, parent});
    keys_[i] = key;
    vals_[i] = id;
    return id;
}

void StackArena::truncate(size_t n) {
    // Linear probing deletion with backward shift, newest node first.
    size_t mask = keys_.size() - 1;
    while (nodes_.size() > n) {
        const StackNode &nd = nodes_.back();
        size_t i = find_slot(uint64_t(nd.pos) << 32 | nd.parent);
        keys_[i] = kEmpty;
        for (size_t j = (i + 1) & mask; keys_[j] != kEmpty; j = (j + 1) & mask) {
            size_t home = mix(keys_[j]) & mask;
            // Move j into the hole at i if its home is not in (i, j].
            bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
            if (!between) {
                keys_[i] = keys_[j];
                vals_[i] = vals_[j];
                keys_[j] = kEmpty;
                i = j;
            }
        }
        nodes_.pop_back();
    }
}

void StackArena::clear() {
    nodes_.clear();
    keys_.clear();
    vals_.clear();
}

void Pda::begin() {
    if (++epoch_ == 0) {  // wrapped: old stamps could collide
        std::fill(stamp_.begin(), stamp_.end(), 0);
        epoch_ = 1;
    }
}

void Pda::expand(uint32_t id, PdaState &to) {
    if (id >= stamp_.size()) stamp_.resize(arena_.size() * 2 + 64, 0);
    if (stamp_[id] == epoch_) return;
    stamp_[id] = epoch_;
    const StackNode nd = arena_[id];
    const Elem &e = g_.elems[nd.pos];
    switch (e.kind) {
    case ElemKind::bytes: to.tops.push_back(id); break;
    case ElemKind::end:
        if (nd.parent == kRootParent) {
            to.accept = true;
        } else if (nd.parent == kOutParent) {
            to.out = true;
        } else {
            expand(nd.parent, to);
        }
        break;
    case ElemKind::rule: {
        // A call in tail position returns straight to our caller.
        uint32_t ret = g_.elems[nd.pos + 1].kind == ElemKind::end ? nd.parent
                                                                   : arena_.intern(nd.pos + 1, nd.parent);
        for (uint32_t a : g_.rule_alts[e.arg]) expand(arena_.intern(a, ret), to);
        break;
    }
    }
}

void Pda::start(PdaState &s) {
    s.tops.clear();
    s.accept = s.out = false;
    begin();
    for (uint32_t a : g_.rule_alts[g_.root]) expand(arena_.intern(a, kRootParent), s);
}

void Pda::start_at(uint32_t pos, PdaState &s) {
    s.tops.clear();
    s.accept = s.out = false;
    begin();
    expand(arena_.intern(pos, kOutParent), s);
}

void Pda::advance(const PdaState &from, uint8_t b, PdaState &to) {
    to.tops.clear();
    to.accept = to.out = false;
    begin();
    for (uint32_t t : from.tops) {
        const StackNode nd = arena_[t];
        if (g_.sets[g_.elems[nd.pos].arg].has(b)) expand(arena_.intern(nd.pos + 1, nd.parent), to);
    }
}

uint32_t LazyDfa::add(PdaState s) {
    std::sort(s.tops.begin(), s.tops.end());
    std::string key(reinterpret_cast<const char *>(s.tops.data()), s.tops.size() * sizeof(uint32_t));
    key += char(s.accept | (s.out << 1));
    auto [it, fresh] = ids_.try_emplace(std::move(key), uint32_t(states_.size()));
    if (fresh) {
        states_.push_back(std::move(s));
        trans_.resize(states_.size() * 256, kUnknown);
    }
    return it->second;
}

uint32_t LazyDfa::compute(uint32_t id, uint8_t b) {
    pda_.advance(states_[id], b, next_);
    return add(next_);
}

void LazyDfa::clear() {
    states_.clear();
    trans_.clear();
    ids_.clear();
}

ByteSet Pda::next_bytes(const PdaState &s) const {
    ByteSet out;
    for (uint32_t t : s.tops) {
        const ByteSet &bs = g_.sets[g_.elems[arena_[t].pos].arg];
        for (int k = 0; k < 4; ++k) out.w[k] |= bs.w[k];
    }
    return out;
}

} // namespace vt::grammar
