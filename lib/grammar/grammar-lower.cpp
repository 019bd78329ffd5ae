// GBNF rules -> byte-level Grammar (grammar-ir.h), then the checks that make
// the matcher's masks exact: no left recursion, and no alternative that can
// never finish (so every prefix the matcher accepts can be completed).
//
// Lowering:
//  - a literal becomes one byte element per UTF-8 byte;
//  - a class becomes one byte element when it holds only ASCII, else a rule
//    whose alternatives are the UTF-8 byte sequences of its code points
//    (ranges split where the encoding's leading bytes change, as RE2 does);
//  - a group with several alternatives becomes a rule;
//  - X{m,n} becomes m copies of X and a chain of n-m optional rules, X* a
//    right-recursive rule (the matcher calls a rule in tail position
//    without growing the stack, so long repetitions stay flat).
#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <unordered_map>

#include "core/error.h"
#include "grammar/gbnf-ast.h"
#include "grammar/grammar-ir.h"
#include "grammar/grammar.h"

namespace vt::grammar {
namespace {

struct ByteRange {
    uint8_t lo, hi;
};
using ByteSeq = std::vector<ByteRange>;

int utf8_len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

void encode(uint32_t cp, uint8_t *b) {
    switch (utf8_len(cp)) {
    case 1: b[0] = uint8_t(cp); break;
    case 2: b[0] = uint8_t(0xC0 | (cp >> 6)); b[1] = uint8_t(0x80 | (cp & 0x3F)); break;
    case 3:
        b[0] = uint8_t(0xE0 | (cp >> 12)); b[1] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
        b[2] = uint8_t(0x80 | (cp & 0x3F));
        break;
    default:
        b[0] = uint8_t(0xF0 | (cp >> 18)); b[1] = uint8_t(0x80 | ((cp >> 12) & 0x3F));
        b[2] = uint8_t(0x80 | ((cp >> 6) & 0x3F)); b[3] = uint8_t(0x80 | (cp & 0x3F));
    }
}

// Byte sequences of the code points lo..hi, each a list of byte ranges.
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<ByteSeq> &out) {
    static const uint32_t kMax[] = {0x7F, 0x7FF, 0xFFFF};
    for (uint32_t m : kMax) {
        if (lo <= m && hi > m) {
            utf8_sequences(lo, m, out);
            utf8_sequences(m + 1, hi, out);
            return;
        }
    }
    int n = utf8_len(lo);
    for (int i = 1; i < n; ++i) {
        uint32_t m = (uint32_t(1) << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                utf8_sequences(lo, lo | m, out);
                utf8_sequences((lo | m) + 1, hi, out);
                return;
            }
            if ((hi & m) != m) {
                utf8_sequences(lo, (hi & ~m) - 1, out);
                utf8_sequences(hi & ~m, hi, out);
                return;
            }
        }
    }
    uint8_t a[4], b[4];
    encode(lo, a);
    encode(hi, b);
    ByteSeq seq;
    for (int i = 0; i < n; ++i) seq.push_back({a[i], b[i]});
    out.push_back(std::move(seq));
}

class Lowerer {
public:
    static constexpr size_t kMaxElements = 60000;

    explicit Lowerer(const std::vector<GbnfRule> &rules) : src_(rules) {
        for (const auto &r : rules) {
            ids_.emplace(r.name, uint32_t(g_.rule_names.size()));
            g_.rule_names.push_back(r.name);
            g_.rule_alts.emplace_back();
        }
    }

    Grammar run() {
        auto root = ids_.find("root");
        if (root == ids_.end()) throw Error(VT_ERR_INVALID_ARGUMENT, "GBNF: no rule named 'root'");
        g_.root = root->second;
        // Alternatives are first lowered into per-rule sequence lists, then
        // flattened; helper rules are appended as they are made.
        for (size_t r = 0; r < src_.size(); ++r) alts_.emplace_back();
        for (size_t r = 0; r < src_.size(); ++r) {
            for (const auto &seq : src_[r].alts) {
                Seq l = lower_seq(seq);  // may add rules: alts_ grows
                alts_[r].push_back(std::move(l));
            }
        }
        return finish();
    }

private:
    using Seq = std::vector<Elem>;

