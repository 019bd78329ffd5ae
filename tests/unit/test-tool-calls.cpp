// Tool calls in chat output (lib/tokenizer/tool-calls.h): the syntax each
// real template of tests/chat/goldens teaches, outputs written in the style
// of each family parsed into content and calls, malformed calls kept as
// content, and the streaming prefix agreeing with the final parse.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tokenizer/tool-calls.h"

using vt::tok::ToolCallFormat;
using vt::tok::ToolCallParse;
using vt::tok::parse_tool_calls;
using vt::tok::tool_call_content_prefix;
using json = nlohmann::ordered_json;

namespace {

void check_call(const ToolCallParse &p, size_t i, const std::string &name, const std::string &args) {
    REQUIRE(p.calls.size() > i);
    CHECK(p.calls[i].name == name);
    CHECK(p.calls[i].arguments == args);
}

void check_content_only(ToolCallFormat f, const std::string &text) {
    INFO(text);
    const ToolCallParse p = parse_tool_calls(f, text);
    CHECK(p.calls.empty());
    REQUIRE(p.content);
    CHECK(*p.content == text);
}

// Every prefix of `text` streamed: what the prefix allows to show is never
// taken back, grows with the text, and starts the final content.
void check_stream(ToolCallFormat f, const std::string &text) {
    INFO(text);
    const ToolCallParse final = parse_tool_calls(f, text);
    size_t shown = 0;
    for (size_t n = 0; n <= text.size(); ++n) {
        const size_t k = tool_call_content_prefix(f, std::string_view(text).substr(0, n));
        REQUIRE(k <= n);
        CHECK(k >= shown);
        shown = k > shown ? k : shown;
    }
    const std::string sent = text.substr(0, shown);
    if (final.content) CHECK(final.content->compare(0, sent.size(), sent) == 0);
    else CHECK(sent.empty());
}

} // namespace

