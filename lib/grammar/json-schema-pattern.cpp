// xgrammar's json_string=true for JSON Schema `pattern`: the regex's GBNF
// (regex_to_gbnf's output) is read back, every literal and class loses the
// characters a JSON string cannot hold raw, and what can then match nothing is
// pruned (json-schema-internal.h). Working on the GBNF keeps the regex
// syntax in one place (regex-grammar.cpp).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "core/error.h"
#include "grammar/json-schema-internal.h"

namespace vt::grammar::jsonschema {

namespace {

constexpr char32_t kMaxCode = 0x10FFFF;

using Ranges = std::vector<std::pair<char32_t, char32_t>>;  // sorted, disjoint, inclusive

struct Alt;
struct Node {
    enum Kind { Lit, Class, Ref, Group } kind = Lit;
    std::u32string text;     // Lit
    Ranges ranges;           // Class (positive, after negation is applied)
    std::string ref;         // Ref
    std::vector<Alt> alts;   // Group
    bool dead = false;       // matches nothing
};
struct Item {
    Node node;
    int64_t min = 1, max = 1;  // max -1: unbounded
};
struct Alt {
    std::vector<Item> items;
};
struct Rule {
    std::string name;
    std::vector<Alt> alts;
};

[[noreturn]] void unreadable(const char *what) {
    fail(VT_ERR_UNSUPPORTED, "JSON Schema: pattern: cannot read the regex grammar (%s)", what);
}

Ranges normalize(Ranges r) {
    std::sort(r.begin(), r.end());
    Ranges out;
    for (auto [lo, hi] : r) {
        if (!out.empty() && lo <= out.back().second + 1) out.back().second = std::max(out.back().second, hi);
        else out.emplace_back(lo, hi);
    }
    return out;
}

Ranges complement(const Ranges &r) {
    Ranges out;
    char32_t next = 0;
    for (auto [lo, hi] : r) {
        if (lo > next) out.emplace_back(next, lo - 1);
        next = hi + 1;
    }
    if (next <= kMaxCode) out.emplace_back(next, kMaxCode);
    return out;
}

// The characters a JSON string holds unescaped.
bool json_safe(char32_t c) { return c >= 0x20 && c != '"' && c != '\\'; }

Ranges json_safe_part(const Ranges &r) {
    Ranges out;
    for (auto [lo, hi] : r) {
        lo = std::max<char32_t>(lo, 0x20);
        for (char32_t cut : {U'"', U'\\'}) {
            if (lo <= cut && cut <= hi) {
                if (lo < cut) out.emplace_back(lo, cut - 1);
                lo = cut + 1;
            }
        }
        if (lo <= hi) out.emplace_back(lo, hi);
    }
    return out;
}

class Reader {
public:
    explicit Reader(std::string_view text) : s_(text) {}

    std::vector<Rule> rules() {
        std::vector<Rule> out;
        skip();
        while (pos_ < s_.size()) {
            Rule r;
            r.name = name();
            skip();
            if (s_.compare(pos_, 3, "::=") != 0) unreadable("expected ::=");
            pos_ += 3;
            r.alts = alternatives(false);
            out.push_back(std::move(r));
        }
        return out;
    }

private:
    std::string_view s_;
    size_t pos_ = 0;

