// Regular expression -> GBNF. The pattern is parsed into a small tree
// (literal code points, code point classes, sequences, alternatives,
// repetitions) and printed as one GBNF rule.
//
// The accepted syntax and the language follow xgrammar 0.2.9's regex
// converter, quirks included, because the oracle tests compare token masks
// with xgrammar's. That converter translates the pattern piece by piece into
// EBNF text and lets its EBNF parser make sense of it, so several of its
// rules (how '-' forms ranges in a class, what negates a class, which
// escapes exist) are really those of its EBNF parser; they are reproduced
// here on parsed values rather than on text. Each deliberate oddity is
// marked "xgrammar:" below.
#include "grammar/regex-grammar.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace vt::grammar {

namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;
// Repetition counts above this are refused rather than handed to the GBNF
// compiler, which expands counted repetitions into copies.
constexpr int64_t kMaxRepeat = 100000;
// Group nesting limit, so that a hostile pattern cannot exhaust the stack of
// the recursive parser and printer.
constexpr int kMaxDepth = 500;

struct Range {
    char32_t lo, hi;
};

struct Node {
    enum Kind { EMPTY, CHAR, CLASS, SEQ, ALT, REPEAT } kind = EMPTY;
    char32_t cp = 0;            // CHAR
    std::vector<Range> ranges;  // CLASS: sorted, disjoint, not adjacent
    bool negated = false;       // CLASS: the complement of `ranges`
    std::vector<Node> kids;     // SEQ, ALT; REPEAT: exactly one
    int64_t min = 0, max = 0;   // REPEAT: max < 0 means unbounded
};

Node make_char(char32_t cp) {
    Node n;
    n.kind = Node::CHAR;
    n.cp = cp;
    return n;
}

// Sorts and merges ranges so that equal sets print the same way.
std::vector<Range> normalize(std::vector<Range> r) {
    std::sort(r.begin(), r.end(), [](Range a, Range b) { return a.lo < b.lo; });
    std::vector<Range> out;
    for (Range x : r) {
        if (!out.empty() && x.lo <= out.back().hi + 1) out.back().hi = std::max(out.back().hi, x.hi);
        else out.push_back(x);
    }
    return out;
}

Node make_class(std::vector<Range> ranges, bool negated) {
    Node n;
    n.kind = Node::CLASS;
    n.ranges = normalize(std::move(ranges));
    n.negated = negated;
    return n;
}

// ---- Class items -----------------------------------------------------------
// xgrammar turns a bracket class into EBNF class text and parses that, so
// its meaning follows the text, not the regex:
// - \d \w \s and their complements become text with '-' separators, which
//   then takes part in the range syntax ("[\d-z]" is 0-9, '-' and 'z';
//   "[a-\d]" is the bad range a-0);
// - an escape it prints as \xHH (the code points below U+0100 with no
//   shorter form) runs on into the hex digits written after it, because its
//   EBNF reader takes as many as follow: "[\u00e9a]" is U+0E9A, "[\cA\d]"
//   is U+0010-'9'.
// So a class is first read into items that remember how xgrammar would
// write them.

struct ClassItem {
    enum Kind {
        RAW,        // a character written as itself
        HYPHEN,     // an unescaped '-', which may join its neighbours into a range
        ESCAPE,     // written as an escape of fixed length
        HEX_ESCAPE  // written as \xHH, which swallows the hex digits after it
    };
    char32_t cp;
    Kind kind;
    size_t at;  // pattern position, for errors
};

// How xgrammar writes code point `cp` when it came from an escape: printable
// ASCII as itself (so "[\x80\x41]" is "[\x80A]", U+080A), C's escapes and
// \u \U as escapes of fixed length, the rest below U+0100 as \xHH.
ClassItem::Kind escape_kind(char32_t cp) {
    switch (cp) {
        case 0x00: case 0x07: case 0x08: case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1B:
        case '\'': case '"': case '?': case '\\': case ']': case '-':
            return ClassItem::ESCAPE;
        default: break;
    }
    if (cp >= 0x20 && cp <= 0x7E) return ClassItem::RAW;
    return cp <= 0xFF ? ClassItem::HEX_ESCAPE : ClassItem::ESCAPE;
}

