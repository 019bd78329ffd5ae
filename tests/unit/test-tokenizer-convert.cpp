// Converters to tokenizer.json (lib/tokenizer/convert.h): the structure of
// what they produce for the shared test files, and their errors on bad
// input. Expected counts, merges and ids are those of transformers 5.24's
// converters run on the same files (TikTokenConverter, GPT2Tokenizer,
// SpmConverter.build_tokenizer_from_spm_proto), noted at each check. The
// token-by-token comparison with tiktoken / sentencepiece / HF ids over the
// corpora was done with the Python oracles when the converters were written
// (a unit test cannot run them).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/gguf-writer.h"
#include "common/test-env.h"
#include "core/error.h"
#include "model/gguf.h"
#include "tokenizer/convert-internal.h"
#include "tokenizer/convert.h"
#include "tokenizer/protobuf-reader.h"
#include "common/skip.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path data_dir() { return vt::test::shared_data() / "tokenizers"; }

// The file's bytes, or an empty string (and a counted skip) when it is absent.
std::string read_data(const std::string &rel) {
    const fs::path p = data_dir() / rel;
    std::ifstream f(p, std::ios::binary);
    if (!f) {
        VT_NOTE_SKIP(p.string() << " is missing (set VT_SHARED_DATA)");
        return {};
    }
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Runs `fn` and returns the vt::Error status it throws (VT_OK if none).
template <class Fn>
vt_status status_of(Fn fn) {
    try {
        fn();
    } catch (const vt::Error &e) {
        return e.status();
    }
    return VT_OK;
}

json merge(const char *a, const char *b) { return json::array({a, b}); }

const json &find_added(const json &j, const std::string &content) {
    for (const json &t : j["added_tokens"]) {
        if (t["content"] == content) return t;
    }
    FAIL("no added token " << content);
    static const json none;
    return none;
}

} // namespace

TEST_CASE("base64 round trip and strict decoding", "[convert]") {
    using vt::tok::base64_decode;
    using vt::tok::base64_encode;
    for (const std::string &s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\x00\xff\x10", 3)}) {
        std::string back;
        REQUIRE(base64_decode(base64_encode(s), back));
        CHECK(back == s);
    }
    CHECK(base64_encode("hello") == "aGVsbG8=");
    std::string out;
    CHECK_FALSE(base64_decode("aGVsbG8", out));    // length
    CHECK_FALSE(base64_decode("aGV=bG8=", out));   // padding in the middle
    CHECK_FALSE(base64_decode("aGVs!G8=", out));   // alphabet
    CHECK_FALSE(base64_decode("a===", out));
}

