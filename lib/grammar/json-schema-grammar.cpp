// JSON Schema -> GBNF, the language xgrammar 0.2.9 builds with its defaults
// (any_whitespace, strict_mode). The walk mirrors xgrammar's converter where
// its order is observable: rules are shared through xgrammar's cache keys
// (json-schema-internal.h), a sub-schema whose key is {"type":"object"} or
// {"type":"array"} gets the unconstrained basic rule while every other object
// or array is strict, and a resolved $ref takes over its target's cache key.
//
// What xgrammar would ignore (not, if, multipleOf, a $ref's siblings, allOf of
// several schemas, ...) is refused here with VT_ERR_UNSUPPORTED instead.
#include "grammar/json-schema-grammar.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "grammar/json-schema-internal.h"
#include "grammar/regex-grammar.h"

namespace vt::grammar {

namespace {

using jsonschema::Json;

using jsonschema::kColon;
using jsonschema::kSep;
using jsonschema::kWs;
constexpr int kMaxDepth = 256;
constexpr int64_t kInt32Max = 2147483647;

// ---- keywords ----------------------------------------------------------------

// The instance types a keyword applies to.
enum : unsigned { D_ANY = 1, D_STRING = 2, D_NUMBER = 4, D_ARRAY = 8, D_OBJECT = 16, D_ALL = 31 };

struct Keyword {
    const char *name;
    unsigned domain;
};

// Keywords of JSON Schema (2020-12 and older drafts, plus OpenAPI's nullable)
// that constrain values. Other keys are annotations or unknown: ignored.
const Keyword kKeywords[] = {
    {"type", D_ANY}, {"enum", D_ANY}, {"const", D_ANY}, {"anyOf", D_ANY}, {"oneOf", D_ANY},
    {"allOf", D_ANY}, {"not", D_ANY}, {"if", D_ANY}, {"then", D_ANY}, {"else", D_ANY},
    {"$ref", D_ANY}, {"$dynamicRef", D_ANY}, {"$recursiveRef", D_ANY}, {"nullable", D_ANY},
    {"minLength", D_STRING}, {"maxLength", D_STRING}, {"pattern", D_STRING}, {"format", D_STRING},
    {"minimum", D_NUMBER}, {"maximum", D_NUMBER}, {"exclusiveMinimum", D_NUMBER},
    {"exclusiveMaximum", D_NUMBER}, {"multipleOf", D_NUMBER},
    {"items", D_ARRAY}, {"prefixItems", D_ARRAY}, {"minItems", D_ARRAY}, {"maxItems", D_ARRAY},
    {"additionalItems", D_ARRAY}, {"uniqueItems", D_ARRAY}, {"contains", D_ARRAY},
    {"minContains", D_ARRAY}, {"maxContains", D_ARRAY}, {"unevaluatedItems", D_ARRAY},
    {"properties", D_OBJECT}, {"required", D_OBJECT}, {"additionalProperties", D_OBJECT},
    {"patternProperties", D_OBJECT}, {"propertyNames", D_OBJECT}, {"minProperties", D_OBJECT},
    {"maxProperties", D_OBJECT}, {"dependentRequired", D_OBJECT}, {"dependentSchemas", D_OBJECT},
    {"dependencies", D_OBJECT}, {"unevaluatedProperties", D_OBJECT},
};

const Keyword *find_keyword(const std::string &key) {
    for (const Keyword &k : kKeywords)
        if (key == k.name) return &k;
    return nullptr;
}

// Whether the keyword with this value narrows the language at all.
bool constrains(const std::string &key, const Json &value) {
    if ((key == "nullable" || key == "uniqueItems") && value == false) return false;
    // Formats JSON Schema does not define assert nothing (OpenAPI's int32,
    // password, binary, ...); the defined ones are handled or refused.
    if (key == "format" && value.is_string()) {
        const std::string &f = value.get_ref<const std::string &>();
        return jsonschema::format_regex(f) || jsonschema::is_standard_format(f);
    }
    return true;
}

// Refuses each keyword of `s` that constrains instances in `domain` and is
// not one of `used` (those the caller implements).
void refuse_unused(const Json &s, unsigned domain, std::initializer_list<const char *> used,
                   const char *where) {
    for (const auto &[key, value] : s.items()) {
        const Keyword *k = find_keyword(key);
        if (!k || !(k->domain & (domain | D_ANY)) || !constrains(key, value)) continue;
        // A named copy: clang before 16 cannot capture a structured binding.
        const std::string &name = key;
        if (std::any_of(used.begin(), used.end(), [&](const char *u) { return name == u; })) continue;
        fail(VT_ERR_UNSUPPORTED, "JSON Schema: keyword '%s' is not supported %s", key.c_str(), where);
    }
}

unsigned type_domain(const std::string &t) {
    if (t == "string") return D_STRING;
    if (t == "integer" || t == "number") return D_NUMBER;
    if (t == "array") return D_ARRAY;
    if (t == "object") return D_OBJECT;
    return 0;  // boolean, null
}

bool is_type_name(const std::string &t) {
    return t == "string" || t == "integer" || t == "number" || t == "boolean" || t == "null" ||
           t == "array" || t == "object";
}

bool value_has_type(const Json &v, const std::string &t) {
    if (t == "null") return v.is_null();
    if (t == "boolean") return v.is_boolean();
    if (t == "string") return v.is_string();
    if (t == "array") return v.is_array();
    if (t == "object") return v.is_object();
    if (t == "number") return v.is_number();
    if (t == "integer")
        return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    return false;
}

// ---- GBNF pieces -------------------------------------------------------------

std::string join(const std::vector<std::string> &parts, const char *sep) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
    return out;
}

// `item` (one GBNF element or a parenthesized group) repeated min..max times
// (max -1: unbounded); "" when it must not appear.
std::string repeat(const std::string &item, int64_t min, int64_t max) {
    if (max == 0) return "";
    if (min == 0 && max == -1) return item + "*";
    if (min == 1 && max == -1) return item + "+";
    if (min == 0 && max == 1) return item + "?";
    if (min == 1 && max == 1) return item;
    if (min == max) return item + "{" + std::to_string(min) + "}";
    return item + "{" + std::to_string(min) + "," + (max == -1 ? "" : std::to_string(max)) + "}";
}

std::string seq(std::initializer_list<std::string> parts) {
    std::string out;
    for (const std::string &p : parts) {
        if (p.empty()) continue;
        if (!out.empty()) out += ' ';
        out += p;
    }
    return out.empty() ? "\"\"" : out;
}

// Rule names keep to GBNF's [a-zA-Z0-9-] and never contain "--", which the
// regex rules' prefixes use.
std::string sanitize(std::string_view hint) {
    std::string out;
    for (char c : hint) {
        bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (word) out += c;
        else if (!out.empty() && out.back() != '-') out += '-';
    }
    while (!out.empty() && out.back() == '-') out.pop_back();
    if (out.size() > 48) out.resize(48);
    while (!out.empty() && out.back() == '-') out.pop_back();
    return out.empty() ? "r" : out;
}

void check_depth(const Json &root) {
    std::vector<std::pair<const Json *, int>> stack = {{&root, 0}};
    while (!stack.empty()) {
        auto [v, d] = stack.back();
        stack.pop_back();
        if (d > 2 * kMaxDepth) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: nested too deeply");
        if (v->is_structured())
            for (const auto &e : *v) stack.emplace_back(&e, d + 1);
    }
}

// ---- the converter -------------------------------------------------------------

class Converter {
public:
    explicit Converter(const Json &root) : root_(root) {
        for (const auto &[name, body] : jsonschema::basic_rules()) names_.insert(name);
        // Sub-schemas with these keys reuse the basic rules (xgrammar's
        // pre-filled cache): notably {"type":"object"} allows any members.
        static const std::pair<const char *, const char *> basics[] = {
            {"{}", "basic-any"}, {"{\"type\":\"integer\"}", "basic-integer"},
            {"{\"type\":\"number\"}", "basic-number"}, {"{\"type\":\"string\"}", "basic-string"},
            {"{\"type\":\"boolean\"}", "basic-boolean"}, {"{\"type\":\"null\"}", "basic-null"},
            {"{\"type\":\"array\"}", "basic-array"}, {"{\"type\":\"object\"}", "basic-object"}};
        for (auto [key, rule] : basics) cache_[key] = rule;
    }

