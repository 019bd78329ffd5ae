// The Hugging Face pipeline components (normalizers, pre-tokenizers,
// decoders, post-processors) against HF `tokenizers` 0.23.3. Every expected
// value below was produced live by that package (normalize_str,
// pre_tokenize_str, decode, Tokenizer.encode), not by this code.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/test-env.h"
#include "core/error.h"
#include "tokenizer/hf-regex.h"
#include "tokenizer/pipeline.h"

using namespace vt::tok;
using json = nlohmann::json;
using Strings = std::vector<std::string>;

namespace {

std::string normalize(const json &node, const std::string &in) {
    auto n = make_normalizer(node);
    REQUIRE(n);
    std::string out;
    n->normalize(in, out);
    return out;
}

Strings pre_tokenize(const json &node, const std::string &in, bool at_origin = true) {
    auto p = make_pre_tokenizer(node);
    REQUIRE(p);
    Pieces src, dst;
    src.push(in);
    p->apply(src, at_origin, dst);
    Strings r;
    for (size_t i = 0; i < dst.size(); ++i) r.emplace_back(dst[i]);
    return r;
}

std::string decode(const json &node, Strings tokens, size_t first_index = 0) {
    auto d = make_decoder(node);
    REQUIRE(d);
    d->decode_chain(tokens, first_index);
    std::string r;
    for (const auto &t : tokens) r += t;
    return r;
}

json split(const char *kind, const char *pattern, const char *behavior, bool invert = false) {
    return {{"type", "Split"}, {"pattern", {{kind, pattern}}}, {"behavior", behavior}, {"invert", invert}};
}

const char *kLlama3 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

} // namespace

TEST_CASE("hf normalizers: Unicode forms, case, strip", "[hf][normalizer]") {
    CHECK(normalize({{"type", "NFC"}}, "e\u0301\u212B") == "\u00E9\u00C5");
    CHECK(normalize({{"type", "NFD"}}, "\u00E9") == "e\u0301");
    CHECK(normalize({{"type", "NFKC"}}, "\uFB01\u2460\uFF28\u00BD") == "fi1H1\u20442");
    CHECK(normalize({{"type", "NFKD"}}, "\uFB01\u00E9") == "fie\u0301");
    // Character by character: no final sigma; U+0130 becomes two characters.
    CHECK(normalize({{"type", "Lowercase"}}, "\u0130\u03A3\u0391\u03A3 \u1E9E \u01C5 ABC") ==
          "i\u0307\u03C3\u03B1\u03C3 \u00DF \u01C6 abc");
    // White_Space includes U+0085 and U+3000, not U+200B.
    CHECK(normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}, "\u0085 a \u200B\u3000") ==
          "a \u200B");
    CHECK(normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}}, "  a  ") == "a  ");
    // Every mark (Mn, Mc, Me) goes.
    CHECK(normalize({{"type", "StripAccents"}}, "a\u0301\u0903\u20DD b") == "a b");
    CHECK(normalize({{"type", "Prepend"}, {"prepend", "\u2581"}}, "hi") == "\u2581hi");
    CHECK(normalize({{"type", "Prepend"}, {"prepend", "\u2581"}}, "") == "");
    CHECK(normalize({{"type", "ByteLevel"}}, "a \u00E9\n") == "a\u0120\u00C3\u00A9\u010A");
    json seq = {{"type", "Sequence"},
                {"normalizers", {{{"type", "NFKD"}}, {{"type", "StripAccents"}}, {{"type", "Lowercase"}}}}};
    CHECK(normalize(seq, "\u1E08af\u00E9") == "cafe");
}

TEST_CASE("hf normalizers: Replace", "[hf][normalizer]") {
    json re = {{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}};
    CHECK(normalize(re, "a  b\t\nc") == "a b c");
    // A String pattern is literal and the content is never expanded.
    json lit = {{"type", "Replace"}, {"pattern", {{"String", "(l)"}}}, {"content", "$1"}};
    CHECK(normalize(lit, "(l)e (l)") == "$1e $1");
    json empty_match = {{"type", "Replace"}, {"pattern", {{"Regex", "x*"}}}, {"content", "-"}};
    CHECK(normalize(empty_match, "") == "");
}

