#include "value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.h"
#include "text.h"

namespace vt::jinja {

const Value *Dict::find(std::string_view key) const {
    for (const auto &kv : items)
        if (kv.first == key) return &kv.second;
    return nullptr;
}

void Dict::set(const std::string &key, Value v) {
    for (auto &kv : items)
        if (kv.first == key) {
            kv.second = std::move(v);
            return;
        }
    items.emplace_back(key, std::move(v));
}

const Value *Args::get(size_t index, std::string_view name) const {
    if (index < pos.size()) return &pos[index];
    for (const auto &kv : kw)
        if (kv.first == name) return &kv.second;
    return nullptr;
}

namespace {
thread_local RenderBudget *t_budget = nullptr;
// What a string or list Value costs beyond its bytes (the Value, the shared
// block): a string split into characters is charged what it really takes.
constexpr size_t kValueOverhead = sizeof(Value) + 32;
} // namespace

RenderBudget::RenderBudget(size_t max_each, uint64_t max_total)
    : max_each_(max_each), left_(max_total), outer_(t_budget) {
    t_budget = this;
}

RenderBudget::~RenderBudget() { t_budget = outer_; }

void RenderBudget::check_size(size_t bytes) {
    if (t_budget && bytes > t_budget->max_each_)
        fail(VT_ERR_INVALID_ARGUMENT, "template built a value of more than %zu bytes", t_budget->max_each_);
}

void Value::charge_value(size_t bytes) {
    RenderBudget *b = t_budget;
    if (!b) return;
    RenderBudget::check_size(bytes);
    const uint64_t cost = uint64_t(bytes) + kValueOverhead;
    if (cost > b->left_) {
        b->left_ = 0;
        fail(VT_ERR_INVALID_ARGUMENT, "template built more values than its limit allows (RenderOptions::max_value_bytes)");
    }
    b->left_ -= cost;
}

static uint32_t checked_depth(uint32_t inner) {
    if (inner + 1 > Value::kMaxDepth)
        fail(VT_ERR_INVALID_ARGUMENT, "value nested deeper than %u levels", Value::kMaxDepth);
    return inner + 1;
}

uint32_t Value::nested_depth(const List &l) {
    uint32_t d = 0;
    for (const Value &x : l) d = std::max(d, x.depth());
    return checked_depth(d);
}

uint32_t Value::nested_depth(const Dict &dict) {
    uint32_t d = 0;
    for (const auto &kv : dict.items) d = std::max(d, kv.second.depth());
    return checked_depth(d);
}

void Value::note_depth(uint32_t d) const {
    if (kind_ == Kind::Dict) dict_->depth = std::max(dict_->depth, checked_depth(d));
}

Value Value::undefined(std::string name) {
    Value v;
    v.s_ = std::make_shared<std::string>(std::move(name));
    return v;
}

Value Value::tuple(List l) {
    Value v(std::move(l));
    v.tuple_ = true;
    return v;
}

Value Value::markup(std::string s) {
    Value v(std::move(s));
    v.markup_ = true;
    return v;
}

const std::string &Value::undefined_name() const {
    static const std::string none;
    return s_ ? *s_ : none;
}

namespace {

template <class J>
Value convert(const J &j, bool mark, uint32_t depth = 0) {
    // The caller's JSON may nest as deep as it likes: refuse before recursing.
    if (depth > Value::kMaxDepth) fail(VT_ERR_INVALID_ARGUMENT, "JSON nested deeper than %u levels", Value::kMaxDepth);
    switch (j.type()) {
    case nlohmann::json::value_t::null: return Value(nullptr);
    case nlohmann::json::value_t::boolean: return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
        uint64_t u = j.template get<uint64_t>();
        return u > uint64_t(INT64_MAX) ? Value(double(u)) : Value(int64_t(u));
    }
    case nlohmann::json::value_t::number_float: return Value(j.template get<double>());
    case nlohmann::json::value_t::string: {
        std::string s = j.template get<std::string>();
        if (!mark || s.empty()) return Value(std::move(s));
        std::string m(s.size(), '\1');
        return Value::marked(std::move(s), std::move(m));
    }
    case nlohmann::json::value_t::array: {
        List l;
        l.reserve(j.size());
        for (const auto &e : j) l.push_back(convert(e, mark, depth + 1));
        return Value(std::move(l));
    }
    case nlohmann::json::value_t::object: {
        Dict d;
        d.marked_keys = mark;
        for (auto it = j.begin(); it != j.end(); ++it)
            d.items.emplace_back(it.key(), convert(it.value(), mark, depth + 1));
        return Value(std::move(d));
    }
    default: return Value(nullptr);  // binary / discarded: not JSON data
    }
}

// repr() of a str: single quotes unless the text holds ' and no ".
std::string repr_string(const std::string &s) {
    bool has_single = s.find('\'') != std::string::npos;
    bool has_double = s.find('"') != std::string::npos;
    char q = has_single && !has_double ? '"' : '\'';
    std::string out(1, q);
    for (unsigned char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == q) { out += '\\'; out += char(c); }
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else out += char(c);
    }
    out += q;
    return out;
}

} // namespace

