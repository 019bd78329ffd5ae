// Chat templates (lib/tokenizer/jinja). Two kinds of checks:
//  - language features: each expected string was produced by the Python
//    jinja2 package (3.1.6) run live through transformers' own environment
//    (transformers.utils.chat_template_utils._compile_jinja_template: trim_blocks,
//    lstrip_blocks, loopcontrols, its tojson/raise_exception/namespace);
//  - goldens: real models' templates rendered by transformers'
//    render_jinja_template (tests/chat/make-goldens.py), compared byte for byte.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "tokenizer/jinja/jinja.h"

using nlohmann::ordered_json;
using vt::jinja::render_chat_template;

namespace {

std::string render(const std::string &tmpl, const ordered_json &ctx = ordered_json::object()) {
    return render_chat_template(tmpl, ctx);
}

std::tm parse_now(const std::string &s) {
    std::tm tm{};
    std::istringstream in(s);
    in >> std::get_time(&tm, "%Y-%m-%d %H:%M:%S");
    tm.tm_isdst = -1;
    std::tm copy = tm;
    std::mktime(&copy);  // fills tm_wday / tm_yday for %a, %j
    tm.tm_wday = copy.tm_wday;
    tm.tm_yday = copy.tm_yday;
    return tm;
}

// Expected strings below: jinja2 3.1.6 run live through transformers'
// _compile_jinja_template (so trim_blocks/lstrip_blocks and transformers'
// tojson apply) with kFeatureContext as the variables.
// The variables every feature case renders with (the same dict was passed to jinja2).
const char *const kFeatureContext = R"J({"s": "  Héllo, Wörld!  ", "l": [3, 1, 2], "d": {"b": 1, "a": [1, "x"]}, "n": null, "t": true, "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo", "x": 1}, {"role": "user", "content": "bye"}], "f": 2.5, "u8": "日本語テキスト"})J";

// {template, what jinja2 3.1.6 rendered in transformers' environment}
const std::pair<const char *, const char *> kFeatureCases[] = {
    {R"J(  {% if t %}
    yes
  {% endif %}
after)J",
     R"J(    yes
after)J"},
    {R"J(a  {%- if t -%}  b  {%- endif -%}  c)J",
     R"J(abc)J"},
    {R"J(x
  {%+ if t %}y{% endif %}
{# comment #}
z)J",
     R"J(x
  yz)J"},
    {R"J({{ 'a' }}  
{{- 'b' -}}
  {{ 'c' }})J",
     R"J(abc)J"},
    {R"J(line1
{% for i in l %}
  - {{ i }}
{% endfor %}
end
)J",
     R"J(line1
  - 3
  - 1
  - 2
