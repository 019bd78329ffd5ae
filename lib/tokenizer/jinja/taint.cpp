#include "taint.h"

#include "text.h"

namespace vt::jinja {

void MarkedText::append(std::string_view s, const std::string *m) {
    if (m && mask.empty()) mask.assign(text.size(), '\0');
    text.append(s);
    if (m) mask.append(*m);
    else if (!mask.empty()) mask.append(s.size(), '\0');
}

void MarkedText::append(std::string_view s, bool marked) {
    if (!marked) {
        append(s, nullptr);
        return;
    }
    const std::string m(s.size(), '\1');
    append(s, &m);
}

void MarkedText::append(const Value &v) {
    if (v.is_string()) append(v.str(), v.mask());
    else append(v.to_str(), v.any_marked());
}

Value MarkedText::value() && { return Value::marked(std::move(text), std::move(mask)); }

std::vector<std::pair<size_t, size_t>> MarkedText::ranges() const {
    std::vector<std::pair<size_t, size_t>> out;
    for (size_t i = 0; i < mask.size();) {
        if (!mask[i]) { ++i; continue; }
        size_t j = i;
        while (j < mask.size() && mask[j]) ++j;
        out.emplace_back(i, j);
        i = j;
    }
    return out;
}

namespace {

size_t utf8_len(uint32_t cp) {
    if (cp > 0x10FFFF) return 1;  // a malformed byte carried through (text.cpp)
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

// Byte offset of each code point of s, plus s.size() at the end.
std::vector<size_t> code_point_starts(const std::string &s) {
    std::vector<size_t> starts;
    size_t at = 0;
    for (uint32_t cp : to_code_points(s)) {
        starts.push_back(at);
        at += utf8_len(cp);
    }
    starts.push_back(at);
    return starts;
}

// s[begin, begin + len) of a str value, with its marks.
Value sub_value(const Value &s, size_t begin, size_t len) {
    const std::string *m = s.mask();
    if (!m) return Value(s.str().substr(begin, len));
    return Value::marked(s.str().substr(begin, len), m->substr(begin, len));
}

// Whether data that the operation read wholesale was marked: then its
// result, built anew, is data too.
bool derived_from_data(const Value &recv) { return recv.all_marked() || (!recv.is_string() && recv.any_marked()); }

Value generic(const Value &recv, Value r) {
    if (r.any_marked()) return r;  // passed-through values keep their own marks
    return derived_from_data(recv) ? mark_all(r) : r;
}

// The result of a strip: a substring of the receiver, which starts at the
// first occurrence of r (a stripped prefix never holds r's first character).
Value strip_marks(const Value &recv, Value r, bool right_only) {
    if (!recv.is_string() || !recv.mask() || !r.is_string() || r.str().empty()) return r;
    size_t off = right_only ? 0 : recv.str().find(r.str());
    if (off == std::string::npos || recv.str().compare(off, r.str().size(), r.str()) != 0) return generic(recv, r);
    return sub_value(recv, off, r.str().size());
}

// Case mappings: marks stay on their bytes when no character changed length.
Value case_marks(const Value &recv, Value r) {
    if (!recv.is_string() || !r.is_string()) return generic(recv, r);
    if (!recv.mask()) return r;
    if (r.str().size() == recv.str().size()) return Value::marked(r.str(), *recv.mask());
    return generic(recv, r);
}

Value replace_marks(const Value &recv, const Value *old_v, const Value *new_v, const Value *count_v, Value r) {
    if (!recv.is_string() || !r.is_string() || !old_v || !new_v || !old_v->is_string() || !new_v->is_string())
        return generic(recv, r);
    if (!recv.mask() && !new_v->mask()) return r;
    const std::string &s = recv.str(), &old = old_v->str();
    if (old.empty()) return generic(recv, r);  // Python inserts `new` between characters: rare, not tracked
    int64_t count = count_v && (count_v->is_int() || count_v->is_bool()) ? count_v->as_int() : -1;
    MarkedText out;
    size_t pos = 0;
    for (int64_t n = 0; count < 0 || n < count; ++n) {
        size_t m = s.find(old, pos);
        if (m == std::string::npos) break;
        out.append(sub_value(recv, pos, m - pos));
        out.append(*new_v);
        pos = m + old.size();
    }
    out.append(sub_value(recv, pos, std::string::npos));
    if (out.text != r.str()) return generic(recv, r);
    return std::move(out).value();
}

Value join_marks(const Value &recv, const Value &items, const Value *sep, Value r) {
    if (!r.is_string()) return r;
    if (!items.any_marked() && !(sep && sep->any_marked())) return r;
    MarkedText out;
    bool first = true;
    List all = items.is_dict() && items.dict().marked_keys ? mark_all(items).items_for_iteration()
                                                           : items.items_for_iteration();
    for (const Value &item : all) {
        if (!first && sep) out.append(*sep);
        first = false;
        out.append(item);
    }
    if (out.text != r.str()) return generic(recv, r);
    return std::move(out).value();
}

} // namespace

Value mark_all(const Value &v) {
    switch (v.kind()) {
    case Value::Kind::String: {
        if (v.all_marked() || v.str().empty()) return v;
        Value out = Value::marked(v.str(), std::string(v.str().size(), '\1'));
        return v.is_markup() ? v : out;  // Markup stays what it is (only |safe makes one)
    }
    case Value::Kind::List: {
        List l;
        l.reserve(v.list().size());
        for (const Value &x : v.list()) l.push_back(mark_all(x));
        Value out(std::move(l));
        return out;
    }
    case Value::Kind::Dict: {
        if (v.dict().is_namespace) return v;  // shared by reference: never copied
        Dict d;
        d.marked_keys = true;
        for (const auto &kv : v.dict().items) d.items.emplace_back(kv.first, mark_all(kv.second));
        return Value(std::move(d));
    }
    default: return v;
    }
}

Value concat_marks(const Value &a, const Value &b, Value r) {
    if (!r.is_string() || (!a.any_marked() && !b.any_marked())) return r;
    MarkedText out;
    out.append(a);
    out.append(b);
    if (out.text == r.str()) return std::move(out).value();
    return mark_all(r);  // Markup escaped a side: the bytes moved
}

Value repeat_marks(const Value &seq, Value r) {
    if (!seq.is_string() || !seq.mask() || !r.is_string() || seq.str().empty()) return r;
    MarkedText out;
    while (out.text.size() < r.str().size()) out.append(seq);
    if (out.text != r.str()) return r;
    return std::move(out).value();
}

Value pick_code_points(const Value &s, const std::vector<size_t> &indices) {
    std::vector<size_t> starts = code_point_starts(s.str());
    MarkedText out;
    for (size_t i : indices) out.append(sub_value(s, starts[i], starts[i + 1] - starts[i]));
    return std::move(out).value();
}

List marked_characters(const Value &s) {
    std::vector<size_t> starts = code_point_starts(s.str());
    List out;
    for (size_t i = 0; i + 1 < starts.size(); ++i) out.push_back(sub_value(s, starts[i], starts[i + 1] - starts[i]));
    return out;
}

Value filter_marks(const std::string &name, const Value &v, const Args &a, Value r) {
    if (name == "string" && v.is_string()) return v;  // str(s) is s, marks and all
    if (name == "trim") return strip_marks(v, std::move(r), false);
    if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") return case_marks(v, std::move(r));
    if (name == "replace") return replace_marks(v, a.get(0, "old"), a.get(1, "new"), a.get(2, "count"), std::move(r));
    if (name == "join" && !a.get(1, "attribute")) return join_marks(v, v, a.get(0, "d"), std::move(r));
    if ((name == "items" || name == "dictsort") && v.is_dict() && v.dict().marked_keys) return mark_all(r);
    if (name == "tojson" && v.any_marked()) return mark_all(r);
    return generic(v, std::move(r));
}

Value method_marks(const std::string &name, const Value &recv, const Args &a, Value r) {
    if (recv.is_string()) {
        if (name == "strip" || name == "lstrip") return strip_marks(recv, std::move(r), false);
        if (name == "rstrip") return strip_marks(recv, std::move(r), true);
        if (name == "upper" || name == "lower" || name == "capitalize" || name == "title")
            return case_marks(recv, std::move(r));
        if (name == "replace")
            return replace_marks(recv, a.get(0, "old"), a.get(1, "new"), a.get(2, "count"), std::move(r));
        if (name == "join") {
            const Value *items = a.get(0, "iterable");
            return items ? join_marks(recv, *items, &recv, std::move(r)) : r;
        }
    }
    if ((name == "items" || name == "keys") && recv.is_dict() && recv.dict().marked_keys) return mark_all(r);
    return generic(recv, std::move(r));
}

} // namespace vt::jinja