    std::string run() {
        std::string root = add_rule("root");
        ref_rules_["#"] = root;
        std::string key = jsonschema::cache_key(root_);
        if (auto it = cache_.find(key); it != cache_.end()) {
            set_body(root, use(it->second));
        } else {
            cache_[key] = root;
            check_ref_chain(root_, "#");
            set_body(root, generate(root_, root));
        }
        return emit();
    }

private:
    const Json &root_;
    std::vector<std::pair<std::string, std::string>> rules_;  // name, body, in creation order
    std::unordered_map<std::string, size_t> rule_index_;
    std::unordered_set<std::string> names_;
    std::unordered_map<std::string, std::string> cache_;      // cache key -> rule
    std::unordered_map<std::string, std::string> ref_rules_;  // $ref -> rule
    std::set<std::string> basics_used_;
    std::string regex_rules_;
    int regex_count_ = 0;
    int depth_ = 0;

    std::string add_rule(const std::string &hint) {
        std::string base = sanitize(hint), name = base;
        for (int i = 2; names_.count(name); ++i) name = base + "-" + std::to_string(i);
        names_.insert(name);
        rule_index_[name] = rules_.size();
        rules_.emplace_back(name, "");
        return name;
    }

    void set_body(const std::string &name, std::string body) { rules_[rule_index_.at(name)].second = std::move(body); }

