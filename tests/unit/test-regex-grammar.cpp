// Regex -> GBNF (lib/grammar/regex-grammar.cpp): strings each pattern must
// and must not match, through the GBNF matcher, and the refusals. The
// language is xgrammar 0.2.9's (tests/grammar/check-regex-xgrammar.py
// compares token masks with it); its oddities are tested here on purpose,
// so that a change to one shows up as a decision, not as an accident.
#include <catch2/catch.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "grammar/grammar.h"
#include "grammar/regex-grammar.h"

using vt::grammar::regex_to_gbnf;

namespace {

std::string grammar_of(std::string_view pattern) {
    std::string rules;
    const std::string start = regex_to_gbnf(pattern, "re", rules);
    return "root ::= " + start + "\n" + rules;
}

struct Case {
    const char *pattern;
    std::vector<std::string> in, out;
};

void check(const Case &c) {
    const std::string g = grammar_of(c.pattern);
    INFO("pattern " << c.pattern << "\n" << g);
    for (const std::string &s : c.in) {
        INFO("must match: \"" << s << "\"");
        CHECK(vt::grammar::gbnf_matches(g, s));
    }
    for (const std::string &s : c.out) {
        INFO("must not match: \"" << s << "\"");
        CHECK_FALSE(vt::grammar::gbnf_matches(g, s));
    }
}

vt_status status_of(std::string_view pattern, std::string *message = nullptr) {
    std::string rules;
    try {
        regex_to_gbnf(pattern, "re", rules);
    } catch (const vt::Error &e) {
        if (message) *message = e.what();
        return e.status();
    }
    return VT_OK;
}

} // namespace

TEST_CASE("regex: literals, alternation, groups", "[regex-grammar]") {
    const Case cases[] = {
        {"abc", {"abc"}, {"", "ab", "abcd", "abd"}},
        {"", {""}, {"a"}},
        {"a|bc|", {"a", "bc", ""}, {"b", "abc"}},
        {"|x", {"", "x"}, {"xx"}},
        {"(ab|c)d", {"abd", "cd"}, {"abcd", "d"}},
        {"(?:ab)(c)", {"abc"}, {"ab"}},
        {"(?<word>x)y", {"xy"}, {"x"}},
        {"()a(|)", {"a"}, {""}},
        {"a b", {"a b"}, {"ab"}},
        {"\"'\\\\", {"\"'\\"}, {"\"'"}},
        {"é😀中", {"é😀中"}, {"é", "e😀中"}},
        {"\n\t", {"\n\t"}, {"\n"}},
    };
    for (const Case &c : cases) check(c);
}

TEST_CASE("regex: quantifiers, lazy ones match the same", "[regex-grammar]") {
    const Case cases[] = {
        {"a*", {"", "a", "aaaa"}, {"b", "ab"}},
        {"a+b?", {"a", "aab", "ab"}, {"", "b", "abb"}},
        {"a*?b+?c??", {"b", "aabbc"}, {"a", "abcc"}},
        {"a{3}", {"aaa"}, {"aa", "aaaa"}},
        {"a{2,}", {"aa", "aaaaa"}, {"a"}},
        {"a{1,3}?", {"a", "aaa"}, {"", "aaaa"}},
        {"(ab){0,2}c", {"c", "abc", "ababc"}, {"abababc", "ac"}},
        {"x{0}y", {"y"}, {"xy"}},
        {"a{0,0}", {""}, {"a"}},
        {"a{1000}", {std::string(1000, 'a')}, {std::string(999, 'a')}},
        {"é{2}", {"éé"}, {"é"}},
    };
    for (const Case &c : cases) check(c);
}

TEST_CASE("regex: loops over parts that match the empty string", "[regex-grammar]") {
    // These become loops over non-empty bodies (see simplify()): a GBNF
    // compiler refuses the literal forms as left recursion.
    const Case cases[] = {
        {"(a?)*", {"", "a", "aaa"}, {"b"}},
        {"(a|)+", {"", "a", "aa"}, {"b"}},
        {"(a?b?)*c", {"c", "abbac", "bbc"}, {"", "ca"}},
        {"(a*b*)+", {"", "ba", "aabba"}, {"c"}},
        {"(a?){2,}", {"", "a", "aaaa"}, {"b"}},
        {"(a?){3}", {"", "aaa"}, {"aaaa"}},
        {"(|)*x", {"x"}, {"", "xx"}},
        {"((a|)|b)+", {"", "ab", "bba"}, {"c"}},
    };
    for (const Case &c : cases) check(c);
}