TEST_CASE("hf normalizers: BertNormalizer", "[hf][normalizer]") {
    json bert = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                 {"strip_accents", nullptr}, {"lowercase", true}};
    // Controls (Cc, Cf, Co), NUL and U+FFFD removed, white space -> ' ',
    // CJK padded, accents stripped because lowercase is on; unassigned
    // U+0378 stays.
    CHECK(normalize(bert, "A\u00E9\U0001F970\u4E2D\u200B\uFFFD\t\n\u3000x\uE000\u0378") ==
          "ae\U0001F970 \u4E2D    x\u0378");
    json keep_case = bert;
    keep_case["lowercase"] = false;
    CHECK(normalize(keep_case, "\u00C1\u00E9\u4E2D") == "\u00C1\u00E9 \u4E2D ");
}

namespace {

// The bytes of field `field` of the first length-delimited `field` entry
// in a protobuf message (enough to reach the charsmap of a .model file).
bool proto_field(std::string_view msg, uint32_t field, std::string_view &out) {
    size_t i = 0;
    auto varint = [&](uint64_t &v) {
        v = 0;
        for (int shift = 0; i < msg.size() && shift < 64; shift += 7) {
            const auto b = static_cast<uint8_t>(msg[i++]);
            v |= uint64_t(b & 0x7F) << shift;
            if (!(b & 0x80)) return true;
        }
        return false;
    };
    while (i < msg.size()) {
        uint64_t key = 0, v = 0;
        if (!varint(key)) return false;
        switch (key & 7) {
        case 0: if (!varint(v)) return false; break;
        case 1: i += 8; break;
        case 5: i += 4; break;
        case 2:
            if (!varint(v) || v > msg.size() - i) return false;
            if ((key >> 3) == field) {
                out = msg.substr(i, v);
                return true;
            }
            i += v;
            break;
        default: return false;
        }
    }
    return false;
}

std::string base64(std::string_view bytes) {
    static const char *abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string r;
    size_t i = 0;
    for (; i + 2 < bytes.size(); i += 3) {
        const uint32_t v = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 | uint8_t(bytes[i + 2]);
        for (int k = 3; k >= 0; --k) r += abc[(v >> (6 * k)) & 63];
    }
    if (i < bytes.size()) {
        uint32_t v = uint32_t(uint8_t(bytes[i])) << 16;
        if (i + 1 < bytes.size()) v |= uint32_t(uint8_t(bytes[i + 1])) << 8;
        r += abc[(v >> 18) & 63];
        r += abc[(v >> 12) & 63];
        r += i + 1 < bytes.size() ? abc[(v >> 6) & 63] : '=';
        r += '=';
    }
    return r;
}

} // namespace

TEST_CASE("hf normalizers: Precompiled (SentencePiece charsmap)", "[hf][normalizer]") {
    // An empty charsmap is the identity.
    CHECK(normalize({{"type", "Precompiled"}, {"precompiled_charsmap", ""}}, "\uFF28 x") == "\uFF28 x");

    const auto path = vt::test::shared_data() / "tokenizers" / "sentencepiece-unigram" / "test_model.model";
    if (!std::filesystem::exists(path)) {
        WARN("skipping the charsmap of test_model.model: " << path << " is absent");
        return;
    }
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string model = ss.str();
    std::string_view spec, charsmap;
    REQUIRE(proto_field(model, 3, spec));        // ModelProto.normalizer_spec
    REQUIRE(proto_field(spec, 2, charsmap));     // NormalizerSpec.precompiled_charsmap
    json node = {{"type", "Precompiled"}, {"precompiled_charsmap", base64(charsmap)}};

    // nmt_nfkc: full-width forms, ligatures, squared words, fractions.
    CHECK(normalize(node, "\uFF28\uFF45\uFF4C\uFF4C\uFF4F\u3000\uFF57\uFF4F\uFF52\uFF4C\uFF44") == "Hello world");
    CHECK(normalize(node, "\uFB01 \u2460 \u3300 \u212B") == "fi 1 \u30A2\u30D1\u30FC\u30C8 \u00C5");
    CHECK(normalize(node, "\u01C5 \u00BD \u2122") == "D\u017E 1\u20442 TM");
    CHECK(normalize(node, "\u200D a\u00A0b") == "\u200D a b");
    // A grapheme of 6 bytes or more is looked up character by character.
    CHECK(normalize(node, "e\u0301\u0301\u0301x") == "e\u0301\u0301\u0301x");
}

TEST_CASE("hf pre-tokenizers: ByteLevel", "[hf][pre_tokenizer]") {
    json bl = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
    CHECK(pre_tokenize(bl, "Hello  world's\n 123") ==
          Strings{"\u0120Hello", "\u0120", "\u0120world", "'s", "\u010A", "\u0120123"});
    json plain = bl;
    plain["use_regex"] = false;
    CHECK(pre_tokenize(plain, "a b") == Strings{"\u0120a\u0120b"});
}