TEST_CASE("tool calls: the format of each golden template") {
    const char *root = std::getenv("VT_SOURCE_ROOT");
    if (!root) {
        WARN("VT_SOURCE_ROOT is unset; run through meson test to check the golden templates");
        return;
    }
    const std::map<std::string, ToolCallFormat> expect = {
        {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", ToolCallFormat::hermes},
        {"Qwen-Qwen2.5-7B-Instruct", ToolCallFormat::hermes},
        {"Qwen-Qwen3-0.6B", ToolCallFormat::hermes},
        {"meta-llama-Llama-3.1-8B-Instruct", ToolCallFormat::llama3_json},
        {"meta-llama-Llama-3.2-3B-Instruct", ToolCallFormat::llama3_json},
        {"mistralai-Mistral-Nemo-Instruct-2407", ToolCallFormat::mistral},
        {"smollm2", ToolCallFormat::none},
        {"gemma-3", ToolCallFormat::none},
        {"google-gemma-2-2b-it", ToolCallFormat::none},
        {"microsoft-Phi-3.5-mini-instruct", ToolCallFormat::none},
        {"command-r", ToolCallFormat::none},
    };
    const auto dir = std::filesystem::path(root) / "tests" / "chat" / "goldens";
    REQUIRE(std::filesystem::is_directory(dir));
    int seen = 0;
    for (const auto &[stem, fmt] : expect) {
        const auto path = dir / (stem + ".json");
        REQUIRE(std::filesystem::exists(path));
        std::ifstream f(path);
        const json golden = json::parse(f);
        INFO(stem);
        CHECK(vt::tok::detect_tool_call_format(golden["template"].get<std::string>()) == fmt);
        ++seen;
    }
    CHECK(seen == (int)expect.size());
}

TEST_CASE("tool calls: Hermes / Qwen <tool_call> blocks") {
    const auto f = ToolCallFormat::hermes;
    SECTION("one call, as Qwen 2.5 writes it") {
        const auto p = parse_tool_calls(
            f, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"C\"}}\n</tool_call>");
        CHECK_FALSE(p.content);
        REQUIRE(p.calls.size() == 1);
        check_call(p, 0, "get_weather", R"({"city":"Paris","unit":"C"})");
    }
    SECTION("text before, two calls, key order kept, UTF-8 untouched") {
        const auto p = parse_tool_calls(
            f, "Let me check both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"z\": 1, \"a\": \"é\"}}\n</tool_call>\n"
               "<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>\n");
        REQUIRE(p.content);
        CHECK(*p.content == "Let me check both.");
        REQUIRE(p.calls.size() == 2);
        check_call(p, 0, "a", R"({"z":1,"a":"é"})");
        check_call(p, 1, "b", "{}");
    }
    SECTION("the last block unclosed (the turn ended after the JSON)") {
        const auto p = parse_tool_calls(f, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": [1, 2]}}");
        REQUIRE(p.calls.size() == 1);
        check_call(p, 0, "f", R"({"x":[1,2]})");
        CHECK_FALSE(p.content);
    }
    SECTION("arguments as a JSON string, parameters, none at all") {
        auto p = parse_tool_calls(f, R"(<tool_call>{"name": "f", "arguments": "{\"q\": \"x\"}"}</tool_call>)");
        check_call(p, 0, "f", R"({"q":"x"})");
        p = parse_tool_calls(f, R"(<tool_call>{"name": "f", "parameters": {"q": 1}}</tool_call>)");
        check_call(p, 0, "f", R"({"q":1})");
        p = parse_tool_calls(f, R"(<tool_call>{"name": "f"}</tool_call>)");
        check_call(p, 0, "f", "{}");
    }
    SECTION("malformed calls are content") {
        check_content_only(f, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}\n</tool_call>");  // unbalanced
        check_content_only(f, "<tool_call>{\"arguments\": {}}</tool_call>");                            // no name
        check_content_only(f, "<tool_call>[1, 2]</tool_call>");
        check_content_only(f, "ok <tool_call>{\"name\": \"f\"}</tool_call> <tool_call>nope</tool_call>");
        check_content_only(f, "Plain answer, no calls.");
        check_content_only(f, "");
    }
    SECTION("streaming") {
        check_stream(f, "Sure.\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>");
        check_stream(f, "  \n<tool_call>{\"name\": \"f\"}</tool_call>");
        check_stream(f, "Just text with a < sign and <tool no call.");
        check_stream(f, "<tool_call>{broken</tool_call>");
        CHECK(tool_call_content_prefix(f, "Hello <tool_c") == 5);
        CHECK(tool_call_content_prefix(f, "Hello <b>") == 9);
        CHECK(tool_call_content_prefix(f, "Hello \n") == 5);
    }
}

TEST_CASE("tool calls: Llama 3 JSON") {
    const auto f = ToolCallFormat::llama3_json;
    SECTION("a call as Llama 3.2 writes it, with parameters") {
        const auto p = parse_tool_calls(f, R"({"name": "get_weather", "parameters": {"city": "Paris"}})");
        CHECK_FALSE(p.content);
        check_call(p, 0, "get_weather", R"({"city":"Paris"})");
    }
    SECTION("after <|python_tag|>, several joined by ';'") {
        const auto p = parse_tool_calls(
            f, "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"n\": 1}}; {\"name\": \"b\", \"arguments\": {\"s\": \"}\"}}");
        REQUIRE(p.calls.size() == 2);
        check_call(p, 0, "a", R"({"n":1})");
        check_call(p, 1, "b", R"({"s":"}"})");
        CHECK_FALSE(p.content);
    }
    SECTION("text, or JSON that is not a call, is content") {
        check_content_only(f, "The weather in Paris is sunny.");
        check_content_only(f, R"({"answer": 42})");
        check_content_only(f, R"({"name": "f", "parameters": {}} and then some words)");
        check_content_only(f, R"({"name": "f", "parameters": {)");
        check_content_only(f, "I'd call {\"name\": \"f\"} here");  // calls must be the whole output
    }
    SECTION("streaming") {
        check_stream(f, R"({"name": "f", "parameters": {}})");
        check_stream(f, "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}");
        check_stream(f, "Hello there, no call.");
        check_stream(f, " {not json");
        CHECK(tool_call_content_prefix(f, "  ") == 0);
        CHECK(tool_call_content_prefix(f, "<|pyth") == 0);
        CHECK(tool_call_content_prefix(f, "<b>") == 3);
        CHECK(tool_call_content_prefix(f, "Hi ") == 2);
    }
}