TEST_CASE("tiktoken r50k_base and cl100k_base", "[convert][tiktoken]") {
    const std::string r50k = read_data("tiktoken/r50k_base.tiktoken");
    if (r50k.empty()) return;
    const json j = vt::tok::convert_tiktoken(r50k, "r50k_base");
    const json &m = j["model"];
    CHECK(m["type"] == "BPE");
    CHECK(m["ignore_merges"] == true);
    // HF TikTokenConverter on the same file: 50256 tokens, 108299 merges,
    // first merges "Ġ t", "Ġ a", "h e", last "Ġga zed"; "Ġthe" is 262.
    CHECK(m["vocab"].size() == 50256);
    REQUIRE(m["merges"].size() == 108299);
    CHECK(m["merges"][0] == merge("\xc4\xa0", "t"));
    CHECK(m["merges"][1] == merge("\xc4\xa0", "a"));
    CHECK(m["merges"][2] == merge("h", "e"));
    CHECK(m["merges"][108298] == merge("\xc4\xa0ga", "zed"));
    CHECK(m["vocab"]["\xc4\xa0the"] == 262);
    CHECK(m["vocab"]["!"] == 0);
    REQUIRE(j["added_tokens"].size() == 1);
    CHECK(find_added(j, "<|endoftext|>")["id"] == 50256);
    CHECK(find_added(j, "<|endoftext|>")["special"] == true);
    const json &pre = j["pre_tokenizer"]["pretokenizers"];
    REQUIRE(pre.size() == 2);
    CHECK(pre[0]["type"] == "Split");
    CHECK(pre[0]["behavior"] == "Isolated");
    CHECK(pre[0]["pattern"]["Regex"] ==
          R"('(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s)");
    CHECK(pre[1]["type"] == "ByteLevel");
    CHECK(pre[1]["use_regex"] == false);
    CHECK(pre[1]["add_prefix_space"] == false);
    CHECK(j["decoder"]["type"] == "ByteLevel");

    const std::string cl100k = read_data("tiktoken/cl100k_base.tiktoken");
    if (cl100k.empty()) return;
    const json c = vt::tok::convert_tiktoken(cl100k, "cl100k_base");
    // HF: 100256 tokens, 233378 merges, first "Ġ Ġ", "Ġ ĠĠĠ", "ĠĠ ĠĠ",
    // 1000th "-- --------------"; "Ġthe" is 279.
    CHECK(c["model"]["vocab"].size() == 100256);
    REQUIRE(c["model"]["merges"].size() == 233378);
    CHECK(c["model"]["merges"][0] == merge("\xc4\xa0", "\xc4\xa0"));
    CHECK(c["model"]["merges"][1] == merge("\xc4\xa0", "\xc4\xa0\xc4\xa0\xc4\xa0"));
    CHECK(c["model"]["merges"][1000] == merge("--", "--------------"));
    CHECK(c["model"]["vocab"]["\xc4\xa0the"] == 279);
    // tiktoken's ids for the specials (HF would number them from 100256).
    CHECK(find_added(c, "<|endoftext|>")["id"] == 100257);
    CHECK(find_added(c, "<|endofprompt|>")["id"] == 100276);
    CHECK(c["added_tokens"].size() == 5);
}

TEST_CASE("tiktoken bad input", "[convert][tiktoken]") {
    using vt::tok::convert_tiktoken;
    CHECK(status_of([] { convert_tiktoken("IQ== 0\n", "gpt5_base"); }) == VT_ERR_UNSUPPORTED);
    CHECK(status_of([] { convert_tiktoken("", "r50k_base"); }) == VT_ERR_FORMAT);
    CHECK(status_of([] { convert_tiktoken("!!!! 0\n", "r50k_base"); }) == VT_ERR_FORMAT);      // base64
    CHECK(status_of([] { convert_tiktoken("IQ= 0\n", "r50k_base"); }) == VT_ERR_FORMAT);       // base64 length
    CHECK(status_of([] { convert_tiktoken("IQ== zero\n", "r50k_base"); }) == VT_ERR_FORMAT);   // rank
    CHECK(status_of([] { convert_tiktoken("IQ== 1x\n", "r50k_base"); }) == VT_ERR_FORMAT);
    CHECK(status_of([] { convert_tiktoken("IQ== -1\n", "r50k_base"); }) == VT_ERR_FORMAT);
    CHECK(status_of([] { convert_tiktoken("IQ==\n", "r50k_base"); }) == VT_ERR_FORMAT);        // no rank
    CHECK(status_of([] { convert_tiktoken("IQ== 0\nIg== 0\n", "r50k_base"); }) == VT_ERR_FORMAT);  // rank twice
    CHECK(status_of([] { convert_tiktoken("IQ== 0\nIQ== 1\n", "r50k_base"); }) == VT_ERR_FORMAT);  // token twice
    CHECK(status_of([] { convert_tiktoken("IQ== 50256\n", "r50k_base"); }) == VT_ERR_FORMAT);  // special's id
    // A tiny valid file: "!" 0, "\"" 1, "!\"" 2 gives the one merge.
    const json j = convert_tiktoken("IQ== 0\r\nIg== 1\n\nISI= 2\n", "r50k_base");
    CHECK(j["model"]["merges"] == json::array({merge("!", "\"")}));
    CHECK(j["model"]["vocab"]["!\""] == 2);
}