TEST_CASE("hf pre-tokenizers: Split with real patterns and Oniguruma classes", "[hf][pre_tokenizer]") {
    // (?i) folds U+017F into 's'; U+0085 is white space.
    CHECK(pre_tokenize(split("Regex", kLlama3, "Isolated"), "I'LL x'\u017F 12345 \u0085\u0085b  \n\n ok?!\r\n") ==
          Strings{"I", "'LL", " x", "'\u017F", " ", "123", "45", " \u0085", "\u0085b", "  \n\n", " ok", "?!\r\n"});
    // Oniguruma's \w takes '²' but not '①' or U+200D; \h is a hex digit;
    // U+180E is not \s; $ is a line anchor.
    CHECK(pre_tokenize(split("Regex", "\\w+", "Isolated"), "a\u00B2\u2460\u00E9\u0301_\u203Fx\u200Dy") ==
          Strings{"a\u00B2", "\u2460", "\u00E9\u0301_\u203Fx", "\u200D", "y"});
    CHECK(pre_tokenize(split("Regex", "\\h+", "Isolated"), "abc12 z") == Strings{"abc12", " z"});
    CHECK(pre_tokenize(split("Regex", "\\s+", "Removed"), "a\u180Eb c") == Strings{"a\u180Eb", "c"});
    CHECK(pre_tokenize(split("Regex", "a$", "Removed"), "xa\nya") == Strings{"x", "\ny"});
    CHECK(hf::onig_to_pcre2("[\\w']\\h", false) == "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}'][0-9a-fA-F]");
}

TEST_CASE("hf pre-tokenizers: Split behaviors and invert", "[hf][pre_tokenizer]") {
    const std::string s = "the-final--countdown";
    CHECK(pre_tokenize(split("String", "-", "Removed"), s) == Strings{"the", "final", "countdown"});
    CHECK(pre_tokenize(split("String", "-", "Isolated"), s) == Strings{"the", "-", "final", "-", "-", "countdown"});
    CHECK(pre_tokenize(split("String", "-", "MergedWithPrevious"), s) == Strings{"the-", "final-", "-", "countdown"});
    CHECK(pre_tokenize(split("String", "-", "MergedWithNext"), s + "-") ==
          Strings{"the", "-final", "-", "-countdown", "-"});
    CHECK(pre_tokenize(split("String", "-", "Contiguous"), s) == Strings{"the", "-", "final", "--", "countdown"});
    CHECK(pre_tokenize(split("String", "-", "Contiguous", true), s) == Strings{"the", "-", "final", "--", "countdown"});
    CHECK(pre_tokenize(split("String", "-", "MergedWithPrevious", true), s) ==
          Strings{"the", "-final", "-", "-countdown"});
    CHECK(pre_tokenize(split("String", "-", "Removed", true), s) == Strings{"-", "-", "-"});
    // Empty matches take part, as onig's find_iter yields them.
    CHECK(pre_tokenize(split("Regex", "x*", "MergedWithNext"), "abxxc") == Strings{"a", "b", "xxc"});
}

TEST_CASE("hf pre-tokenizers: Metaspace", "[hf][pre_tokenizer]") {
    json always = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}, {"split", true}};
    CHECK(pre_tokenize(always, "Hey  friend!") == Strings{"\u2581Hey", "\u2581", "\u2581friend!"});
    json no_split = always;
    no_split["split"] = false;
    CHECK(pre_tokenize(no_split, "Hey friend") == Strings{"\u2581Hey\u2581friend"});
    json never = always;
    never["prepend_scheme"] = "never";
    CHECK(pre_tokenize(never, "Hey friend") == Strings{"Hey", "\u2581friend"});
    // The legacy field: add_prefix_space false means "never".
    CHECK(pre_tokenize({{"type", "Metaspace"}, {"replacement", "\u2581"}, {"add_prefix_space", false}}, "Hey") ==
          Strings{"Hey"});

    // "first": only a piece at the start of the user's text gets the
    // prefix. Tokenizer.encode("Hey<s>Hey x") with <s> special gave
    // ['▁Hey', '<s>', 'Hey', '▁x'].
    json first = always;
    first["prepend_scheme"] = "first";
    CHECK(pre_tokenize(first, "Hey") == Strings{"\u2581Hey"});
    CHECK(pre_tokenize(first, "Hey x", false) == Strings{"Hey", "\u2581x"});
    // After WhitespaceSplit removed the leading space, "hello" no longer
    // starts at byte 0.
    json seq = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "WhitespaceSplit"}}, first}}};
    CHECK(pre_tokenize(seq, " hello world") == Strings{"hello", "world"});
    CHECK(pre_tokenize(seq, "hello world") == Strings{"\u2581hello", "world"});
}

