// JSON Schema -> GBNF (lib/grammar/json-schema-grammar.cpp): for each schema,
// texts its grammar must match and must not, and the schemas refused. The
// language is xgrammar 0.2.9's (any whitespace, strict mode); the cases were
// checked against xgrammar itself, which tests/grammar/check-json-schema-xgrammar.py
// does again on a longer list.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/error.h"
#include "grammar/grammar.h"
#include "grammar/json-schema-grammar.h"

using vt::grammar::any_json_gbnf;
using vt::grammar::gbnf_matches;
using vt::grammar::json_schema_to_gbnf;

namespace {

struct Case {
    std::string schema;
    std::vector<std::string> yes, no;
};

void check(const Case &c) {
    INFO("schema: " << c.schema);
    std::string g = json_schema_to_gbnf(c.schema);
    INFO("grammar:\n" << g);
    for (const std::string &s : c.yes) {
        INFO("must match: " << s);
        CHECK(gbnf_matches(g, s));
    }
    for (const std::string &s : c.no) {
        INFO("must not match: " << s);
        CHECK_FALSE(gbnf_matches(g, s));
    }
}

// The status json_schema_to_gbnf throws (VT_OK if none), and its message.
vt_status refusal(const std::string &schema, std::string *message = nullptr) {
    try {
        json_schema_to_gbnf(schema);
    } catch (const vt::Error &e) {
        if (message) *message = e.what();
        return e.status();
    }
    return VT_OK;
}

} // namespace

TEST_CASE("json schema: scalar types", "[json-schema]") {
    check({R"({"type":"string"})",
           {R"("")", R"("a b")", R"("\"\\\/\b\f\n\r\t\u00e9")", "\"\xc3\xa9\xf0\x9f\x98\x80\"", "\"\x7f\""},
           {R"(")", R"("\x")", R"("\u00e")", "\"a\tb\"", "\"a\nb\"", R"( "a")", R"("a" )", "'a'"}});
    check({R"({"type":"integer"})", {"0", "-12", "7"}, {"-0", "01", "1.0", "1e3", "+1", ""}});
    check({R"({"type":"number"})", {"0", "-0", "-0.5", "1e3", "1E+3", "2.5e-07"}, {"01", ".5", "1.", "-", "1e"}});
    check({R"({"type":"boolean"})", {"true", "false"}, {"True", "1"}});
    check({R"({"type":"null"})", {"null"}, {"nul", "None"}});
    check({"{}", {"1", R"("a")", R"({"a":[1,{}]})", "[ ]", "null"}, {" 1", "1 ", "nul"}});
    check({"true", {"1", "[]"}, {""}});
}

TEST_CASE("json schema: objects", "[json-schema]") {
    const char *abc = R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"},
                          "c":{"type":"boolean"}},"required":["b"]})";
    // Properties in the schema's order, optional ones skippable, no others.
    check({abc,
           {R"({"b":1})", R"({"a":"x","b":1,"c":true})", "{ \"a\" :\n\"x\" ,\t\"b\":1 }", R"({"b":1,"c":false})"},
           {R"({})", R"({"a":"x"})", R"({"b":1,"a":"x"})", R"({"b":1,"d":2})", R"({"b":1,})", R"({"b":1,"b":2})"}});
    check({R"({"type":"object","properties":{"a":{},"b":{}}})", {"{}", "{ }", R"({"b":[]})", R"({"a":1,"b":2})"},
           {R"({"c":1})"}});
    check({R"({"properties":{"a":{"type":"integer"}}})", {R"({"a":1})", "{}"}, {"1", R"({"a":"x"})"}});
    // Strict mode: no members but the declared ones, unless
    // additionalProperties says otherwise; {"type":"object"} alone is any object.
    check({R"({"type":"object"})", {"{}", R"({"x":[1],"y":{}})"}, {"[]"}});
    check({R"({"type":"object","title":"t"})", {R"({"x":1})"}, {}});
    check({R"({"type":"object","$id":"x"})", {"{}"}, {R"({"x":1})"}});
    check({R"({"type":"object","additionalProperties":false})", {"{}"}, {R"({"x":1})"}});
    check({R"({"type":"object","additionalProperties":{"type":"integer"}})", {"{}", R"({"x":1,"y":2})"},
           {R"({"x":"1"})"}});
    // Other members only after the declared ones, under other names.
    check({R"({"type":"object","properties":{"ab":{},"b":{}},"additionalProperties":true})",
           {R"({"ab":1,"x":2})", R"({"x":1,"y":2})", R"({"a":1})", R"({"abc":1})", R"({"\u0061b":1})", R"({"b":1,"a":2})"},
           {R"({"x":1,"ab":2})", R"({"ab":1,"ab":2})", R"({"b":1,"ab":1})"}});
    check({R"({"type":"object","properties":{"a":{}},"required":["a"],"additionalProperties":true})",
           {R"({"a":1,"x":2})"}, {R"({"x":2,"a":1})", R"({"x":2})"}});
    // Keys needing escapes are written as a JSON serializer writes them.
    check({R"({"type":"object","properties":{"q\"/\u00e9\u007f":{"const":1}},"required":["q\"/\u00e9\u007f"]})",
           {"{\"q\\\"/\xc3\xa9\\u007f\":1}"}, {"{\"q\\\"\\/\xc3\xa9\\u007f\":1}"}});
}