    void skip() {
        while (pos_ < s_.size()) {
            char c = s_[pos_];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') ++pos_;
            else if (c == '#') while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
            else break;
        }
    }
    static bool word(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    }
    std::string name() {
        size_t start = pos_;
        while (pos_ < s_.size() && word(s_[pos_])) ++pos_;
        if (start == pos_) unreadable("expected a rule name");
        return std::string(s_.substr(start, pos_ - start));
    }
    // Whether a new rule starts here (name followed by ::=).
    bool at_rule_start() {
        size_t p = pos_;
        while (p < s_.size() && word(s_[p])) ++p;
        if (p == pos_) return false;
        while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t')) ++p;
        return s_.compare(p, 3, "::=") == 0;
    }
    char32_t utf8() {
        auto b = (unsigned char)s_[pos_++];
        int n = b < 0x80 ? 0 : b < 0xE0 ? 1 : b < 0xF0 ? 2 : 3;
        char32_t c = n == 0 ? b : b & (0x3F >> n);
        for (int i = 0; i < n; ++i) {
            if (pos_ >= s_.size()) unreadable("truncated UTF-8");
            c = (c << 6) | ((unsigned char)s_[pos_++] & 0x3F);
        }
        return c;
    }
    char32_t hex(int digits) {
        char32_t c = 0;
        for (int i = 0; i < digits; ++i) {
            if (pos_ >= s_.size() || !std::isxdigit((unsigned char)s_[pos_])) unreadable("bad escape");
            char d = s_[pos_++];
            c = c * 16 + (char32_t)(d <= '9' ? d - '0' : (d | 0x20) - 'a' + 10);
        }
        return c;
    }
    char32_t character() {
        if (pos_ >= s_.size()) unreadable("unexpected end");
        if (s_[pos_] != '\\') return utf8();
        if (++pos_ >= s_.size()) unreadable("unexpected end");
        char e = s_[pos_++];
        switch (e) {
        case 'x': return hex(2);
        case 'u': return hex(4);
        case 'U': return hex(8);
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'f': return '\f';
        case 'v': return '\v';
        case '0': return 0;
        default: return (unsigned char)e;
        }
    }
    std::vector<Alt> alternatives(bool nested) {
        std::vector<Alt> alts(1);
        for (;;) {
            skip();
            if (pos_ >= s_.size()) break;
            char c = s_[pos_];
            if (c == '|') {
                ++pos_;
                alts.emplace_back();
                continue;
            }
            if (c == ')') {
                if (!nested) unreadable("unbalanced )");
                break;
            }
            if (!nested && at_rule_start()) break;
            alts.back().items.push_back(item());
        }
        return alts;
    }
    Item item() {
        Item it;
        char c = s_[pos_];
        if (c == '"') {
            ++pos_;
            it.node.kind = Node::Lit;
            while (pos_ < s_.size() && s_[pos_] != '"') it.node.text += character();
            if (pos_ >= s_.size()) unreadable("unterminated literal");
            ++pos_;
        } else if (c == '[') {
            ++pos_;
            bool negated = pos_ < s_.size() && s_[pos_] == '^';
            if (negated) ++pos_;
            Ranges r;
            while (pos_ < s_.size() && s_[pos_] != ']') {
                char32_t lo = character(), hi = lo;
                if (pos_ + 1 < s_.size() && s_[pos_] == '-' && s_[pos_ + 1] != ']') {
                    ++pos_;
                    hi = character();
                }
                if (hi < lo) unreadable("reversed range");
                r.emplace_back(lo, hi);
            }
            if (pos_ >= s_.size()) unreadable("unterminated class");
            ++pos_;
            it.node.kind = Node::Class;
            it.node.ranges = negated ? complement(normalize(r)) : normalize(r);
        } else if (c == '.') {
            ++pos_;
            it.node.kind = Node::Class;
            it.node.ranges = {{0, kMaxCode}};
        } else if (c == '(') {
            ++pos_;
            it.node.kind = Node::Group;
            it.node.alts = alternatives(true);
            if (pos_ >= s_.size() || s_[pos_] != ')') unreadable("unbalanced (");
            ++pos_;
        } else if (word(c)) {
            it.node.kind = Node::Ref;
            it.node.ref = name();
        } else {
            unreadable("unexpected character");
        }
        quantifier(it);
        return it;
    }
    int64_t number() {
        size_t start = pos_;
        int64_t v = 0;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9' && v < 1000000000) v = v * 10 + (s_[pos_++] - '0');
        if (start == pos_) unreadable("bad repetition");
        return v;
    }
    void quantifier(Item &it) {
        if (pos_ >= s_.size()) return;
        char c = s_[pos_];
        if (c == '*') ++pos_, it.min = 0, it.max = -1;
        else if (c == '+') ++pos_, it.min = 1, it.max = -1;
        else if (c == '?') ++pos_, it.min = 0, it.max = 1;
        else if (c == '{') {
            ++pos_;
            skip();
            it.min = it.max = number();
            skip();
            if (pos_ < s_.size() && s_[pos_] == ',') {
                ++pos_;
                skip();
                it.max = pos_ < s_.size() && s_[pos_] == '}' ? -1 : number();
                skip();
            }
            if (pos_ >= s_.size() || s_[pos_] != '}') unreadable("bad repetition");
            ++pos_;
        }
    }
};

// ---- restriction and pruning ----------------------------------------------------

void restrict_node(Node &n) {
    switch (n.kind) {
    case Node::Lit:
        n.dead = !std::all_of(n.text.begin(), n.text.end(), json_safe);
        break;
    case Node::Class:
        n.ranges = json_safe_part(n.ranges);
        n.dead = n.ranges.empty();
        break;
    case Node::Group:
        for (Alt &a : n.alts)
            for (Item &i : a.items) restrict_node(i.node);
        break;
    case Node::Ref: break;
    }
}

using Live = std::map<std::string, bool>;

bool alt_live(const Alt &a, const Live &live);
bool node_live(const Node &n, const Live &live) {
    switch (n.kind) {
    case Node::Lit:
    case Node::Class: return !n.dead;
    case Node::Ref: {
        auto it = live.find(n.ref);
        return it == live.end() || it->second;  // a rule defined elsewhere is taken as live
    }
    case Node::Group: return std::any_of(n.alts.begin(), n.alts.end(), [&](const Alt &a) { return alt_live(a, live); });
    }
    return false;
}
bool alt_live(const Alt &a, const Live &live) {
    return std::all_of(a.items.begin(), a.items.end(),
                       [&](const Item &i) { return i.min == 0 || node_live(i.node, live); });
}

void prune(std::vector<Alt> &alts, const Live &live) {
    std::vector<Alt> kept;
    for (Alt &a : alts) {
        if (!alt_live(a, live)) continue;
        std::vector<Item> items;
        for (Item &i : a.items) {
            if (!node_live(i.node, live)) continue;  // optional, and can only be empty
            if (i.node.kind == Node::Group) prune(i.node.alts, live);
            items.push_back(std::move(i));
        }
        a.items = std::move(items);
        kept.push_back(std::move(a));
    }
    alts = std::move(kept);
}

// ---- writing GBNF back ------------------------------------------------------------

void put_ranges(std::string &out, const Ranges &r) {
    for (auto [lo, hi] : r) {
        append_gbnf_char(out, lo, true);
        if (hi != lo) {
            out += '-';
            append_gbnf_char(out, hi, true);
        }
    }
}

void put_alts(std::string &out, const std::vector<Alt> &alts);
void put_item(std::string &out, const Item &it) {
    const Node &n = it.node;
    switch (n.kind) {
    case Node::Lit:
        out += '"';
        for (char32_t c : n.text) append_gbnf_char(out, c, false);
        out += '"';
        break;
    case Node::Class:
        // A set reaching the last code point reads better negated.
        out += '[';
        if (!n.ranges.empty() && n.ranges.back().second == kMaxCode) {
            out += '^';
            put_ranges(out, complement(n.ranges));
        } else {
            put_ranges(out, n.ranges);
        }
        out += ']';
        break;
    case Node::Ref: out += n.ref; break;
    case Node::Group:
        out += "( ";
        put_alts(out, n.alts);
        out += " )";
        break;
    }
    if (it.min == 0 && it.max == -1) out += '*';
    else if (it.min == 1 && it.max == -1) out += '+';
    else if (it.min == 0 && it.max == 1) out += '?';
    else if (it.min != 1 || it.max != 1)
        out += "{" + std::to_string(it.min) + (it.max == it.min ? "" : "," + (it.max == -1 ? "" : std::to_string(it.max))) + "}";
}
void put_alts(std::string &out, const std::vector<Alt> &alts) {
    for (size_t a = 0; a < alts.size(); ++a) {
        if (a) out += " | ";
        if (alts[a].items.empty()) out += "\"\"";
        for (size_t i = 0; i < alts[a].items.size(); ++i) {
            if (i) out += ' ';
            put_item(out, alts[a].items[i]);
        }
    }
}

} // namespace

bool restrict_to_json_string(std::string &rules, const std::string &start) {
    std::vector<Rule> parsed = Reader(rules).rules();
    for (Rule &r : parsed)
        for (Alt &a : r.alts)
            for (Item &i : a.items) restrict_node(i.node);
    // Which rules still match some string: a least fixpoint.
    Live live;
    for (const Rule &r : parsed) live[r.name] = false;
    for (bool changed = true; changed;) {
        changed = false;
        for (const Rule &r : parsed) {
            if (live[r.name]) continue;
            if (std::any_of(r.alts.begin(), r.alts.end(), [&](const Alt &a) { return alt_live(a, live); })) {
                live[r.name] = true;
                changed = true;
            }
        }
    }
    auto it = live.find(start);
    if (it == live.end()) unreadable("no start rule");
    if (!it->second) return false;
    std::string out;
    for (Rule &r : parsed) {
        if (!live[r.name]) continue;
        prune(r.alts, live);
        out += r.name + " ::= ";
        put_alts(out, r.alts);
        out += '\n';
    }
    rules = std::move(out);
    return true;
}

} // namespace vt::grammar::jsonschema
