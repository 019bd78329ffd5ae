// Byte-level grammars: GBNF text compiled to rules over byte sets, and a
// matcher that walks bytes through them (a pushdown automaton whose stacks
// share their tails). The vocabulary side (token masks) is in
// token-matcher.h; the public face is include/vt/vt_grammar.h.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace vt::grammar {

struct Grammar;  // compiled rules (grammar-ir.h)

// Parses llama.cpp's GBNF (start rule `root`) and lowers it to byte-level
// rules: code point classes become alternatives of UTF-8 byte sequences.
// Throws vt::Error: VT_ERR_INVALID_ARGUMENT for a syntax error (with line
// and column), an undefined rule or an empty language; VT_ERR_UNSUPPORTED
// for left recursion.
std::shared_ptr<const Grammar> compile_gbnf(std::string_view gbnf);

// Walks bytes through a grammar, with no vocabulary (tests, accept_text).
class ByteMatcher {
public:
    explicit ByteMatcher(std::shared_ptr<const Grammar> grammar);
    ~ByteMatcher();
    ByteMatcher(ByteMatcher &&) noexcept;
    ByteMatcher &operator=(ByteMatcher &&) noexcept;

    // Advances over bytes. Returns false, with the state unchanged, when no
    // string of the language starts with what was accepted plus these bytes.
    bool accept(std::string_view bytes);
    // Whether what was accepted is a whole string of the language.
    bool is_accepting() const;
    // Whether nothing can follow (accepting, and no byte can be accepted).
    bool is_completed() const;
    void reset();

private:
    struct State;
    std::unique_ptr<State> s_;
};

// Whether `text` is a whole string of the language of `gbnf` (for tests).
bool gbnf_matches(std::string_view gbnf, std::string_view text);

} // namespace vt::grammar