    // A reference to a rule, noting the basic rules the grammar needs.
    std::string use(const std::string &rule) {
        if (jsonschema::basic_rules().count(rule)) basics_used_.insert(rule);
        return rule;
    }

    // The rule of a sub-schema: a cached one when the key matches.
    std::string create_rule(const Json &s, const std::string &hint) {
        std::string key = jsonschema::cache_key(s);
        if (auto it = cache_.find(key); it != cache_.end()) return use(it->second);
        std::string name = add_rule(hint);
        set_body(name, generate(s, name));
        return name;
    }

    // The body (a GBNF expression) of rule `name` for schema `s`. The order of
    // the tests is xgrammar's precedence.
    std::string generate(const Json &s, const std::string &name) {
        struct Depth {
            int &d;
            explicit Depth(int &d_) : d(d_) {
                if (++d > kMaxDepth) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: nested too deeply");
            }
            ~Depth() { --d; }
        } guard(depth_);
        if (s.is_boolean()) {
            if (!s.get<bool>())
                fail(VT_ERR_UNSUPPORTED, "JSON Schema: the schema false (no valid value) is not supported");
            return use("basic-any");
        }
        if (!s.is_object()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: a schema must be an object or a boolean");
        if (s.contains("$ref")) return gen_ref(s, name);
        if (s.contains("const")) return gen_const(s);
        if (s.contains("enum")) return gen_enum(s);
        if (s.contains("anyOf")) return gen_any_of(s, "anyOf", name);
        if (s.contains("oneOf")) return gen_any_of(s, "oneOf", name);  // as anyOf
        if (s.contains("allOf")) return gen_all_of(s, name);
        if (s.contains("type")) {
            const Json &t = s["type"];
            if (t.is_string()) return gen_typed(s, t.get<std::string>(), name);
            if (!t.is_array() || t.empty())
                fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'type' must be a type name or a non-empty array of them");
            std::vector<std::string> alts;
            for (const Json &ti : t) {
                if (!ti.is_string()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'type' must hold strings");
                Json copy = s;
                copy["type"] = ti;
                alts.push_back(create_rule(copy, name + "-" + ti.get<std::string>()));
            }
            return join(alts, " | ");
        }
        // No type: xgrammar infers one from the keywords it sees first.
        if (s.contains("properties") || s.contains("additionalProperties") || s.contains("unevaluatedProperties")) {
            refuse_unused(s, D_ALL, {"properties", "required", "additionalProperties"}, "in an object schema");
            return gen_object(s, name);
        }
        if (s.contains("items") || s.contains("prefixItems") || s.contains("unevaluatedItems")) {
            refuse_unused(s, D_ALL, {"items", "prefixItems", "minItems", "maxItems"}, "in an array schema");
            return gen_array(s, name);
        }
        refuse_unused(s, D_ALL, {}, "without a 'type'");
        return use("basic-any");
    }

    // Refuses a chain of $refs that comes back to itself without content.
    void check_ref_chain(const Json &start, const std::string &uri) {
        std::set<std::string> seen = {uri};
        const Json *cur = &start;
        while (cur->is_object() && cur->contains("$ref") && (*cur)["$ref"].is_string()) {
            std::string next = (*cur)["$ref"].get<std::string>();
            if (!seen.insert(next).second)
                fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: $ref '%s' is circular", next.c_str());
            cur = &jsonschema::resolve_pointer(root_, next);
        }
    }

    std::string gen_ref(const Json &s, const std::string &) {
        refuse_unused(s, D_ALL, {"$ref"}, "next to '$ref'");
        if (!s["$ref"].is_string()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: '$ref' must be a string");
        std::string uri = s["$ref"].get<std::string>();
        if (auto it = ref_rules_.find(uri); it != ref_rules_.end()) return it->second;
        const Json &target = jsonschema::resolve_pointer(root_, uri);
        check_ref_chain(target, uri);
        size_t slash = uri.rfind('/');
        std::string rule = add_rule(slash == std::string::npos ? "ref" : "ref-" + uri.substr(slash + 1));
        ref_rules_[uri] = rule;
        set_body(rule, generate(target, rule));
        // xgrammar files the target's key under this rule, replacing a basic
        // rule for later sub-schemas with the same key.
        cache_[jsonschema::cache_key(target)] = rule;
        return rule;
    }

    // const / enum with a consistent type: the values themselves are the language.
    void check_literal_siblings(const Json &s, const char *kw, const std::vector<const Json *> &values) {
        refuse_unused(s, D_ALL, {kw, "type"}, kw[0] == 'c' ? "next to 'const'" : "next to 'enum'");
        if (!s.contains("type")) return;
        std::vector<std::string> types;
        if (s["type"].is_string()) types.push_back(s["type"].get<std::string>());
        else if (s["type"].is_array())
            for (const Json &t : s["type"])
                if (t.is_string()) types.push_back(t.get<std::string>());
        for (const Json *v : values)
            if (!std::any_of(types.begin(), types.end(), [&](const std::string &t) { return value_has_type(*v, t); }))
                fail(VT_ERR_UNSUPPORTED, "JSON Schema: '%s' holds a value outside 'type'", kw);
    }

    std::string gen_const(const Json &s) {
        // const wins over enum in xgrammar; together (as pydantic writes a
        // Literal) the language is right when the enum holds the value.
        if (s.contains("enum")) {
            const Json &e = s["enum"];
            if (!e.is_array() || std::find(e.begin(), e.end(), s["const"]) == e.end())
                fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'const' is not one of 'enum'");
            Json rest = s;
            rest.erase("enum");
            check_literal_siblings(rest, "const", {&s["const"]});
        } else {
            check_literal_siblings(s, "const", {&s["const"]});
        }
        return jsonschema::gbnf_literal(jsonschema::serialize_value(s["const"]));
    }

    std::string gen_enum(const Json &s) {
        const Json &e = s["enum"];
        if (!e.is_array() || e.empty()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'enum' must be a non-empty array");
        std::vector<const Json *> values;
        for (const Json &v : e) values.push_back(&v);
        check_literal_siblings(s, "enum", values);
        std::vector<std::string> alts;
        for (const Json &v : e) alts.push_back(jsonschema::gbnf_literal(jsonschema::serialize_value(v)));
        return join(alts, " | ");
    }

    std::string gen_any_of(const Json &s, const char *kw, const std::string &name) {
        refuse_unused(s, D_ALL, {kw}, kw[0] == 'a' ? "next to 'anyOf'" : "next to 'oneOf'");
        const Json &opts = s[kw];
        if (!opts.is_array() || opts.empty())
            fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: '%s' must be a non-empty array", kw);
        std::vector<std::string> alts;
        for (size_t i = 0; i < opts.size(); ++i) alts.push_back(create_rule(opts[i], name + "-" + std::to_string(i)));
        return join(alts, " | ");
    }

    std::string gen_all_of(const Json &s, const std::string &name) {
        refuse_unused(s, D_ALL, {"allOf"}, "next to 'allOf'");
        const Json &all = s["allOf"];
        if (!all.is_array()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'allOf' must be an array");
        if (all.size() != 1)
            fail(VT_ERR_UNSUPPORTED, "JSON Schema: 'allOf' with %zu schemas is not supported (only one)", all.size());
        return generate(all[0], name);
    }

    std::string gen_typed(const Json &s, const std::string &t, const std::string &name) {
        if (!is_type_name(t)) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: unknown type '%s'", t.c_str());
        std::string where = "for type '" + t + "'";
        unsigned d = type_domain(t);
        if (t == "string") {
            refuse_unused(s, d, {"type", "minLength", "maxLength", "pattern", "format"}, where.c_str());
            return gen_string(s, name);
        }
        if (t == "integer") {
            refuse_unused(s, d, {"type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}, where.c_str());
            return gen_integer(s);
        }
        if (t == "array") {
            refuse_unused(s, d, {"type", "items", "prefixItems", "minItems", "maxItems"}, where.c_str());
            return gen_array(s, name);
        }
        if (t == "object") {
            refuse_unused(s, d, {"type", "properties", "required", "additionalProperties"}, where.c_str());
            return gen_object(s, name);
        }
        refuse_unused(s, d, {"type"}, where.c_str());
        return use("basic-" + t);
    }

    // The start rule of a regex's GBNF, added to the grammar. A `pattern`
    // (json_string) is restricted to raw JSON string text as xgrammar does;
    // a format's regex is already written for it.
    std::string regex(const std::string &re, bool json_string, const std::string &owner) {
        std::string rules;
        std::string prefix = owner + "--re" + std::to_string(++regex_count_) + "-";
        std::string start = regex_to_gbnf(re, prefix, rules);
        bool printable = std::all_of(re.begin(), re.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
        // NOTE: past 128 repetitions xgrammar's json_string automaton takes
        // strings the pattern does not match; its language cannot be matched.
        if (json_string && printable && jsonschema::restrict_to_json_string(rules, start) &&
            jsonschema::largest_repeat_count(re) > 128)
            fail(VT_ERR_UNSUPPORTED, "JSON Schema: pattern: a repetition count above 128 is not supported");
        regex_rules_ += rules;
        if (!regex_rules_.empty() && regex_rules_.back() != '\n') regex_rules_ += '\n';
        return start;
    }

    int64_t length_bound(const Json &s, const char *kw) {
        const Json &v = s[kw];
        if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<int64_t>() < 0))
            fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: '%s' must be a non-negative integer", kw);
        return v.is_number_unsigned() && v.get<uint64_t>() > (uint64_t)INT64_MAX ? INT64_MAX : v.get<int64_t>();
    }

    std::string gen_string(const Json &s, const std::string &name) {
        bool lengths = s.contains("minLength") || s.contains("maxLength");
        if (s.contains("format")) {
            if (!s["format"].is_string()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'format' must be a string");
            const std::string &f = s["format"].get_ref<const std::string &>();
            if (auto re = jsonschema::format_regex(f)) {
                if (s.contains("pattern") || lengths)
                    fail(VT_ERR_UNSUPPORTED, "JSON Schema: 'format' together with '%s' is not supported",
                         s.contains("pattern") ? "pattern" : s.contains("minLength") ? "minLength" : "maxLength");
                return seq({"\"\\\"\"", regex(*re, false, name), "\"\\\"\""});
            }
            if (jsonschema::is_standard_format(f))
                fail(VT_ERR_UNSUPPORTED, "JSON Schema: format '%s' is not supported", f.c_str());
        }
        if (s.contains("pattern")) {
            if (!s["pattern"].is_string()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'pattern' must be a string");
            if (lengths)
                fail(VT_ERR_UNSUPPORTED, "JSON Schema: 'pattern' together with '%s' is not supported",
                     s.contains("minLength") ? "minLength" : "maxLength");
            return seq({"\"\\\"\"", regex(s["pattern"].get<std::string>(), true, name), "\"\\\"\""});
        }
        int64_t min = s.contains("minLength") ? length_bound(s, "minLength") : 0;
        int64_t max = s.contains("maxLength") ? length_bound(s, "maxLength") : -1;
        if (min > kInt32Max) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'minLength' is too large");
        if (max > kInt32Max) max = -1;  // as xgrammar: unbounded
        if (max != -1 && min > max)
            fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'minLength' is greater than 'maxLength'");
        if (min == 0 && max == -1) return use("basic-string");
        // Length-bounded strings: one character per code point, so no
        // escapes (as xgrammar). xgrammar lets raw tabs and other control
        // characters in, which makes invalid JSON (RFC 8259 wants them
        // escaped); vt keeps them out, as its unbounded strings do. The
        // oracle goldens patch xgrammar's class the same way.
        return seq({"\"\\\"\"", repeat("[^\"\\\\\\x00-\\x1f]", min, max), "\"\\\"\""});
    }

    std::optional<int64_t> integer_bound(const Json &s, const char *kw) {
        if (!s.contains(kw)) return std::nullopt;
        const Json &v = s[kw];
        if (!v.is_number()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: '%s' must be a number", kw);
        if (v.is_number_unsigned()) {
            if (v.get<uint64_t>() > (uint64_t)INT64_MAX) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: '%s' is out of range", kw);
            return (int64_t)v.get<uint64_t>();
        }
        if (v.is_number_integer()) return v.get<int64_t>();
        double d = v.get<double>();
        if (std::floor(d) != d)
            fail(VT_ERR_UNSUPPORTED, "JSON Schema: a fractional '%s' on an integer is not supported", kw);
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
            fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: '%s' is out of range", kw);
        return (int64_t)d;
    }

    std::string gen_integer(const Json &s) {
        std::optional<int64_t> lo = integer_bound(s, "minimum"), hi = integer_bound(s, "maximum");
        if (auto x = integer_bound(s, "exclusiveMinimum")) {
            if (*x == INT64_MAX) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'exclusiveMinimum' leaves no integer");
            lo = lo ? std::max(*lo, *x + 1) : *x + 1;
        }
        if (auto x = integer_bound(s, "exclusiveMaximum")) {
            if (*x == INT64_MIN) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'exclusiveMaximum' leaves no integer");
            hi = hi ? std::min(*hi, *x - 1) : *x - 1;
        }
        if (lo && hi && *lo > *hi) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: the integer range is empty");
        if (!lo && !hi) return use("basic-integer");
        return jsonschema::integer_range_gbnf(lo, hi);
    }

    std::string gen_array(const Json &s, const std::string &name);
    std::string gen_object(const Json &s, const std::string &name);
    std::string key_excluding(const std::vector<std::string> &names, const std::string &owner);
    std::string emit();
};

std::string Converter::gen_array(const Json &s, const std::string &name) {
    std::vector<const Json *> prefix;
    if (s.contains("prefixItems")) {
        if (!s["prefixItems"].is_array()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'prefixItems' must be an array");
        for (const Json &p : s["prefixItems"]) {
            if (p.is_boolean())
                fail(VT_ERR_UNSUPPORTED, "JSON Schema: a boolean in 'prefixItems' is not supported");
            if (!p.is_object()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'prefixItems' must hold schemas");
            prefix.push_back(&p);
        }
    }
    const Json *additional = nullptr;  // strict mode: no items past the prefix unless given
    if (s.contains("items")) {
        const Json &it = s["items"];
        if (!it.is_boolean() && !it.is_object())
            fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'items' must be a schema (the array form is not supported)");
        if (it != false) additional = &it;
    }
    int64_t min = 0, max = -1;
    if (s.contains("minItems")) {
        if (!s["minItems"].is_number_integer()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'minItems' must be an integer");
        min = s["minItems"].is_number_unsigned() && s["minItems"].get<uint64_t>() > (uint64_t)INT64_MAX
                  ? INT64_MAX
                  : std::max<int64_t>(0, s["minItems"].get<int64_t>());
        if (min > kInt32Max) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'minItems' is too large");
    }
    if (s.contains("maxItems")) max = length_bound(s, "maxItems");
    if (max > kInt32Max) max = -1;
    int64_t n = (int64_t)prefix.size();
    if (max != -1 && min > max) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'minItems' is greater than 'maxItems'");
    // NOTE: xgrammar refuses these although JSON Schema would only shorten the
    // prefix; they are refused here too.
    if (max != -1 && max < n)
        fail(VT_ERR_UNSUPPORTED, "JSON Schema: 'maxItems' below the number of 'prefixItems' is not supported");
    if (!additional && n < min)
        fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'minItems' exceeds 'prefixItems' and no other items are allowed");

    std::vector<std::string> items;
    for (int64_t i = 0; i < n; ++i) items.push_back(create_rule(*prefix[i], name + "-" + std::to_string(i)));
    std::string add = additional ? create_rule(*additional, name + "-item") : "";
    const std::string empty = seq({"\"[\"", kWs, "\"]\""});

    if (n == 0) {
        if (!additional || max == 0) return empty;
        std::string tail = repeat("( " + kSep + " " + add + " )", min == 0 ? 0 : min - 1, max == -1 ? -1 : max - 1);
        std::string nonempty = seq({"\"[\"", kWs, add, tail, kWs, "\"]\""});
        return min == 0 ? nonempty + " | " + empty : nonempty;
    }
    // prefixItems are positional: the array may stop after any of them once
    // minItems are there; further items come only after the whole prefix.
    int64_t mandatory = std::min(min, n);
    std::string head;
    for (int64_t i = 0; i < mandatory; ++i) head = i ? seq({head, kSep, items[i]}) : items[i];
    std::string suffix;
    if (additional)
        suffix = repeat("( " + kSep + " " + add + " )", std::max<int64_t>(0, min - n), max == -1 ? -1 : max - n);
    for (int64_t k = n - 1; k >= std::max<int64_t>(mandatory, 1); --k) {
        std::string rule = add_rule(name + "-suffix" + std::to_string(k));
        set_body(rule, "\"\" | " + seq({kSep, items[k], suffix}));
        suffix = rule;
    }
    if (mandatory == 0) {
        std::string rule = add_rule(name + "-suffix0");
        set_body(rule, "\"\" | " + seq({items[0], suffix}));
        suffix = rule;
    }
    return seq({"\"[\"", kWs, head, suffix, kWs, "\"]\""});
}

std::string Converter::gen_object(const Json &s, const std::string &name) {
    std::vector<std::pair<std::string, const Json *>> props;
    if (s.contains("properties")) {
        if (!s["properties"].is_object()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'properties' must be an object");
        for (const auto &[k, v] : s["properties"].items()) props.emplace_back(k, &v);
    }
    std::set<std::string> required;
    if (s.contains("required")) {
        if (!s["required"].is_array()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'required' must be an array");
        for (const Json &r : s["required"]) {
            if (!r.is_string()) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'required' must hold strings");
            std::string key = r.get<std::string>();
            if (std::none_of(props.begin(), props.end(), [&](const auto &p) { return p.first == key; }))
                fail(VT_ERR_UNSUPPORTED, "JSON Schema: 'required' names '%s', which is not in 'properties'",
                     key.c_str());
            required.insert(key);
        }
    }
    bool allow_additional = false;  // strict mode
    const Json *additional = nullptr;
    if (s.contains("additionalProperties")) {
        const Json &a = s["additionalProperties"];
        if (a.is_boolean()) allow_additional = a.get<bool>();
        else if (a.is_object()) allow_additional = true, additional = &a;
        else fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: 'additionalProperties' must be a schema");
    }
    if (allow_additional && !props.empty())
        for (const auto &p : props)
            if (std::any_of(p.first.begin(), p.first.end(),
                            [](char c) { return c < 0x20 || c > 0x7e || c == '"' || c == '\\'; }))
                fail(VT_ERR_UNSUPPORTED,
                     "JSON Schema: property '%s' needs escapes or is not ASCII, which is not supported "
                     "with additionalProperties",
                     p.first.c_str());

    std::vector<std::string> patterns;  // "name": value, per property
    for (size_t i = 0; i < props.size(); ++i) {
        std::string value = create_rule(*props[i].second, name + "-" + props[i].first);
        patterns.push_back(seq({jsonschema::gbnf_literal(jsonschema::serialize_value(props[i].first)), kColon, value}));
    }
    std::string other;  // an additional member
    if (allow_additional) {
        std::string value = additional ? create_rule(*additional, name + "-addl") : use("basic-any");
        std::vector<std::string> names;
        for (const auto &p : props) names.push_back(p.first);
        std::string key = props.empty() ? use("basic-string") : key_excluding(names, name);
        other = seq({key, kColon, value});
    }
    const std::string empty = seq({"\"{\"", kWs, "\"}\""});
    if (props.empty()) {
        if (!allow_additional) return empty;
        return seq({"\"{\"", kWs, other, "( " + kSep + " " + other + " )*", kWs, "\"}\""}) + " | " + empty;
    }
    // Declared properties in order, each optional one skippable, additional
    // members only after the last declared one.
    size_t n = props.size();
    std::vector<std::string> tails(n);
    if (allow_additional) {
        tails[n - 1] = add_rule(name + "-rest");
        set_body(tails[n - 1], "( " + kSep + " " + other + " )*");
    }
    for (size_t i = n - 1; i-- > 0;) {
        std::string with = seq({kSep, patterns[i + 1], tails[i + 1]});
        std::string body = required.count(props[i + 1].first) ? with : seq({tails[i + 1]}) + " | " + with;
        tails[i] = add_rule(name + "-part" + std::to_string(i));
        set_body(tails[i], body);
    }
    std::vector<std::string> choices;
    for (size_t i = 0; i < n; ++i) {
        choices.push_back(seq({patterns[i], tails[i]}));
        if (required.count(props[i].first)) break;
    }
    if (allow_additional && required.empty()) choices.push_back(seq({other, tails[n - 1]}));
    std::string content = seq({"\"{\"", kWs, "( " + join(choices, " | ") + " )", kWs, "\"}\""});
    return required.empty() ? content + " | " + empty : content;
}

// A JSON string key spelled differently from each of `names` (printable ASCII
// without quotes or backslashes): a trie over their raw bytes, as xgrammar's;
// an escaped spelling of a name counts as different.
std::string Converter::key_excluding(const std::vector<std::string> &names, const std::string &owner) {
    struct Node {
        bool terminal = false;
        std::map<char, int> children;
    };
    std::vector<Node> trie(1);
    for (const std::string &nm : names) {
        int cur = 0;
        for (char c : nm) {
            auto it = trie[cur].children.find(c);
            if (it == trie[cur].children.end()) {
                trie.emplace_back();
                it = trie[cur].children.emplace(c, (int)trie.size() - 1).first;
            }
            cur = it->second;
        }
        trie[cur].terminal = true;
    }
    use("basic-string-tail");
    use("basic-escape");
    std::vector<std::string> rule(trie.size());
    for (size_t i = 0; i < trie.size(); ++i) rule[i] = add_rule(owner + "-key" + std::to_string(i));
    for (size_t i = 0; i < trie.size(); ++i) {
        std::vector<std::string> alts;
        if (!trie[i].terminal) alts.push_back("\"\\\"\"");
        std::string cls = "[^\"\\\\\\u0000-\\u001f";
        for (const auto &[c, child] : trie[i].children) jsonschema::append_gbnf_char(cls, (unsigned char)c, true);
        alts.push_back(cls + "] basic-string-tail");
        alts.push_back("\"\\\\\" basic-escape basic-string-tail");
        for (const auto &[c, child] : trie[i].children)
            alts.push_back(jsonschema::gbnf_literal(std::string(1, c)) + " " + rule[child]);
        set_body(rule[i], join(alts, " | "));
    }
    std::string key = add_rule(owner + "-addl-key");
    set_body(key, "\"\\\"\" " + rule[0]);
    return key;
}

std::string Converter::emit() {
    // The basic rules used, with those they refer to.
    std::vector<std::string> todo(basics_used_.begin(), basics_used_.end());
    while (!todo.empty()) {
        std::string b = todo.back();
        todo.pop_back();
        for (const std::string &d : jsonschema::basic_deps(b))
            if (basics_used_.insert(d).second) todo.push_back(d);
    }
    std::string out;
    for (const auto &[name, body] : rules_) out += name + " ::= " + body + "\n";
    out += regex_rules_;
    for (const auto &[name, body] : jsonschema::basic_rules())
        if (basics_used_.count(name)) out += name + " ::= " + body + "\n";
    return out;
}

} // namespace

std::string json_schema_to_gbnf(std::string_view schema) {
    Json root;
    try {
        root = Json::parse(schema.begin(), schema.end());
    } catch (const Json::exception &e) {
        fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: malformed JSON: %s", e.what());
    }
    check_depth(root);
    return Converter(root).run();
}

std::string any_json_gbnf() {
    // xgrammar's builtin JSON grammar (vLLM's json_object): an object or an
    // array at the top, no whitespace around it.
    std::string out = "root ::= basic-object | basic-array\n";
    for (const auto &[name, body] : jsonschema::basic_rules()) out += name + " ::= " + body + "\n";
    return out;
}

} // namespace vt::grammar
