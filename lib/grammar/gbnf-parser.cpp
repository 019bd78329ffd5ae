// GBNF text -> rules (gbnf-ast.h). The syntax is llama.cpp's grammar format:
//   name ::= alternatives      (names: letters, digits, '-', '_')
//   "literal"  [class]  [^negated]  .  (group)  name
//   postfix * + ? {m} {m,} {m,n}   alternation |   # comments
// A rule's body ends at a newline outside parentheses, except that a line
// may start with | to continue the alternatives (a common style llama.cpp
// rejects). Escapes: \n \r \t \\ \" \' \[ \] \- \^ \/ \xHH \uHHHH \UHHHHHHHH.
#include <algorithm>
#include <set>
#include <string>

#include "core/error.h"
#include "grammar/gbnf-ast.h"

namespace vt::grammar {
namespace {

class GbnfParser {
public:
    explicit GbnfParser(std::string_view text) : s_(text) {}

    std::vector<GbnfRule> parse() {
        std::vector<GbnfRule> rules;
        std::set<std::string> seen;
        skip_space(true);
        while (!at_end()) {
            GbnfRule r;
            r.line = line_;
            r.name = parse_name();
            if (r.name.empty()) fail("expected a rule name");
            skip_space(false);
            if (s_.substr(i_, 3) != "::=") fail("expected ::= after the rule name '" + r.name + "'");
            advance(3);
            skip_space(true);
            r.alts = parse_alts(0);
            if (!seen.insert(r.name).second) fail("rule '" + r.name + "' is defined twice");
            rules.push_back(std::move(r));
            skip_space(true);
        }
        if (rules.empty()) fail("the grammar has no rules");
        return rules;
    }

private:
    [[noreturn]] void fail(const std::string &what) const {
        throw Error(VT_ERR_INVALID_ARGUMENT, "GBNF line " + std::to_string(line_) + ", column " +
                                                 std::to_string(col_) + ": " + what);
    }

    bool at_end() const { return i_ >= s_.size(); }
    char peek(size_t k = 0) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
    void advance(size_t n = 1) {
        for (size_t k = 0; k < n && i_ < s_.size(); ++k, ++i_) {
            if (s_[i_] == '\n') {
                ++line_;
                col_ = 1;
            } else {
                ++col_;
            }
        }
    }

    // Spaces, tabs and comments; newlines too when newline_ok.
    void skip_space(bool newline_ok) {
        while (!at_end()) {
            char c = peek();
            if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
                advance();
            } else if (c == '#') {
                while (!at_end() && peek() != '\n') advance();
            } else {
                break;
            }
        }
    }

    // After a sequence at the top level: a newline ends the rule, unless the
    // next non-blank line starts with '|'.
    bool continues_on_next_line() {
        size_t save_i = i_, save_line = line_, save_col = col_;
        skip_space(true);
        if (peek() == '|') return true;
        i_ = save_i, line_ = save_line, col_ = save_col;
        return false;
    }

    static bool is_name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_';
    }

    std::string parse_name() {
        size_t start = i_;
        while (!at_end() && is_name_char(peek())) advance();
        return std::string(s_.substr(start, i_ - start));
    }

    GbnfAlts parse_alts(int depth) {
        GbnfAlts alts;
        alts.push_back(parse_seq(depth));
        while (true) {
            if (peek() != '|' && !(depth == 0 && (peek() == '\n' || peek() == '\r') &&
                                   continues_on_next_line()))
                break;
            advance();  // '|'
            skip_space(true);
            alts.push_back(parse_seq(depth));
        }
        return alts;
    }

    GbnfSeq parse_seq(int depth) {
        GbnfSeq seq;
        while (!at_end()) {
            char c = peek();
            if (c == '|' || c == ')' || c == '\n' || c == '\r') break;
            // At the top level, `name ::=` starts the next rule.
            if (depth == 0 && is_name_char(c) && starts_rule()) break;
            GbnfItem it = parse_primary(depth);
            skip_space(depth > 0);
            parse_repetition(it, depth);
            seq.push_back(std::move(it));
        }
        return seq;
    }

    bool starts_rule() const {
        size_t k = i_;
        while (k < s_.size() && is_name_char(s_[k])) ++k;
        while (k < s_.size() && (s_[k] == ' ' || s_[k] == '\t')) ++k;
        return s_.substr(k, 3) == "::=";
    }