// xgrammar's \s set (ECMAScript's WhiteSpace and LineTerminator), in the
// order of its expansion.
const std::vector<Range> &space_ranges() {
    static const std::vector<Range> r = {{0x0C, 0x0C}, {0x0A, 0x0A}, {0x0D, 0x0D}, {0x09, 0x09},
                                         {0x0B, 0x0B}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680},
                                         {0x2000, 0x200A}, {0x2028, 0x2028}, {0x2029, 0x2029},
                                         {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000},
                                         {0xFEFF, 0xFEFF}};
    return r;
}

const std::vector<Range> &digit_ranges() {
    static const std::vector<Range> r = {{'0', '9'}};
    return r;
}

const std::vector<Range> &word_ranges() {
    static const std::vector<Range> r = {{'a', 'z'}, {'A', 'Z'}, {'0', '9'}, {'_', '_'}};
    return r;
}

// The complement of a set over all code points, in ascending order (the
// order of xgrammar's expansions of \D \W \S).
std::vector<Range> complement(const std::vector<Range> &set) {
    std::vector<Range> out;
    char32_t next = 0;
    for (Range x : normalize(set)) {
        if (x.lo > next) out.push_back({next, x.lo - 1});
        next = x.hi + 1;
    }
    if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
    return out;
}

// The ranges of class escape letter `c` (d D w W s S), or nullptr.
const std::vector<Range> *class_escape(char32_t c) {
    static const std::vector<Range> not_digit = complement(digit_ranges());
    static const std::vector<Range> not_word = complement(word_ranges());
    static const std::vector<Range> not_space = complement(space_ranges());
    switch (c) {
        case 'd': return &digit_ranges();
        case 'D': return &not_digit;
        case 'w': return &word_ranges();
        case 'W': return &not_word;
        case 's': return &space_ranges();
        case 'S': return &not_space;
        default: return nullptr;
    }
}