TEST_CASE("json schema: arrays", "[json-schema]") {
    check({R"({"type":"array"})", {"[]", R"([1,"a",{}])", "[ ]"}, {"{}"}});
    check({R"({"type":"array","items":{"type":"integer"}})", {"[]", "[1, 2]"}, {R"([1,"a"])", "[1,]"}});
    check({R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})", {"[1]", "[1,2,3]"},
           {"[]", "[1,2,3,4]"}});
    // Strict mode: without "items" no item may follow the prefix.
    check({R"({"type":"array","maxItems":3})", {"[]"}, {"[1]"}});
    check({R"({"prefixItems":[{"type":"integer"},{"type":"string"}]})", {"[]", "[1]", R"([1,"a"])"},
           {R"([1,"a",2])", R"(["a"])"}});
    check({R"({"prefixItems":[{"type":"integer"},{"type":"string"}],"items":{"type":"boolean"},"minItems":1,"maxItems":3})",
           {"[1]", R"([1,"a",true])"}, {"[]", "[1,true]", R"([1,"a",true,true])"}});
}

TEST_CASE("json schema: string lengths", "[json-schema]") {
    // One character per code point, so no escapes (as xgrammar); unlike
    // xgrammar, no raw control characters either (they make invalid JSON).
    check({R"({"type":"string","minLength":2,"maxLength":3})", {R"("ab")", "\"\xc3\xa9\xc3\xa9\""},
           {R"("a")", R"("abcd")", R"("a\"")", "\"a\nb\"", "\"a\tb\"", "\"a\x01b\""}});
    check({R"({"type":"string","maxLength":0})", {R"("")"}, {R"("a")"}});
    check({R"({"type":"string","minLength":0})", {R"("\n")"}, {}});
}

TEST_CASE("json schema: integer ranges", "[json-schema]") {
    check({R"({"type":"integer","minimum":-3,"maximum":12})", {"-3", "0", "9", "10", "12"},
           {"-4", "-0", "13", "012", "100"}});
    check({R"({"type":"integer","exclusiveMinimum":-3,"exclusiveMaximum":12})", {"-2", "11"}, {"-3", "12"}});
    check({R"({"type":"integer","minimum":37})", {"37", "99", "100", "123456789012345678901"}, {"36", "0", "-40"}});
    check({R"({"type":"integer","maximum":-37})", {"-37", "-100"}, {"-36", "0", "37"}});
    check({R"({"type":"integer","minimum":19,"maximum":2031})", {"19", "199", "2031"}, {"18", "2032", "9999"}});
    check({R"({"type":"integer","minimum":-9223372036854775808,"maximum":9223372036854775807})",
           {"-9223372036854775808", "9223372036854775807"}, {"9223372036854775808", "-9223372036854775809"}});
}

TEST_CASE("json schema: const and enum", "[json-schema]") {
    // Values are spelled as xgrammar prints them: compact, keys in order.
    check({R"({"const":{"b":1,"a":[1,2.5,null]}})", {R"({"b":1,"a":[1,2.5,null]})"},
           {R"({"a":[1,2.5,null],"b":1})", R"({"b": 1,"a":[1,2.5,null]})"}});
    check({R"({"const":"a/b\u007f\n"})", {R"("a/b\u007f\n")"}, {R"("a\/b\u007f\n")", "\"a/b\x7f\\n\""}});
    check({R"({"enum":[0.1,1e5,-0.0,1e300,12345678901234567890,1.5e-7]})",
           {"0.1", "100000", "-0", "1e+300", "1.2345678901234567e+19", "1.5e-07"}, {"1e5", "0"}});
    check({R"({"type":"string","enum":["x","y"]})", {R"("x")", R"("y")"}, {R"("z")"}});
    check({R"({"type":"string","const":"x","enum":["x"]})", {R"("x")"}, {R"("y")"}});
}

