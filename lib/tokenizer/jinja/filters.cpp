// Jinja's built-in filters (jinja2/filters.py, 3.1) that chat templates use,
// with transformers' own tojson in place of Jinja's HTML-safe one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <unordered_map>

#include "builtins.h"
#include "core/error.h"
#include "text.h"

namespace vt::jinja {

int64_t to_int_arg(const Value *v, int64_t fallback, const char *what) {
    if (!v || v->is_none()) return fallback;
    if (v->is_int() || v->is_bool()) return v->as_int();
    fail(VT_ERR_INVALID_ARGUMENT, "'%s' must be an integer, not %s", what, v->type_name());
}

std::string to_str_arg(const Value *v, const char *what) {
    if (!v || !v->is_string()) fail(VT_ERR_INVALID_ARGUMENT, "'%s' must be a string", what);
    return v->str();
}

std::string percent_format(const std::string &fmt, const Value &args) {
    List list = args.is_list() ? args.list() : List{args};
    std::string out;
    size_t next = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        if (i + 1 < fmt.size() && fmt[i + 1] == '%') {
            out += '%';
            ++i;
            continue;
        }
        size_t j = i + 1;
        std::string spec = "%";
        while (j < fmt.size() && std::string_view("-+ 0#.123456789").find(fmt[j]) != std::string_view::npos) spec += fmt[j++];
        if (j >= fmt.size()) fail(VT_ERR_INVALID_ARGUMENT, "incomplete format");
        // Widths and precisions go to snprintf, whose work (and glibc's
        // buffer for a precision) grows with them; the result is cut at
        // 512 bytes anyway. Real templates use a few digits.
        for (size_t k = 0, run = 0; k < spec.size(); ++k) {
            run = spec[k] >= '0' && spec[k] <= '9' ? run + 1 : 0;
            if (run > 3) fail(VT_ERR_UNSUPPORTED, "format width or precision above 999 in '%s'", spec.c_str());
        }
        char conv = fmt[j];
        if (next >= list.size()) fail(VT_ERR_INVALID_ARGUMENT, "not enough arguments for format string");
        const Value &a = list[next++];
        char buf[512];
        if (conv == 's' || conv == 'r') {
            std::string s = conv == 's' ? a.to_str() : a.repr();
            std::snprintf(buf, sizeof buf, (spec + "s").c_str(), s.c_str());
            out += spec == "%" ? s : std::string(buf);
        } else if (conv == 'd' || conv == 'i') {
            if (!a.is_number()) fail(VT_ERR_INVALID_ARGUMENT, "%%d format: a real number is required");
            std::snprintf(buf, sizeof buf, (spec + "lld").c_str(), (long long)(a.is_float() ? std::trunc(a.as_double()) : a.as_int()));
            out += buf;
        } else if (conv == 'f' || conv == 'e' || conv == 'g') {
            if (!a.is_number()) fail(VT_ERR_INVALID_ARGUMENT, "%%f format: a real number is required");
            std::snprintf(buf, sizeof buf, (spec + conv).c_str(), a.as_double());
            out += buf;
        } else {
            fail(VT_ERR_UNSUPPORTED, "unsupported format character '%c'", conv);
        }
        i = j;
    }
    if (next < list.size() && args.is_list())
        fail(VT_ERR_INVALID_ARGUMENT, "not all arguments converted during string formatting");
    return out;
}