end)J"},
    {R"J({% raw %}{{ not rendered }}{% endraw %})J",
     R"J({{ not rendered }})J"},
    {R"J({% for i in l %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }};{% endfor %})J",
     R"J(1/0/3/2/True/False/3;2/1/2/1/False/False/3;3/2/1/0/False/True/3;)J"},
    {R"J({% for m in msgs if m.role == 'user' %}{{ loop.index }}:{{ m.content }}{{ ',' if not loop.last }}{% endfor %})J",
     R"J(1:hi,2:bye)J"},
    {R"J({% for x in [] %}no{% else %}empty{% endfor %})J",
     R"J(empty)J"},
    {R"J({% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %})J",
     R"J(b=1;a=[1, 'x'];)J"},
    {R"J({% for k in d %}{{ k }}{% endfor %}|{% for ch in 'abc' %}{{ ch }}.{% endfor %})J",
     R"J(ba|a.b.c.)J"},
    {R"J({% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %})J",
     R"J(0134)J"},
    {R"J({% for i in l %}{{ loop.cycle('odd', 'even') }}{{ loop.previtem is defined }}{% endfor %})J",
     R"J(oddFalseevenTrueoddTrue)J"},
    {R"J({% for a in [1,2] %}{% for b in [3,4] %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{% endfor %})J",
     R"J(113 214 123 224 )J"},
    {R"J({% set x = 1 %}{% for i in l %}{% set x = i %}{% endfor %}{{ x }})J",
     R"J(1)J"},
    {R"J({% set ns = namespace(total=0, names=[]) %}{% for m in msgs %}{% set ns.total = ns.total + 1 %}{% endfor %}{{ ns.total }})J",
     R"J(3)J"},
    {R"J({% set a, b = [1, 2] %}{{ b }}{{ a }})J",
     R"J(21)J"},
    {R"J({% set block %}inner {{ l|length }}{% endset %}[{{ block }}])J",
     R"J([inner 3])J"},
    {R"J({% if false %}{% set y = 1 %}{% endif %}{{ y is defined }})J",
     R"J(False)J"},
    {R"J({% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('Bob') }} {{ greet('Al', greeting='Hi') }})J",
     R"J(Hello, Bob! Hi, Al!)J"},
    {R"J({% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}body{% endcall %})J",
     R"J(<body>)J"},
    {R"J({% filter upper %}shout {{ 'it' }}{% endfilter %})J",
     R"J(SHOUT IT)J"},
    {R"J({{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 'ab' * 3 }} {{ 10 - 2.5 }})J",
     R"J(3 -4 2 3.5 1024 7 9 ababab 7.5)J"},
    {R"J({{ 'a' ~ 1 ~ none ~ true }} {{ 'x' + 'y' }} {{ [1] + [2, 3] }})J",
     R"J(a1NoneTrue xy [1, 2, 3])J"},
    {R"J({{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'b' in 'abc' }} {{ 4 not in l }} {{ 'a' in d }} {{ 1 == 1.0 }} {{ t == 1 }})J",
     R"J(True False True True True True True)J"},
    {R"J({{ n or 'fallback' }} {{ 0 and 'x' }} {{ 'x' if t else 'y' }} {{ 'x' if not t else 'y' }}|{{ 'z' if false }}|)J",
     R"J(fallback 0 x y||)J"},
    {R"J({{ not n is none }} {{ n is not none }} {{ -l[0] }} {{ - 3 | abs }})J",
     R"J(False False -3 3)J"},
    {R"J({{ [1, 'a', none, true, 2.0] }} {{ {'k': 'v', 'n': [1]} }} {{ (1, 2) }} {{ 'it\'s' }} {{ "q\"d" }} {{ 1e3 }} {{ 0.1 + 0.2 }} {{ 1.0e-5 }} {{ 123456789012345678.0 }})J",
     R"J([1, 'a', None, True, 2.0] {'k': 'v', 'n': [1]} (1, 2) it's q"d 1000.0 0.30000000000000004 1e-05 1.2345678901234568e+17)J"},
    {R"J({{ 'tab\there\nnew' }}|{{ '\u00e9\x41' }}|{{ 'a' 'b' }})J",
     R"J(tab	here
new|éA|ab)J"},
    {R"J({{ l[0] }} {{ l[-1] }} {{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ u8[1:3] }} {{ u8[-2:] }} {{ 'hello'[1] }} {{ msgs[1:][0].content }})J",
     R"J(3 2 [1, 2] [3, 1] [2, 1, 3] [3, 2] 本語 スト e yo)J"},
    {R"J({{ d.a.1 }} {{ d['a'][0] }} {{ l[10] is defined }} {{ d.zz is defined }} {{ d.get('b') }} {{ d.get('zz', 'dflt') }} {{ d.get('zz') }})J",
     R"J(x 1 False False 1 dflt None)J"},
    {R"J([{{ s.strip() }}][{{ s.lstrip() }}][{{ s.rstrip() }}][{{ 'xxhixx'.strip('x') }}])J",
     R"J([Héllo, Wörld!][Héllo, Wörld!  ][  Héllo, Wörld!][hi])J"},
    {R"J({{ 'a,b,,c'.split(',') }} {{ ' a  b c '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'a-b-c'.rsplit('-', 1) }})J",
     R"J(['a', 'b', '', 'c'] ['a', 'b', 'c'] ['a', 'b c'] ['a-b', 'c'])J"},
    {R"J({{ s.startswith('  H') }} {{ s.endswith('!  ') }} {{ 'abc'.startswith(('x', 'a')) }} {{ s.upper() }} {{ s.lower() }} {{ 'hello wORLD'.title() }} {{ 'hello World'.capitalize() }})J",
     R"J(True True True   HÉLLO, WÖRLD!     héllo, wörld!   Hello World Hello world)J"},
    {R"J({{ 'aaa'.replace('a', 'b', 2) }} {{ '{} and {}'.format(1, 'two') }} {{ '{name}!'.format(name='x') }} {{ '-'.join(['a', 'b']) }} {{ 'hello'.find('l') }} {{ u8.find('テ') }} {{ 'hello'.count('l') }})J",
     R"J(bba 1 and two x! a-b 2 3 2)J"},
    {R"J([{{ s|trim }}] {{ l|length }} {{ s|length }} {{ u8|length }} {{ d|length }} {{ 'Hello'|upper }} {{ 'HeLLo'|lower }} {{ 'hello world'|capitalize }} {{ 'hello-world foo(bar)'|title }})J",
     R"J([Héllo, Wörld!] 3 17 7 2 HELLO hello Hello world Hello-World Foo(Bar))J"},
    {R"J({{ l|join(', ') }} {{ msgs|map(attribute='role')|join('|') }} {{ l|first }} {{ l|last }} {{ l|sort }} {{ l|sort(reverse=true) }} {{ ['b', 'A', 'c']|sort }} {{ l|reverse|list }} {{ 'abc'|reverse }})J",
     R"J(3, 1, 2 user|assistant|user 3 2 [1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] [2, 1, 3] cba)J"},
    {R"J({{ undefined_thing|default('dflt') }} {{ ''|default('empty', true) }} {{ n|default('x') }} {{ l|list }} {{ 'ab'|list }} {{ d|items|list }} {{ d|dictsort }})J",
     R"J(dflt empty None [3, 1, 2] ['a', 'b'] [('b', 1), ('a', [1, 'x'])] [('a', [1, 'x']), ('b', 1)])J"},
    {R"J({{ '42'|int }} {{ 'x'|int }} {{ 3.9|int }} {{ '2.5'|float }} {{ 2.567|round(2) }} {{ 2.5|round }} {{ 3.5|round }} {{ -3|abs }} {{ 42|string }} {{ [1, 2, 3]|sum }} {{ l|min }} {{ l|max }})J",
     R"J(42 0 3 2.5 2.57 2.0 4.0 3 42 6 1 3)J"},
    {R"J({{ msgs|selectattr('role', 'equalto', 'user')|list|length }} {{ msgs|rejectattr('role', 'eq', 'user')|map(attribute='content')|list }} {{ msgs|selectattr('x', 'defined')|list|length }} {{ [1, 2, 3, 4]|select('even')|list }} {{ [1, 2, 3]|reject('odd')|list }} {{ ['a', 'b']|map('upper')|list }})J",
     R"J(2 ['yo'] 1 [2, 4] [2] ['A', 'B'])J"},
    {R"J({{ ['a', 'A', 'b', 'a']|unique|list }} {{ 'x y  z'|wordcount }} {{ '%s-%d'|format('a', 3) }} {{ 'a\nb\n\nc'|indent(2) }}|{{ 'a\nb'|indent(2, true) }} {{ '<a&b>'|e }} {{ 'aXbX'|replace('X', '-') }})J",
     R"J(['a', 'b'] 3 a-3 a
  b

  c|  a
  b &lt;a&amp;b&gt; a-b-)J"},
    {R"J({{ d|tojson }} {{ msgs[0]|tojson }} {{ 'é"\\\n'|tojson }} {{ [1.0, 2.5, none, true]|tojson }} {{ {}|tojson }} {{ []|tojson(indent=2) }})J",
     R"J({"b": 1, "a": [1, "x"]} {"role": "user", "content": "hi"} "é\"\\\n" [1.0, 2.5, null, true] {} [])J"},
    {R"J({{ d|tojson(indent=2) }})J",
     R"J({
  "b": 1,
  "a": [
    1,
    "x"
  ]
})J"},
    {R"J({{ d|tojson(sort_keys=true) }} {{ {'z': 1, 'é': 'ü'}|tojson(ensure_ascii=true) }} {{ d|tojson(separators=(',', ':')) }})J",
     R"J({"a": [1, "x"], "b": 1} {"z": 1, "\u00e9": "\u00fc"} {"b":1,"a":[1,"x"]})J"},
    {R"J({{ n is none }} {{ s is string }} {{ l is iterable }} {{ d is mapping }} {{ l is mapping }} {{ 3 is number }} {{ 3 is integer }} {{ 3.0 is float }} {{ t is boolean }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'ab' is lower }})J",
     R"J(True True True True False True True True True True True True True)J"},
    {R"J({{ u is defined }} {{ u is undefined }} {{ 1 is eq 1 }} {{ 1 is ne 2 }} {{ 'a' is in 'abc' }} {{ 2 is gt 1 }} {{ s is sequence }} {{ d is sequence }} {{ range is callable }})J",
     R"J(False True True True True True True True True)J"},
    {R"J([{{ u }}][{{ u ~ 'x' }}][{% for x in u %}never{% endfor %}][{{ u|length }}][{% if u %}no{% else %}falsy{% endif %}][{{ d.missing }}][{{ u|default('d') }}])J",
     R"J([][x][][0][falsy][][d])J"},
    {R"J({{ range(3)|list }} {{ range(1, 10, 3)|list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }})J",
     R"J([0, 1, 2] [1, 4, 7] {'a': 1, 'b': 'x'} 1)J"},
};