    GbnfItem parse_primary(int depth) {
        GbnfItem it;
        it.line = line_;
        it.col = col_;
        char c = peek();
        if (c == '"') {
            it.kind = GbnfItem::Kind::literal;
            advance();
            while (true) {
                if (at_end() || peek() == '\n') fail("unterminated string literal");
                if (peek() == '"') break;
                it.text.push_back(parse_char());
            }
            advance();
        } else if (c == '[') {
            it.kind = GbnfItem::Kind::char_class;
            advance();
            bool negated = false;
            if (peek() == '^') {
                negated = true;
                advance();
            }
            std::vector<CodeRange> ranges;
            while (true) {
                if (at_end() || peek() == '\n') fail("unterminated character class");
                if (peek() == ']') break;
                uint32_t lo = parse_char(), hi = lo;
                if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
                    advance();
                    hi = parse_char();
                    if (hi < lo) fail("character range out of order");
                }
                ranges.push_back({lo, hi});
            }
            advance();
            it.ranges = normalize(std::move(ranges), negated);
        } else if (c == '.') {
            it.kind = GbnfItem::Kind::char_class;
            advance();
            it.ranges = {{0, 0x10FFFF}};
        } else if (c == '(') {
            it.kind = GbnfItem::Kind::group;
            advance();
            skip_space(true);
            it.alts = parse_alts(depth + 1);
            if (peek() != ')') fail("expected )");
            advance();
        } else if (c == '<') {
            throw Error(VT_ERR_UNSUPPORTED, "GBNF line " + std::to_string(line_) + ", column " +
                                                std::to_string(col_) +
                                                ": token references (<...>) are not supported");
        } else if (is_name_char(c)) {
            it.kind = GbnfItem::Kind::rule_ref;
            it.name = parse_name();
        } else {
            fail(std::string("unexpected character '") + c + "'");
        }
        return it;
    }

    void parse_repetition(GbnfItem &it, int depth) {
        char c = peek();
        if (c == '*' || c == '+' || c == '?') {
            it.min = c == '+' ? 1 : 0;
            it.max = c == '?' ? 1 : GbnfItem::kUnbounded;
            advance();
        } else if (c == '{') {
            advance();
            skip_space(false);
            it.min = parse_int();
            it.max = it.min;
            skip_space(false);
            if (peek() == ',') {
                advance();
                skip_space(false);
                it.max = peek() == '}' ? GbnfItem::kUnbounded : parse_int();
                skip_space(false);
            }
            if (peek() != '}') fail("expected } in a repetition");
            advance();
            if (it.max < it.min) fail("repetition {m,n} with n < m");
        } else {
            return;
        }
        skip_space(depth > 0);
        if (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')
            fail("two repetition operators in a row (use a group)");
    }

    uint32_t parse_int() {
        if (!(peek() >= '0' && peek() <= '9')) fail("expected a number");
        uint64_t v = 0;
        while (peek() >= '0' && peek() <= '9') {
            v = v * 10 + uint32_t(peek() - '0');
            if (v > 100000) fail("repetition count too large (at most 100000)");
            advance();
        }
        return uint32_t(v);
    }

    uint32_t parse_hex(int n) {
        uint32_t v = 0;
        for (int k = 0; k < n; ++k) {
            char c = peek();
            int d = (c >= '0' && c <= '9') ? c - '0'
                  : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                  : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
            if (d < 0) fail("expected a hexadecimal digit");
            v = v * 16 + uint32_t(d);
            advance();
        }
        if (v > 0x10FFFF) fail("code point out of range");
        return v;
    }

    // One character of a literal or class (UTF-8 decoded), escapes resolved.
    uint32_t parse_char() {
        unsigned char c = static_cast<unsigned char>(peek());
        if (c == '\\') {
            advance();
            char e = peek();
            advance();
            switch (e) {
            case 'n': return '\n';
            case 'r': return '\r';
            case 't': return '\t';
            case 'x': return parse_hex(2);
            case 'u': return parse_hex(4);
            case 'U': return parse_hex(8);
            case '\\': case '"': case '\'': case '[': case ']': case '-': case '^': case '/':
                return uint32_t(e);
            default: fail(std::string("unknown escape \\") + e);
            }
        }
        // UTF-8 sequence.
        int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0) fail("invalid UTF-8");
        uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
        advance();
        for (int k = 1; k < n; ++k) {
            unsigned char d = static_cast<unsigned char>(peek());
            if ((d & 0xC0) != 0x80) fail("invalid UTF-8");
            cp = (cp << 6) | (d & 0x3F);
            advance();
        }
        return cp;
    }

    // Sorted, merged ranges; the complement over all code points if negated.
    static std::vector<CodeRange> normalize(std::vector<CodeRange> r, bool negated) {
        std::sort(r.begin(), r.end(), [](auto &a, auto &b) { return a.lo < b.lo; });
        std::vector<CodeRange> m;
        for (auto &x : r) {
            if (!m.empty() && x.lo <= m.back().hi + 1) {
                m.back().hi = std::max(m.back().hi, x.hi);
            } else {
                m.push_back(x);
            }
        }
        if (!negated) return m;
        std::vector<CodeRange> out;
        uint32_t next = 0;
        for (auto &x : m) {
            if (x.lo > next) out.push_back({next, x.lo - 1});
            next = x.hi + 1;
        }
        if (next <= 0x10FFFF) out.push_back({next, 0x10FFFF});
        return out;
    }

    std::string_view s_;
    size_t i_ = 0;
    uint32_t line_ = 1, col_ = 1;
};

} // namespace

std::vector<GbnfRule> parse_gbnf(std::string_view text) { return GbnfParser(text).parse(); }

} // namespace vt::grammar