TEST_CASE("GPT-2 encoder.json + vocab.bpe", "[convert][gpt2]") {
    const std::string vocab = read_data("gpt2/encoder.json"), merges = read_data("gpt2/vocab.bpe");
    if (vocab.empty() || merges.empty()) return;
    const json j = vt::tok::convert_gpt2_files(vocab, merges);
    // transformers' GPT2Tokenizer(vocab=, merges=) on the same files: the
    // same vocabulary and merges ("#version" line skipped).
    CHECK(j["model"]["vocab"].size() == 50257);
    REQUIRE(j["model"]["merges"].size() == 50000);
    CHECK(j["model"]["merges"][0] == merge("\xc4\xa0", "t"));
    CHECK(j["model"]["vocab"]["\xc4\xa0the"] == 262);
    CHECK(j["model"]["ignore_merges"] == false);
    CHECK(j["pre_tokenizer"]["type"] == "ByteLevel");
    CHECK(j["pre_tokenizer"]["use_regex"] == true);
    CHECK(j["pre_tokenizer"]["add_prefix_space"] == false);
    CHECK(j["post_processor"]["type"] == "ByteLevel");
    CHECK(find_added(j, "<|endoftext|>")["id"] == 50256);
}

TEST_CASE("Llama 3 encoder.json + vocab.bpe", "[convert][gpt2]") {
    const std::string vocab = read_data("llama3/encoder.json"), merges = read_data("llama3/vocab.bpe");
    if (vocab.empty() || merges.empty()) return;
    const json j = vt::tok::convert_gpt2_files(vocab, merges);
    CHECK(j["model"]["vocab"].size() == 128000);
    CHECK(j["model"]["merges"].size() == 280147);  // no "#version" line to skip
    CHECK(j["model"]["merges"][0] == merge("\xc4\xa0", "\xc4\xa0"));
    CHECK(j["model"]["ignore_merges"] == true);
    CHECK(j["model"]["vocab"]["\xc4\xa0the"] == 279);
    CHECK(j["added_tokens"].empty());
    const json &pre = j["pre_tokenizer"]["pretokenizers"];
    REQUIRE(pre.size() == 2);
    // The regex of Llama 3's own tokenizer.json.
    CHECK(pre[0]["pattern"]["Regex"] ==
          R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)");
    CHECK(pre[1]["use_regex"] == false);
}

TEST_CASE("GPT-2 files bad input", "[convert][gpt2]") {
    using vt::tok::convert_gpt2_files;
    const char *vocab = R"({"a": 0, "b": 1, "ab": 2})";
    CHECK(convert_gpt2_files(vocab, "#version: 0.2\na b\n")["model"]["merges"].size() == 1);
    CHECK(status_of([&] { convert_gpt2_files("{\"a\": 0", "a b\n"); }) == VT_ERR_FORMAT);       // JSON
    CHECK(status_of([&] { convert_gpt2_files("[1, 2]", "a b\n"); }) == VT_ERR_FORMAT);          // not an object
    CHECK(status_of([&] { convert_gpt2_files(R"({"a": "x"})", ""); }) == VT_ERR_FORMAT);        // id
    CHECK(status_of([&] { convert_gpt2_files(vocab, "a c\n"); }) == VT_ERR_FORMAT);             // unknown token
    CHECK(status_of([&] { convert_gpt2_files(vocab, "b a\n"); }) == VT_ERR_FORMAT);             // "ba" unknown
    CHECK(status_of([&] { convert_gpt2_files(vocab, "a b ab\n"); }) == VT_ERR_FORMAT);          // three parts
    CHECK(status_of([&] { convert_gpt2_files(vocab, "ab\n"); }) == VT_ERR_FORMAT);              // one part
}