int hex_value(char32_t c) {
    if (c >= '0' && c <= '9') return int(c - '0');
    if (c >= 'a' && c <= 'f') return int(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return int(c - 'A' + 10);
    return -1;
}

bool is_ascii_alpha(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// ---- Parser -----------------------------------------------------------------

class Parser {
public:
    explicit Parser(std::string_view pattern) {
        if (size_t bad = tok::utf8_find_invalid(pattern); bad != std::string_view::npos)
            fail(VT_ERR_INVALID_ARGUMENT, "regex: the pattern is not valid UTF-8 (byte offset %zu)", bad);
        size_t i = 0;
        while (i < pattern.size()) {
            offsets_.push_back(i);
            cps_.push_back(tok::utf8_decode(pattern, i));
        }
        offsets_.push_back(pattern.size());
        for (size_t k = 0; k < cps_.size(); ++k)
            if (cps_[k] == 0) error(k, "a NUL character (write \\0 or \\x00 to match one)");
    }

    Node parse() {
        Node n = parse_alt(0);
        if (pos_ < cps_.size()) error(pos_, "unmatched ')'");  // parse_alt stops only at ')' or the end
        return n;
    }

private:
    std::vector<char32_t> cps_;
    std::vector<size_t> offsets_;  // byte offset of each code point, and of the end
    size_t pos_ = 0;

    [[noreturn]] void error(size_t at, const char *what) const {
        fail(VT_ERR_INVALID_ARGUMENT, "regex: %s at offset %zu", what, offsets_[std::min(at, cps_.size())]);
    }
    [[noreturn]] void unsupported(size_t at, const char *what) const {
        fail(VT_ERR_UNSUPPORTED, "regex: %s (at offset %zu) is not supported", what,
             offsets_[std::min(at, cps_.size())]);
    }

    bool at_end() const { return pos_ >= cps_.size(); }
    char32_t peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : 0; }
    size_t left() const { return cps_.size() - pos_; }

    Node parse_alt(int depth) {
        if (depth > kMaxDepth) unsupported(pos_, "nesting groups more than 500 deep");
        Node alt;
        alt.kind = Node::ALT;
        alt.kids.push_back(parse_seq(depth));
        while (!at_end() && peek() == '|') {
            ++pos_;
            alt.kids.push_back(parse_seq(depth));
        }
        return alt.kids.size() == 1 ? std::move(alt.kids[0]) : alt;
    }

    Node parse_seq(int depth) {
        Node seq;
        seq.kind = Node::SEQ;
        bool last_quantified = false;
        while (!at_end() && peek() != '|' && peek() != ')') {
            const size_t start = pos_;
            const char32_t c = peek();
            if (c == '^' || c == '$') {
                // xgrammar: anchors are ignored wherever they stand (it warns
                // about those inside), so "^a$|^b$" is "a|b", and "a^b"
                // matches "ab". A quantifier after one applies to the atom
                // before it.
                ++pos_;
                continue;
            }
            if (c == '*' || c == '+' || c == '?' || c == '{') {
                int64_t lo, hi;
                parse_quantifier(lo, hi);
                if (seq.kids.empty()) error(start, "a quantifier with nothing to repeat");
                if (last_quantified) error(start, "two quantifiers in a row");
                // A lazy quantifier matches the same strings.
                if (!at_end() && peek() == '?') ++pos_;
                Node rep;
                rep.kind = Node::REPEAT;
                rep.min = lo;
                rep.max = hi;
                rep.kids.push_back(std::move(seq.kids.back()));
                seq.kids.back() = std::move(rep);
                last_quantified = true;
                continue;
            }
            last_quantified = false;
            if (c == '(') seq.kids.push_back(parse_group(depth));
            else if (c == '[') seq.kids.push_back(parse_class());
            else if (c == '\\') seq.kids.push_back(parse_escape());
            else if (c == '.') {
                // xgrammar: '.' is any code point, '\n' included.
                ++pos_;
                seq.kids.push_back(make_class({{0, kMaxCodePoint}}, false));
            } else {
                ++pos_;
                seq.kids.push_back(make_char(c));
            }
        }
        if (seq.kids.size() == 1) return std::move(seq.kids[0]);
        if (seq.kids.empty()) return Node{};
        return seq;
    }

    // * + ? {m} {m,} {m,n}; xgrammar takes every '{' as the start of a
    // count, so a '{' that is not one is an error, not a literal.
    void parse_quantifier(int64_t &lo, int64_t &hi) {
        const size_t start = pos_;
        const char32_t c = cps_[pos_++];
        if (c == '*') { lo = 0; hi = -1; return; }
        if (c == '+') { lo = 1; hi = -1; return; }
        if (c == '?') { lo = 0; hi = 1; return; }
        lo = parse_count(start);
        if (!at_end() && peek() == '}') {
            ++pos_;
            hi = lo;
            return;
        }
        if (at_end() || peek() != ',') error(pos_, "a bad repetition count (expected '}' or ',')");
        ++pos_;
        if (!at_end() && peek() == '}') {
            ++pos_;
            hi = -1;
            return;
        }
        hi = parse_count(start);
        if (at_end() || peek() != '}') error(pos_, "a bad repetition count (expected '}')");
        ++pos_;
        if (hi < lo) error(start, "a repetition whose minimum is above its maximum");
    }

    int64_t parse_count(size_t start) {
        if (at_end() || peek() < '0' || peek() > '9') error(pos_, "a bad repetition count (expected a digit)");
        int64_t v = 0;
        while (!at_end() && peek() >= '0' && peek() <= '9') {
            v = v * 10 + int64_t(cps_[pos_++] - '0');
            if (v > kMaxRepeat)
                fail(VT_ERR_UNSUPPORTED, "regex: a repetition count above %lld (at offset %zu) is not supported",
                     (long long)kMaxRepeat, offsets_[start]);
        }
        return v;
    }

    Node parse_group(int depth) {
        const size_t open = pos_++;
        if (!at_end() && peek() == '?') {
            ++pos_;
            if (at_end()) error(pos_, "an unfinished group modifier '(?'");
            const char32_t m = peek();
            if (m == ':') {
                ++pos_;
            } else if (m == '=' || m == '!') {
                unsupported(open, "lookahead");
            } else if (m == '<' && (peek(1) == '=' || peek(1) == '!')) {
                unsupported(open, "lookbehind");
            } else if (m == '<') {
                // xgrammar: a name of ASCII letters only (possibly none).
                ++pos_;
                while (!at_end() && is_ascii_alpha(peek())) ++pos_;
                if (at_end() || peek() != '>') error(pos_, "a bad group name (ASCII letters only, then '>')");
                ++pos_;
            } else {
                unsupported(open, "this group modifier (flags, or a Python-style '(?P')");
            }
        }
        Node inner = parse_alt(depth + 1);
        if (at_end()) error(open, "an unclosed '('");
        ++pos_;  // ')'
        return inner;
    }

    // An escape outside a class.
    Node parse_escape() {
        const size_t start = pos_;
        if (left() < 2) error(start, "an unfinished escape");
        const char32_t c = peek(1);
        if (const std::vector<Range> *r = class_escape(c)) {
            pos_ += 2;
            // \D \W \S print as negations, as xgrammar writes them ([^0-9]).
            switch (c) {
                case 'D': return make_class(digit_ranges(), true);
                case 'W': return make_class(word_ranges(), true);
                case 'S': return make_class(space_ranges(), true);
                default: return make_class(*r, false);
            }
        }
        if ((c >= '1' && c <= '9') || c == 'k') unsupported(start, "a backreference");
        if (c == 'p' || c == 'P') unsupported(start, "a Unicode property escape (\\p, \\P)");
        if (c == 'b' || c == 'B') unsupported(start, "a word boundary (\\b, \\B)");
        return make_char(parse_char_escape());
    }

    // The code point of the escape at pos_ (shared by classes and the rest):
    // C escapes, \xH..., \uHHHH, \UHHHHHHHH, \u{H...}, \cX, and any other
    // character standing for itself.
    char32_t parse_char_escape() {
        const size_t start = pos_;
        const size_t n = left();
        const char32_t c = peek(1);
        // xgrammar: it wants this many characters left (counted from the
        // backslash, to the end of the pattern) before it reads these.
        if (n < 2 || (c == 'u' && n < 5) || (c == 'x' && n < 4) || (c == 'c' && n < 3))
            error(start, "an unfinished escape");
        switch (c) {
            case 'a': pos_ += 2; return 0x07;
            case 'b': pos_ += 2; return 0x08;  // only reached inside a class
            case 'f': pos_ += 2; return 0x0C;
            case 'n': pos_ += 2; return 0x0A;
            case 'r': pos_ += 2; return 0x0D;
            case 't': pos_ += 2; return 0x09;
            case 'v': pos_ += 2; return 0x0B;
            case '0': pos_ += 2; return 0x00;
            case 'e': pos_ += 2; return 0x1B;
            default: break;
        }
        if (c == 'x') {
            // xgrammar: C's \x, as many hex digits as follow ("\x414" is
            // U+0414, not "A4").
            size_t len = 0;
            uint64_t v = 0;
            while (hex_value(peek(2 + len)) >= 0) {
                v = v * 16 + uint64_t(hex_value(peek(2 + len)));
                if (v > kMaxCodePoint) error(start, "a code point above U+10FFFF");
                ++len;
            }
            if (len > 0) {
                pos_ += 2 + len;
                return char32_t(v);
            }
        } else if (c == 'u' || c == 'U') {
            const size_t want = c == 'u' ? 4 : 8;
            uint64_t v = 0;
            size_t len = 0;
            while (len < want && hex_value(peek(2 + len)) >= 0)
                v = v * 16 + uint64_t(hex_value(peek(2 + len++)));
            if (len == want) {
                if (v > kMaxCodePoint) error(start, "a code point above U+10FFFF");
                pos_ += 2 + len;
                return char32_t(v);
            }
            if (c == 'u' && peek(2) == '{') {
                len = 0;
                v = 0;
                while (hex_value(peek(3 + len)) >= 0 && len <= 6)
                    v = v * 16 + uint64_t(hex_value(peek(3 + len++)));
                if (len == 0 || len > 6 || peek(3 + len) != '}')
                    error(start, "a bad \\u{...} escape (1 to 6 hex digits)");
                if (v > kMaxCodePoint) error(start, "a code point above U+10FFFF");
                pos_ += 3 + len + 1;
                return char32_t(v);
            }
        } else if (c == 'c') {
            const char32_t letter = peek(2);
            if (!is_ascii_alpha(letter)) error(start + 2, "a bad control escape (\\c needs a letter)");
            pos_ += 3;
            return letter % 32;
        }
        // Anything else (\. \/ \" \- \q, \x or \u without their digits...)
        // is the character itself.
        pos_ += 2;
        return c;
    }

    // A bracket class. xgrammar rules: "[]" is an error (not an empty
    // class); the first ']' that is not escaped closes it; a first item '^',
    // escaped or not, negates it ("[\^a]" is "[^a]"); '-' makes a range
    // between two single characters unless it is the last item, else it is
    // a literal; a raw line break inside is an error.
    Node parse_class() {
        const size_t open = pos_++;
        if (!at_end() && peek() == ']') error(pos_, "an empty class '[]'");
        std::vector<ClassItem> items;
        while (!at_end() && peek() != ']') {
            const size_t at = pos_;
            const char32_t c = peek();
            if (c == '\n' || c == '\r') error(at, "a line break inside a class");
            if (c != '\\') {
                ++pos_;
                items.push_back({c, c == '-' ? ClassItem::HYPHEN : ClassItem::RAW, at});
                continue;
            }
            if (left() < 2) error(at, "an unfinished escape");
            if (const std::vector<Range> *r = class_escape(peek(1))) {
                // \d and \w are written with plain characters, the others
                // with escapes of fixed length (\x00-\x2F..., \f\n...).
                const ClassItem::Kind kind = peek(1) == 'd' || peek(1) == 'w' ? ClassItem::RAW : ClassItem::ESCAPE;
                pos_ += 2;
                for (Range x : *r) {
                    items.push_back({x.lo, kind, at});
                    if (x.hi == x.lo) continue;
                    items.push_back({'-', ClassItem::HYPHEN, at});
                    items.push_back({x.hi, kind, at});
                }
                continue;
            }
            const char32_t cp = parse_char_escape();
            items.push_back({cp, escape_kind(cp), at});
        }
        if (at_end()) error(open, "an unclosed '['");
        ++pos_;  // ']'

        // xgrammar: a \xHH escape takes the hex digits written after it.
        std::vector<ClassItem> merged;
        for (size_t i = 0; i < items.size(); ++i) {
            ClassItem it = items[i];
            while (it.kind == ClassItem::HEX_ESCAPE && i + 1 < items.size() && items[i + 1].kind == ClassItem::RAW &&
                   hex_value(items[i + 1].cp) >= 0) {
                it.cp = it.cp * 16 + char32_t(hex_value(items[++i].cp));
                if (it.cp > kMaxCodePoint) error(it.at, "a code point above U+10FFFF");
            }
            merged.push_back(it);
        }
        items = std::move(merged);

        bool negated = false;
        size_t i = 0;
        if (!items.empty() && items[0].cp == '^') {
            negated = true;
            i = 1;
        }
        std::vector<Range> ranges;
        bool after_single = false;  // the last item was a lone character, not a range's end
        for (; i < items.size(); ++i) {
            if (items[i].kind == ClassItem::HYPHEN && after_single && i + 1 < items.size()) {
                const ClassItem &hi = items[++i];  // whatever follows, even a '-', is the upper end
                if (hi.cp < ranges.back().lo) error(hi.at, "a class range out of order");
                ranges.back().hi = hi.cp;
                after_single = false;
                continue;
            }
            ranges.push_back({items[i].cp, items[i].cp});
            after_single = true;
        }
        if (negated && ranges.empty()) return make_class({{0, kMaxCodePoint}}, false);  // "[^]": anything
        return make_class(std::move(ranges), negated);
    }
};

// ---- Simplification ------------------------------------------------------
// A GBNF compiler may refuse a loop whose body can match the empty string
// (it is left recursion once the loop is a rule), so x*, x+ and x{m,} with
// a nullable x are rewritten to loops over a non-nullable body first.

bool nullable(const Node &n) {
    switch (n.kind) {
        case Node::EMPTY: return true;
        case Node::CHAR: case Node::CLASS: return false;
        case Node::SEQ:
            return std::all_of(n.kids.begin(), n.kids.end(), [](const Node &k) { return nullable(k); });
        case Node::ALT:
            return std::any_of(n.kids.begin(), n.kids.end(), [](const Node &k) { return nullable(k); });
        case Node::REPEAT: return n.min == 0 || nullable(n.kids[0]);
    }
    return false;
}

// For a nullable n, a non-nullable y with y* == n*, or EMPTY when n* only
// matches "". A sequence of nullable parts loops like their alternation:
// each part is in the sequence, and the sequence is in the parts' loop.
Node loop_body(const Node &n) {
    if (!nullable(n)) return n;
    std::vector<Node> parts;
    switch (n.kind) {
        case Node::SEQ:
        case Node::ALT:
            for (const Node &k : n.kids) {
                Node b = loop_body(k);
                if (b.kind != Node::EMPTY) parts.push_back(std::move(b));
            }
            break;
        case Node::REPEAT:
            if (n.max != 0) return loop_body(n.kids[0]);
            break;
        default: break;
    }
    if (parts.empty()) return Node{};
    if (parts.size() == 1) return std::move(parts[0]);
    Node alt;
    alt.kind = Node::ALT;
    alt.kids = std::move(parts);
    return alt;
}

Node simplify(Node n) {
    for (Node &k : n.kids) k = simplify(std::move(k));
    if (n.kind == Node::SEQ) {
        // Empty groups ("a()b") leave nothing in a sequence.
        std::erase_if(n.kids, [](const Node &k) { return k.kind == Node::EMPTY; });
        if (n.kids.empty()) return Node{};
        if (n.kids.size() == 1) return std::move(n.kids[0]);
    }
    if (n.kind != Node::REPEAT) return n;
    Node &body = n.kids[0];
    if (n.max == 0 || body.kind == Node::EMPTY) return Node{};
    if (n.min == 1 && n.max == 1) return std::move(body);
    if (n.max < 0 && nullable(body)) {
        Node b = loop_body(body);
        if (b.kind == Node::EMPTY) return b;
        Node star;
        star.kind = Node::REPEAT;
        star.min = 0;
        star.max = -1;
        star.kids.push_back(std::move(b));
        return star;
    }
    return n;
}

// ---- GBNF printing -------------------------------------------------------
// Escapes are limited to \n \t \r, \" and \\ in strings, and \uHHHH for
// everything else below U+10000 that is not printable ASCII (surrogates
// included); characters above U+FFFF are written as UTF-8, which every GBNF
// reader takes as itself. \xHH is avoided: llama.cpp reads two digits after
// it, xgrammar as many as follow, so "\x2Da" means two things.

void put_u_escape(std::string &out, char32_t cp) {
    static const char *hex = "0123456789ABCDEF";
    out += "\\u";
    for (int s = 12; s >= 0; s -= 4) out += hex[(cp >> s) & 0xF];
}

void put_code_point(std::string &out, char32_t cp, bool in_class) {
    if (cp == '\n') out += "\\n";
    else if (cp == '\t') out += "\\t";
    else if (cp == '\r') out += "\\r";
    else if (cp < 0x20 || cp == 0x7F) put_u_escape(out, cp);
    else if (cp < 0x80) {
        if (in_class && (cp == '\\' || cp == ']' || cp == '-' || cp == '^' || cp == '[')) {
            put_u_escape(out, cp);
        } else {
            if (!in_class && (cp == '\\' || cp == '"')) out += '\\';
            out += char(cp);
        }
    } else if (cp <= 0xFFFF) put_u_escape(out, cp);
    else tok::utf8_append(out, cp);
}

void print(const Node &n, std::string &out, bool top);

// An operand of a quantifier or a part of a sequence: wrapped in ( ) unless
// it prints as one atom.
void print_atom(const Node &n, std::string &out) {
    if (n.kind == Node::SEQ || n.kind == Node::ALT || n.kind == Node::REPEAT) {
        out += "( ";
        print(n, out, true);
        out += " )";
    } else {
        print(n, out, false);
    }
}

void print(const Node &n, std::string &out, bool top) {
    switch (n.kind) {
        case Node::EMPTY: out += "\"\""; return;
        case Node::CHAR:
            out += '"';
            put_code_point(out, n.cp, false);
            out += '"';
            return;
        case Node::CLASS:
            out += n.negated ? "[^" : "[";
            for (Range r : n.ranges) {
                put_code_point(out, r.lo, true);
                if (r.hi != r.lo) {
                    if (r.hi != r.lo + 1) out += '-';
                    put_code_point(out, r.hi, true);
                }
            }
            out += ']';
            return;
        case Node::SEQ:
            // Runs of single characters print as one string literal.
            for (size_t i = 0; i < n.kids.size();) {
                if (i > 0) out += ' ';
                if (n.kids[i].kind == Node::CHAR) {
                    out += '"';
                    for (; i < n.kids.size() && n.kids[i].kind == Node::CHAR; ++i)
                        put_code_point(out, n.kids[i].cp, false);
                    out += '"';
                } else if (n.kids[i].kind == Node::ALT) {
                    print_atom(n.kids[i++], out);
                } else {
                    print(n.kids[i++], out, false);
                }
            }
            return;
        case Node::ALT:
            if (!top) out += "( ";
            for (size_t i = 0; i < n.kids.size(); ++i) {
                if (i > 0) out += " | ";
                print(n.kids[i], out, false);
            }
            if (!top) out += " )";
            return;
        case Node::REPEAT: {
            print_atom(n.kids[0], out);
            if (n.min == 0 && n.max < 0) out += '*';
            else if (n.min == 1 && n.max < 0) out += '+';
            else if (n.min == 0 && n.max == 1) out += '?';
            else if (n.max < 0) out += strprintf("{%lld,}", (long long)n.min);
            else if (n.min == n.max) out += strprintf("{%lld}", (long long)n.min);
            else out += strprintf("{%lld,%lld}", (long long)n.min, (long long)n.max);
            return;
        }
    }
}

} // namespace

std::string regex_to_gbnf(std::string_view pattern, std::string_view prefix, std::string &rules) {
    if (prefix.empty() || !std::all_of(prefix.begin(), prefix.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
        }))
        fail(VT_ERR_INVALID_ARGUMENT, "regex: the rule name prefix '%.*s' is not a GBNF name", int(prefix.size()),
             prefix.data());
    Node tree = simplify(Parser(pattern).parse());
    std::string name(prefix);
    std::string body;
    print(tree, body, true);
    rules += name + " ::= " + body + "\n";
    return name;
}

} // namespace vt::grammar