// Templates jinja2 refuses (its error in the comment); vt must throw vt::Error, not crash.
const char *const kErrorCases[] = {
    R"J({{ u.attr }})J",  // UndefinedError: 'u' is undefined
    R"J({{ u + 1 }})J",  // UndefinedError: 'u' is undefined
    R"J({{ 'a' + 1 }})J",  // TypeError: can only concatenate str (not "int") to str
    R"J({{ raise_exception('custom failure') }})J",  // TemplateError: custom failure
    R"J({{ 1 / 0 }})J",  // ZeroDivisionError: division by zero
    R"J({% if %})J",  // TemplateSyntaxError: Expected an expression, got 'end of statement block'
    R"J({% for x in %}{% endfor %})J",  // TemplateSyntaxError: Expected an expression, got 'end of statement block'
    R"J({{ 'unterminated }})J",  // TemplateSyntaxError: unexpected char "'" at 3
    R"J({% if t %}no end)J",  // TemplateSyntaxError: Unexpected end of template. Jinja was looking for the follo
    R"J({% endif %})J",  // TemplateSyntaxError: Encountered unknown tag 'endif'.
    R"J({{ x | nofilter }})J",  // TemplateAssertionError: No filter named 'nofilter'.
    R"J({% macro m() %}{{ m() }}{% endmacro %}{{ m() }})J",  // RecursionError: maximum recursion depth exceeded
    R"J({{ range(1000000)|length }})J",  // OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (1
    R"J({{ l.append(4) }})J",  // SecurityError: access to attribute 'append' of 'list' object is unsafe.
};

} // namespace

