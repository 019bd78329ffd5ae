// Oniguruma-syntax patterns of tokenizer.json run on PCRE2 (hf-regex.h).
#include "tokenizer/hf-regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/hf-json.h"
#include "tokenizer/hf-unicode.h"
#include "tokenizer/utf8.h"

namespace vt::tok {
namespace hf {

// ---------------------------------------------------------------------------
// Pattern (hf-regex.h)
// ---------------------------------------------------------------------------

std::string onig_to_pcre2(std::string_view p, bool exact_space) {
    // Oniguruma's \w is Alphabetic, marks, decimal digits and connector
    // punctuation; outside a class it also takes the Latin-1 superscript
    // digits and fractions (its Latin-1 ctype table counts them). PCRE2
    // 10.42's (with UCP) is letters, all numbers and '_'. Oniguruma's \s is
    // the White_Space property; PCRE2's also holds U+180E, so exact_space
    // spells it \p{White_Space} (which JIT code matches some 25% slower).
    // Oniguruma's \h is a hex digit, PCRE2's is horizontal space. \d and
    // the rest agree.
    static constexpr const char *kWord = R"(\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{B2}\x{B3}\x{B9}\x{BC}-\x{BE})";
    static constexpr const char *kWordInClass = R"(\p{Alphabetic}\p{M}\p{Nd}\p{Pc})";
    static constexpr const char *kHex = "0-9a-fA-F";
    std::string out;
    out.reserve(p.size() + 16);
    int class_depth = 0;
    for (size_t i = 0; i < p.size(); ++i) {
        const char c = p[i];
        if (c == '\\' && i + 1 < p.size()) {
            const char e = p[++i];
            if (exact_space && (e == 's' || e == 'S')) {
                out += e == 's' ? R"(\p{White_Space})" : R"(\P{White_Space})";
                continue;
            }
            const char *set = (e == 'w' || e == 'W') ? kWord : (e == 'h' || e == 'H') ? kHex : nullptr;
            const bool negated = e == 'W' || e == 'H';
            if (set && class_depth == 0) {
                out += negated ? "[^" : "[";
                out += set;
                out += ']';
            } else if (set && !negated) {
                out += set == kWord ? kWordInClass : set;
            } else {
                // A negated class inside a class has no PCRE2 spelling; keep
                // PCRE2's own meaning there (no real tokenizer uses it).
                out += '\\';
                out += e;
            }
            continue;
        }
        if (c == '[') {
            ++class_depth;
            out += c;
            // "[]..." and "[^]..." start with a literal ']'.
            if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
            if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
            continue;
        }
        if (c == ']' && class_depth > 0) --class_depth;
        out += c;
    }
    return out;
}

struct Pattern::Code {
    pcre2_code *code = nullptr;
    bool jit = false;
    ~Code() { pcre2_code_free(code); }
};

namespace {

// U+180E MONGOLIAN VOWEL SEPARATOR: white space to PCRE2, not to Oniguruma.
constexpr std::string_view kMvs = "\xE1\xA0\x8E";

std::unique_ptr<Pattern::Code> compile(std::string_view src) {
    int err = 0;
    PCRE2_SIZE off = 0;
    // MULTILINE: in Oniguruma's Ruby syntax ^ and $ are line anchors.
    pcre2_code *c = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(src.data()), src.size(),
                                  PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &err, &off, nullptr);
    if (!c) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        fail(VT_ERR_FORMAT, "regex \"%.*s\" does not compile (offset %zu): %s",
             static_cast<int>(src.size()), src.data(), static_cast<size_t>(off),
             reinterpret_cast<const char *>(msg));
    }
    auto code = std::make_unique<Pattern::Code>();
    code->code = c;
    // JIT is an optimisation: when unavailable the interpreter runs.
    code->jit = pcre2_jit_compile(c, PCRE2_JIT_COMPLETE) == 0;
    return code;
}

} // namespace

namespace {

// Per-thread PCRE2 state: one match-data block (only the whole-match pair
// is read) and a JIT stack big enough for `\s+(?!\S)` over long runs.
struct MatchState {
    pcre2_match_data *md = nullptr;
    pcre2_jit_stack *jit_stack = nullptr;
    pcre2_match_context *mctx = nullptr;

