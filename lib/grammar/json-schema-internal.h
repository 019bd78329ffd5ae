// Helpers of the JSON Schema converter (json-schema-grammar.cpp) that do not
// walk schemas: how xgrammar 0.2.9 prints JSON values, GBNF spelling, the
// basic rules, integer ranges, $ref pointers, the format regexes, and the
// JSON-string restriction of a pattern.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace vt::grammar::jsonschema {

using Json = nlohmann::ordered_json;

// The spacing xgrammar allows between the tokens of a JSON value.
inline const std::string kWs = "[ \\n\\r\\t]*";
inline const std::string kSep = kWs + " \",\" " + kWs;    // between items / members
inline const std::string kColon = kWs + " \":\" " + kWs;  // between a key and its value

// xgrammar's rules for unconstrained values (basic-any, basic-string, ...),
// by name, and the basic rules each one refers to.
const std::map<std::string, std::string> &basic_rules();
std::vector<std::string> basic_deps(const std::string &name);

// The schema a $ref names: "#" or a JSON pointer "#/a/b" (~0 ~1 and %XX
// decoded, empty segments skipped as xgrammar does). Throws vt::Error:
// VT_ERR_UNSUPPORTED for other URIs, VT_ERR_INVALID_ARGUMENT when nothing is there.
const Json &resolve_pointer(const Json &root, const std::string &uri);

// The value as xgrammar prints it (picojson's serializer): compact, keys in
// document order, strings with \" \\ \b \f \n \r \t and \u00xx for the other
// control characters and 0x7f, everything else (/ and UTF-8 included) raw;
// integers in int64 range exactly, other numbers as doubles ("%.f" for whole
// values below 2^53, else the shortest of %.15g, %.16g, %.17g that reads back
// the same). const and enum match exactly this spelling. Throws vt::Error
// (VT_ERR_INVALID_ARGUMENT) for a non-finite number.
std::string serialize_value(const Json &v);

// The key under which xgrammar caches the rule of a schema: keys sorted, the
// annotations title, default, description, examples, deprecated, readOnly,
// writeOnly, $comment and $schema dropped at every level. Two schemas with the
// same key share a rule, and the key {"type":"object"} (or "array") selects
// the unconstrained basic rule instead of the strict one.
std::string cache_key(const Json &schema);

// A GBNF string literal of `bytes` (UTF-8): quotes, backslashes and control
// characters escaped, other characters raw.
std::string gbnf_literal(std::string_view bytes);

// Appends code point `c` as GBNF text inside a literal or a [class]: printable
// ASCII raw, UTF-8 raw in literals; else escaped as \uHHHH or \UHHHHHHHH
// (never \xHH, which xgrammar's GBNF reader takes greedily).
void append_gbnf_char(std::string &out, char32_t c, bool in_class);

// A GBNF expression (alternatives, no enclosing parentheses) of the canonical
// JSON integers n with lo <= n <= hi (either side open when absent): no
// leading zeros, no "-0". Requires lo <= hi when both are given.
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

// The regex xgrammar uses for a string format ("date", "email", ...), written
// for the text between the quotes of a JSON string; nullopt for a format it
// does not know.
std::optional<std::string> format_regex(std::string_view format);

// Whether JSON Schema (2020-12 and earlier drafts) defines `format`: such a
// format constrains values, so one without a regex above is refused rather
// than ignored.
bool is_standard_format(std::string_view format);

// xgrammar compiles a `pattern` with json_string=true when the pattern is
// printable ASCII: every character the regex matches (literals and classes
// alike) loses '"', '\' and the control characters U+0000-U+001F, so a JSON
// string never needs escapes. When that leaves the regex with no string at
// all, xgrammar keeps the plain regex instead. `rules` holds the GBNF rules of
// the regex (regex_to_gbnf's output) with start rule `start`; on success they
// are rewritten in place and true is returned; false (rules unchanged) when
// the restricted language is empty. Throws vt::Error (VT_ERR_UNSUPPORTED) for
// GBNF it cannot read.
bool restrict_to_json_string(std::string &rules, const std::string &start);

} // namespace vt::grammar::jsonschema