Value Value::from_json(const nlohmann::ordered_json &j) { return convert(j, false); }
Value Value::from_json(const nlohmann::json &j) { return convert(j, false); }
Value Value::from_json_marked(const nlohmann::ordered_json &j) { return convert(j, true); }

Value Value::marked(std::string s, std::string mask) {
    Value v(std::move(s));
    if (mask.size() == v.s_->size() && mask.find_first_not_of('\0') != std::string::npos)
        v.mask_ = std::make_shared<const std::string>(std::move(mask));
    return v;
}

bool Value::all_marked() const {
    return mask_ && kind_ == Kind::String && mask_->find('\0') == std::string::npos;
}

bool Value::any_marked() const {
    switch (kind_) {
    case Kind::String: return mask_ != nullptr;
    case Kind::List:
        for (const Value &x : *list_)
            if (x.any_marked()) return true;
        return false;
    case Kind::Dict:
        if (dict_->marked_keys && !dict_->items.empty()) return true;
        for (const auto &kv : dict_->items)
            if (kv.second.any_marked()) return true;
        return false;
    default: return false;
    }
}

bool Value::truthy() const {
    switch (kind_) {
    case Kind::Undefined: case Kind::None: return false;
    case Kind::Bool: case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0.0;
    case Kind::String: return !s_->empty();
    case Kind::List: return !list_->empty();
    case Kind::Dict: return dict_->is_namespace || !dict_->items.empty();
    case Kind::Function: return true;
    }
    return false;
}

std::string python_float_repr(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    std::string sci(buf, res.ptr);  // e.g. "-1.2345e+02": shortest round-trip digits
    bool neg = sci[0] == '-';
    if (neg) sci.erase(0, 1);
    size_t e = sci.find('e');
    int exp = std::stoi(sci.substr(e + 1));
    std::string digits;
    for (size_t i = 0; i < e; ++i)
        if (sci[i] != '.') digits += sci[i];
    std::string out = neg ? "-" : "";
    if (exp >= -4 && exp < 16) {  // Python switches to exponents outside 1e-4 .. 1e16
        if (exp < 0) {
            out += "0." + std::string(size_t(-exp - 1), '0') + digits;
        } else if (size_t(exp) + 1 >= digits.size()) {
            out += digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
        } else {
            out += digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
        }
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return out + eb;
}

std::string Value::to_str() const {
    switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::String: return *s_;
    default: return repr();
    }
}

std::string Value::repr() const {
    switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return i_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float: return python_float_repr(f_);
    case Kind::String: return repr_string(*s_);
    case Kind::List: {
        std::string out = tuple_ ? "(" : "[";
        for (size_t i = 0; i < list_->size(); ++i) {
            if (i) out += ", ";
            out += (*list_)[i].repr();
            RenderBudget::check_size(out.size());
        }
        if (tuple_ && list_->size() == 1) out += ",";
        return out + (tuple_ ? ")" : "]");
    }
    case Kind::Dict: {
        std::string out = dict_->is_namespace ? "<Namespace {" : "{";
        for (size_t i = 0; i < dict_->items.size(); ++i) {
            if (i) out += ", ";
            out += repr_string(dict_->items[i].first) + ": " + dict_->items[i].second.repr();
            RenderBudget::check_size(out.size());
        }
        return out + (dict_->is_namespace ? "}>" : "}");
    }
    case Kind::Function: return "<function " + fn_->name + ">";
    }
    return "";
}

const char *Value::type_name() const {
    switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return dict_->is_namespace ? "Namespace" : "dict";
    case Kind::Function: return "function";
    }
    return "?";
}

List Value::items_for_iteration() const {
    switch (kind_) {
    case Kind::Undefined: return {};
    case Kind::List: return *list_;
    case Kind::Dict: {
        List keys;
        for (const auto &kv : dict_->items) keys.emplace_back(kv.first);
        return keys;
    }
    case Kind::String: {
        List chars;
        std::vector<uint32_t> cps = to_code_points(*s_);
        for (size_t i = 0; i < cps.size(); ++i) chars.emplace_back(from_code_points(cps, i, i + 1));
        return chars;
    }
    default: fail(VT_ERR_INVALID_ARGUMENT, "'%s' object is not iterable", type_name());
    }
}