    uint32_t new_rule(const std::string &name) {
        uint32_t id = uint32_t(g_.rule_names.size());
        g_.rule_names.push_back(name);
        g_.rule_alts.emplace_back();
        alts_.emplace_back();
        return id;
    }

    uint32_t add_set(const ByteSet &s) {
        for (size_t i = 0; i < g_.sets.size(); ++i)
            if (g_.sets[i] == s) return uint32_t(i);
        g_.sets.push_back(s);
        return uint32_t(g_.sets.size() - 1);
    }

    Elem byte_elem(uint8_t lo, uint8_t hi) {
        ByteSet s;
        s.add_range(lo, hi);
        return {ElemKind::bytes, add_set(s)};
    }

    Seq lower_seq(const GbnfSeq &seq) {
        Seq out;
        for (const auto &it : seq) lower_item(it, out);
        return out;
    }

    // One occurrence of the item, as elements.
    Seq lower_once(const GbnfItem &it) {
        Seq out;
        switch (it.kind) {
        case GbnfItem::Kind::literal:
            for (uint32_t cp : it.text) {
                uint8_t b[4];
                encode(cp, b);
                for (int k = 0; k < utf8_len(cp); ++k) out.push_back(byte_elem(b[k], b[k]));
            }
            break;
        case GbnfItem::Kind::char_class: out.push_back(class_elem(it.ranges)); break;
        case GbnfItem::Kind::rule_ref: {
            auto f = ids_.find(it.name);
            if (f == ids_.end())
                throw Error(VT_ERR_INVALID_ARGUMENT, "GBNF line " + std::to_string(it.line) +
                                                         ": undefined rule '" + it.name + "'");
            out.push_back({ElemKind::rule, f->second});
            break;
        }
        case GbnfItem::Kind::group:
            if (it.alts.size() == 1) return lower_seq(it.alts[0]);
            uint32_t r = new_rule("(group)");
            for (const auto &s : it.alts) {
                Seq l = lower_seq(s);
                alts_[r].push_back(std::move(l));
            }
            out.push_back({ElemKind::rule, r});
            break;
        }
        return out;
    }

    Elem class_elem(const std::vector<CodeRange> &ranges) {
        std::vector<ByteSeq> seqs;
        for (const auto &r : ranges) utf8_sequences(r.lo, r.hi, seqs);
        bool single = std::all_of(seqs.begin(), seqs.end(), [](auto &s) { return s.size() == 1; });
        if (single) {
            ByteSet s;
            for (const auto &q : seqs) s.add_range(q[0].lo, q[0].hi);
            return {ElemKind::bytes, add_set(s)};  // an empty set: the alternative is dropped later
        }
        // One rule per use, not shared: a rule with one call site lets the
        // token cache see the caller's context (token-matcher.cpp).
        uint32_t r = new_rule("(class)");
        // Single bytes share one set; longer sequences are alternatives.
        ByteSet ascii;
        for (const auto &q : seqs) {
            if (q.size() == 1) {
                ascii.add_range(q[0].lo, q[0].hi);
                continue;
            }
            Seq alt;
            for (const auto &br : q) alt.push_back(byte_elem(br.lo, br.hi));
            alts_[r].push_back(std::move(alt));
        }
        if (!ascii.empty()) alts_[r].insert(alts_[r].begin(), Seq{{ElemKind::bytes, add_set(ascii)}});
        return {ElemKind::rule, r};
    }

    // A sequence as one element (a rule when it is longer).
    Elem as_elem(Seq s) {
        if (s.size() == 1) return s[0];
        uint32_t r = new_rule("(repeat)");
        alts_[r].push_back(std::move(s));
        return {ElemKind::rule, r};
    }

