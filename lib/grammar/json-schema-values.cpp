// The schema-independent pieces of the JSON Schema converter
// (json-schema-internal.h): how xgrammar 0.2.9 spells JSON values and cache
// keys, GBNF characters, the basic rules, integer ranges, $ref pointers and
// the string formats.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "grammar/json-schema-internal.h"

namespace vt::grammar::jsonschema {

namespace {

void serialize_string(const std::string &s, std::string &out) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += (char)c;
            }
        }
    }
    out += '"';
}

// picojson keeps integer literals that fit in int64 as integers and reads
// everything else as a double; this prints such a double.
std::string format_double(double d) {
    if (!std::isfinite(d)) fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: a number is out of range");
    char buf[64];
    double ip;
    if (std::fabs(d) < 9007199254740992.0 && std::modf(d, &ip) == 0.0) {
        std::snprintf(buf, sizeof buf, "%.f", d);
        return buf;
    }
    for (int prec = 15; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (std::strtod(buf, nullptr) == d) break;
    }
    return buf;
}

void serialize(const Json &v, std::string &out) {
    switch (v.type()) {
    case Json::value_t::null: out += "null"; break;
    case Json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; break;
    case Json::value_t::number_integer: out += std::to_string(v.get<int64_t>()); break;
    case Json::value_t::number_unsigned: {
        uint64_t u = v.get<uint64_t>();
        out += u <= (uint64_t)INT64_MAX ? std::to_string(u) : format_double((double)u);
        break;
    }
    case Json::value_t::number_float: out += format_double(v.get<double>()); break;
    case Json::value_t::string: serialize_string(v.get_ref<const std::string &>(), out); break;
    case Json::value_t::array: {
        out += '[';
        bool first = true;
        for (const auto &e : v) {
            if (!first) out += ',';
            first = false;
            serialize(e, out);
        }
        out += ']';
        break;
    }
    case Json::value_t::object: {
        out += '{';
        bool first = true;
        for (const auto &[k, e] : v.items()) {
            if (!first) out += ',';
            first = false;
            serialize_string(k, out);
            out += ':';
            serialize(e, out);
        }
        out += '}';
        break;
    }
    default: fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: unexpected JSON value");
    }
}

bool is_cache_skipped(const std::string &key) {
    static const char *const skipped[] = {"title", "default", "description", "examples", "deprecated",
                                          "readOnly", "writeOnly", "$comment", "$schema"};
    for (const char *s : skipped)
        if (key == s) return true;
    return false;
}