TEST_CASE("regex: dot and class escapes", "[regex-grammar]") {
    const Case cases[] = {
        // '.' is any code point, line breaks included.
        {".", {"a", "\n", "\r", "é", "😀", std::string("\0", 1)}, {"", "ab"}},
        {"\\d+", {"0", "0123456789"}, {"a", "٣"}},
        {"\\D", {"a", "é"}, {"5"}},
        // \w is ASCII only.
        {"\\w+", {"az_AZ09"}, {"é", "-"}},
        {"\\W", {"é", "-", " "}, {"a", "_"}},
        // \s is ECMAScript's white space: NBSP, U+2028, BOM included.
        {"\\s", {" ", "\t", "\n", "\v", "\f", "\r", "\u00A0", "\u1680", "\u2000", "\u2028", "\u3000", "\uFEFF"},
         {"a", "\u200B", "\u0085"}},
        {"\\S", {"a", "\u200B"}, {" ", "\u00A0"}},
    };
    for (const Case &c : cases) check(c);
}

TEST_CASE("regex: bracket classes", "[regex-grammar]") {
    const Case cases[] = {
        {"[a-c]+", {"abcab"}, {"d", ""}},
        {"[^a-c]", {"d", "é", "😀", "\n"}, {"a", "", "dd"}},
        {"[a-]", {"a", "-"}, {"b"}},
        {"[-a]", {"a", "-"}, {"b"}},
        {"[a-c-e]", {"a", "b", "-", "e"}, {"d"}},
        {"[--/]", {"-", ".", "/"}, {","}},
        {"[\\d-z]", {"5", "-", "z"}, {"a", "y"}},
        {"[\\w.]", {"a", "_", "."}, {"-"}},
        {"[\\s\\d]", {" ", "7", "\u2028"}, {"a"}},
        {"[^\\s]", {"a"}, {" ", "\u00A0"}},
        {"[\\D]", {"a"}, {"1"}},
        {"[\\]\\-\\\\]", {"]", "-", "\\"}, {"a"}},
        {"[!-\\]]", {"!", "A", "]"}, {"^"}},
        {"[.*+?(){}|$]", {".", "*", "{", "$"}, {"a"}},
        {"[a^]", {"a", "^"}, {"b"}},
        {"[é-ü]", {"é", "ü", "ñ"}, {"e", "ÿ"}},
        {"[😀-😂]", {"😀", "😁"}, {"😃"}},
        {"[\\u00e9\\n\\x41]", {"é", "\n", "A"}, {"a"}},
        {"[\\n\\t\\b]", {"\n", "\t", "\b"}, {"n", "b"}},
        {"[\\1\\k\\p]", {"1", "k", "p"}, {"\\"}},
    };
    for (const Case &c : cases) check(c);
}

TEST_CASE("regex: escapes", "[regex-grammar]") {
    const Case cases[] = {
        {"\\.\\/\\-\\*\\(\\[\\{", {"./-*([{"}, {}},
        {"\\x41\\u00e9\\U0001F600\\u{1F601}", {"Aé😀😁"}, {}},
        {"\\cA\\cz", {"\x01\x1a"}, {"cAcz"}},
        {"\\a\\e\\f\\v\\0", {std::string("\a\x1b\f\v\0", 5)}, {}},
        {"\\q\\é\\ ", {"qé "}, {}},
        // Incomplete \x and \u stand for the letter itself.
        {"\\xgg", {"xgg"}, {}},
        {"\\u123z", {"u123z"}, {}},
    };
    for (const Case &c : cases) check(c);
}

TEST_CASE("regex: anchors are ignored wherever they stand (xgrammar)", "[regex-grammar]") {
    const Case cases[] = {
        {"^abc$", {"abc"}, {"xabc"}},
        {"^a$|^b$", {"a", "b"}, {"ab"}},
        {"^(a|$)", {"a", ""}, {"aa"}},
        {"a^b$c", {"abc"}, {"ab"}},
        {"a^*", {"", "aa"}, {"b"}},
    };
    for (const Case &c : cases) check(c);
}

