// Tokenizer models of the Hugging Face pipeline (BPE, WordPiece, Unigram,
// WordLevel) on hand-made vocabularies, the GPT-2 / Llama-3 BPE files and
// the SentencePiece Unigram test models. Every expected id list was produced
// live by the HF oracle (tokenizers 0.23.3: tokenizers.models.<Model>(...)
// .tokenize(word), with the same vocabulary and options); missing data
// files are skipped with a warning.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/byte-level.h"
#include "tokenizer/convert.h"
#include "tokenizer/model-bpe.h"
#include "tokenizer/model-unigram.h"
#include "tokenizer/model-wordlevel.h"
#include "tokenizer/model-wordpiece.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/pretokenizer.h"
#include "../common/test-env.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace vt::tok;
using Ids = std::vector<int32_t>;

namespace {

// A vocabulary with the given texts at ids 0, 1, ...
std::unique_ptr<Vocab> make_vocab(const std::vector<std::string> &texts, const std::vector<float> &scores = {}) {
    auto v = std::make_unique<Vocab>();
    for (size_t i = 0; i < texts.size(); ++i) v->add_token(texts[i], i < scores.size() ? scores[i] : 0.0f, ATTR_NORMAL);
    v->finalize();
    return v;
}

Ids run(const Model &m, std::string_view piece) {
    Ids out;
    m.tokenize(piece, out);
    return out;
}

template <class F>
vt_status status_of(F f) {
    try {
        f();
    } catch (const vt::Error &e) {
        return e.status();
    }
    return VT_OK;
}

std::string read_all(const fs::path &p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// GPT-2 style encoder.json + vocab.bpe as a vocabulary and BPE options.
struct BpeFiles {
    std::unique_ptr<Vocab> vocab;
    BpeOptions options;
};

bool load_bpe_files(const std::string &name, BpeFiles &files) {
    const fs::path dir = vt::test::shared_data() / "tokenizers" / name;
    if (!fs::exists(dir / "encoder.json") || !fs::exists(dir / "vocab.bpe")) {
        WARN("skipping: " << dir.string() << " lacks encoder.json / vocab.bpe");
        return false;
    }
    const json enc = json::parse(read_all(dir / "encoder.json"));
    std::vector<std::string> texts(enc.size());
    for (const auto &[text, id] : enc.items()) texts.at(id.get<size_t>()) = text;
    files.vocab = make_vocab(texts);
    std::istringstream merges(read_all(dir / "vocab.bpe"));
    std::string line;
    while (std::getline(merges, line)) {
        if (line.empty() || line.rfind("#version", 0) == 0) continue;
        const size_t sp = line.find(' ');
        files.options.merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
    }
    return true;
}

// Pre-splits with a GGUF pre-tokenizer's regexes, maps bytes to the GPT-2
// alphabet (what HF's ByteLevel pre-tokenizer hands the model) and
// tokenizes every piece.
Ids byte_level_encode(const Model &m, const char *pre_name, std::string_view text) {
    PreTokenizerSpec spec;
    REQUIRE(lookup_pre_tokenizer(pre_name, spec));
    PreTokenizer pre(spec.patterns);
    std::vector<Span> spans;
    pre.split(text, spans);
    Ids out;
    std::string piece;
    for (const Span &s : spans) {
        piece.clear();
        for (unsigned char c : text.substr(s.begin, s.len)) piece += byte_to_unicode(c);
        m.tokenize(piece, out);
    }
    return out;
}

// 65536 letters from an LCG, generated identically in the Python oracle.
std::string lcg_word() {
    std::string w;
    uint64_t x = 12345;
    for (int i = 0; i < 65536; ++i) {
        x = (x * 1103515245 + 12345) % (uint64_t(1) << 31);
        w += static_cast<char>('a' + (x >> 16) % 26);
    }
    return w;
}

uint32_t checksum(const Ids &ids) {
    uint64_t cs = 0;
    for (int32_t id : ids) cs = (cs * 31 + uint64_t(id)) % (uint64_t(1) << 32);
    return static_cast<uint32_t>(cs);
}

const char *kMixedText =
    "Hello world! It's 2024, naïve café — 日本語 tokenization 🤗.\n\n   indented\tTabs and    spaces; ÀÉÎ ŒŸ "
    "x²+y³=z⁴ don't WE'LL 123456789";

} // namespace

TEST_CASE("BPE merges by rank, leftmost first", "[bpe]") {
    auto v = make_vocab({"a", "b", "c", "d", "ab", "bc", "cd", "abc", "bcd", "abcd"});
    BpeOptions o;
    o.merges = {{"b", "c"}, {"a", "b"}, {"c", "d"}, {"a", "bc"}, {"ab", "cd"}, {"b", "cd"}};
    BpeModel m(*v, o);
    CHECK(run(m, "abcd") == Ids{7, 3});
    CHECK(run(m, "abab") == Ids{4, 4});
    CHECK(run(m, "bcbc") == Ids{5, 5});
    CHECK(run(m, "dcba") == Ids{3, 2, 1, 0});
    CHECK(run(m, "abcabcd") == Ids{7, 7, 3});
    CHECK(run(m, "a") == Ids{0});

    auto va = make_vocab({"a", "aa", "aaa", "aaaa"});
    BpeOptions oa;
    oa.merges = {{"a", "a"}, {"aa", "a"}, {"aa", "aa"}};
    BpeModel ma(*va, oa);
    CHECK(run(ma, "aaa") == Ids{2});
    CHECK(run(ma, "aaaaa") == Ids{1, 2});
    CHECK(run(ma, "aaaaaaa") == Ids{3, 2});
    Ids heap;
    ma.tokenize_uncached("aaaaaaa", heap, /*force_heap=*/true);
    CHECK(heap == Ids{3, 2});
}

TEST_CASE("BPE: a duplicated merge takes its last rank", "[bpe]") {
    auto v = make_vocab({"a", "b", "c", "ab", "bc", "abc"});
    BpeOptions o;
    o.merges = {{"b", "c"}, {"a", "b"}, {"b", "c"}};
    CHECK(run(BpeModel(*v, o), "abc") == Ids{3, 2});
    o.merges = {{"a", "b"}, {"b", "c"}, {"a", "b"}};
    CHECK(run(BpeModel(*v, o), "abc") == Ids{0, 4});
}

TEST_CASE("BPE unknown characters: unk, fuse_unk, byte fallback", "[bpe]") {
    auto v = make_vocab({"<unk>", "a", "b"});
    BpeOptions o;
    o.unk_token = "<unk>";
    CHECK(run(BpeModel(*v, o), "accb") == Ids{1, 0, 0, 2});
    CHECK(run(BpeModel(*v, o), "cc") == Ids{0, 0});
    o.fuse_unk = true;
    CHECK(run(BpeModel(*v, o), "accb") == Ids{1, 0, 2});
    CHECK(run(BpeModel(*v, o), "cc") == Ids{0});

    // HF keeps an unk pending across byte-fallback characters.
    auto vb = make_vocab({"<unk>", "a", "<0xC3>", "<0xA9>", "<0x41>"});
    BpeOptions ob;
    ob.unk_token = "<unk>";
    ob.byte_fallback = true;
    CHECK(run(BpeModel(*vb, ob), "aéa") == Ids{1, 2, 3, 1});
    CHECK(run(BpeModel(*vb, ob), "aAé") == Ids{1, 4, 2, 3});
    CHECK(run(BpeModel(*vb, ob), "a€") == Ids{1, 0});
    CHECK(run(BpeModel(*vb, ob), "a€é€a") == Ids{1, 2, 3, 0, 0, 1});
    ob.fuse_unk = true;
    CHECK(run(BpeModel(*vb, ob), "a€€é€a") == Ids{1, 2, 3, 0, 1});
    ob.unk_token.reset();
    CHECK(run(BpeModel(*vb, ob), "a€€é€a") == Ids{1, 2, 3, 1});

    BpeOptions missing;
    missing.unk_token = "<zz>";
    BpeModel mm(*v, missing);
    CHECK(run(mm, "aa") == Ids{1, 1});
    CHECK(status_of([&] { run(mm, "a€"); }) == VT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("BPE continuing_subword_prefix and end_of_word_suffix", "[bpe]") {
    auto v = make_vocab({"h", "##e", "##l", "##o", "he", "##ll", "hell", "##o</w>", "h</w>", "##l</w>"});
    BpeOptions o;
    o.merges = {{"h", "##e"}, {"##l", "##l"}, {"he", "##ll"}};
    o.continuing_subword_prefix = "##";
    o.end_of_word_suffix = "</w>";
    BpeModel m(*v, o);
    CHECK(run(m, "hello") == Ids{6, 7});
    CHECK(run(m, "h") == Ids{8});
    CHECK(run(m, "hel") == Ids{4, 9});
    CHECK(run(m, "hexl") == Ids{4, 9});  // "##x" is dropped: no unk token

    // Byte fallback covers the prefix's bytes too.
    auto vb = make_vocab({"a", "<0x23>", "<0xC3>", "<0xA9>", "<unk>"});
    BpeOptions ob;
    ob.continuing_subword_prefix = "##";
    ob.byte_fallback = true;
    ob.unk_token = "<unk>";
    CHECK(run(BpeModel(*vb, ob), "aé") == Ids{0, 1, 1, 2, 3});
    CHECK(run(BpeModel(*vb, ob), "éa") == Ids{2, 3, 4});
}

TEST_CASE("BPE ignore_merges takes a token piece whole", "[bpe]") {
    auto v = make_vocab({"a", "b", "c", "abc", "ab"});
    BpeOptions o;
    o.merges = {{"a", "b"}};
    CHECK(run(BpeModel(*v, o), "abc") == Ids{4, 2});
    o.ignore_merges = true;
    BpeModel m(*v, o);
    CHECK(run(m, "abc") == Ids{3});
    CHECK(run(m, "ab") == Ids{4});

    // Added tokens past the model's ids are not the model's.
    o.model_vocab_size = 3;
    o.merges.clear();
    CHECK(run(BpeModel(*v, o), "abc") == Ids{0, 1, 2});
}

TEST_CASE("BPE from JSON: merge forms, type-less node, errors", "[bpe]") {
    auto v = make_vocab({"a", "b", "ab", "c"});
    auto m = make_model(json::parse(R"({"type":"BPE","vocab":{"a":0,"b":1,"ab":2,"c":3},"merges":["a b"],
        "dropout":null,"unk_token":null,"fuse_unk":false,"byte_fallback":false})"), *v);
    CHECK(run(*m, "abc") == Ids{2, 3});
    m = make_model(json::parse(R"({"vocab":{"a":0,"b":1,"ab":2,"c":3},"merges":[["a","b"]]})"), *v);
    CHECK(run(*m, "ab") == Ids{2});
    CHECK(make_model(json(nullptr), *v) == nullptr);

    auto status = [&](const char *text) { return status_of([&] { make_model(json::parse(text), *v); }); };
    CHECK(status(R"({"type":"BPE","vocab":{},"merges":[],"dropout":0.1})") == VT_ERR_UNSUPPORTED);
    CHECK(status(R"({"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[],"dropout":0.0})") == VT_OK);
    CHECK(status(R"({"type":"BPE","vocab":{"a":0,"b":1},"merges":["a c"]})") == VT_ERR_FORMAT);
    CHECK(status(R"({"type":"BPE","vocab":{"a":0,"b":1,"c":3},"merges":["b c"]})") == VT_ERR_FORMAT);
    CHECK(status(R"({"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a  b"]})") == VT_ERR_FORMAT);
    CHECK(status(R"({"type":"BPE","vocab":{"a":0},"merges":[3]})") == VT_ERR_FORMAT);
    CHECK(status(R"({"type":"BPE","vocab":[],"merges":[]})") == VT_ERR_FORMAT);
    CHECK(status(R"({"type":"BPE","vocab":{},"merges":[],"unk_token":5})") == VT_ERR_FORMAT);
    CHECK(status(R"({"type":"Mystery"})") == VT_ERR_UNSUPPORTED);
    CHECK(status(R"({"vocab":{}})") == VT_ERR_FORMAT);
}

TEST_CASE("BPE with the GPT-2 and Llama-3 vocabularies", "[bpe][data]") {
    BpeFiles gpt2;
    if (load_bpe_files("gpt2", gpt2)) {
        BpeModel m(*gpt2.vocab, gpt2.options);
        CHECK(byte_level_encode(m, "gpt2", kMixedText) ==
              Ids{15496, 995,   0,     632,   338,   48609, 11,    41492, 40304, 851,  10545, 245,  98,
                  17312, 105,   45739, 252,   11241, 1634,  12520, 97,    245,   13,   628,   220,  220,
                  773,   4714,  197,   51,    8937,  290,   220,   220,   220,   9029, 26,    6184, 222,
                  38351, 127,   236,   25370, 240,   129,   116,   2124,  31185, 10,   88,    126,  111,
                  28,    89,    46256, 112,   836,   470,   12887, 6,     3069,  17031, 2231, 3134,  4531});
        // A 64 KB word: heap operations stay linear in its length.
        const std::string w = lcg_word();
        Ids ids;
        const size_t ops = m.tokenize_uncached(w, ids);
        CHECK(ids.size() == 39005);
        CHECK(checksum(ids) == 1452020005u);
        CHECK(ops <= 6 * w.size());
        ids.clear();
        m.tokenize(std::string(65536, 'a'), ids);
        CHECK(ids == Ids(16384, 24794));
    }
    BpeFiles llama3;
    if (load_bpe_files("llama3", llama3)) {
        llama3.options.ignore_merges = true;
        BpeModel m(*llama3.vocab, llama3.options);
        CHECK(byte_level_encode(m, "llama-bpe", kMixedText) ==
              Ids{9906,  1917,   0,      1102,  596,   220,   2366,   19,    11,    95980, 588,   53050, 2001,
                  105180, 102158, 4037,  2065,  11410, 97,    245,    382,   256,   1280,  16243, 10473, 3518,
                  323,   262,    12908, 26,    65381, 27887, 72907,  27006, 240,   106870, 865,  30556, 44110,
                  44301, 83670,  53233, 112,   1541,  956,   20255,  6,     4178,  220,   4513,  10961, 16474});
        const std::string w = lcg_word();
        Ids ids;
        m.tokenize(w, ids);
        CHECK(ids.size() == 35217);
        CHECK(checksum(ids) == 2532707909u);
        ids.clear();
        m.tokenize(std::string(65536, 'a'), ids);
        CHECK(ids == Ids(8192, 70540));
    }
}

TEST_CASE("BPE: short-piece rescans and the heap agree", "[bpe][data]") {
    BpeFiles gpt2;
    if (!load_bpe_files("gpt2", gpt2)) return;
    BpeModel m(*gpt2.vocab, gpt2.options);
    uint64_t x = 7;
    for (int i = 0; i < 2000; ++i) {
        std::string word;
        const int len = 2 + i % 15;
        for (int k = 0; k < len; ++k) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            word += byte_to_unicode(static_cast<uint8_t>("etaoinshrdlu ETAO.,'"[(x >> 33) % 20]));
        }
        Ids a, b;
        m.tokenize_uncached(word, a, false);
        m.tokenize_uncached(word, b, true);
        REQUIRE(a == b);
    }
}

TEST_CASE("BPE tokenize is thread-safe with per-thread caches", "[bpe][data]") {
    BpeFiles gpt2;
    if (!load_bpe_files("gpt2", gpt2)) return;
    BpeModel m(*gpt2.vocab, gpt2.options);
    const Ids expected = byte_level_encode(m, "gpt2", kMixedText);
    std::vector<int> ok(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            bool all = true;
            for (int i = 0; i < 50; ++i) all = all && byte_level_encode(m, "gpt2", kMixedText) == expected;
            ok[t] = all;
        });
    }
    for (auto &th : threads) th.join();
    CHECK(ok == std::vector<int>(4, 1));
}