void cache_key_into(const Json &v, std::string &out) {
    if (v.is_object()) {
        std::vector<std::pair<std::string, const Json *>> kv;
        for (const auto &[k, e] : v.items())
            if (!is_cache_skipped(k)) kv.emplace_back(k, &e);
        std::sort(kv.begin(), kv.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
        out += '{';
        for (size_t i = 0; i < kv.size(); ++i) {
            if (i) out += ',';
            // NOTE: xgrammar writes the key unescaped; only equality matters.
            out += '"' + kv[i].first + "\":";
            cache_key_into(*kv[i].second, out);
        }
        out += '}';
    } else if (v.is_array()) {
        out += '[';
        for (size_t i = 0; i < v.size(); ++i) {
            if (i) out += ',';
            cache_key_into(v[i], out);
        }
        out += ']';
    } else {
        serialize(v, out);
    }
}

// ---- integer ranges over decimal digit strings -------------------------------

std::string digit_class(char lo, char hi) {
    if (lo == hi) return std::string("\"") + lo + "\"";
    return std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t n) {
    if (n == 0) return "";
    return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

std::string join_seq(const std::string &a, const std::string &b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    return a + " " + b;
}

bool all_of_char(std::string_view s, char c) {
    return std::all_of(s.begin(), s.end(), [c](char x) { return x == c; });
}

// Alternatives matching the digit strings t of a's length with a <= t <= b
// (a <= b, same length; leading zeros are plain digits here).
void same_length(const std::string &a, const std::string &b, const std::string &prefix,
                 std::vector<std::string> &alts) {
    size_t n = a.size();
    if (a == b) {
        alts.push_back(join_seq(prefix, "\"" + a + "\""));
        return;
    }
    if (a[0] == b[0]) {
        same_length(a.substr(1), b.substr(1), join_seq(prefix, digit_class(a[0], a[0])), alts);
        return;
    }
    std::string as = a.substr(1), bs = b.substr(1);
    if (all_of_char(as, '0') && all_of_char(bs, '9')) {
        alts.push_back(join_seq(prefix, join_seq(digit_class(a[0], b[0]), any_digits(n - 1))));
        return;
    }
    same_length(as, std::string(n - 1, '9'), join_seq(prefix, digit_class(a[0], a[0])), alts);
    if (b[0] - a[0] >= 2)
        alts.push_back(join_seq(prefix, join_seq(digit_class((char)(a[0] + 1), (char)(b[0] - 1)),
                                                 any_digits(n - 1))));
    same_length(std::string(n - 1, '0'), bs, join_seq(prefix, digit_class(b[0], b[0])), alts);
}

// Alternatives for the positive integers (no leading zero) in [lo, hi], both
// given as magnitudes in decimal; hi empty means unbounded.
void magnitude_range(const std::string &lo, const std::string &hi, const std::string &prefix,
                     std::vector<std::string> &alts) {
    size_t last = hi.empty() ? lo.size() : hi.size();
    for (size_t len = lo.size(); len <= last; ++len) {
        std::string a = len == lo.size() ? lo : "1" + std::string(len - 1, '0');
        std::string b = !hi.empty() && len == hi.size() ? hi : std::string(len, '9');
        same_length(a, b, prefix, alts);
    }
    if (hi.empty()) {
        // Every number with more digits than lo.
        alts.push_back(join_seq(prefix, "[1-9] [0-9]{" + std::to_string(lo.size()) + ",}"));
    }
}

std::string magnitude(int64_t v) {
    std::string s = std::to_string(v);
    return s[0] == '-' ? s.substr(1) : s;
}

bool magnitude_less(const std::string &a, const std::string &b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
}

} // namespace

std::string serialize_value(const Json &v) {
    std::string out;
    serialize(v, out);
    return out;
}

std::string cache_key(const Json &schema) {
    std::string out;
    cache_key_into(schema, out);
    return out;
}

void append_gbnf_char(std::string &out, char32_t c, bool in_class) {
    static const std::string_view class_specials = "[]\\^-\"", literal_specials = "\\\"";
    char buf[16];
    if (c < 0x80) {
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            std::snprintf(buf, sizeof buf, "\\u%04x", (unsigned)c);
            out += buf;
        } else {
            if ((in_class ? class_specials : literal_specials).find((char)c) != std::string_view::npos) out += '\\';
            out += (char)c;
        }
    } else if (in_class || (c >= 0xD800 && c <= 0xDFFF)) {  // readable ranges; surrogates have no UTF-8
        std::snprintf(buf, sizeof buf, c <= 0xFFFF ? "\\u%04x" : "\\U%08x", (unsigned)c);
        out += buf;
    } else if (c < 0x800) {
        out += (char)(0xC0 | (c >> 6));
        out += (char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += (char)(0xE0 | (c >> 12));
        out += (char)(0x80 | ((c >> 6) & 0x3F));
        out += (char)(0x80 | (c & 0x3F));
    } else {
        out += (char)(0xF0 | (c >> 18));
        out += (char)(0x80 | ((c >> 12) & 0x3F));
        out += (char)(0x80 | ((c >> 6) & 0x3F));
        out += (char)(0x80 | (c & 0x3F));
    }
}

std::string gbnf_literal(std::string_view bytes) {
    std::string out = "\"";
    for (unsigned char c : bytes) {
        if (c < 0x80) append_gbnf_char(out, c, false);
        else out += (char)c;  // UTF-8, validated by the JSON parser
    }
    return out + "\"";
}

std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    std::vector<std::string> alts;
    // Negative numbers: -m for magnitudes m in [|min(hi, -1)|, |lo|].
    if (!lo || *lo < 0) {
        std::string mlo = hi && *hi < 0 ? magnitude(*hi) : "1";
        std::string mhi = lo ? magnitude(*lo) : "";
        if (mhi.empty() || !magnitude_less(mhi, mlo)) magnitude_range(mlo, mhi, "\"-\"", alts);
    }
    if ((!lo || *lo <= 0) && (!hi || *hi >= 0)) alts.push_back("\"0\"");
    if (!hi || *hi > 0) {
        std::string mlo = lo && *lo > 1 ? std::to_string(*lo) : "1";
        std::string mhi = hi ? std::to_string(*hi) : "";
        if (mhi.empty() || !magnitude_less(mhi, mlo)) magnitude_range(mlo, mhi, "", alts);
    }
    std::string out;
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out;
}