TEST_CASE("regex: xgrammar's oddities, kept on purpose", "[regex-grammar]") {
    const Case cases[] = {
        // \x takes every hex digit that follows, as in C.
        {"\\x414", {"\u0414"}, {"A4"}},
        {"a\\x00b", {"a\x0b"}, {std::string("a\0b", 3)}},
        // A first '^' negates a class even when escaped.
        {"[\\^a]", {"b", "^"}, {"a"}},
        {"[\\x5e]", {"a", "^"}, {""}},
        // "[^]" is any character.
        {"[^]", {"a", "\n"}, {""}},
        // In a class, an escape xgrammar writes as \xHH takes the hex digits
        // written after it.
        {"[\\u00e9a]", {"\u0E9A"}, {"é", "a"}},
        {"[\\cA\\d]", {"\x10", "0", "9"}, {"\x01", "\x0f", ":"}},
        {"[\\xe9\\x41]", {"\u0E9A"}, {"é", "A"}},
        // \x without a digit is the letter x (which {2} then repeats).
        {"\\x{2}", {"xx"}, {"x{2}"}},
    };
    for (const Case &c : cases) check(c);
}

TEST_CASE("regex: output form", "[regex-grammar]") {
    std::string rules = "x ::= \"x\"\n";
    CHECK(regex_to_gbnf("a[b-d]*|e", "pat-1", rules) == "pat-1");
    CHECK(rules == "x ::= \"x\"\npat-1 ::= \"a\" [b-d]* | \"e\"\n");
    // Escapes of fixed width only: llama.cpp and xgrammar read \x differently.
    rules.clear();
    regex_to_gbnf("\\x01[\\x00-\\x1f\\^\\]\\-\\\\]\"", "p", rules);
    CHECK(rules == "p ::= \"\\u0001\" [\\u0000-\\u001F\\u002D\\u005C-\\u005E] \"\\\"\"\n");
    CHECK(status_of("a") == VT_OK);
    std::string out;
    CHECK_THROWS_AS(regex_to_gbnf("a", "", out), vt::Error);
    CHECK_THROWS_AS(regex_to_gbnf("a", "bad name", out), vt::Error);
}

TEST_CASE("regex: malformed patterns", "[regex-grammar]") {
    const char *bad[] = {
        "(", ")", "a)", "(a", "[", "[a", "[]", "[]a]", "*a", "a|*", "(*)", "^*", "a**", "a*??", "a{2}{3}",
        "a?+", "{", "a{", "a{,3}", "a{ 2}", "x{}", "x{3,2}", "\\", "a\\", "\\x", "\\x4", "\\u1", "\\c",
        "\\c1", "\\u{}a", "\\u{41", "\\u{1234567}", "[z-a]", "[a--]", "[a-\\d]", "[a\nb]", "(?", "(?<", "(?<n1>a)",
        "\\x110000", "\\u{110000}", "[\\x01abcdef]", "a\xff", "\xc3",
    };
    for (const char *p : bad) {
        INFO("pattern " << p);
        CHECK(status_of(p) == VT_ERR_INVALID_ARGUMENT);
    }
    CHECK(status_of(std::string_view("a\0b", 3)) == VT_ERR_INVALID_ARGUMENT);
    std::string msg;
    status_of("ab)c", &msg);
    CHECK(msg.find("offset 2") != std::string::npos);
    status_of("é[z-a]", &msg);  // offsets count bytes
    CHECK(msg.find("offset 5") != std::string::npos);
}

TEST_CASE("regex: constructs that are not supported", "[regex-grammar]") {
    const std::pair<const char *, const char *> cases[] = {
        {"(a)\\1", "backreference"}, {"\\k<n>", "backreference"}, {"a(?=b)", "lookahead"},
        {"(?!b)", "lookahead"}, {"(?<=a)b", "lookbehind"}, {"(?<!a)", "lookbehind"},
        {"\\bword", "word boundary"}, {"\\B", "word boundary"}, {"\\p{L}", "Unicode property"},
        {"(?i)a", "group modifier"}, {"(?P<n>a)", "group modifier"}, {"a{100001}", "repetition count"},
    };
    for (const auto &[pattern, name] : cases) {
        std::string msg;
        INFO("pattern " << pattern);
        CHECK(status_of(pattern, &msg) == VT_ERR_UNSUPPORTED);
        CHECK(msg.find(name) != std::string::npos);
    }
}