TEST_CASE("SentencePiece BPE: Mistral v1 and v3", "[convert][spm]") {
    const std::string v1 = read_data("mistral-spm/tokenizer.model.v1");
    if (v1.empty()) return;
    const json j = vt::tok::convert_spm_model(v1);
    const json &m = j["model"];
    // HF build_tokenizer_from_spm_proto: 32000 pieces, 58980 merges, first
    // "▁ t", "i n", "e r", last "▁▁▁▁▁▁▁▁▁▁ ▁"; "▁the" is 272.
    CHECK(m["type"] == "BPE");
    CHECK(m["byte_fallback"] == true);
    CHECK(m["fuse_unk"] == true);
    CHECK(m["unk_token"] == "<unk>");
    CHECK(m["ignore_merges"] == false);
    CHECK(m["vocab"].size() == 32000);
    REQUIRE(m["merges"].size() == 58980);
    CHECK(m["merges"][0] == merge("\xe2\x96\x81", "t"));
    CHECK(m["merges"][1] == merge("i", "n"));
    CHECK(m["merges"][2] == merge("e", "r"));
    std::string ten_spaces;
    for (int i = 0; i < 10; ++i) ten_spaces += "\xe2\x96\x81";
    CHECK(m["merges"][58979] == json::array({ten_spaces, "\xe2\x96\x81"}));
    CHECK(m["vocab"]["\xe2\x96\x81the"] == 272);
    REQUIRE(j["added_tokens"].size() == 3);  // <unk>, <s>, </s>
    CHECK(find_added(j, "<s>")["id"] == 1);
    CHECK(find_added(j, "<s>")["special"] == true);
    CHECK(j["pre_tokenizer"]["pretokenizers"][0]["type"] == "Metaspace");
    CHECK(j["pre_tokenizer"]["pretokenizers"][0]["split"] == false);
    // No charsmap, no whitespace removal: escape, then the dummy-prefix fix.
    const json &norms = j["normalizer"]["normalizers"];
    REQUIRE(norms.size() == 2);
    CHECK(norms[0]["pattern"]["String"] == " ");
    CHECK(norms[1]["pattern"]["Regex"] == "\\A\xe2\x96\x81");
    const json &dec = j["decoder"]["decoders"];
    REQUIRE(dec.size() == 4);
    CHECK(dec[1]["type"] == "ByteFallback");
    CHECK(dec[3]["type"] == "Strip");

    const std::string v3 = read_data("mistral-spm/mistral_instruct_tokenizer_240323.model.v3");
    if (v3.empty()) return;
    const json k = vt::tok::convert_spm_model(v3);
    // 20 user-defined [REFERENCE_DOC_n] pieces: isolated by a Split and
    // looked up whole (ignore_merges), not added tokens; 750 control pieces
    // + <unk> are. "▁the" is 1040.
    CHECK(k["model"]["ignore_merges"] == true);
    CHECK(k["model"]["vocab"]["\xe2\x96\x81the"] == 1040);
    CHECK(k["model"]["merges"].size() == 58980);
    CHECK(k["added_tokens"].size() == 751);
    const json &split = k["pre_tokenizer"]["pretokenizers"][1];
    CHECK(split["type"] == "Split");
    const std::string pattern = split["pattern"]["Regex"];
    CHECK(pattern.rfind("\\[REFERENCE_DOC_19\\]|", 0) == 0);  // longest first, ties in id order
}

TEST_CASE("SentencePiece Unigram", "[convert][spm]") {
    const std::string bytes = read_data("sentencepiece-unigram/test_model.model");
    if (bytes.empty()) return;
    const json j = vt::tok::convert_spm_model(bytes);
    const json &m = j["model"];
    CHECK(m["type"] == "Unigram");
    CHECK(m["unk_id"] == 0);
    CHECK(m["byte_fallback"] == false);
    REQUIRE(m["vocab"].size() == 1000);
    // HF: vocab[4] = ["▁", -3.3334579467773438], vocab[300] = ["▁When", -7.511627674102783].
    CHECK(m["vocab"][4][0] == "\xe2\x96\x81");
    CHECK(m["vocab"][4][1].get<double>() == Approx(-3.3334579467773438));
    CHECK(m["vocab"][300][0] == "\xe2\x96\x81When");
    const json &norms = j["normalizer"]["normalizers"];
    REQUIRE(norms.size() == 5);  // Precompiled, 2x whitespace, escape, dummy prefix
    CHECK(norms[0]["type"] == "Precompiled");
    const std::string charsmap = norms[0]["precompiled_charsmap"];
    CHECK(charsmap.size() == 316648);  // HF's base64 of the same bytes
    CHECK(charsmap.rfind("ALQCAAD8AAA+HAMAPSQDADws", 0) == 0);
    CHECK(norms[1]["pattern"]["Regex"] == "\\A +| +\\z");
    CHECK(norms[2]["pattern"]["Regex"] == " {2,}");
    CHECK(j["added_tokens"].size() == 3);
}