TEST_CASE("WordPiece: greedy longest match, ## continuation, unk", "[wordpiece]") {
    auto v = make_vocab({"[UNK]", "un", "##aff", "##able", "a", "##b", "##é", "é", "##ff", "u", "##n", "##a"});
    WordPieceOptions o;
    o.max_input_chars_per_word = 8;
    WordPieceModel m(*v, o);
    CHECK(run(m, "unaffable") == Ids{0});  // 9 characters > 8
    CHECK(run(m, "unaffabl") == Ids{0});
    CHECK(run(m, "unaff") == Ids{1, 2});
    CHECK(run(m, "ab") == Ids{4, 5});
    CHECK(run(m, "abé") == Ids{4, 5, 6});
    CHECK(run(m, "éé") == Ids{7, 6});
    CHECK(run(m, "aéx") == Ids{0});
    CHECK(run(m, "aaaaaaaa") == Ids{4, 11, 11, 11, 11, 11, 11, 11});
    CHECK(run(m, "aaaaaaaaa") == Ids{0});
    CHECK(run(m, "x") == Ids{0});

    auto vj = make_vocab({"[UNK]", "un", "##aff", "##able"});
    auto mj = make_model(json::parse(R"({"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##",
        "max_input_chars_per_word":100,"vocab":{"[UNK]":0,"un":1,"##aff":2,"##able":3}})"), *vj);
    CHECK(run(*mj, "unaffable") == Ids{1, 2, 3});

    auto vn = make_vocab({"a"});
    WordPieceModel no_unk(*vn, WordPieceOptions{});
    CHECK(status_of([&] { run(no_unk, "b"); }) == VT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("WordLevel: lookup, else unk", "[wordlevel]") {
    auto v = make_vocab({"hello", "<unk>", "world"});
    auto m = make_model(json::parse(R"({"type":"WordLevel","vocab":{"hello":0,"<unk>":1,"world":2},
        "unk_token":"<unk>"})"), *v);
    CHECK(run(*m, "hello") == Ids{0});
    CHECK(run(*m, "x") == Ids{1});
    auto vn = make_vocab({"a"});
    WordLevelModel no_unk(*vn, WordLevelOptions{});
    CHECK(run(no_unk, "a") == Ids{0});
    CHECK(status_of([&] { run(no_unk, "b"); }) == VT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("Unigram: Viterbi, unk fusion, byte fallback", "[unigram]") {
    // tokenizers' own doc example.
    auto v = make_vocab({"<unk>", "a", "b", "c", "d", "cd", "ab", "abc", "abcd"});
    auto m = make_model(json::parse(R"({"type":"Unigram","unk_id":0,"byte_fallback":false,"vocab":[["<unk>",0.0],
        ["a",0.0],["b",0.0],["c",0.0],["d",0.0],["cd",1.0],["ab",2.0],["abc",5.0],["abcd",10.0]]})"), *v);
    CHECK(run(*m, "abcdacdxx") == Ids{8, 1, 5, 0});
    CHECK(run(*m, "xabx") == Ids{0, 6, 0});

    const std::vector<std::string> texts = {"<unk>", "a", "b", "ab", "<0x78>", "<0xC3>", "<0xA9>", "▁", "▁a"};
    const std::vector<float> scores = {-1.0f, -1.0f, -2.0f, -2.5f, -5.0f, -5.0f, -5.0f, -1.0f, -1.5f};
    auto vb = make_vocab(texts, scores);
    UnigramOptions o;
    o.unk_id = 0;
    o.byte_fallback = true;
    UnigramModel mb(*vb, o);
    CHECK(run(mb, "abxxab") == Ids{3, 4, 4, 3});
    CHECK(run(mb, "éyab") == Ids{0, 3});
    CHECK(run(mb, "▁ab") == Ids{7, 3});  // a tie: the first path found wins
    CHECK(run(mb, "x<unk>") == Ids{0});

    UnigramOptions none;
    UnigramModel mn(*vb, none);
    CHECK(run(mn, "aab") == Ids{1, 3});
    CHECK(status_of([&] { run(mn, "x"); }) == VT_ERR_INVALID_ARGUMENT);

    auto vt = make_vocab({"<unk>", "a", "b", "ab", "c", "bc"}, {0, -1, -1, -2, -1, -2});
    UnigramOptions ot;
    ot.unk_id = 0;
    CHECK(run(UnigramModel(*vt, ot), "abc") == Ids{1, 5});

    // The literal unk text is a piece, and fuses with unknown neighbours.
    auto vl = make_vocab({"<unk>", "a", "<", "u", "n", "k", ">"}, {-1, -1, -20, -20, -20, -20, -20});
    UnigramModel ml(*vl, ot);
    CHECK(run(ml, "a<unk>xa") == Ids{1, 0, 1});
    CHECK(run(ml, "x<unk>") == Ids{0});

    UnigramOptions bad;
    bad.unk_id = 9;
    CHECK(status_of([&] { UnigramModel(*vl, bad); }) == VT_ERR_FORMAT);
}

TEST_CASE("Unigram with the SentencePiece test models", "[unigram][data]") {
    const fs::path dir = vt::test::shared_data() / "tokenizers" / "sentencepiece-unigram";
    struct Case {
        const char *file;
        std::vector<std::pair<std::string, Ids>> words;
    };
    const std::vector<Case> cases = {
        {"test_model.model",
         {{"▁hello", {39, 88, 21}},
          {"▁world", {887}},
          {"▁tokenization", {10, 46, 98, 25, 997, 149}},
          {"▁unbelievably", {210, 66, 170, 25, 16, 87, 726}},
          {"▁x²", {4, 297, 0}},
          {"▁αβγ", {4, 0}},
          {"▁Hello,", {151, 88, 21, 5}}}},
        {"test_ja_model.model",
         {{"▁吾輩は猫である", {6, 3973, 6019, 9, 6022, 24}},
          {"▁どこで生れたかとんと見当がつかぬ", {6, 390, 183, 16, 100, 1337, 54, 14, 211, 14, 171, 409, 12, 2953, 1106}},
          {"▁漢字テスト𠮷", {6, 4225, 1194, 1165, 0}}}},
    };
    for (const Case &c : cases) {
        if (!fs::exists(dir / c.file)) {
            WARN("skipping: " << (dir / c.file).string() << " is missing");
            continue;
        }
        const json doc = convert_spm_model(read_all(dir / c.file));
        const json &model = doc.at("model");
        std::vector<std::string> texts;
        for (const json &p : model.at("vocab")) texts.push_back(p.at(0).get<std::string>());
        auto v = make_vocab(texts);  // scores come from the JSON at full precision
        auto m = make_model(model, *v);
        for (const auto &[word, ids] : c.words) {
            INFO(c.file << ": " << word);
            CHECK(run(*m, word) == ids);
        }
    }
}
