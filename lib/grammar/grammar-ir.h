// The compiled form of a grammar: rules over byte sets, flattened for the
// matcher. Code points were lowered to UTF-8 byte sequences by the GBNF
// compiler, so a token's bytes are matched one at a time, whether or not
// they end inside a character.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace vt::grammar {

struct ByteSet {
    std::array<uint64_t, 4> w{};
    bool has(uint8_t b) const { return (w[b >> 6] >> (b & 63)) & 1; }
    void add(uint8_t b) { w[b >> 6] |= uint64_t(1) << (b & 63); }
    void add_range(uint8_t lo, uint8_t hi) {
        for (unsigned b = lo; b <= hi; ++b) add(uint8_t(b));
    }
    bool empty() const { return (w[0] | w[1] | w[2] | w[3]) == 0; }
    bool operator==(const ByteSet &) const = default;
};

enum class ElemKind : uint8_t {
    bytes,  // one byte of sets[arg]
    rule,   // the rule rules[arg]
    end,    // end of an alternative: return to the caller
};

struct Elem {
    ElemKind kind;
    uint32_t arg;
};

// Positions are indices into elems. Each alternative is a run of elements
// closed by an `end`; a rule is the list of its alternatives' first
// positions. No rule is left-recursive, and every rule left has a non-empty
// language (alternatives that could never finish were dropped), so every
// state the matcher reaches can still be completed.
struct Grammar {
    std::vector<Elem> elems;
    std::vector<ByteSet> sets;
    std::vector<std::vector<uint32_t>> rule_alts;
    std::vector<std::string> rule_names;
    // By position: the position it is a copy of (itself if none). A copy of
    // a rule (grammar-lower.cpp gives each call site of a shared rule its
    // own) matches the same strings as the rule it copies.
    std::vector<uint32_t> origin;
    // By position, for X{m,n}'s chain of optional copies (grammar-lower.cpp):
    // how many copies of X remain from the copy a position belongs to
    // (0: not in a chain), and the same position one copy further in.
    // A token of L bytes cannot use up more than L copies, so every copy
    // with more than L + 1 left gets the token cache of the one with L + 1.
    std::vector<uint32_t> copies_left, next_copy;
    uint32_t root = 0;
};

} // namespace vt::grammar