namespace {

using FilterFn = Value (*)(const Value &v, Args &a);

bool flag(const Args &a, size_t i, const char *name, bool fallback = false) {
    const Value *v = a.get(i, name);
    return v ? v->truthy() : fallback;
}

// Jinja's attribute= paths: "a.b.0", each part an item lookup.
Value attribute_of(const Value &v, const std::string &path) {
    Value cur = v;
    size_t start = 0;
    while (true) {
        size_t dot = path.find('.', start);
        std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
        if (cur.is_undefined()) return cur;
        cur = get_item(cur, numeric ? Value(int64_t(std::stoll(part))) : Value(part));
        if (dot == std::string::npos) return cur;
        start = dot + 1;
    }
}

// The key Jinja sorts and deduplicates by: strings lower-cased unless
// case_sensitive, optionally an attribute first.
Value sort_key(const Value &v, const Value *attribute, bool case_sensitive) {
    Value k = attribute && !attribute->is_none() ? attribute_of(v, attribute->to_str()) : v;
    if (!case_sensitive && k.is_string()) return Value(py_lower(k.str()));
    return k;
}

Value f_trim(const Value &v, Args &a) {
    std::string chars;
    const Value *c = a.get(0, "chars");
    bool has = c && !c->is_none();
    if (has) chars = c->to_str();
    return Value(py_strip(v.to_str(), has ? &chars : nullptr, true, true));
}

// transformers: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
Value f_tojson(const Value &v, Args &a) {
    JsonDumpOptions opt;
    opt.ensure_ascii = flag(a, 0, "ensure_ascii");
    const Value *indent = a.get(1, "indent");
    if (indent && indent->is_string()) {
        opt.indent_str = indent->str();
        opt.indent = 0;
    } else if (indent && !indent->is_none()) {
        opt.indent = int(std::clamp<int64_t>(to_int_arg(indent, 0, "indent"), 0, 64));  // Python: negative is 0
    }
    const Value *seps = a.get(2, "separators");
    if (seps && !seps->is_none()) {
        if (!seps->is_list() || seps->list().size() != 2 || !seps->list()[0].is_string() || !seps->list()[1].is_string())
            fail(VT_ERR_INVALID_ARGUMENT, "tojson: separators must be a pair of strings");
        opt.item_sep = seps->list()[0].str();
        opt.key_sep = seps->list()[1].str();
        if (opt.item_sep.empty() || opt.key_sep.empty())
            fail(VT_ERR_UNSUPPORTED, "tojson: empty separators are not supported");
    }
    opt.sort_keys = flag(a, 3, "sort_keys");
    return Value(json_dumps(v, opt));
}

Value f_length(const Value &v, Args &) {
    switch (v.kind()) {
    case Value::Kind::Undefined: return Value(int64_t(0));
    case Value::Kind::String: return Value(int64_t(code_point_count(v.str())));
    case Value::Kind::List: return Value(int64_t(v.list().size()));
    case Value::Kind::Dict: return Value(int64_t(v.dict().items.size()));
    default: fail(VT_ERR_INVALID_ARGUMENT, "object of type '%s' has no len()", v.type_name());
    }
}

Value f_upper(const Value &v, Args &) { return Value(py_upper(v.to_str())); }
Value f_lower(const Value &v, Args &) { return Value(py_lower(v.to_str())); }
Value f_capitalize(const Value &v, Args &) { return Value(py_capitalize(v.to_str())); }

// Jinja's title: words start after whitespace, '-', '(', '{', '[' or '<'.
Value f_title(const Value &v, Args &) {
    std::vector<uint32_t> cps = to_code_points(v.to_str());
    std::string out;
    bool word_start = true;
    for (uint32_t c : cps) {
        bool sep = py_is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
        std::string one;
        append_utf8(one, c);
        out += sep ? one : word_start ? py_upper(one) : py_lower(one);
        word_start = sep;
    }
    return Value(std::move(out));
}

Value f_replace(const Value &v, Args &a) {
    return Value(replace_all(v.to_str(), to_str_arg(a.get(0, "old"), "old"), to_str_arg(a.get(1, "new"), "new"),
                             to_int_arg(a.get(2, "count"), -1, "count")));
}

Value f_join(const Value &v, Args &a) {
    const Value *sep = a.get(0, "d");
    const Value *attr = a.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value &item : v.items_for_iteration()) {
        if (!first && sep) out += sep->to_str();
        first = false;
        out += (attr && !attr->is_none() ? attribute_of(item, attr->to_str()) : item).to_str();
        RenderBudget::check_size(out.size());
    }
    return Value(std::move(out));
}

Value f_default(const Value &v, Args &a) {
    const Value *d = a.get(0, "default_value");
    bool boolean = flag(a, 1, "boolean");
    if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value("");
    return v;
}