TEST_CASE("jinja language features match jinja2") {
    ordered_json ctx = ordered_json::parse(kFeatureContext);
    for (const auto &[tmpl, expected] : kFeatureCases) {
        INFO("template: " << tmpl);
        std::string got;
        try {
            got = render(tmpl, ctx);
        } catch (const vt::Error &e) {
            FAIL_CHECK("threw: " << e.what());
            continue;
        }
        CHECK(got == expected);
    }
}

TEST_CASE("jinja errors are vt::Error with a position") {
    ordered_json ctx = ordered_json::parse(kFeatureContext);
    for (const char *tmpl : kErrorCases) {
        INFO("template: " << tmpl);
        CHECK_THROWS_AS(render(tmpl, ctx), vt::Error);
    }
    // Syntax errors name line and column; runtime errors the node's position;
    // raise_exception's message reaches the caller.
    try {
        render("line one\n{% if x %}\n  {{ 1 + }}\n{% endif %}");
        FAIL("no error");
    } catch (const vt::Error &e) {
        CHECK(e.status() == VT_ERR_FORMAT);
        CHECK(std::string(e.what()).find("line 3, column") != std::string::npos);
    }
    try {
        render("ok\n{{ raise_exception('Conversation roles must alternate') }}");
        FAIL("no error");
    } catch (const vt::Error &e) {
        CHECK(e.status() == VT_ERR_INVALID_ARGUMENT);
        CHECK(std::string(e.what()).find("line 2") != std::string::npos);
        CHECK(std::string(e.what()).find("Conversation roles must alternate") != std::string::npos);
    }
}

TEST_CASE("jinja bounds hostile templates") {
    vt::jinja::RenderOptions opt;
    opt.max_steps = 100000;
    vt::jinja::Template loops("{% for a in range(1000) %}{% for b in range(1000) %}x{% endfor %}{% endfor %}");
    CHECK_THROWS_AS(loops.render(ordered_json::object(), opt), vt::Error);
    opt = {};
    opt.max_output_bytes = 1000;
    vt::jinja::Template big("{% for a in range(100) %}{{ 'y' * 100 }}{% endfor %}");
    CHECK_THROWS_AS(big.render(ordered_json::object(), opt), vt::Error);
    std::string deep(5000, '(');
    CHECK_THROWS_AS(render("{{ " + deep + " }}"), vt::Error);
    std::string nested;
    for (int i = 0; i < 1000; ++i) nested += "{% if true %}";
    CHECK_THROWS_AS(render(nested), vt::Error);
}

