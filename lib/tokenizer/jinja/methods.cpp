// Methods of str, dict and list that templates call. The methods that would
// change a list or dict are absent on purpose: transformers renders in an
// ImmutableSandboxedEnvironment, where calling them is an error.
#include <cstdio>

#include "builtins.h"
#include "core/error.h"
#include "text.h"

namespace vt::jinja {

namespace {

using Method = Value (*)(const Value &self, Args &args);

std::string arg_str(const Args &a, size_t i, const char *name, const char *method) {
    const Value *v = a.get(i, name);
    if (!v || !v->is_string()) fail(VT_ERR_INVALID_ARGUMENT, "%s() argument '%s' must be str", method, name);
    return v->str();
}

// A str argument that may be None or absent (strip's chars, split's sep).
bool opt_str(const Args &a, size_t i, const char *name, std::string &out) {
    const Value *v = a.get(i, name);
    if (!v || v->is_none()) return false;
    if (!v->is_string()) fail(VT_ERR_INVALID_ARGUMENT, "argument '%s' must be str or None", name);
    out = v->str();
    return true;
}

size_t cp_offset(const std::string &s, size_t byte_pos) { return code_point_count(std::string_view(s).substr(0, byte_pos)); }

Value s_strip(const Value &s, Args &a, bool l, bool r) {
    std::string chars;
    bool has = opt_str(a, 0, "chars", chars);
    return Value(py_strip(s.str(), has ? &chars : nullptr, l, r));
}

Value s_split(const Value &s, Args &a, bool from_right) {
    std::string sep;
    bool has = opt_str(a, 0, "sep", sep);
    if (has && sep.empty()) fail(VT_ERR_INVALID_ARGUMENT, "empty separator");
    int64_t maxsplit = to_int_arg(a.get(1, "maxsplit"), -1, "maxsplit");
    std::vector<std::string> parts;
    if (from_right && maxsplit >= 0 && has) {
        const std::string &t = s.str();
        size_t end = t.size();
        std::vector<std::string> rev;
        while (int64_t(rev.size()) < maxsplit) {
            if (end < sep.size()) break;
            size_t hit = t.rfind(sep, end - sep.size());
            if (hit == std::string::npos) break;
            rev.push_back(t.substr(hit + sep.size(), end - hit - sep.size()));
            end = hit;
        }
        parts.push_back(t.substr(0, end));
        parts.insert(parts.end(), rev.rbegin(), rev.rend());
    } else {
        parts = py_split(s.str(), has ? &sep : nullptr, from_right ? -1 : maxsplit);
    }
    List out;
    for (auto &p : parts) out.emplace_back(std::move(p));
    return Value(std::move(out));
}

Value s_affix(const Value &s, Args &a, bool prefix) {
    const Value *v = a.get(0, prefix ? "prefix" : "suffix");
    if (!v) fail(VT_ERR_INVALID_ARGUMENT, "%s() takes at least 1 argument", prefix ? "startswith" : "endswith");
    List options = v->is_list() ? v->list() : List{*v};
    const std::string &t = s.str();
    for (const Value &o : options) {
        if (!o.is_string()) fail(VT_ERR_INVALID_ARGUMENT, "startswith/endswith first arg must be str or a tuple of str");
        const std::string &p = o.str();
        if (p.size() <= t.size() && (prefix ? t.compare(0, p.size(), p) == 0 : t.compare(t.size() - p.size(), p.size(), p) == 0))
            return Value(true);
    }
    return Value(false);
}

Value s_find(const Value &s, Args &a, bool from_right, bool must) {
    std::string sub = arg_str(a, 0, "sub", "find");
    size_t hit = from_right ? s.str().rfind(sub) : s.str().find(sub);
    if (hit == std::string::npos) {
        if (must) fail(VT_ERR_INVALID_ARGUMENT, "substring not found");
        return Value(int64_t(-1));
    }
    return Value(int64_t(cp_offset(s.str(), hit)));
}

// str.format: {} / {0} / {name}, {{ and }}; format specs are not supported.
Value s_format(const Value &s, Args &a) {
    const std::string &f = s.str();
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < f.size(); ++i) {
        char c = f[i];
        if ((c == '{' || c == '}') && i + 1 < f.size() && f[i + 1] == c) {
            out += c;
            ++i;
            continue;
        }
        if (c != '{') {
            out += c;
            continue;
        }
        size_t e = f.find('}', i);
        if (e == std::string::npos) fail(VT_ERR_INVALID_ARGUMENT, "Single '{' encountered in format string");
        std::string field = f.substr(i + 1, e - i - 1);
        if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
            fail(VT_ERR_UNSUPPORTED, "str.format: format specifications are not supported");
        const Value *v = nullptr;
        if (field.empty()) {
            v = auto_index < a.pos.size() ? &a.pos[auto_index] : nullptr;
            ++auto_index;
        } else if (field.find_first_not_of("0123456789") == std::string::npos) {
            size_t k = std::stoul(field);
            v = k < a.pos.size() ? &a.pos[k] : nullptr;
        } else {
            for (auto &kv : a.kw)
                if (kv.first == field) v = &kv.second;
        }
        if (!v) fail(VT_ERR_INVALID_ARGUMENT, "str.format: no argument for {%s}", field.c_str());
        out += v->to_str();
        i = e;
    }
    return Value(std::move(out));
}

Value s_join(const Value &s, Args &a) {
    const Value *it = a.get(0, "iterable");
    if (!it) fail(VT_ERR_INVALID_ARGUMENT, "join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const Value &v : it->items_for_iteration()) {
        if (!v.is_string()) fail(VT_ERR_INVALID_ARGUMENT, "sequence item: expected str instance, %s found", v.type_name());
        if (!first) out += s.str();
        first = false;
        out += v.str();
    }
    return Value(std::move(out));
}

template <class Pred>
Value s_all(const Value &s, Pred pred) {
    std::vector<uint32_t> cps = to_code_points(s.str());
    if (cps.empty()) return Value(false);
    for (uint32_t c : cps)
        if (!pred(c)) return Value(false);
    return Value(true);
}

Value str_method(const std::string &name, const Value &s, Args &a, bool &found) {
    found = true;
    if (name == "strip") return s_strip(s, a, true, true);
    if (name == "lstrip") return s_strip(s, a, true, false);
    if (name == "rstrip") return s_strip(s, a, false, true);
    if (name == "split") return s_split(s, a, false);
    if (name == "rsplit") return s_split(s, a, true);
    if (name == "startswith") return s_affix(s, a, true);
    if (name == "endswith") return s_affix(s, a, false);
    if (name == "upper") return Value(py_upper(s.str()));
    if (name == "lower") return Value(py_lower(s.str()));
    if (name == "title") return Value(py_title(s.str()));
    if (name == "capitalize") return Value(py_capitalize(s.str()));
    if (name == "replace") {
        return Value(replace_all(s.str(), arg_str(a, 0, "old", "replace"), arg_str(a, 1, "new", "replace"),
                                 to_int_arg(a.get(2, "count"), -1, "count")));
    }
    if (name == "format") return s_format(s, a);
    if (name == "join") return s_join(s, a);
    if (name == "find") return s_find(s, a, false, false);
    if (name == "rfind") return s_find(s, a, true, false);
    if (name == "index") return s_find(s, a, false, true);
    if (name == "count") {
        std::string sub = arg_str(a, 0, "sub", "count");
        if (sub.empty()) return Value(int64_t(code_point_count(s.str()) + 1));
        int64_t n = 0;
        for (size_t p = s.str().find(sub); p != std::string::npos; p = s.str().find(sub, p + sub.size())) ++n;
        return Value(n);
    }
    if (name == "splitlines") {
        List out;
        std::string line;
        const std::string &t = s.str();
        for (size_t i = 0; i < t.size(); ++i) {
            if (t[i] == '\n' || t[i] == '\r') {
                out.emplace_back(line);
                line.clear();
                if (t[i] == '\r' && i + 1 < t.size() && t[i + 1] == '\n') ++i;
            } else {
                line += t[i];
            }
        }
        if (!line.empty()) out.emplace_back(line);
        return Value(std::move(out));
    }
    if (name == "isdigit") return s_all(s, [](uint32_t c) { return c >= '0' && c <= '9'; });
    if (name == "isspace") return s_all(s, py_is_space);
    if (name == "isalpha")
        return s_all(s, [](uint32_t c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; });
    if (name == "isupper") return Value(py_upper(s.str()) == s.str() && py_lower(s.str()) != s.str());
    if (name == "islower") return Value(py_lower(s.str()) == s.str() && py_upper(s.str()) != s.str());
    found = false;
    return Value();
}

Value dict_method(const std::string &name, const Value &d, Args &a, bool &found) {
    found = true;
    if (name == "items") {
        List out;
        for (const auto &kv : d.dict().items) out.push_back(Value::tuple(List{Value(kv.first), kv.second}));
        return Value(std::move(out));
    }
    if (name == "keys") {
        List out;
        for (const auto &kv : d.dict().items) out.emplace_back(kv.first);
        return Value(std::move(out));
    }
    if (name == "values") {
        List out;
        for (const auto &kv : d.dict().items) out.push_back(kv.second);
        return Value(std::move(out));
    }
    if (name == "get") {
        const Value *key = a.get(0, "key");
        if (!key) fail(VT_ERR_INVALID_ARGUMENT, "get expected at least 1 argument");
        const Value *fallback = a.get(1, "default");
        const Value *hit = key->is_string() ? d.dict().find(key->str()) : nullptr;
        if (hit) return *hit;
        return fallback ? *fallback : Value(nullptr);
    }
    found = false;
    return Value();
}

Value list_method(const std::string &name, const Value &l, Args &a, bool &found) {
    found = true;
    const Value *x = a.get(0, "value");
    if (name == "index" || name == "count") {
        if (!x) fail(VT_ERR_INVALID_ARGUMENT, "%s() takes exactly one argument", name.c_str());
        int64_t n = 0;
        for (size_t i = 0; i < l.list().size(); ++i) {
            if (!equals(l.list()[i], *x)) continue;
            if (name == "index") return Value(int64_t(i));
            ++n;
        }
        if (name == "index") fail(VT_ERR_INVALID_ARGUMENT, "%s is not in list", x->repr().c_str());
        return Value(n);
    }
    found = false;
    return Value();
}

bool has_method(const Value &obj, const std::string &name) {
    static const char *const str_names[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "startswith",
                                            "endswith", "upper", "lower", "title", "capitalize", "replace",
                                            "format", "join", "find", "rfind", "index", "count", "splitlines",
                                            "isdigit", "isspace", "isalpha", "isupper", "islower"};
    static const char *const dict_names[] = {"items", "keys", "values", "get"};
    static const char *const list_names[] = {"index", "count"};
    auto in = [&](auto &names) {
        for (const char *n : names)
            if (name == n) return true;
        return false;
    };
    if (obj.is_string()) return in(str_names);
    if (obj.is_dict() && !obj.dict().is_namespace) return in(dict_names);
    if (obj.is_list()) return in(list_names);
    return false;
}

} // namespace