Value f_first(const Value &v, Args &) {
    List items = v.items_for_iteration();
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(const Value &v, Args &) {
    List items = v.items_for_iteration();
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_list(const Value &v, Args &) { return Value(v.items_for_iteration()); }

Value f_items(const Value &v, Args &) {
    if (v.is_undefined()) return Value(List{});
    if (!v.is_dict()) fail(VT_ERR_INVALID_ARGUMENT, "Can only get item pairs from a mapping.");
    List out;
    for (const auto &kv : v.dict().items) out.push_back(Value::tuple(List{Value(kv.first), kv.second}));
    return Value(std::move(out));
}

Value f_dictsort(const Value &v, Args &a) {
    Value pairs = f_items(v, a);
    bool cs = flag(a, 0, "case_sensitive");
    const Value *by = a.get(1, "by");
    size_t pos = by && by->is_string() && by->str() == "value" ? 1 : 0;
    bool rev = flag(a, 2, "reverse");
    List out = pairs.list();
    std::stable_sort(out.begin(), out.end(), [&](const Value &x, const Value &y) {
        Value kx = sort_key(x.list()[pos], nullptr, cs), ky = sort_key(y.list()[pos], nullptr, cs);
        return rev ? less(ky, kx) : less(kx, ky);
    });
    return Value(std::move(out));
}

Value f_string(const Value &v, Args &) { return Value(v.to_str()); }

Value f_int(const Value &v, Args &a) {
    const Value *d = a.get(0, "default");
    Value fallback = d ? *d : Value(int64_t(0));
    if (v.is_int() || v.is_bool()) return Value(v.as_int());
    if (v.is_float()) return std::isfinite(v.as_double()) ? Value(int64_t(std::trunc(v.as_double()))) : fallback;
    if (v.is_string()) {
        std::string s = py_strip(v.str(), nullptr, true, true);
        char *end = nullptr;
        long long i = std::strtoll(s.c_str(), &end, to_int_arg(a.get(1, "base"), 10, "base"));
        if (!s.empty() && *end == '\0') return Value(int64_t(i));
        double f = std::strtod(s.c_str(), &end);
        if (!s.empty() && *end == '\0' && std::isfinite(f)) return Value(int64_t(std::trunc(f)));
    }
    return fallback;
}

Value f_float(const Value &v, Args &a) {
    const Value *d = a.get(0, "default");
    Value fallback = d ? *d : Value(0.0);
    if (v.is_number()) return Value(v.as_double());
    if (v.is_string()) {
        std::string s = py_strip(v.str(), nullptr, true, true);
        char *end = nullptr;
        double f = std::strtod(s.c_str(), &end);
        if (!s.empty() && *end == '\0') return Value(f);
    }
    return fallback;
}

Value f_round(const Value &v, Args &a) {
    if (!v.is_number()) fail(VT_ERR_INVALID_ARGUMENT, "round: a number is required");
    int64_t precision = to_int_arg(a.get(0, "precision"), 0, "precision");
    const Value *method = a.get(1, "method");
    std::string m = method ? method->to_str() : "common";
    double scale = std::pow(10.0, double(precision));
    double x = v.as_double() * scale;
    double r = m == "common" ? std::nearbyint(x) : m == "ceil" ? std::ceil(x) : m == "floor" ? std::floor(x) : NAN;
    if (std::isnan(r) && !std::isnan(x)) fail(VT_ERR_INVALID_ARGUMENT, "method must be common, ceil or floor");
    return Value(r / scale);
}

Value f_abs(const Value &v, Args &) {
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    if (v.is_number()) return Value(int64_t(std::llabs(v.as_int())));
    fail(VT_ERR_INVALID_ARGUMENT, "bad operand type for abs(): '%s'", v.type_name());
}

Value f_unique(const Value &v, Args &a) {
    bool cs = flag(a, 0, "case_sensitive");
    const Value *attr = a.get(1, "attribute");
    List out, seen;
    for (const Value &item : v.items_for_iteration()) {
        Value k = sort_key(item, attr, cs);
        bool dup = false;
        for (const Value &s : seen) dup = dup || equals(s, k);
        if (dup) continue;
        seen.push_back(k);
        out.push_back(item);
    }
    return Value(std::move(out));
}

Value f_sort(const Value &v, Args &a) {
    bool rev = flag(a, 0, "reverse");
    bool cs = flag(a, 1, "case_sensitive");
    const Value *attr = a.get(2, "attribute");
    List out = v.items_for_iteration();
    std::stable_sort(out.begin(), out.end(), [&](const Value &x, const Value &y) {
        Value kx = sort_key(x, attr, cs), ky = sort_key(y, attr, cs);
        return rev ? less(ky, kx) : less(kx, ky);
    });
    return Value(std::move(out));
}

Value f_reverse(const Value &v, Args &) {
    if (v.is_string()) {
        std::vector<uint32_t> cps = to_code_points(v.str());
        std::reverse(cps.begin(), cps.end());
        return Value(from_code_points(cps, 0, cps.size()));
    }
    List out = v.items_for_iteration();
    std::reverse(out.begin(), out.end());
    return Value(std::move(out));
}

Value min_max(const Value &v, Args &a, bool want_max) {
    bool cs = flag(a, 0, "case_sensitive");
    const Value *attr = a.get(1, "attribute");
    List items = v.items_for_iteration();
    if (items.empty()) return Value::undefined(want_max ? "No aggregated item, sequence was empty." : "No aggregated item, sequence was empty.");
    size_t best = 0;
    for (size_t i = 1; i < items.size(); ++i) {
        Value kb = sort_key(items[best], attr, cs), ki = sort_key(items[i], attr, cs);
        if (want_max ? less(kb, ki) : less(ki, kb)) best = i;
    }
    return items[best];
}
Value f_min(const Value &v, Args &a) { return min_max(v, a, false); }
Value f_max(const Value &v, Args &a) { return min_max(v, a, true); }

Value add(const Value &x, const Value &y) {
    if (x.is_number() && y.is_number()) {
        if (x.is_float() || y.is_float()) return Value(x.as_double() + y.as_double());
        return Value(x.as_int() + y.as_int());
    }
    fail(VT_ERR_INVALID_ARGUMENT, "unsupported operand type(s) for +: '%s' and '%s'", x.type_name(), y.type_name());
}

Value f_sum(const Value &v, Args &a) {
    const Value *attr = a.get(0, "attribute");
    const Value *start = a.get(1, "start");
    Value total = start ? *start : Value(int64_t(0));
    for (const Value &item : v.items_for_iteration())
        total = add(total, attr && !attr->is_none() ? attribute_of(item, attr->to_str()) : item);
    return total;
}

// Splits map/select-style arguments: the first positional names the filter
// or test, the rest are passed on.
Args rest_args(const Args &a, size_t skip) {
    Args r;
    for (size_t i = skip; i < a.pos.size(); ++i) r.pos.push_back(a.pos[i]);
    r.kw = a.kw;
    return r;
}

Value f_map(const Value &v, Args &a) {
    List out;
    if (!v.truthy()) return Value(std::move(out));  // Jinja maps over a falsy value (None) as empty
    if (a.pos.empty()) {
        const Value *attr = a.get(99, "attribute");
        if (!attr) fail(VT_ERR_INVALID_ARGUMENT, "map: give a filter name or attribute=");
        const Value *dflt = a.get(99, "default");
        for (const Value &item : v.items_for_iteration()) {
            Value r = attribute_of(item, attr->to_str());
            out.push_back(r.is_undefined() && dflt ? *dflt : r);
        }
        return Value(std::move(out));
    }
    std::string name = a.pos[0].to_str();
    for (const Value &item : v.items_for_iteration()) {
        Args r = rest_args(a, 1);
        out.push_back(call_filter(name, item, r));
    }
    return Value(std::move(out));
}

Value select_impl(const Value &v, Args &a, bool by_attr, bool keep) {
    List out;
    if (!v.truthy()) return Value(std::move(out));  // as Jinja: a falsy value (None) selects nothing
    size_t next = 0;
    std::string attr;
    if (by_attr) {
        if (a.pos.empty()) fail(VT_ERR_INVALID_ARGUMENT, "selectattr/rejectattr need an attribute name");
        attr = a.pos[next++].to_str();
    }
    std::string test = next < a.pos.size() ? a.pos[next++].to_str() : "";
    for (const Value &item : v.items_for_iteration()) {
        Value subject = by_attr ? attribute_of(item, attr) : item;
        bool ok;
        if (test.empty()) {
            ok = subject.truthy();
        } else {
            Args r = rest_args(a, next);
            ok = call_test(test, subject, r);
        }
        if (ok == keep) out.push_back(item);
    }
    return Value(std::move(out));
}
Value f_select(const Value &v, Args &a) { return select_impl(v, a, false, true); }
Value f_reject(const Value &v, Args &a) { return select_impl(v, a, false, false); }
Value f_selectattr(const Value &v, Args &a) { return select_impl(v, a, true, true); }
Value f_rejectattr(const Value &v, Args &a) { return select_impl(v, a, true, false); }

Value f_indent(const Value &v, Args &a) {
    const Value *w = a.get(0, "width");
    const int64_t width = w && w->is_string() ? 0 : std::max<int64_t>(0, to_int_arg(w, 4, "width"));
    RenderBudget::check_size(size_t(std::min<uint64_t>(uint64_t(width), SIZE_MAX)));
    std::string unit = w && w->is_string() ? w->str() : std::string(size_t(width), ' ');
    bool first = flag(a, 1, "first");
    bool blank = flag(a, 2, "blank");
    Args none;
    Value lines_v = bound_method(Value(v.to_str() + "\n"), "splitlines")->call(none);
    const List &lines = lines_v.list();
    std::string rv;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string &line = lines[i].str();
        if (i > 0) rv += "\n" + (blank || !line.empty() ? unit : std::string());
        rv += line;
        RenderBudget::check_size(rv.size());
    }
    if (first) rv = unit + rv;
    return Value(std::move(rv));
}

Value f_safe(const Value &v, Args &) { return v.is_markup() ? v : Value::markup(v.to_str()); }

Value f_escape(const Value &v, Args &) { return v.is_markup() ? v : Value::markup(html_escape(v.to_str())); }

} // namespace