TEST_CASE("protobuf reader bounds", "[convert][spm]") {
    using vt::tok::ProtoField;
    using vt::tok::ProtoReader;
    auto read_all = [](std::string_view bytes) {
        ProtoReader r(bytes);
        ProtoField f;
        size_t n = 0;
        while (r.next(f)) ++n;
        return n;
    };
    CHECK(read_all(std::string("\x08\x96\x01", 3)) == 1);                           // varint 150
    CHECK(read_all(std::string("\x0a\x02hi\x15\x00\x00\x80\x3f", 9)) == 2);         // bytes, float
    CHECK(status_of([&] { read_all(std::string("\x08\x96", 2)); }) == VT_ERR_FORMAT);        // truncated varint
    CHECK(status_of([&] { read_all(std::string("\x0a\x05hi", 4)); }) == VT_ERR_FORMAT);      // length past end
    CHECK(status_of([&] { read_all(std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11)); }) ==
          VT_ERR_FORMAT);                                                                   // huge length
    CHECK(status_of([&] { read_all(std::string("\x15\x00\x00", 3)); }) == VT_ERR_FORMAT);    // short fixed32
    CHECK(status_of([&] { read_all(std::string("\x09\x00\x00\x00\x00", 5)); }) == VT_ERR_FORMAT);  // short fixed64
    CHECK(status_of([&] { read_all(std::string("\x0b", 1)); }) == VT_ERR_FORMAT);            // group
    CHECK(status_of([&] { read_all(std::string("\x0f", 1)); }) == VT_ERR_FORMAT);            // wire type 7
    CHECK(status_of([&] { read_all(std::string("\x00", 1)); }) == VT_ERR_FORMAT);            // field 0
    CHECK(status_of([&] { read_all(std::string(11, '\xff')); }) == VT_ERR_FORMAT);           // varint > 10 bytes
}

TEST_CASE("SentencePiece bad input", "[convert][spm]") {
    using vt::tok::convert_spm_model;
    CHECK(status_of([] { convert_spm_model(""); }) == VT_ERR_FORMAT);
    CHECK(status_of([] { convert_spm_model("this is not a model"); }) == VT_ERR_FORMAT);
    // A piece field that holds a varint instead of a message.
    CHECK(status_of([] { convert_spm_model(std::string("\x08\x01", 2)); }) == VT_ERR_FORMAT);
    // One valid piece "a" and model_type WORD.
    const std::string piece("\x0a\x03\x0a\x01" "a", 5);
    CHECK(convert_spm_model(piece)["model"]["type"] == "Unigram");
    CHECK(status_of([&] { convert_spm_model(piece + std::string("\x12\x02\x18\x03", 4)); }) == VT_ERR_UNSUPPORTED);
    // unk_id 5 of 1 piece.
    CHECK(status_of([&] { convert_spm_model(piece + std::string("\x12\x03\xc0\x02\x05", 5)); }) == VT_ERR_FORMAT);
    // A piece that is not UTF-8.
    CHECK(status_of([] { convert_spm_model(std::string("\x0a\x03\x0a\x01\xff", 5)); }) == VT_ERR_FORMAT);

    const std::string model = read_data("sentencepiece-unigram/test_model.model");
    if (model.empty()) return;
    // Every cut of the file either converts (a cut between fields is a
    // valid, smaller message) or fails with VT_ERR_FORMAT; never a crash.
    size_t failures = 0;
    for (size_t cut = 0; cut < model.size(); cut += cut < 4096 ? 1 : 997) {
        const vt_status s = status_of([&] { convert_spm_model(std::string_view(model).substr(0, cut)); });
        REQUIRE((s == VT_OK || s == VT_ERR_FORMAT));
        failures += s != VT_OK;
    }
    CHECK(failures > 0);
    // Flipped bytes: the same promise.
    vt::test::Rng rng(7);
    for (int i = 0; i < 200; ++i) {
        std::string bad = model;
        for (int k = 0; k < 4; ++k) bad[rng.next() % bad.size()] = static_cast<char>(rng.next());
        const vt_status s = status_of([&] { convert_spm_model(bad); });
        REQUIRE((s == VT_OK || s == VT_ERR_FORMAT || s == VT_ERR_UNSUPPORTED));
    }
}

