// The byte-level pushdown automaton behind every matcher. A parse stack is a
// chain of nodes (position, parent) interned in an arena, so stacks share
// their tails and equal stacks are the same node id. A state is the set of
// stack tops that wait for a byte (each top's position is a `bytes`
// element), plus whether some stack was emptied (the text so far is a whole
// string of the language), after closing over rule calls and returns.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar-ir.h"

namespace vt::grammar {

// Parents that end a chain: below the root rule (popping into it means the
// text is accepted), and below the position a token-mask cache entry is
// computed from (popping into it means the token leaves that rule, where
// the real stack decides).
constexpr uint32_t kRootParent = UINT32_MAX;
constexpr uint32_t kOutParent = UINT32_MAX - 1;

struct StackNode {
    uint32_t pos, parent;
};

class StackArena {
public:
    uint32_t intern(uint32_t pos, uint32_t parent);
    const StackNode &operator[](uint32_t id) const { return nodes_[id]; }
    size_t size() const { return nodes_.size(); }
    // Forgets the nodes made since size() was n (scratch work of a mask).
    void truncate(size_t n);
    void clear();

private:
    size_t find_slot(uint64_t key) const;
    void grow();
    std::vector<StackNode> nodes_;
    std::vector<uint64_t> keys_;   // open addressing; kEmpty marks a free slot
    std::vector<uint32_t> vals_;
    static constexpr uint64_t kEmpty = ~uint64_t(0);
};

struct PdaState {
    std::vector<uint32_t> tops;  // node ids whose position is a `bytes` element
    bool accept = false;         // a stack emptied into kRootParent
    bool out = false;            // a stack popped into kOutParent
    bool dead() const { return tops.empty(); }
};

class Pda {
public:
    Pda(const Grammar &g, StackArena &arena) : g_(g), arena_(arena) {}

    // The state before any byte: the root rule's alternatives.
    void start(PdaState &s);
    // The state of one `bytes` position with an unknown caller (kOutParent).
    void start_at(uint32_t pos, PdaState &s);
    // The state after byte b from `from` (which must not alias `to`).
    void advance(const PdaState &from, uint8_t b, PdaState &to);
    // The bytes some top of s can take.
    ByteSet next_bytes(const PdaState &s) const;

    const Grammar &grammar() const { return g_; }
    StackArena &arena() { return arena_; }

private:
    void expand(uint32_t id, PdaState &to);
    void begin();

    const Grammar &g_;
    StackArena &arena_;
    std::vector<uint32_t> stamp_;  // per node: the epoch it was last expanded in
    uint32_t epoch_ = 0;
};

// Automaton states interned and their byte transitions memoized (a DFA
// built lazily over the PDA's states): token walks pass through the same
// few states again and again (inside a JSON string every character leads
// back to the same state), so most steps are one table lookup.
// The states hold node ids of the Pda's arena: clear() before the arena
// forgets nodes.
class LazyDfa {
public:
    static constexpr uint32_t kUnknown = UINT32_MAX;
    explicit LazyDfa(Pda &pda) : pda_(pda) {}

    uint32_t add(PdaState s);  // the id of s (tops sorted here)
    uint32_t step(uint32_t id, uint8_t b) {
        const size_t k = (size_t)id * 256 + b;
        if (trans_[k] == kUnknown) {
            const uint32_t next = compute(id, b);  // may grow trans_
            trans_[k] = next;
        }
        return trans_[k];
    }
    const PdaState &state(uint32_t id) const { return states_[id]; }
    void clear();

private:
    uint32_t compute(uint32_t id, uint8_t b);
    Pda &pda_;
    std::vector<PdaState> states_;
    std::vector<uint32_t> trans_;  // states_ x 256
    std::unordered_map<std::string, uint32_t> ids_;
    PdaState next_;
};

} // namespace vt::grammar