TEST_CASE("hf pre-tokenizers: character classes", "[hf][pre_tokenizer]") {
    CHECK(pre_tokenize({{"type", "Digits"}, {"individual_digits", false}}, "a123\u0663\u00BDb") ==
          Strings{"a", "123\u0663\u00BD", "b"});
    CHECK(pre_tokenize({{"type", "Digits"}, {"individual_digits", true}}, "a123b") ==
          Strings{"a", "1", "2", "3", "b"});
    // Whitespace uses the regex crate's \w (with U+200D, without '²').
    CHECK(pre_tokenize({{"type", "Whitespace"}}, "a_b \u00B2\u00BD \u00E9\u0301x ,.-") ==
          Strings{"a_b", "\u00B2\u00BD", "\u00E9\u0301x", ",.-"});
    CHECK(pre_tokenize({{"type", "WhitespaceSplit"}}, "a\u0085b\u200Bc d") == Strings{"a", "b\u200Bc", "d"});
    CHECK(pre_tokenize({{"type", "Punctuation"}, {"behavior", "Isolated"}}, "a..b$+c") ==
          Strings{"a", ".", ".", "b", "$", "+", "c"});
    CHECK(pre_tokenize({{"type", "Punctuation"}, {"behavior", "Contiguous"}}, "a..b$+c") ==
          Strings{"a", "..", "b", "$+", "c"});
    CHECK(pre_tokenize({{"type", "BertPreTokenizer"}}, "Hey, you!  ok") == Strings{"Hey", ",", "you", "!", "ok"});
    CHECK(pre_tokenize({{"type", "CharDelimiterSplit"}, {"delimiter", "x"}}, "axbxxc") == Strings{"a", "b", "c"});
}