    MatchState() {
        md = pcre2_match_data_create(1, nullptr);
        jit_stack = pcre2_jit_stack_create(64 * 1024, 16 * 1024 * 1024, nullptr);
        mctx = pcre2_match_context_create(nullptr);
        if (!md || !jit_stack || !mctx) fail(VT_ERR_OUT_OF_MEMORY, "PCRE2 match state allocation failed");
        pcre2_jit_stack_assign(mctx, nullptr, jit_stack);
    }
    ~MatchState() {
        pcre2_match_context_free(mctx);
        pcre2_jit_stack_free(jit_stack);
        pcre2_match_data_free(md);
    }
};

MatchState &match_state() {
    thread_local MatchState st;
    return st;
}

} // namespace

Pattern::~Pattern() = default;

std::unique_ptr<Pattern> Pattern::literal(std::string_view text) {
    std::unique_ptr<Pattern> p(new Pattern());
    p->literal_ = text;
    return p;
}

std::unique_ptr<Pattern> Pattern::regex(std::string_view onig_pattern) {
    std::unique_ptr<Pattern> p(new Pattern());
    const std::string fast = onig_to_pcre2(onig_pattern, false);
    const std::string exact = onig_to_pcre2(onig_pattern, true);
    p->code_ = compile(fast);
    if (exact != fast) p->exact_ = compile(exact);
    return p;
}

std::unique_ptr<Pattern> Pattern::pcre2(std::string_view src) {
    std::unique_ptr<Pattern> p(new Pattern());
    p->code_ = compile(src);
    return p;
}

std::unique_ptr<Pattern> Pattern::from_json(const nlohmann::json &j, const char *where) {
    if (const json *s = optional_member(j, "String")) {
        if (!s->is_string()) fail(VT_ERR_FORMAT, "%s: pattern \"String\" is not a string", where);
        return literal(s->get_ref<const std::string &>());
    }
    if (const json *r = optional_member(j, "Regex")) {
        if (!r->is_string()) fail(VT_ERR_FORMAT, "%s: pattern \"Regex\" is not a string", where);
        return regex(r->get_ref<const std::string &>());
    }
    fail(VT_ERR_FORMAT, "%s: field \"pattern\" is neither {\"String\": ...} nor {\"Regex\": ...}", where);
}

bool Pattern::search(const Code *code, std::string_view text, size_t start, size_t &begin,
                     size_t &end) const {
    if (!code) {
        const size_t at = literal_.empty() ? start : text.find(literal_, start);
        if (at == std::string_view::npos) return false;
        begin = at;
        end = at + literal_.size();
        return true;
    }
    MatchState &st = match_state();
    const auto *subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    const int rc = code->jit
        ? pcre2_jit_match(code->code, subject, text.size(), start, 0, st.md, st.mctx)
        : pcre2_match(code->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, st.md, st.mctx);
    if (rc == PCRE2_ERROR_NOMATCH) return false;
    if (rc < 0) {  // rc == 0 only says the ovector is short; the whole match is there
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof msg);
        fail(VT_ERR_INTERNAL, "regex match failed: %s", reinterpret_cast<const char *>(msg));
    }
    const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st.md);
    begin = ov[0];
    end = ov[1];
    return true;
}

void Pattern::find_all(std::string_view text, std::vector<Span> &out) const {
    // onig's FindMatches: an empty match right where the previous match
    // ended is skipped by stepping one character forward.
    const Code *code = exact_ && text.find(kMvs) != std::string_view::npos ? exact_.get() : code_.get();
    size_t next = 0;
    bool matched_before = false;
    size_t last_match_end = 0;
    while (next <= text.size()) {
        size_t b = 0, e = 0;
        if (!search(code, text, next, b, e)) break;
        if (b == e && matched_before && last_match_end == e) {
            next += next < text.size() ? utf8_len(static_cast<uint8_t>(text[next])) : 1;
            continue;
        }
        next = last_match_end = e;
        matched_before = true;
        out.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e - b)});
    }
}

} // namespace hf

} // namespace vt::tok