const std::map<std::string, std::string> &basic_rules() {
    static const std::map<std::string, std::string> rules = {
        {"basic-escape", "[\"\\\\/bfnrt] | \"u\" [A-Fa-f0-9]{4}"},
        {"basic-string-tail", "( [^\"\\\\\\u0000-\\u001f] | \"\\\\\" basic-escape )* \"\\\"\""},
        {"basic-string", "\"\\\"\" basic-string-tail"},
        {"basic-integer", "\"0\" | \"-\"? [1-9] [0-9]*"},
        {"basic-number", "\"-\"? ( \"0\" | [1-9] [0-9]* ) ( \".\" [0-9]+ )? ( [eE] [-+]? [0-9]+ )?"},
        {"basic-boolean", "\"true\" | \"false\""},
        {"basic-null", "\"null\""},
        {"basic-array", "\"[\" " + kWs + " basic-any ( " + kSep + " basic-any )* " + kWs + " \"]\" | \"[\" " +
                            kWs + " \"]\""},
        {"basic-object", "\"{\" " + kWs + " basic-string " + kColon + " basic-any ( " + kSep +
                             " basic-string " + kColon + " basic-any )* " + kWs + " \"}\" | \"{\" " + kWs +
                             " \"}\""},
        {"basic-any", "basic-number | basic-string | basic-boolean | basic-null | basic-array | basic-object"},
    };
    return rules;
}

std::vector<std::string> basic_deps(const std::string &name) {
    if (name == "basic-string" || name == "basic-string-tail") return {"basic-string-tail", "basic-escape"};
    if (name == "basic-array") return {"basic-any"};
    if (name == "basic-object") return {"basic-string", "basic-any"};
    if (name == "basic-any")
        return {"basic-number", "basic-string", "basic-boolean", "basic-null", "basic-array", "basic-object"};
    return {};
}

const Json &resolve_pointer(const Json &root, const std::string &uri) {
    if (uri.empty() || uri[0] != '#')
        fail(VT_ERR_UNSUPPORTED, "JSON Schema: $ref '%s': only references within the schema (#/...) are supported",
             uri.c_str());
    if (uri.size() > 1 && uri[1] != '/')
        fail(VT_ERR_UNSUPPORTED, "JSON Schema: $ref '%s': anchors are not supported", uri.c_str());
    const Json *cur = &root;
    size_t pos = 1;
    while (pos < uri.size()) {
        size_t end = uri.find('/', pos + 1);
        if (end == std::string::npos) end = uri.size();
        std::string raw = uri.substr(pos + 1, end - pos - 1), part;
        pos = end;
        for (size_t i = 0; i < raw.size(); ++i) {
            auto hex = [](char c) { return std::isxdigit((unsigned char)c) != 0; };
            if (raw[i] == '%' && i + 2 < raw.size() && hex(raw[i + 1]) && hex(raw[i + 2])) {
                part += (char)std::stoi(raw.substr(i + 1, 2), nullptr, 16);
                i += 2;
            } else {
                part += raw[i];
            }
        }
        std::string token;
        for (size_t i = 0; i < part.size(); ++i) {
            if (part[i] == '~' && i + 1 < part.size() && (part[i + 1] == '0' || part[i + 1] == '1')) {
                token += part[i + 1] == '0' ? '~' : '/';
                ++i;
            } else {
                token += part[i];
            }
        }
        if (token.empty()) continue;  // as xgrammar, empty segments are skipped
        if (cur->is_object() && cur->contains(token)) {
            cur = &(*cur)[token];
        } else if (cur->is_array() && !token.empty() &&
                   std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                   token.size() < 10 && std::stoul(token) < cur->size()) {
            cur = &(*cur)[std::stoul(token)];
        } else {
            fail(VT_ERR_INVALID_ARGUMENT, "JSON Schema: $ref '%s' does not resolve ('%s' not found)", uri.c_str(),
                 token.c_str());
        }
    }
    return *cur;
}