std::shared_ptr<Function> bound_method(const Value &obj, const std::string &name) {
    if (!has_method(obj, name)) return nullptr;
    auto f = std::make_shared<Function>();
    f->name = name;
    f->call = [obj, name](Args &a) {
        bool found = false;
        Value r = obj.is_string() ? str_method(name, obj, a, found)
                  : obj.is_dict() ? dict_method(name, obj, a, found)
                                  : list_method(name, obj, a, found);
        return r;
    };
    return f;
}

} // namespace vt::jinja

namespace vt::jinja {

namespace {

[[noreturn]] void undefined_error(const Value &u) {
    fail(VT_ERR_INVALID_ARGUMENT, "%s", u.undefined_name().empty() ? "value is undefined" : u.undefined_name().c_str());
}

Value missing_attr(const Value &obj, const std::string &name) {
    return Value::undefined("'" + std::string(obj.type_name()) + " object' has no attribute '" + name + "'");
}

} // namespace

Value get_attr(const Value &obj, const std::string &name) {
    if (obj.is_undefined()) undefined_error(obj);
    if (auto m = bound_method(obj, name)) return Value(std::move(m));
    if (obj.is_dict()) {
        if (const Value *v = obj.dict().find(name)) return *v;
    }
    return missing_attr(obj, name);
}

Value get_item(const Value &obj, const Value &key) {
    if (obj.is_undefined()) undefined_error(obj);
    if (obj.is_dict() && key.is_string()) {
        if (const Value *v = obj.dict().find(key.str())) return *v;
        if (auto m = bound_method(obj, key.str())) return Value(std::move(m));
        return Value::undefined("'" + std::string(obj.type_name()) + " object' has no attribute '" + key.str() + "'");
    }
    if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
        int64_t i = key.as_int();
        if (obj.is_list()) {
            int64_t n = int64_t(obj.list().size());
            if (i < 0) i += n;
            if (i < 0 || i >= n) return Value::undefined("list object has no element " + std::to_string(key.as_int()));
            return obj.list()[size_t(i)];
        }
        std::vector<uint32_t> cps = to_code_points(obj.str());
        int64_t n = int64_t(cps.size());
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined("str object has no element " + std::to_string(key.as_int()));
        return Value(from_code_points(cps, size_t(i), size_t(i) + 1));
    }
    if (key.is_string()) return get_attr(obj, key.str());
    return Value::undefined("'" + std::string(obj.type_name()) + " object' has no attribute " + key.repr());
}

} // namespace vt::jinja