    void lower_item(const GbnfItem &it, Seq &out) {
        if (it.min == 1 && it.max == 1) {
            Seq once = lower_once(it);
            out.insert(out.end(), once.begin(), once.end());
            return;
        }
        if (it.max == 0) return;
        Elem x = as_elem(lower_once(it));
        for (uint32_t k = 0; k < it.min; ++k) out.push_back(x);
        if (it.max == GbnfItem::kUnbounded) {
            uint32_t star = new_rule("(star)");
            alts_[star].push_back({x, {ElemKind::rule, star}});
            alts_[star].push_back({});
            out.push_back({ElemKind::rule, star});
            return;
        }
        // (x (x (x)?)?)?: opt_k ::= x opt_{k-1} | "" with opt_1 ::= x | "".
        uint32_t prev = UINT32_MAX;
        for (uint32_t k = it.min; k < it.max; ++k) {
            uint32_t opt = new_rule("(optional)");
            chain_rules_.resize(opt + 1);
            chain_rules_[opt] = 1;
            Seq s{x};
            if (prev != UINT32_MAX) s.push_back({ElemKind::rule, prev});
            alts_[opt].push_back(std::move(s));
            alts_[opt].push_back({});
            prev = opt;
        }
        if (prev != UINT32_MAX) out.push_back({ElemKind::rule, prev});
    }

