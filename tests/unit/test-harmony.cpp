// The harmony parser (lib/tokenizer/harmony.h) on outputs written as gpt-oss
// writes them (the shapes openai-harmony renders; tests/chat/test_harmony.py
// compares with openai-harmony itself on rendered and truncated texts): the
// channel routing, the fallbacks for text that is not harmony or is cut off,
// and the same result from every chunking of a stream.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/harmony.h"

using vt::tok::HarmonyDelta;
using vt::tok::HarmonyParser;
using vt::tok::HarmonyResult;
using vt::tok::parse_harmony;
using json = nlohmann::ordered_json;

namespace {

const std::string kThinkThenAnswer =
    "<|channel|>analysis<|message|>User asks weather. Need tool? No.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>It is sunny in Paris.";
const std::string kThinkThenCall =
    "<|channel|>analysis<|message|>Need the weather.<|end|>"
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    "{\"city\":\"Paris\"}";

// Streams text in pieces and rebuilds each field from the deltas alone.
struct Streamed {
    std::string content, reasoning;
    bool has_content = false, has_reasoning = false;
    std::vector<std::pair<std::string, std::string>> calls;
    HarmonyResult result;
};

Streamed stream(const std::string &text, const std::vector<size_t> &cuts) {
    HarmonyParser p;
    std::vector<HarmonyDelta> deltas;
    size_t prev = 0;
    for (size_t c : cuts) {
        p.push(std::string_view(text).substr(prev, c - prev), deltas);
        prev = c;
    }
    p.push(std::string_view(text).substr(prev), deltas);
    p.finish(deltas);
    Streamed s;
    for (const HarmonyDelta &d : deltas) {
        switch (d.kind) {
        case HarmonyDelta::Kind::content: s.content += d.text; break;
        case HarmonyDelta::Kind::reasoning: s.reasoning += d.text; break;
        case HarmonyDelta::Kind::call_begin:
            REQUIRE(d.call == (int)s.calls.size());
            s.calls.push_back({d.text, ""});
            break;
        case HarmonyDelta::Kind::call_arguments:
            REQUIRE(d.call == (int)s.calls.size() - 1);
            s.calls.back().second += d.text;
            break;
        }
        CHECK((d.kind == HarmonyDelta::Kind::call_begin || !d.text.empty()));
    }
    s.result = p.result();
    return s;
}

void check_chunkings(const std::string &text) {
    INFO(text);
    const HarmonyResult whole = parse_harmony(text);
    std::mt19937 rng(7);
    for (int trial = 0; trial < 40; ++trial) {
        std::vector<size_t> cuts;
        if (trial == 0)
            for (size_t i = 1; i < text.size(); ++i) cuts.push_back(i);  // byte by byte
        else
            for (size_t i = 1; i < text.size(); ++i)
                if (rng() % 4 == 0) cuts.push_back(i);
        const Streamed s = stream(text, cuts);
        CHECK(s.content == whole.content.value_or(""));
        CHECK(s.reasoning == whole.reasoning.value_or(""));
        REQUIRE(s.calls.size() == whole.calls.size());
        for (size_t i = 0; i < s.calls.size(); ++i) {
            CHECK(s.calls[i].first == whole.calls[i].name);
            CHECK(s.calls[i].second == whole.calls[i].arguments);
        }
        CHECK(s.result.content == whole.content);
        CHECK(s.result.reasoning == whole.reasoning);
    }
}

} // namespace

TEST_CASE("harmony: channels route to reasoning, content and tool calls") {
    HarmonyResult r = parse_harmony(kThinkThenAnswer + "<|return|>");
    CHECK(r.reasoning == "User asks weather. Need tool? No.");
    CHECK(r.content == "It is sunny in Paris.");
    CHECK(r.calls.empty());

    r = parse_harmony(kThinkThenCall + "<|call|>");
    CHECK(r.reasoning == "Need the weather.");
    CHECK(!r.content);
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].name == "get_weather");
    CHECK(r.calls[0].arguments == "{\"city\":\"Paris\"}");

    // The recipient in the role part of the header, as the template renders
    // past calls; two calls in one output.
    r = parse_harmony("<|channel|>commentary to=functions.a json<|message|>{}<|call|>"
                      "<|start|>assistant to=functions.b<|channel|>commentary json<|message|>{\"x\":1}<|call|>");
    REQUIRE(r.calls.size() == 2);
    CHECK(r.calls[0].name == "a");
    CHECK(r.calls[1].name == "b");
    CHECK(r.calls[1].arguments == "{\"x\":1}");
    CHECK(!r.reasoning);

    // Commentary to the user (a preamble) is content; a built-in tool's
    // call is the model's own reasoning; a message without a channel content.
    r = parse_harmony("<|channel|>commentary<|message|>Checking.<|end|>"
                      "<|start|>assistant<|channel|>analysis to=browser.search code<|message|>{\"query\":\"q\"}<|call|>");
    CHECK(r.content == "Checking.");
    CHECK(r.reasoning == "{\"query\":\"q\"}");
    CHECK(parse_harmony("<|message|>no channel<|end|>").content == "no channel");

    // Inside a message only <|end|>, <|return|>, <|call|> end it.
    r = parse_harmony("<|channel|>final<|message|>a<|start|>b<|channel|>c<|end|>");
    CHECK(r.content == "a<|start|>b<|channel|>c");
    // An empty final message is an empty content, not null.
    CHECK(parse_harmony("<|channel|>final<|message|><|return|>").content == "");
}