namespace {

// A GGUF with only metadata, written through the test writer.
struct MetaGguf {
    vt::test::Writer w;
    uint64_t n_kv = 0;
    std::vector<uint8_t> bytes;

    MetaGguf() { w.magic().u32(3).u64(0).u64(0); }
    void str(const std::string &k, const std::string &v) { w.key(k, vt::test::GT::STRING).str(v), ++n_kv; }
    void u32(const std::string &k, uint32_t v) { w.key(k, vt::test::GT::UINT32).u32(v), ++n_kv; }
    void boolean(const std::string &k, bool v) { w.key(k, vt::test::GT::BOOL).u8(v), ++n_kv; }
    void strs(const std::string &k, const std::vector<std::string> &v) {
        w.key(k, vt::test::GT::ARRAY).u32((uint32_t)vt::test::GT::STRING).u64(v.size());
        for (const std::string &s : v) w.str(s);
        ++n_kv;
    }
    template <class T>
    void array(const std::string &k, vt::test::GT t, const std::vector<T> &v) {
        w.key(k, vt::test::GT::ARRAY).u32((uint32_t)t).u64(v.size());
        for (T x : v) w.put<T>(x);
        ++n_kv;
    }
    std::unique_ptr<vt::GgufFile> parse() {
        std::memcpy(w.b.data() + 16, &n_kv, sizeof n_kv);
        w.pad_to(32);
        bytes = w.b;
        return vt::GgufFile::parse(bytes.data(), bytes.size());
    }
};

} // namespace

TEST_CASE("GGUF bert vocabulary (bge)", "[convert][gguf]") {
    const fs::path p = data_dir() / "llama.cpp-vocab" / "ggml-vocab-bert-bge.gguf";
    if (!fs::exists(p)) {
        VT_SKIP(p.string() << " is missing");
    }
    const auto g = vt::GgufFile::open(p.string());
    const json j = vt::tok::convert_gguf_vocab(*g);
    const json &m = j["model"];
    CHECK(m["type"] == "WordPiece");
    CHECK(m["unk_token"] == "[UNK]");
    CHECK(m["continuing_subword_prefix"] == "##");
    CHECK(m["vocab"].size() == 30522);
    // bge-small-en-v1.5 (bert-base-uncased vocabulary) ids, as HF gives them
    // (and as the .out vectors agree): llama.cpp's "▁hello" is "hello",
    // its "s" continuation is "##s".
    CHECK(m["vocab"]["hello"] == 7592);
    CHECK(m["vocab"]["world"] == 2088);
    CHECK(m["vocab"]["##s"] == 2015);
    CHECK(m["vocab"]["##ing"] == 2075);
    CHECK(m["vocab"]["[unused0]"] == 1);
    CHECK(j["normalizer"]["type"] == "BertNormalizer");
    CHECK(j["normalizer"]["lowercase"] == true);
    CHECK(j["pre_tokenizer"]["type"] == "BertPreTokenizer");
    CHECK(j["decoder"]["type"] == "WordPiece");
    const json &post = j["post_processor"];
    CHECK(post["type"] == "TemplateProcessing");
    CHECK(post["special_tokens"]["[CLS]"]["ids"] == json::array({101}));
    CHECK(post["special_tokens"]["[SEP]"]["ids"] == json::array({102}));
    CHECK(post["single"].size() == 3);
    CHECK(j["added_tokens"].size() == 5);  // [PAD] [UNK] [CLS] [SEP] [MASK]
    CHECK(find_added(j, "[MASK]")["id"] == 103);
}