    // Drops alternatives that can never finish, refuses left recursion and
    // an empty language, and flattens the alternatives into g_.elems.
    Grammar finish() {
        size_t n = alts_.size();
        // Compilation costs time per position and memory per position and
        // token: a bound keeps one request's constraint from taking a
        // server's CPU for seconds (x{1,100000} is 100,000 positions).
        size_t total = 0;
        for (const auto &a : alts_)
            for (const auto &s : a) total += s.size() + 1;
        if (total > kMaxElements)
            throw Error(VT_ERR_UNSUPPORTED, "grammar: too large (" + std::to_string(total) + " elements, at most " +
                                                std::to_string(kMaxElements) +
                                                "); large repetition counts are the usual cause");
        auto elem_ok = [&](const Elem &e, const std::vector<char> &prod) {
            return e.kind == ElemKind::bytes ? !g_.sets[e.arg].empty() : bool(prod[e.arg]);
        };
        std::vector<char> productive(n, 0);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (productive[r]) continue;
                for (const auto &s : alts_[r]) {
                    if (std::all_of(s.begin(), s.end(), [&](auto &e) { return elem_ok(e, productive); })) {
                        productive[r] = 1;
                        changed = true;
                        break;
                    }
                }
            }
        }
        if (!productive[g_.root])
            throw Error(VT_ERR_INVALID_ARGUMENT, "grammar: the language is empty (no string matches 'root')");
        for (size_t r = 0; r < n; ++r) {
            auto &a = alts_[r];
            a.erase(std::remove_if(a.begin(), a.end(), [&](const Seq &s) {
                        return !std::all_of(s.begin(), s.end(), [&](auto &e) { return elem_ok(e, productive); });
                    }),
                    a.end());
        }
        check_left_recursion();
        clone_shared_rules();
        n = alts_.size();
        for (size_t r = 0; r < n; ++r) {
            for (const auto &s : alts_[r]) {
                g_.rule_alts[r].push_back(uint32_t(g_.elems.size()));
                g_.elems.insert(g_.elems.end(), s.begin(), s.end());
                g_.elems.push_back({ElemKind::end, uint32_t(r)});
            }
        }
        g_.origin.resize(g_.elems.size());
        for (uint32_t r = 0; r < n; ++r) {
            uint32_t o = copy_of_[r];
            for (size_t a = 0; a < g_.rule_alts[r].size(); ++a)
                for (uint32_t p = g_.rule_alts[r][a], q = g_.rule_alts[o][a];; ++p, ++q) {
                    g_.origin[p] = q;
                    if (g_.elems[p].kind == ElemKind::end) break;
                }
        }
        link_chain_copies();
        return std::move(g_);
    }

    // Fills copies_left and next_copy (grammar-ir.h) over the flattened
    // rules: copy k of a chain is [X, copy k-1] (copy 1: [X]); positions
    // inside X (and inside X's own rule copies) pair up structurally.
    void link_chain_copies() {
        size_t n = g_.rule_alts.size();
        chain_rules_.resize(alts_.size());
        // A copy whose [X, copy k-1] alternative survived the pruning: an X
        // that matches nothing (`[]?`) leaves only "", which is no chain
        // (and has no element after its first to read).
        auto is_chain = [&](uint32_t r) {
            return chain_rules_[copy_of_[r]] && !g_.rule_alts[r].empty() &&
                   g_.elems[g_.rule_alts[r][0]].kind != ElemKind::end;
        };
        auto inner_of = [&](uint32_t r) -> uint32_t {
            uint32_t a = g_.rule_alts[r][0];
            const Elem &e = g_.elems[a + 1];
            return e.kind == ElemKind::rule && is_chain(e.arg) ? e.arg : UINT32_MAX;
        };
        std::vector<uint32_t> left(n, 0);
        for (uint32_t r = 0; r < n; ++r) {
            if (!is_chain(r) || left[r]) continue;
            std::vector<uint32_t> path;  // r, its inner copy, ...
            for (uint32_t q = r; q != UINT32_MAX && !left[q]; q = inner_of(q)) path.push_back(q);
            uint32_t base = path.empty() ? 0 : (inner_of(path.back()) == UINT32_MAX ? 0 : left[inner_of(path.back())]);
            for (size_t i = path.size(); i-- > 0;) left[path[i]] = ++base;
        }
        bool any = std::any_of(left.begin(), left.end(), [](uint32_t x) { return x != 0; });
        if (!any) return;
        g_.copies_left.assign(g_.elems.size(), 0);
        g_.next_copy.assign(g_.elems.size(), UINT32_MAX);
        std::vector<char> seen(n, 0);
        std::function<void(uint32_t, uint32_t, uint32_t)> pair = [&](uint32_t a, uint32_t b, uint32_t k) {
            if (a == b || seen[a] || g_.rule_alts[a].size() != g_.rule_alts[b].size()) return;
            seen[a] = 1;
            for (size_t i = 0; i < g_.rule_alts[a].size(); ++i) {
                for (uint32_t pa = g_.rule_alts[a][i], pb = g_.rule_alts[b][i];; ++pa, ++pb) {
                    const Elem &ea = g_.elems[pa], &eb = g_.elems[pb];
                    if (ea.kind != eb.kind) break;
                    g_.copies_left[pa] = k;
                    g_.next_copy[pa] = pb;
                    if (ea.kind == ElemKind::end) break;
                    if (ea.kind == ElemKind::rule) pair(ea.arg, eb.arg, k);
                }
            }
        };
        for (uint32_t r = 0; r < n; ++r) {
            uint32_t in = left[r] > 1 ? inner_of(r) : UINT32_MAX;
            if (in == UINT32_MAX) continue;
            uint32_t pa = g_.rule_alts[r][0], pb = g_.rule_alts[in][0];
            g_.copies_left[pa] = left[r];
            g_.next_copy[pa] = pb;
            if (g_.elems[pa].kind == ElemKind::rule) pair(g_.elems[pa].arg, g_.elems[pb].arg, left[r]);
        }
    }

    // Gives each call site of a rule that is not recursive (a rule whose only
    // cycle is its own tail call, as X*'s, counts as not recursive) its own
    // copy, breadth first from the root, within a size budget. A position
    // inside a rule with one call site has a caller the grammar fixes, so
    // the token cache sees past the rule's end (token-matcher.cpp); without
    // copies, every token that runs past the end of a shared rule (a JSON
    // string's closing quote and what follows, whitespace) would have to be
    // matched at run time, at every step.
    void clone_shared_rules() {
        size_t n = alts_.size();
        copy_of_.resize(n);
        std::iota(copy_of_.begin(), copy_of_.end(), 0u);
        // Rules on a cycle other than a self tail call.
        std::vector<std::vector<uint32_t>> refs(n);
        for (uint32_t r = 0; r < n; ++r) {
            for (const auto &s : alts_[r]) {
                for (size_t k = 0; k < s.size(); ++k) {
                    if (s[k].kind != ElemKind::rule) continue;
                    bool self_tail = s[k].arg == r && k + 1 == s.size();
                    if (!self_tail) refs[r].push_back(s[k].arg);
                }
            }
        }
        std::vector<char> recursive(n, 0);
        for (uint32_t r = 0; r < n; ++r) {
            // Does r reach itself? (Grammars are small: a DFS per rule.)
            std::vector<char> seen(n, 0);
            std::vector<uint32_t> stack(refs[r].begin(), refs[r].end());
            while (!stack.empty() && !recursive[r]) {
                uint32_t t = stack.back();
                stack.pop_back();
                if (t == r) recursive[r] = 1;
                if (seen[t]) continue;
                seen[t] = 1;
                stack.insert(stack.end(), refs[t].begin(), refs[t].end());
            }
        }
        size_t elems = 0;
        for (const auto &a : alts_)
            for (const auto &s : a) elems += s.size() + 1;
        const size_t budget = std::max<size_t>(elems * 8, 20000);
        std::vector<char> claimed(n, 0), visited(n, 0);
        std::vector<uint32_t> queue{g_.root};
        claimed[g_.root] = visited[g_.root] = 1;
        for (size_t qi = 0; qi < queue.size(); ++qi) {
            uint32_t r = queue[qi];
            for (size_t ai = 0; ai < alts_[r].size(); ++ai) {
                for (size_t k = 0; k < alts_[r][ai].size(); ++k) {
                    Elem e = alts_[r][ai][k];
                    if (e.kind != ElemKind::rule || e.arg == r) continue;
                    uint32_t s = e.arg;
                    bool rec = s < recursive.size() && recursive[s];
                    if (!claimed[s] || rec) {
                        claimed[s] = 1;
                        if (!visited[s]) {
                            visited[s] = 1;
                            queue.push_back(s);
                        }
                        continue;
                    }
                    size_t size = 0;
                    for (const auto &q : alts_[s]) size += q.size() + 1;
                    if (elems + size > budget) continue;
                    elems += size;
                    uint32_t c = new_rule(g_.rule_names[s]);
                    copy_of_.push_back(copy_of_[s]);
                    std::vector<Seq> body = alts_[s];
                    for (auto &q : body)
                        for (auto &x : q)
                            if (x.kind == ElemKind::rule && x.arg == s) x.arg = c;  // its own loop
                    alts_[c] = std::move(body);
                    claimed.push_back(1);
                    visited.push_back(1);
                    alts_[r][ai][k].arg = c;
                    queue.push_back(c);
                }
            }
        }
    }

    void check_left_recursion() {
        size_t n = alts_.size();
        std::vector<char> nullable(n, 0);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (nullable[r]) continue;
                for (const auto &s : alts_[r]) {
                    if (std::all_of(s.begin(), s.end(), [&](auto &e) {
                            return e.kind == ElemKind::rule && nullable[e.arg];
                        })) {
                        nullable[r] = 1;
                        changed = true;
                        break;
                    }
                }
            }
        }
        // first[r]: the rules r can start with (through nullable prefixes).
        std::vector<std::vector<uint32_t>> first(n);
        for (size_t r = 0; r < n; ++r) {
            for (const auto &s : alts_[r]) {
                for (const auto &e : s) {
                    if (e.kind != ElemKind::rule) break;
                    first[r].push_back(e.arg);
                    if (!nullable[e.arg]) break;
                }
            }
        }
        std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the DFS path, 2 done
        std::vector<std::pair<uint32_t, size_t>> stack;
        for (uint32_t s = 0; s < n; ++s) {
            if (color[s]) continue;
            stack.push_back({s, 0});
            color[s] = 1;
            while (!stack.empty()) {
                auto &[r, k] = stack.back();
                if (k == first[r].size()) {
                    color[r] = 2;
                    stack.pop_back();
                    continue;
                }
                uint32_t t = first[r][k++];
                if (color[t] == 1) {
                    throw Error(VT_ERR_UNSUPPORTED, "grammar: rule '" + named(t) +
                                                        "' is left-recursive (rewrite it with repetition)");
                }
                if (color[t] == 0) {
                    color[t] = 1;
                    stack.push_back({t, 0});
                }
            }
        }
    }

    // The user's name of a rule, or of the rule a helper was made for.
    std::string named(uint32_t r) const {
        return r < src_.size() ? g_.rule_names[r] : "a group or repetition";
    }

    const std::vector<GbnfRule> &src_;
    Grammar g_;
    std::unordered_map<std::string, uint32_t> ids_;
    std::vector<std::vector<Seq>> alts_;
    std::vector<uint32_t> copy_of_;  // by rule: the original of a copy (clone_shared_rules)
    std::vector<char> chain_rules_;  // by original rule: one of X{m,n}'s optional copies
};

} // namespace

std::shared_ptr<const Grammar> compile_gbnf(std::string_view gbnf) {
    auto rules = parse_gbnf(gbnf);
    return std::make_shared<const Grammar>(Lowerer(rules).run());
}

} // namespace vt::grammar