std::optional<std::string> format_regex(std::string_view format) {
    static const std::unordered_map<std::string_view, std::string> table = [] {
        std::unordered_map<std::string_view, std::string> m;
        // email: a dot-atom or a quoted local part (its quotes and escapes
        // written as they appear inside a JSON string), then a domain.
        const std::string atext = R"([\w!#$%&'*+/=?^`{|}~-])";
        const std::string dot_string = "(" + atext + "+(\\." + atext + "+)*)";
        const std::string quoted = R"(\\"(\\\\([\x20-\x21\x23-\x5B\x5D-\x7E]|\\"|\\\\)|[\x20\x21\x23-\x5B\x5D-\x7E])*\\")";
        const std::string domain =
            R"(([A-Za-z0-9]([\-A-Za-z0-9]*[A-Za-z0-9])?)((\.[A-Za-z0-9][\-A-Za-z0-9]*[A-Za-z0-9])*))";
        m["email"] = "^(" + dot_string + "|" + quoted + ")@" + domain + "$";

        const std::string date = R"((\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[1-2]\d|3[01])))";
        const std::string time = R"(([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))";
        m["date"] = "^" + date + "$";
        m["time"] = "^" + time + "$";
        m["date-time"] = "^" + date + "T" + time + "$";
        m["duration"] = R"(^P((\d+D|\d+M(\d+D)?|\d+Y(\d+M(\d+D)?)?)(T(\d+S|\d+M(\d+S)?|\d+H(\d+M(\d+S)?)?))?)"
                        R"(|T(\d+S|\d+M(\d+S)?|\d+H(\d+M(\d+S)?)?)|\d+W)$)";

        const std::string decbyte = R"((25[0-5]|2[0-4]\d|[0-1]?\d?\d))";
        m["ipv4"] = "^(" + decbyte + "\\.){3}" + decbyte + "$";
        const std::string h16 = "[0-9a-fA-F]{1,4}";
        const std::string v4 = R"(((25[0-5]|(2[0-4]|1{0,1}[0-9]){0,1}[0-9])\.){3,3}(25[0-5]|(2[0-4]|1{0,1}[0-9]){0,1}[0-9]))";
        m["ipv6"] = "((" + h16 + ":){7,7}" + h16 + "|(" + h16 + ":){1,7}:|(" + h16 + ":){1,6}:" + h16 +
                    "|(" + h16 + ":){1,5}(:" + h16 + "){1,2}|(" + h16 + ":){1,4}(:" + h16 + "){1,3}|(" +
                    h16 + ":){1,3}(:" + h16 + "){1,4}|(" + h16 + ":){1,2}(:" + h16 + "){1,5}|" + h16 +
                    ":((:" + h16 + "){1,6})|:((:" + h16 + "){1,7}|:)|::(ffff(:0{1,4}){0,1}:){0,1}" + v4 +
                    "|(" + h16 + ":){1,4}:" + v4 + ")";
        m["hostname"] = R"(^([a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$)";
        m["uuid"] = "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$";

        // RFC 3986 pieces.
        const std::string pct = "%[0-9A-Fa-f][0-9A-Fa-f]";
        const std::string pchar = R"(([\w\.~!$&'()*+,;=:@-]|)" + pct + ")";
        const std::string qchars = R"(([\w\.~!$&'()*+,;=:@/\?-]|)" + pct + ")*";
        const std::string query = "(\\?" + qchars + ")?";
        const std::string fragment = "(#" + qchars + ")?";
        const std::string path_abempty = "(/" + pchar + "*)*";
        const std::string userinfo = R"(([\w\.~!$&'()*+,;=:-]|)" + pct + ")*";
        const std::string host = R"(([\w\.~!$&'()*+,;=-]|)" + pct + ")*";
        const std::string authority = "(" + userinfo + "@)?" + host + "(:\\d*)?";
        const std::string rootless = "/?(" + pchar + "+(/" + pchar + "*)*)?";
        m["uri"] = R"(^[a-zA-Z][a-zA-Z+\.-]*:(//)" + authority + path_abempty + "|" + rootless + ")" + query +
                   fragment + "$";
        const std::string absolute = "/(" + pchar + "+(/" + pchar + "*)*)?";
        const std::string noscheme = R"(([\w\.~!$&'()*+,;=@-]|)" + pct + ")+(/" + pchar + "*)*";
        m["uri-reference"] = "^(//" + authority + path_abempty + "|" + absolute + "|" + noscheme + ")?" +
                             query + fragment + "$";
        const std::string literals = R"(([\x21\x23-\x24\x26\x28-\x3B\x3D\x3F-\x5B\x5D\x5F\x61-\x7A\x7E]|)" + pct + ")";
        const std::string varchar = "(\\w|" + pct + ")";
        const std::string varspec = varchar + "(\\.?" + varchar + R"()*(:[1-9]\d?\d?\d?|\*)?)";
        const std::string expression = R"(\{([+#\./;\?&=,!@|])?)" + varspec + "(," + varspec + ")*\\}";
        m["uri-template"] = "^(" + literals + "|" + expression + ")*$";

        // A reference token character as JSON string text: '/' and '~' only
        // as ~1 / ~0, quotes, backslashes and controls only escaped.
        const std::string token_char =
            R"(([\x20-\x21\x23-\x2E]|[\x30-\x5B\x5D-\x7D]|[\x7F-\U0010FFFF]|\\["\\/bfnrt]|\\u00[01][0-9A-Fa-f]|~[01]))";
        m["json-pointer"] = "^(/" + token_char + "*)*$";
        m["relative-json-pointer"] = "^(0|[1-9][0-9]*)(#|(/" + token_char + "*)*)$";
        return m;
    }();
    auto it = table.find(format);
    if (it == table.end()) return std::nullopt;
    return it->second;
}

bool is_standard_format(std::string_view format) {
    static const char *const formats[] = {
        "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4",
        "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer",
        "relative-json-pointer", "regex"};
    for (const char *f : formats)
        if (format == f) return true;
    return false;
}

} // namespace vt::grammar::jsonschema
