// The patterns of tokenizer.json ({"String": ...} or {"Regex": ...} in
// Split, Replace) as HF runs them: a String is literal text; a Regex is
// Oniguruma syntax (Ruby flavour, via the onig crate), which PCRE2 runs
// after a few escapes are rewritten to keep their Oniguruma meaning.
// Matches are enumerated exactly as onig's find_iter does, empty matches
// included, because Split's behaviours and Replace see them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/pretokenizer.h"  // Span

namespace vt::tok::hf {

class Pattern {
public:
    // Throws vt::Error(VT_ERR_FORMAT) when a regex does not compile.
    static std::unique_ptr<Pattern> literal(std::string_view text);
    static std::unique_ptr<Pattern> regex(std::string_view onig_pattern);
    // A pattern already in PCRE2 syntax (UTF, UCP, MULTILINE).
    static std::unique_ptr<Pattern> pcre2(std::string_view pcre2_pattern);
    // {"String": s} or {"Regex": r}; `where` names the component in errors.
    static std::unique_ptr<Pattern> from_json(const nlohmann::json &j, const char *where);

    ~Pattern();
    struct Code;
    Pattern(const Pattern &) = delete;
    Pattern &operator=(const Pattern &) = delete;

    // Appends the matches in `text` (valid UTF-8) to `out`, in order.
    // Thread-safe: match state is per thread.
    void find_all(std::string_view text, std::vector<Span> &out) const;

private:
    Pattern() = default;
    // Finds the first match at or after `start`; a null code searches for
    // the literal.
    bool search(const Code *code, std::string_view text, size_t start, size_t &begin, size_t &end) const;

    std::string literal_;
    std::unique_ptr<Code> code_;   // null for a literal
    std::unique_ptr<Code> exact_;  // set when \s needs its exact spelling (see onig_to_pcre2)
};

// Rewrites the Oniguruma escapes whose PCRE2 meaning differs: \w (onig:
// UTS #18 word characters), \s (onig: White_Space,
// without U+180E; only when exact_space, PCRE2's \s being faster) and \h
// (onig: a hex digit). Exposed for tests.
std::string onig_to_pcre2(std::string_view pattern, bool exact_space);

} // namespace vt::tok::hf