// The bounds fuzz-chat-template (tests/fuzz) needed beyond steps and output:
// each of these once took memory without limit (a doubling string reached
// gigabytes in 30 steps), recursed without limit, or leaked a cycle.
TEST_CASE("jinja bounds the values a template builds") {
    auto refused = [](const std::string &tmpl, const std::string &part, const ordered_json &ctx = ordered_json::object()) {
        INFO(tmpl);
        try {
            std::string out = render(tmpl, ctx);
            FAIL("rendered " << out.size() << " bytes");
        } catch (const vt::Error &e) {
            CHECK(e.status() != VT_OK);
            CHECK_THAT(e.what(), Catch::Contains(part));
        }
    };
    // A string doubled 40 times: 1 TB at the end, refused at 64 MiB (max_output_bytes).
    refused("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
            "{{ ns.s | length }}",
            "more than");
    refused("{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}"
            "{{ ns.l | length }}",
            "more than");
    refused("{{ [1, 2] * 30000000 }}", "more than");
    refused("{{ 'x' | indent(10000000000) }}", "more than");
    refused("{% set s = 'ab' * 4000000 %}{{ s | replace('', s) | length }}", "more than");
    refused("{% set l = range(10000) | list %}{{ (l | join('x' * 60000000)) | length }}", "more than");
    // All the values together: 2 MiB strings, each alone small enough, 300 of them.
    refused("{% set ns = namespace(n=0) %}{% for i in range(300) %}{% set ns.n = ns.n + ('x' * 2000000 ~ i) | length %}"
            "{% endfor %}{{ ns.n }}",
            "max_value_bytes");
    // A string of 4M characters iterated: 4M one-character strings.
    refused("{% for c in 'xy' * 2000000 %}{% endfor %}", "max_value_bytes");
    // Nesting: of the caller's JSON, of lists a loop builds, of namespaces.
    ordered_json deep = ordered_json::array();
    for (int i = 0; i < 5000; ++i) deep = ordered_json::array({std::move(deep)});  // nlohmann copies recursively
    refused("{{ messages }}", "nested deeper", ordered_json{{"messages", deep}});
    refused("{% set ns = namespace(l=[]) %}{% for i in range(2000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}",
            "nested deeper");
    refused("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", "itself");
    refused("{% set ns = namespace() %}{% set ns.me = [1, {'a': [ns]}] %}{{ ns }}", "itself");
    // snprintf's work grows with a width or precision (glibc allocates for it).
    refused("{{ '%.999999999f' % 1.5 }}", "above 999");
    refused("{{ '%0999999999d' % 1 }}", "above 999");
    CHECK(render("{{ '%5.2f|%-4d|%03d' % (3.14159, 7, 5) }}") == " 3.14|7   |005");
    // range() steps that would pass INT64's end stop there (signed overflow before).
    CHECK(render("{{ range(-9223372036854775807, 9223372036854775807, 4611686018427387904) | list }}") ==
          "[-9223372036854775807, -4611686018427387903, 1, 4611686018427387905]");
    CHECK(render("{{ range(9223372036854775807, -9223372036854775807, -9223372036854775807) | list }}") ==
          "[9223372036854775807, 0]");
    // The bounds leave real work alone.
    CHECK(render("{% set ns = namespace(s='') %}{% for i in range(1000) %}{% set ns.s = ns.s ~ 'abc' %}{% endfor %}"
                 "{{ ns.s | length }}") == "3000");
    CHECK(render("{% set a = namespace(x=1) %}{% set b = namespace(inner=a) %}{% set a.x = 2 %}{{ b.inner.x }}") == "2");
}

TEST_CASE("jinja template parses once and renders many") {
    vt::jinja::Template t("{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}{% endfor %}"
                          "{% if add_generation_prompt %}<assistant>{% endif %}");
    ordered_json ctx = {{"messages", {{{"role", "user"}, {"content", " hi "}}}}, {"add_generation_prompt", true}};
    CHECK(t.render(ctx) == "<user>hi<assistant>");
    ctx["add_generation_prompt"] = false;
    CHECK(t.render(ctx) == "<user>hi");
    nlohmann::json plain = {{"messages", nlohmann::json::array()}};  // unordered json works too
    CHECK(t.render(plain).empty());
    vt::jinja::RenderOptions opt;
    std::tm tm{};
    tm.tm_year = 124;
    tm.tm_mon = 6;
    tm.tm_mday = 26;
    opt.now = tm;
    CHECK(vt::jinja::render_chat_template("{{ strftime_now('%d %b %Y') }}", ordered_json::object(), opt) ==
          "26 Jul 2024");
}