bool equals(const Value &a, const Value &b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
        return a.as_int() == b.as_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
    case Value::Kind::Undefined: case Value::Kind::None: return true;
    case Value::Kind::String: return a.str() == b.str();
    case Value::Kind::List: {
        if (a.list().size() != b.list().size()) return false;
        for (size_t i = 0; i < a.list().size(); ++i)
            if (!equals(a.list()[i], b.list()[i])) return false;
        return true;
    }
    case Value::Kind::Dict: {
        if (&a.dict() == &b.dict()) return true;
        if (a.dict().is_namespace || b.dict().is_namespace) return false;
        if (a.dict().items.size() != b.dict().items.size()) return false;
        for (const auto &kv : a.dict().items) {
            const Value *o = b.dict().find(kv.first);
            if (!o || !equals(kv.second, *o)) return false;
        }
        return true;
    }
    case Value::Kind::Function: return &a.function() == &b.function();
    default: return false;
    }
}

bool less(const Value &a, const Value &b) {
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 order is code point order
    if (a.is_list() && b.is_list()) {
        const List &x = a.list(), &y = b.list();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (!equals(x[i], y[i])) return less(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    fail(VT_ERR_INVALID_ARGUMENT, "'<' not supported between instances of '%s' and '%s'", a.type_name(),
         b.type_name());
}

namespace {

void dump_string(std::string &out, const std::string &s, bool ensure_ascii) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        char buf[16];
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c == '\b') out += "\\b";
        else if (c == '\f') out += "\\f";
        else if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else if (c >= 0x80 && ensure_ascii) {
            std::vector<uint32_t> cps = to_code_points(std::string_view(s).substr(i, 4));
            uint32_t cp = cps.empty() ? c : cps[0];
            std::string one;
            append_utf8(one, cp);
            i += one.size();
            if (cp >= 0x10000 && cp <= 0x10FFFF) {
                uint32_t v = cp - 0x10000;
                std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            } else {
                std::snprintf(buf, sizeof buf, "\\u%04x", cp > 0x10FFFF ? cp - 0x110000u : cp);
            }
            out += buf;
            continue;
        } else out += char(c);
        ++i;
    }
    out += '"';
}

void dump(std::string &out, const Value &v, const JsonDumpOptions &opt, int depth) {
    if (depth > 512) fail(VT_ERR_INVALID_ARGUMENT, "tojson: value nested too deeply");
    bool pretty = opt.indent >= 0 || !opt.indent_str.empty();
    std::string unit = opt.indent_str.empty() ? std::string(size_t(std::max(opt.indent, 0)), ' ') : opt.indent_str;
    const std::string item_sep = !opt.item_sep.empty() ? opt.item_sep : (pretty ? "," : ", ");
    const std::string key_sep = !opt.key_sep.empty() ? opt.key_sep : ": ";
    auto newline = [&](int d) {
        out += '\n';
        for (int i = 0; i < d; ++i) out += unit;
        RenderBudget::check_size(out.size());
    };
    switch (v.kind()) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: {
        double f = v.as_double();
        if (std::isnan(f)) out += "NaN";
        else if (std::isinf(f)) out += f < 0 ? "-Infinity" : "Infinity";
        else out += python_float_repr(f);
        return;
    }
    case Value::Kind::String: dump_string(out, v.str(), opt.ensure_ascii); return;
    case Value::Kind::List: {
        const List &l = v.list();
        if (l.empty()) { out += "[]"; return; }
        out += '[';
        for (size_t i = 0; i < l.size(); ++i) {
            if (i) out += item_sep;
            if (pretty) newline(depth + 1);
            dump(out, l[i], opt, depth + 1);
            RenderBudget::check_size(out.size());
        }
        if (pretty) newline(depth);
        out += ']';
        return;
    }
    case Value::Kind::Dict: {
        if (v.dict().is_namespace) break;
        std::vector<const std::pair<std::string, Value> *> items;
        for (const auto &kv : v.dict().items) items.push_back(&kv);
        if (opt.sort_keys)
            std::stable_sort(items.begin(), items.end(), [](auto *a, auto *b) { return a->first < b->first; });
        if (items.empty()) { out += "{}"; return; }
        out += '{';
        for (size_t i = 0; i < items.size(); ++i) {
            if (i) out += item_sep;
            if (pretty) newline(depth + 1);
            dump_string(out, items[i]->first, opt.ensure_ascii);
            out += key_sep;
            dump(out, items[i]->second, opt, depth + 1);
            RenderBudget::check_size(out.size());
        }
        if (pretty) newline(depth);
        out += '}';
        return;
    }
    default: break;
    }
    fail(VT_ERR_INVALID_ARGUMENT, "Object of type %s is not JSON serializable", v.type_name());
}

} // namespace

std::string json_dumps(const Value &v, const JsonDumpOptions &opt) {
    std::string out;
    dump(out, v, opt, 0);
    return out;
}

} // namespace vt::jinja
