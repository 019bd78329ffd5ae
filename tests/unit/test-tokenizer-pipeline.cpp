// PipelineTokenizer: Hugging Face's added-token semantics and the stages
// wired in order. Expected ids were produced by HF tokenizers 0.23.3 on the
// same tokenizer.json (Tokenizer.from_str(...).encode(text, add_special_tokens)
// and, for parse_special = false, with encode_special_tokens = True).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/pipeline-tokenizer.h"

using vt::tok::PipelineTokenizer;
using Ids = std::vector<int32_t>;

namespace {

// WordLevel over whitespace-split, lowercased text, with added tokens of
// every flag; some are also model tokens (<ctl>, <ls>, cat).
const char *kDoc = R"({
 "version": "1.0", "truncation": null, "padding": null,
 "added_tokens": [
  {"id": 5, "content": "<ctl>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
  {"id": 8, "content": "<ls>", "single_word": false, "lstrip": true, "rstrip": false, "normalized": false, "special": true},
  {"id": 9, "content": "<rs>", "single_word": false, "lstrip": false, "rstrip": true, "normalized": false, "special": true},
  {"id": 3, "content": "cat", "single_word": true, "lstrip": false, "rstrip": false, "normalized": false, "special": false},
  {"id": 10, "content": "DOG", "single_word": false, "lstrip": false, "rstrip": false, "normalized": true, "special": false},
  {"id": 11, "content": "<ctl>x", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": false}
 ],
 "normalizer": {"type": "Lowercase"},
 "pre_tokenizer": {"type": "WhitespaceSplit"},
 "post_processor": {"type": "TemplateProcessing",
   "single": [{"SpecialToken": {"id": "<ctl>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
              {"SpecialToken": {"id": "<rs>", "type_id": 0}}],
   "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
   "special_tokens": {"<ctl>": {"id": "<ctl>", "ids": [5], "tokens": ["<ctl>"]},
                      "<rs>": {"id": "<rs>", "ids": [9], "tokens": ["<rs>"]}}},
 "decoder": null,
 "model": {"type": "WordLevel", "unk_token": "[UNK]",
   "vocab": {"[UNK]": 0, "hello": 1, "world": 2, "cat": 3, "dog": 4, "<ctl>": 5, "concat": 6, "x": 7, "<ls>": 8}}
})";

PipelineTokenizer make(const char *doc = kDoc) {
    return PipelineTokenizer(nlohmann::json::parse(doc), nullptr);
}

} // namespace

TEST_CASE("pipeline: added tokens match as in HF", "[tokenizer][pipeline]") {
    const PipelineTokenizer t = make();
    struct Case { const char *text; Ids plain, with_special; };
    const Case cases[] = {
        {"hello <ctl> world", {1, 5, 2}, {5, 1, 5, 2, 9}},
        {"hello   <ls> world", {1, 8, 2}, {5, 1, 8, 2, 9}},   // lstrip
        {"hello <rs>   world", {1, 9, 2}, {5, 1, 9, 2, 9}},   // rstrip
        {"cat concat cat.", {3, 6, 3, 0}, {5, 3, 6, 3, 0, 9}}, // single_word
        {"a_cat cat", {0, 3}, {5, 0, 3, 9}},                   // '_' is a word character
        {"Hello DOG dog", {1, 10, 10}, {5, 1, 10, 10, 9}},     // normalized: matches "dog"
        {"hello<ctl>x world", {1, 11, 2}, {5, 1, 11, 2, 9}},   // leftmost-longest
        {"<CTL> HELLO", {5, 1}, {5, 5, 1, 9}},                 // raw tokens are case-sensitive
        {"", {}, {5, 9}},
    };
    for (const Case &c : cases) {
        INFO(c.text);
        CHECK(t.encode(c.text, false, true) == c.plain);
        CHECK(t.encode(c.text, true, true) == c.with_special);
    }
}

TEST_CASE("pipeline: special added tokens need parse_special", "[tokenizer][pipeline]") {
    const PipelineTokenizer t = make();
    // HF with encode_special_tokens = True: the text of a special token is
    // plain text; non-special added tokens still match.
    CHECK(t.encode("hello <rs>   world", false, false) == Ids{1, 0, 2});
    CHECK(t.encode("hello<ctl>x world", false, false) == Ids{1, 11, 2});
}

TEST_CASE("pipeline: vocabulary, decode and errors", "[tokenizer][pipeline]") {
    const PipelineTokenizer t = make();
    CHECK(t.n_vocab() == 12);  // 9 model tokens + <rs>, DOG, <ctl>x
    // No decoder: HF joins tokens with spaces; a normalized added token
    // decodes as its normalized text ("DOG" -> "dog").
    CHECK(t.decode(Ids{10, 1, 9, 2}.data(), 4, true) == "dog hello <rs> world");
    CHECK(t.decode(Ids{10, 1, 9, 2}.data(), 4, false) == "dog hello world");
    CHECK(t.decode(Ids{9, 1}.data(), 2, false) == "hello");  // <rs> is special
    CHECK(t.decode(Ids{9, 1}.data(), 2, true) == "<rs> hello");
    CHECK_THROWS_AS(t.decode(Ids{12}.data(), 1, true), vt::Error);
    CHECK_THROWS_AS(t.decode(Ids{-1}.data(), 1, true), vt::Error);
    CHECK_THROWS_AS(t.encode("bad \xC3(", false, false), vt::Error);
    CHECK_THROWS_AS(make(R"({"model": {"type": "WordLevel"}})"), vt::Error);
    CHECK_THROWS_AS(make(R"({"model": {"type": "NoSuchModel", "vocab": {"a": 0}}})"), vt::Error);
    CHECK_THROWS_AS(make(R"({"model": {"type": "WordLevel", "vocab": {"a": -1}, "unk_token": "a"}})"), vt::Error);
}

TEST_CASE("pipeline: an added token keeps a free id past the vocabulary", "[tokenizer][pipeline]") {
    // tiktoken's special ids have gaps (cl100k: <|endoftext|> 100257 after
    // 100256 tokens) and tiktoken honours them. HF would renumber to 2; we
    // keep the file's id and leave the gap unused (a deliberate deviation
    // that only files with gaps see).
    const PipelineTokenizer t = make(R"({
      "added_tokens": [{"id": 5, "content": "<eot>", "special": true}],
      "pre_tokenizer": {"type": "WhitespaceSplit"},
      "model": {"type": "WordLevel", "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 1}}})");
    CHECK(t.n_vocab() == 6);
    CHECK(t.encode("a <eot> a", false, true) == Ids{1, 5, 1});
    for (int32_t id : t.encode("[vt:unused 2] [vt:unused", false, true)) CHECK(id == 0);  // gaps never match
}

TEST_CASE("pipeline: tokenizer_config.json sets BOS/EOS and add_bos_token", "[tokenizer][pipeline]") {
    const nlohmann::json config = nlohmann::json::parse(
        R"({"bos_token": {"content": "hello"}, "eos_token": "world", "add_bos_token": true, "add_eos_token": false})");
    const PipelineTokenizer t(nlohmann::json::parse(kDoc), &config);
    CHECK(t.bos() == 1);
    CHECK(t.eos() == 2);
    CHECK(t.is_eog(2));
    // As transformers' Llama tokenizers: the template becomes "<bos> $A".
    CHECK(t.encode("cat", true, true) == Ids{1, 3});
}

TEST_CASE("pipeline: plain text never becomes a special token, even a Unigram piece", "[tokenizer][pipeline]") {
    // "</s>" is a special added token and also a Unigram piece (as in
    // SentencePiece conversions). HF tokenizers 0.23.3 gives [2, 1, 3] for
    // "x </s> y" even with encode_special_tokens = True: its model matches
    // the piece. vt's plain mode keeps the ABI's promise (and SentencePiece's
    // behaviour: control pieces are not in the lattice): "<", "/", "s", ">"
    // with "<" and ">" unknown.
    const PipelineTokenizer t = make(R"({
      "added_tokens": [{"id": 1, "content": "</s>", "special": true, "normalized": false}],
      "pre_tokenizer": {"type": "WhitespaceSplit"},
      "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": false,
        "vocab": [["<unk>", 0.0], ["</s>", 0.0], ["x", -1.0], ["y", -1.0], ["s", -2.0], ["/", -2.0]]}})");
    CHECK(t.encode("x </s> y", false, true) == Ids{2, 1, 3});  // parse_special: as HF
    CHECK(t.encode("x </s> y", false, false) == Ids{2, 0, 5, 4, 0, 3});
}