TEST_CASE("GGUF t5 vocabulary from the SentencePiece test model", "[convert][gguf]") {
    const std::string model = read_data("sentencepiece-unigram/test_model.model");
    if (model.empty()) return;
    // Write what llama.cpp's converter writes for a T5 model, from the
    // pieces of the .model file (types: 0 unknown, 1-2 control, rest normal).
    const json ref = vt::tok::convert_spm_model(model);
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (size_t i = 0; i < ref["model"]["vocab"].size(); ++i) {
        tokens.push_back(ref["model"]["vocab"][i][0]);
        scores.push_back(ref["model"]["vocab"][i][1].get<float>());
        types.push_back(i == 0 ? 2 : i < 3 ? 3 : 1);
    }
    std::string charsmap;
    REQUIRE(vt::tok::base64_decode(ref["normalizer"]["normalizers"][0]["precompiled_charsmap"].get<std::string>(), charsmap));
    MetaGguf g;
    g.str("tokenizer.ggml.model", "t5");
    g.strs("tokenizer.ggml.tokens", tokens);
    g.array("tokenizer.ggml.scores", vt::test::GT::FLOAT32, scores);
    g.array("tokenizer.ggml.token_type", vt::test::GT::INT32, types);
    g.array("tokenizer.ggml.precompiled_charsmap", vt::test::GT::UINT8,
            std::vector<uint8_t>(charsmap.begin(), charsmap.end()));
    g.boolean("tokenizer.ggml.add_space_prefix", true);
    g.boolean("tokenizer.ggml.remove_extra_whitespaces", true);
    g.u32("tokenizer.ggml.unknown_token_id", 0);
    g.u32("tokenizer.ggml.eos_token_id", 2);
    const json j = vt::tok::convert_gguf_vocab(*g.parse());
    // The same Unigram pipeline as the .model (checked against HF above and
    // against sentencepiece when written), plus T5's "$A </s>".
    CHECK(j["model"] == ref["model"]);
    CHECK(j["normalizer"] == ref["normalizer"]);
    CHECK(j["pre_tokenizer"] == ref["pre_tokenizer"]);
    CHECK(j["decoder"] == ref["decoder"]);
    CHECK(j["added_tokens"] == ref["added_tokens"]);
    const json &post = j["post_processor"];
    REQUIRE(post["type"] == "TemplateProcessing");
    CHECK(post["single"].size() == 2);
    CHECK(post["single"][1]["SpecialToken"]["id"] == "</s>");
    CHECK(post["special_tokens"]["</s>"]["ids"] == json::array({2}));
}

TEST_CASE("GGUF vocabulary bad input", "[convert][gguf]") {
    {
        MetaGguf g;
        g.str("tokenizer.ggml.model", "llama");
        g.strs("tokenizer.ggml.tokens", {"a"});
        const auto f = g.parse();
        CHECK(status_of([&] { vt::tok::convert_gguf_vocab(*f); }) == VT_ERR_UNSUPPORTED);
    }
    {
        MetaGguf g;
        g.str("tokenizer.ggml.model", "bert");
        const auto f = g.parse();
        CHECK(status_of([&] { vt::tok::convert_gguf_vocab(*f); }) == VT_ERR_FORMAT);  // no tokens
    }
    {
        MetaGguf g;  // no unknown token
        g.str("tokenizer.ggml.model", "bert");
        g.strs("tokenizer.ggml.tokens", {"\xe2\x96\x81" "a", "b"});
        const auto f = g.parse();
        CHECK(status_of([&] { vt::tok::convert_gguf_vocab(*f); }) == VT_ERR_FORMAT);
    }
    {
        MetaGguf g;  // t5 without scores
        g.str("tokenizer.ggml.model", "t5");
        g.strs("tokenizer.ggml.tokens", {"<unk>", "a"});
        const auto f = g.parse();
        CHECK(status_of([&] { vt::tok::convert_gguf_vocab(*f); }) == VT_ERR_FORMAT);
    }
    {
        MetaGguf g;  // token_type shorter than the tokens
        g.str("tokenizer.ggml.model", "bert");
        g.strs("tokenizer.ggml.tokens", {"[UNK]", "a"});
        g.array("tokenizer.ggml.token_type", vt::test::GT::INT32, std::vector<int32_t>{3});
        const auto f = g.parse();
        CHECK(status_of([&] { vt::tok::convert_gguf_vocab(*f); }) == VT_ERR_FORMAT);
    }
}
