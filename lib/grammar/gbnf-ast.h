// The parsed form of GBNF text, before lowering to bytes (grammar-lower.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vt::grammar {

struct CodeRange {
    uint32_t lo, hi;  // inclusive code points
};

struct GbnfItem;
using GbnfSeq = std::vector<GbnfItem>;
using GbnfAlts = std::vector<GbnfSeq>;

struct GbnfItem {
    enum class Kind { literal, char_class, rule_ref, group } kind;
    std::vector<uint32_t> text;        // literal: code points
    std::vector<CodeRange> ranges;     // char_class: the matched set (negation applied)
    std::string name;                  // rule_ref
    GbnfAlts alts;                     // group
    uint32_t min = 1, max = 1;         // repetition; max == kUnbounded for * and +
    uint32_t line = 0, col = 0;        // where it starts, for messages
    static constexpr uint32_t kUnbounded = UINT32_MAX;
};

struct GbnfRule {
    std::string name;
    GbnfAlts alts;
    uint32_t line = 0;
};

// Parses GBNF text into rules, in order of appearance. Throws
// vt::Error(VT_ERR_INVALID_ARGUMENT) with line and column on a syntax error
// or a rule defined twice; VT_ERR_UNSUPPORTED for llama.cpp's token
// references (<[id]>, <name>), which have no byte-level meaning.
std::vector<GbnfRule> parse_gbnf(std::string_view text);

} // namespace vt::grammar