TEST_CASE("hf decoders", "[hf][decoder]") {
    // Non-alphabet tokens keep their UTF-8; invalid bytes -> U+FFFD per
    // maximal ill-formed subsequence.
    CHECK(decode({{"type", "ByteLevel"}}, {"\u0120h", "\u00E9", "\u00E2\u0082"}) == " h\uFFFD\u00E2\u0082");
    CHECK(decode({{"type", "ByteLevel"}}, {"\u00E2\u0124", "\u00AC", "\u0120", "\u00F0\u0141", "\u013A"}) ==
          "\u20AC \uFFFD");

    json meta = {{"type", "Metaspace"}, {"replacement", "\u2581"}, {"prepend_scheme", "always"}, {"split", true}};
    // Every replacement of the sequence's first token is dropped.
    CHECK(decode(meta, {"\u2581a\u2581b", "\u2581c"}) == "ab c");
    // Mid-sequence the first token is an ordinary one (HF decode(["x",
    // "▁a▁b", "▁c"]) gave "x a b c").
    CHECK(decode(meta, {"\u2581a\u2581b", "\u2581c"}, 3) == " a b c");
    json meta_never = meta;
    meta_never["prepend_scheme"] = "never";
    CHECK(decode(meta_never, {"\u2581a\u2581b", "\u2581c"}) == " a b c");

    json bf = {{"type", "ByteFallback"}};
    CHECK(decode(bf, {"<0x61>", "<0xE2>", "<0x82>", "b", "<0xe2>", "<0x82>", "<0xac>"}) ==
          "\uFFFD\uFFFD\uFFFDb\u20AC");
    CHECK(decode(bf, {"<0x+A>", "<0xZZ>"}) == "\n<0xZZ>");

    CHECK(decode({{"type", "Fuse"}}, {"a", "b"}) == "ab");
    CHECK(decode({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 1}}, {"\u00E9 ", "  ", " a"}) ==
          "\u00E9a");
    CHECK(decode({{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}}, {"\u2581a", "b\u2581"}) ==
          " ab ");
    json wp = {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}};
    CHECK(decode(wp, {"##a", "b", "##c", ".", "do", "n't"}) == "##a bc. don't");
    // Mid-sequence (first_index 1): HF decode(["x", "##a", "b"]) gave
    // "xa b", of which these two tokens make "a b".
    CHECK(decode(wp, {"##a", "b"}, 1) == "a b");
    CHECK(decode({{"type", "BPEDecoder"}, {"suffix", "</w>"}}, {"a</w>", "b</w>"}) == "a b");
    CHECK(decode({{"type", "CTC"}, {"pad_token", "<pad>"}, {"word_delimiter_token", "|"}, {"cleanup", true}},
                 {"<pad>", "h", "h", "e", "<pad>", "l", "l", "<pad>", "l", "|", "o"}) == "hell o");
    json seq = {{"type", "Sequence"},
                {"decoders",
                 {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                  {{"type", "ByteFallback"}},
                  {{"type", "Fuse"}},
                  {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
    CHECK(decode(seq, {"\u2581H", "<0xC3>", "<0xA9>", "\u2581x"}) == "H\u00E9 x");
}

TEST_CASE("hf post-processors", "[hf][post_processor]") {
    Vocab vocab;
    vocab.add_token("[CLS]", 0, ATTR_CONTROL);
    vocab.add_token("[SEP]", 0, ATTR_CONTROL);
    vocab.finalize();
    // As serialized by TemplateProcessing(single="[CLS] $A [SEP]",
    // special_tokens=[("[CLS]", 101), ("[SEP]", 102)]): ids come from the map.
    json tp = json::parse(R"({"type":"TemplateProcessing",
        "single":[{"SpecialToken":{"id":"[CLS]","type_id":0}},{"Sequence":{"id":"A","type_id":0}},
                  {"SpecialToken":{"id":"[SEP]","type_id":0}}],
        "pair":[],
        "special_tokens":{"[CLS]":{"id":"[CLS]","ids":[101],"tokens":["[CLS]"]},
                          "[SEP]":{"id":"[SEP]","ids":[102],"tokens":["[SEP]"]}}})");
    PostProcessor pp = make_post_processor(tp, vocab);
    CHECK(pp.prefix == std::vector<int32_t>{101});
    CHECK(pp.suffix == std::vector<int32_t>{102});

    pp = make_post_processor(json::parse(R"({"type":"BertProcessing","sep":["[SEP]",102],"cls":["[CLS]",101]})"), vocab);
    CHECK(pp.prefix == std::vector<int32_t>{101});
    CHECK(pp.suffix == std::vector<int32_t>{102});
    pp = make_post_processor(json::parse(R"({"type":"RobertaProcessing","sep":["</s>",2],"cls":["<s>",0],
        "trim_offsets":true,"add_prefix_space":true})"), vocab);
    CHECK(pp.prefix == std::vector<int32_t>{0});
    CHECK(pp.suffix == std::vector<int32_t>{2});

    json seq = {{"type", "Sequence"},
                {"processors", {{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}}, tp}}};
    pp = make_post_processor(seq, vocab);
    CHECK(pp.prefix == std::vector<int32_t>{101});
    CHECK(pp.suffix == std::vector<int32_t>{102});
    CHECK(make_post_processor(nullptr, vocab).prefix.empty());
}

TEST_CASE("hf components: errors", "[hf]") {
    auto status_of = [](auto &&fn) {
        try {
            fn();
        } catch (const vt::Error &e) {
            return e.status();
        }
        return VT_OK;
    };
    CHECK(make_normalizer(nullptr) == nullptr);
    CHECK(status_of([] { make_normalizer({{"type", "Nope"}}); }) == VT_ERR_UNSUPPORTED);
    CHECK(status_of([] { make_normalizer({{"type", "Replace"}, {"content", "x"}}); }) == VT_ERR_FORMAT);
    CHECK(status_of([] { make_pre_tokenizer(split("Regex", "(", "Isolated")); }) == VT_ERR_FORMAT);
    CHECK(status_of([] { make_pre_tokenizer(split("Regex", "a", "Sideways")); }) == VT_ERR_FORMAT);
    CHECK(status_of([] { make_pre_tokenizer({{"type", "Metaspace"}, {"replacement", "ab"}}); }) == VT_ERR_FORMAT);
    CHECK(status_of([] { make_decoder({{"type", "Strip"}, {"content", " "}, {"start", "1"}}); }) == VT_ERR_FORMAT);
    CHECK(status_of([] { make_decoder(json::array()); }) == VT_ERR_FORMAT);
    CHECK(status_of([] {
              Vocab v;
              v.finalize();
              make_post_processor({{"type", "BertProcessing"}, {"sep", "x"}}, v);
          }) == VT_ERR_FORMAT);
}