TEST_CASE("jinja goldens: real chat templates match transformers byte for byte") {
    const char *root = std::getenv("VT_SOURCE_ROOT");
    if (!root) {
        WARN("VT_SOURCE_ROOT is unset; run through meson test to check the chat-template goldens");
        return;
    }
    std::filesystem::path dir = std::filesystem::path(root) / "tests" / "chat" / "goldens";
    REQUIRE(std::filesystem::is_directory(dir));
    int files = 0, cases = 0;
    for (const auto &entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".json") continue;
        std::ifstream f(entry.path());
        ordered_json golden = ordered_json::parse(f);
        const std::string name = golden["name"].get<std::string>();
        vt::jinja::Template tmpl(golden["template"].get<std::string>());
        ++files;
        for (const auto &c : golden["cases"]) {
            ++cases;
            INFO(name << " / " << c["name"].get<std::string>());
            vt::jinja::RenderOptions opt;
            opt.now = parse_now(c["now"].get<std::string>());
            if (c.contains("expected")) {
                std::string got;
                try {
                    got = tmpl.render(c["context"], opt);
                } catch (const vt::Error &e) {
                    FAIL_CHECK("threw: " << e.what());
                    continue;
                }
                CHECK(got == c["expected"].get<std::string>());
            } else {
                INFO("transformers raised " << c["error"].get<std::string>());
                CHECK_THROWS_AS(tmpl.render(c["context"], opt), vt::Error);
            }
        }
    }
    CHECK(files >= 10);
    CHECK(cases > 100);
}

// Issue 22: which bytes of the output came from the data variables
// (Template::render_marked), shown as the marked text between [ and ].
namespace {
std::string marked(const std::string &tmpl, const ordered_json &ctx) {
    vt::jinja::Template t(tmpl);
    std::vector<std::string> data;
    for (auto it = ctx.begin(); it != ctx.end(); ++it)
        if (it.key() != "lit") data.push_back(it.key());
    vt::jinja::MarkedRender r = t.render_marked(ctx, data);
    CHECK(r.text == t.render(ctx));  // marking never changes the text
    std::string out;
    size_t at = 0;
    for (auto [b, e] : r.data) {
        out += r.text.substr(at, b - at) + "[" + r.text.substr(b, e - b) + "]";
        at = e;
    }
    return out + r.text.substr(at);
}
} // namespace

TEST_CASE("jinja marks: data keeps its marks through string operations") {
    const ordered_json ctx = {{"c", "  Ab<x>  "}, {"d", {{"k", "v"}}}, {"l", {"p", "q"}}, {"lit", "L"}};
    CHECK(marked("<{{ c }}>{{ lit }}", ctx) == "<[  Ab<x>  ]>L");
    CHECK(marked("{{ c | trim }}|{{ c.lstrip() }}|{{ c.rstrip() }}", ctx) == "[Ab<x>]|[Ab<x>  ]|[  Ab<x>]");
    CHECK(marked("{{ '(' + c[2:4] + ')' }}{{ c[2] }}", ctx) == "([Ab])[A]");
    CHECK(marked("{{ c | replace('b', '-') }}", ctx) == "[  A]-[<x>  ]");
    CHECK(marked("{{ l | join(', ') }}{{ '/'.join(l) }}", ctx) == "[p], [qp]/[q]");  // adjacent marks merge
    CHECK(marked("{{ c | upper }}{{ c ~ 1 }}", ctx) == "[  AB<X>    Ab<x>  ]1");
    CHECK(marked("{% for ch in c[2:4] %}{{ ch }}.{% endfor %}", ctx) == "[A].[b].");
    CHECK(marked("{{ d | tojson }}{% for k, v in d.items() %}{{ k }}={{ v }}{% endfor %}", ctx) ==
          "[{\"k\": \"v\"}k]=[v]");
    CHECK(marked("{% macro m(x) %}<{{ x }}>{% endmacro %}{{ m(c | trim) }}{% set s %}{{ c[2] }}!{% endset %}{{ s }}",
                 ctx) == "<[Ab<x>]>[A]!");
    CHECK(marked("{{ c.split('b')[1] }}{{ (c * 2)[0:3] }}", ctx) == "[<x>    A]");
    // Lost: text the template formats from data counts as the template's.
    CHECK(marked("{{ '%s' % c }}{{ '{}'.format(c) }}", ctx) == "  Ab<x>    Ab<x>  ");
}