TEST_CASE("tool calls: Mistral [TOOL_CALLS]") {
    const auto f = ToolCallFormat::mistral;
    SECTION("an array after the marker") {
        const auto p = parse_tool_calls(
            f, R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "b", "arguments": {}}])");
        CHECK_FALSE(p.content);
        REQUIRE(p.calls.size() == 2);
        check_call(p, 0, "get_weather", R"({"city":"Paris"})");
        check_call(p, 1, "b", "{}");
    }
    SECTION("text before the marker is content") {
        const auto p = parse_tool_calls(f, "Checking. [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}}]");
        REQUIRE(p.content);
        CHECK(*p.content == "Checking.");
        check_call(p, 0, "f", R"({"a":1})");
    }
    SECTION("the marker dropped as a control token: a bare array") {
        const auto p = parse_tool_calls(f, " [{\"name\": \"f\", \"arguments\": {\"a\": 1}, \"id\": \"abcdefghi\"}]");
        CHECK_FALSE(p.content);
        check_call(p, 0, "f", R"({"a":1})");
    }
    SECTION("newer tokenizers: name[ARGS]{...} per call") {
        const auto p = parse_tool_calls(
            f, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[CALL_ID]x1[ARGS]{}");
        REQUIRE(p.calls.size() == 2);
        check_call(p, 0, "get_weather", R"({"city":"Paris"})");
        check_call(p, 1, "get_time", "{}");
        CHECK_FALSE(p.content);
    }
    SECTION("malformed calls and plain arrays are content") {
        check_content_only(f, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {]");
        check_content_only(f, "[TOOL_CALLS]{\"name\": \"f\"}");
        check_content_only(f, "[1, 2, 3]");
        check_content_only(f, "[TOOL_CALLS][]");
        check_content_only(f, "No tools needed.");
    }
    SECTION("streaming") {
        check_stream(f, "Checking. [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]");
        check_stream(f, "[{\"name\": \"f\", \"arguments\": {}}]");
        check_stream(f, "An answer [with brackets] and [TOOL no call.");
        CHECK(tool_call_content_prefix(f, "Hi [TOOL_") == 2);
    }
}

TEST_CASE("tool calls: no format, and the JSON the ABI returns") {
    check_content_only(ToolCallFormat::none, "<tool_call>{\"name\": \"f\"}</tool_call>");
    CHECK(tool_call_content_prefix(ToolCallFormat::none, "text \n") == 6);

    ToolCallParse p = parse_tool_calls(ToolCallFormat::hermes, "a\n<tool_call>{\"name\": \"f\", \"arguments\": {\"k\": \"v\"}}</tool_call>");
    const json j = json::parse(vt::tok::tool_call_parse_to_json(p));
    CHECK(j == json::parse(R"({"content": "a", "tool_calls": [{"name": "f", "arguments": "{\"k\":\"v\"}"}]})"));
    p = parse_tool_calls(ToolCallFormat::hermes, "<tool_call>{\"name\": \"f\"}</tool_call>");
    CHECK(vt::tok::tool_call_parse_to_json(p) == R"({"content":null,"tool_calls":[{"name":"f","arguments":"{}"}]})");
    // Bytes that are not UTF-8 (a split character) become U+FFFD.
    p = parse_tool_calls(ToolCallFormat::none, std::string("caf\xC3", 4));
    CHECK(json::parse(vt::tok::tool_call_parse_to_json(p))["content"] == "caf\xEF\xBF\xBD");
}