TEST_CASE("harmony: fallbacks for text that is not harmony or is cut off") {
    // Not a header: all content (a grammar-forced JSON object, plain text).
    for (const char *plain : {"{\"a\": 1}", "Hello there", "  x", "<|end|>x", "  "}) {
        INFO(plain);
        const HarmonyResult r = parse_harmony(plain);
        CHECK(r.content == plain);
        CHECK(!r.reasoning);
        CHECK(r.calls.empty());
    }
    CHECK(!parse_harmony("").content);
    // The beginning of a header, cut off: dropped (openai-harmony: EOS in a header).
    for (const char *cut : {"to", " to", "<|chan", "<|channel|>fin", " to=functions.f<|channel|>comm"}) {
        INFO(cut);
        const HarmonyResult r = parse_harmony(cut);
        CHECK(!r.content);
        CHECK(!r.reasoning);
        CHECK(r.calls.empty());
    }
    // A header cut off is dropped; a message cut off kept as far as it came.
    HarmonyResult r = parse_harmony("<|channel|>analysis<|message|>Thinking<|end|><|start|>assistant<|channel|>fin");
    CHECK(r.reasoning == "Thinking");
    CHECK(!r.content);
    r = parse_harmony("<|channel|>final<|message|>Hello wor");
    CHECK(r.content == "Hello wor");
    r = parse_harmony("<|channel|>final<|message|>Hello<|e");
    CHECK(r.content == "Hello<|e");
    r = parse_harmony(kThinkThenCall.substr(0, kThinkThenCall.size() - 4));
    REQUIRE(r.calls.size() == 1);
    CHECK(r.calls[0].arguments == "{\"city\":\"Par");
    // Text between messages: whitespace dropped, anything else content.
    r = parse_harmony("<|channel|>analysis<|message|>x<|end|>\n<|start|>assistant<|channel|>final<|message|>y");
    CHECK(r.content == "y");
    r = parse_harmony("<|channel|>analysis<|message|>x<|end|> stray <|start|>assistant<|channel|>final<|message|>y");
    CHECK(r.content == " stray y");
    // A header that never ends is not one.
    const std::string long_header = "<|channel|>" + std::string(HarmonyParser::kMaxHeader + 10, 'a');
    CHECK(parse_harmony(long_header).content == long_header);
    // No crash on marker soup.
    for (const char *soup : {"<|message|><|message|><|end|><|start|><|start|><|call|>", "<|start|>", "to=functions.",
                             "<|channel|>commentary to=functions.<|message|>{}", "\xff\xfe<|message|>\xc3"})
        (void)parse_harmony(soup);
}

TEST_CASE("harmony: every chunking of a stream gives the same split") {
    check_chunkings(kThinkThenAnswer + "<|return|>");
    check_chunkings(kThinkThenCall + "<|call|>");
    check_chunkings(kThinkThenCall);
    check_chunkings("<|channel|>final<|message|>a < b <|en and <|end|> <|start|>assistant<|channel|>final<|message|>c<|");
    check_chunkings("plain text, not harmony <|end|>");
    check_chunkings("<|channel|>analysis<|message|>x<|end|> junk\n<|start|>assistant<|channel|>final<|message|>y");
    // Found by fuzz-harmony: plain text is plain however far a <|message|> comes after it.
    check_chunkings("Hello ther<|channel|>commentary<|message|>Checking.<|end|>");
    check_chunkings("<|channel|>" + std::string(HarmonyParser::kMaxHeader, 'a') + "<|message|>x");
}

TEST_CASE("harmony: a stream shows a message's text as it comes, holding back only a possible marker") {
    HarmonyParser p;
    std::vector<HarmonyDelta> d;
    p.push("<|channel|>final<|mess", d);
    CHECK(d.empty());
    p.push("age|>Hel", d);
    REQUIRE(d.size() == 1);
    CHECK(d[0].text == "Hel");
    d.clear();
    p.push("lo<|re", d);
    REQUIRE(d.size() == 1);
    CHECK(d[0].text == "lo");
    d.clear();
    p.push("al", d);  // "<|real": not a marker after all
    REQUIRE(d.size() == 1);
    CHECK(d[0].text == "<|real");
}

TEST_CASE("harmony: JSON of a result and of deltas") {
    const json r = json::parse(vt::tok::harmony_result_to_json(parse_harmony(kThinkThenCall)));
    CHECK(r == json::parse(R"({"content": null, "reasoning_content": "Need the weather.",
        "tool_calls": [{"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}]})"));
    HarmonyParser p;
    std::vector<HarmonyDelta> d;
    p.push(kThinkThenCall, d);
    p.finish(d);
    const json j = json::parse(vt::tok::harmony_deltas_to_json(d));
    CHECK(j == json::parse(R"([{"reasoning_content": "Need the weather."},
        {"tool_call": {"index": 0, "name": "get_weather"}},
        {"tool_call": {"index": 0, "arguments": "{\"city\":\"Paris\"}"}}])"));
    CHECK(vt::tok::is_harmony_template("{{ '<|start|>' + role + '<|channel|>x<|message|>' }}"));
    CHECK(!vt::tok::is_harmony_template("<|im_start|>{{ role }}"));
}