std::string html_escape(const std::string &s) {
    std::string out;
    for (char c : s) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

namespace {

Value f_format(const Value &v, Args &a) {
    if (!a.kw.empty()) fail(VT_ERR_UNSUPPORTED, "format filter: keyword arguments are not supported");
    return Value(percent_format(v.to_str(), Value(a.pos)));
}

Value f_attr(const Value &v, Args &a) { return get_attr(v, to_str_arg(a.get(0, "name"), "name")); }

Value f_wordcount(const Value &v, Args &) { return Value(int64_t(py_split(v.to_str(), nullptr, -1).size())); }

const std::unordered_map<std::string, FilterFn> &filters() {
    static const std::unordered_map<std::string, FilterFn> table = {
        {"trim", f_trim}, {"tojson", f_tojson}, {"length", f_length}, {"count", f_length},
        {"upper", f_upper}, {"lower", f_lower}, {"capitalize", f_capitalize}, {"title", f_title},
        {"replace", f_replace}, {"join", f_join}, {"default", f_default}, {"d", f_default},
        {"first", f_first}, {"last", f_last}, {"list", f_list}, {"items", f_items},
        {"dictsort", f_dictsort}, {"string", f_string}, {"int", f_int}, {"float", f_float},
        {"round", f_round}, {"abs", f_abs}, {"unique", f_unique}, {"sort", f_sort},
        {"reverse", f_reverse}, {"min", f_min}, {"max", f_max}, {"sum", f_sum}, {"map", f_map},
        {"select", f_select}, {"reject", f_reject}, {"selectattr", f_selectattr},
        {"rejectattr", f_rejectattr}, {"indent", f_indent}, {"safe", f_safe}, {"escape", f_escape},
        {"e", f_escape}, {"format", f_format}, {"attr", f_attr}, {"wordcount", f_wordcount},
    };
    return table;
}

} // namespace

Value call_filter(const std::string &name, const Value &v, Args &args) {
    auto it = filters().find(name);
    if (it == filters().end()) fail(VT_ERR_UNSUPPORTED, "no filter named '%s'", name.c_str());
    // Jinja's filters see Undefined as an empty string, except those that ask about it.
    if (v.is_undefined() && name != "default" && name != "d" && name != "length" && name != "count" &&
        name != "string" && name != "trim" && name != "upper" && name != "lower" && name != "list" &&
        name != "items" && name != "join" && name != "first" && name != "last" && name != "capitalize" &&
        name != "title" && name != "replace" && name != "escape" && name != "e" && name != "safe" &&
        name != "unique" && name != "map" && name != "select" && name != "reject" && name != "selectattr" &&
        name != "rejectattr" && name != "sort" && name != "reverse" && name != "sum" && name != "indent" &&
        name != "format" && name != "wordcount")
        fail(VT_ERR_INVALID_ARGUMENT, "%s", v.undefined_name().empty() ? "value is undefined" : v.undefined_name().c_str());
    return it->second(v, args);
}

} // namespace vt::jinja