TEST_CASE("json schema: combinations and references", "[json-schema]") {
    check({R"({"anyOf":[{"type":"integer"},{"type":"string"}]})", {"1", R"("a")"}, {"null"}});
    check({R"({"oneOf":[{"type":"integer"},{"type":"number"}]})", {"1", "1.5"}, {}});
    check({R"({"allOf":[{"type":"integer"}]})", {"1"}, {R"("a")"}});
    check({R"({"type":["string","null"],"minLength":2})", {R"("ab")", "null"}, {R"("a")", "1"}});
    check({R"({"$ref":"#/definitions/A","definitions":{"A":{"type":"integer"}}})", {"1"}, {"a"}});
    check({R"({"$ref":"#/$defs/a~1b%20c","$defs":{"a/b c":{"type":"integer"}}})", {"1"}, {}});
    // Recursion, through the root and through $defs.
    check({R"({"type":"object","properties":{"a":{"$ref":"#"}}})", {"{}", R"({"a":{"a":{}}})"}, {R"({"a":1})"}});
    check({R"({"$defs":{"T":{"anyOf":[{"type":"string"},{"type":"array","items":{"$ref":"#/$defs/T"}}]}},"$ref":"#/$defs/T"})",
           {R"("a")", R"(["a",["b",[]]])"}, {"[1]"}});
    // As in xgrammar, a $ref to {"type":"object"} is strict (only {}), and
    // from then on so is every {"type":"object"} sub-schema.
    check({R"({"$defs":{"O":{"type":"object"}},"type":"object","required":["b","a","c"],
              "properties":{"b":{"type":"object"},"a":{"$ref":"#/$defs/O"},"c":{"type":"object"}}})",
           {R"({"b":{"x":1},"a":{},"c":{}})"}, {R"({"b":{},"a":{"x":1},"c":{}})", R"({"b":{},"a":{},"c":{"x":1}})"}});
}

TEST_CASE("json schema: patterns and formats", "[json-schema][regex]") {
    // Needs regex_to_gbnf. A pattern matches whole strings; what it matches
    // loses quotes, backslashes and controls unless nothing would be left.
    check({R"({"type":"string","pattern":"^[a-z]+$"})", {R"("abc")"}, {R"("")", R"("aB")"}});
    check({R"({"type":"string","pattern":"a.c"})", {R"("abc")", "\"a\xc3\xa9" "c\""}, {R"("xabcx")", R"("a\"c")", R"("a"c")"}});
    check({R"({"type":"string","pattern":"^(a|\")$"})", {R"("a")"}, {R"(""")"}});
    check({R"({"type":"string","pattern":"a\"c"})", {R"("a"c")"}, {R"("a\"c")"}});
    check({R"({"type":"string","format":"date"})", {R"("2020-01-31")"}, {R"("2020-13-01")"}});
    check({R"({"type":"string","format":"email"})", {R"("a@b")", R"("\"a\"@b")"}, {R"("a@b.c")"}});
    check({R"({"type":"string","format":"ipv4"})", {R"("1.2.3.4")"}, {R"("256.1.1.1")"}});
    check({R"({"type":"string","format":"uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"}, {R"("123")"}});
    check({R"({"type":"string","format":"int32"})", {R"("x")"}, {}});  // not a JSON Schema format: no constraint
}

TEST_CASE("json schema: any JSON is an object or an array", "[json-schema]") {
    std::string g = any_json_gbnf();
    for (const char *s : {"{}", "[]", R"({"a":[1,-0,0.5e-3,"\u00e9",true,null]})", "[ {} , [ ] ]"}) {
        INFO(s);
        CHECK(gbnf_matches(g, s));
    }
    for (const char *s : {"1", R"("a")", "null", " {}", "{} ", "{,}"}) {
        INFO(s);
        CHECK_FALSE(gbnf_matches(g, s));
    }
}

TEST_CASE("json schema: refusals", "[json-schema]") {
    std::string msg;
    CHECK(refusal(R"({"type":)", &msg) == VT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(msg, Catch::Contains("malformed JSON"));
    CHECK(refusal("[1]") == VT_ERR_INVALID_ARGUMENT);
    CHECK(refusal(R"({"type":"strin"})") == VT_ERR_INVALID_ARGUMENT);
    CHECK(refusal(R"({"enum":[]})") == VT_ERR_INVALID_ARGUMENT);
    CHECK(refusal(R"({"anyOf":[]})") == VT_ERR_INVALID_ARGUMENT);
    CHECK(refusal(R"({"type":"integer","minimum":5,"maximum":4})") == VT_ERR_INVALID_ARGUMENT);
    CHECK(refusal(R"({"type":"array","items":[{}]})") == VT_ERR_INVALID_ARGUMENT);
    // References.
    CHECK(refusal(R"({"$ref":"#/$defs/Missing"})", &msg) == VT_ERR_INVALID_ARGUMENT);
    CHECK_THAT(msg, Catch::Contains("#/$defs/Missing"));
    CHECK(refusal(R"({"$ref":"#/$defs/A","$defs":{"A":{"$ref":"#/$defs/A"}}})") == VT_ERR_INVALID_ARGUMENT);
    CHECK(refusal(R"({"$ref":"https://example.com/s.json"})") == VT_ERR_UNSUPPORTED);
    // Keywords that would constrain values and are not implemented, named.
    const std::pair<const char *, const char *> keywords[] = {
        {R"({"not":{"type":"string"}})", "not"},
        {R"({"type":"integer","if":{"minimum":1},"then":{"maximum":3}})", "if"},
        {R"({"type":"integer","multipleOf":2})", "multipleOf"},
        {R"({"type":"object","patternProperties":{"^a":{}}})", "patternProperties"},
        {R"({"type":"object","properties":{"a":{}},"minProperties":1})", "minProperties"},
        {R"({"type":"object","properties":{"a":{}},"unevaluatedProperties":false})", "unevaluatedProperties"},
        {R"({"type":"array","items":{},"uniqueItems":true})", "uniqueItems"},
        {R"({"type":"string","nullable":true})", "nullable"},
        {R"({"type":"number","minimum":0})", "minimum"},
        {R"({"minLength":3})", "minLength"},
    };
    for (auto [schema, kw] : keywords) {
        INFO(schema);
        CHECK(refusal(schema, &msg) == VT_ERR_UNSUPPORTED);
        CHECK_THAT(msg, Catch::Contains(kw));
    }
    CHECK(refusal(R"({"allOf":[{"type":"integer"},{"minimum":1}]})") == VT_ERR_UNSUPPORTED);
    CHECK(refusal(R"({"anyOf":[{"type":"integer"}],"type":"integer"})") == VT_ERR_UNSUPPORTED);
    CHECK(refusal(R"({"$ref":"#/$defs/A","type":"string","$defs":{"A":{}}})") == VT_ERR_UNSUPPORTED);
    CHECK(refusal(R"({"type":"string","format":"uri","maxLength":2083})") == VT_ERR_UNSUPPORTED);
    CHECK(refusal(R"({"type":"string","pattern":"^x+$","maxLength":2})") == VT_ERR_UNSUPPORTED);
    CHECK(refusal(R"({"type":"string","format":"iri"})") == VT_ERR_UNSUPPORTED);
    // Where xgrammar would drop the JSON-string restriction of a pattern (its
    // automaton too large), the pattern is refused.
    CHECK(refusal(R"({"type":"string","pattern":"(.{100}){91}"})") == VT_ERR_UNSUPPORTED);
    // Nor past 128 repetitions, where xgrammar's automaton is not exact.
    CHECK(refusal(R"({"type":"string","pattern":"a{0,200}|x"})") == VT_ERR_UNSUPPORTED);
    CHECK(refusal(R"({"type":"string","pattern":"a{128}"})") == VT_OK);
    CHECK(refusal(R"({"type":"object","properties":{"b":{}},"required":["a"]})") == VT_ERR_UNSUPPORTED);
    CHECK(refusal(R"({"type":"object","properties":{"a":false}})") == VT_ERR_UNSUPPORTED);
    CHECK(refusal("false") == VT_ERR_UNSUPPORTED);
    CHECK(refusal(R"({"type":"string","enum":["a",1]})") == VT_ERR_UNSUPPORTED);
    CHECK(refusal(R"({"const":1,"enum":[2]})") == VT_ERR_INVALID_ARGUMENT);
    // Annotations are not keywords.
    CHECK(refusal(R"({"type":"integer","title":"t","description":"d","default":1,"examples":[1],
                      "$schema":"https://json-schema.org/draft/2020-12/schema","$id":"x","x-extra":1})") == VT_OK);
}
