// Tokenizer tests: llama.cpp's vocabulary test vectors (ids from Hugging Face
// tokenizers) for every family with a GGUF here, round trips, special-token
// parsing on the default model, invalid UTF-8, thread safety and a long word.
// Missing data files are skipped with a warning, never failed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "model/gguf.h"
#include "tokenizer/tokenizer.h"
#include "../common/test-env.h"
#include "common/skip.h"

namespace fs = std::filesystem;

namespace {

using vt::test::shared_data;

fs::path vocab_dir() { return shared_data() / "tokenizers" / "llama.cpp-vocab"; }


std::string read_all(const fs::path &p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct Case {
    std::string text;
    std::vector<int32_t> ids;
};

// .inp holds texts separated by "\n__ggml_vocab_test__\n" (one after the
// last text too); .out one line of space-separated ids per text.
std::vector<Case> read_cases(const fs::path &inp, const fs::path &out) {
    const std::string raw = read_all(inp);
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    size_t pos = 0;
    while (pos < raw.size()) {
        const size_t next = raw.find(sep, pos);
        if (next == std::string::npos) {
            texts.push_back(raw.substr(pos));
            break;
        }
        texts.push_back(raw.substr(pos, next - pos));
        pos = next + sep.size();
    }
    std::vector<Case> cases;
    std::ifstream f(out);
    std::string line;
    size_t i = 0;
    while (std::getline(f, line) && i < texts.size()) {
        Case c;
        c.text = texts[i++];
        std::istringstream ls(line);
        int32_t id;
        while (ls >> id) c.ids.push_back(id);
        cases.push_back(std::move(c));
    }
    REQUIRE(cases.size() == texts.size());
    return cases;
}

std::string show(const std::vector<int32_t> &ids) {
    std::string s;
    for (int32_t id : ids) {
        s += ' ';
        s += std::to_string(id);
    }
    return s;
}

std::unique_ptr<vt::Tokenizer> load(const fs::path &gguf_path, std::unique_ptr<vt::GgufFile> &holder) {
    holder = vt::GgufFile::open(gguf_path.string());
    return vt::Tokenizer::from_gguf(*holder);
}

// The default model: SmolLM2 (byte-level BPE, pre "smollm").
struct Smol {
    std::unique_ptr<vt::GgufFile> gguf;
    std::unique_ptr<vt::Tokenizer> tok;
};

Smol *smol() {
    static Smol s = [] {
        Smol r;
        const fs::path p = vt::test::default_model();
        if (!p.empty()) r.tok = load(p, r.gguf);
        return r;
    }();
    return s.tok ? &s : nullptr;
}

} // namespace

TEST_CASE("tokenizer: llama.cpp vocabulary test vectors", "[tokenizer]") {
    const fs::path dir = vocab_dir();
    if (!fs::exists(dir)) {
        VT_SKIP("no vocabulary test data at " << dir.string() << " (set VT_SHARED_DATA)");
    }
    std::vector<std::string> families;
    for (const auto &e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        const std::string suffix = ".gguf.inp";
        if (name.rfind("ggml-vocab-", 0) == 0 && name.size() > suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            families.push_back(name.substr(11, name.size() - 11 - suffix.size()));
        }
    }
    std::sort(families.begin(), families.end());

    std::vector<std::string> passed, skipped;
    for (const std::string &fam : families) {
        const fs::path gguf = dir / ("ggml-vocab-" + fam + ".gguf");
        const fs::path out = dir / ("ggml-vocab-" + fam + ".gguf.out");
        if (!fs::exists(gguf) || !fs::exists(out)) {
            skipped.push_back(fam + " (no .gguf here)");
            continue;
        }
        std::unique_ptr<vt::GgufFile> holder;
        std::unique_ptr<vt::Tokenizer> tok;
        try {
            tok = load(gguf, holder);
        } catch (const vt::Error &e) {
            if (e.status() != VT_ERR_UNSUPPORTED) throw;
            skipped.push_back(fam + " (" + e.what() + ")");
            continue;
        }
        const std::vector<Case> cases = read_cases(dir / ("ggml-vocab-" + fam + ".gguf.inp"), out);
        size_t ok = 0;
        for (const Case &c : cases) {
            INFO("family " << fam << ", text [" << c.text << "]");
            const std::vector<int32_t> got = tok->encode(c.text, false, false);
            CHECK(show(got) == show(c.ids));
            ok += got == c.ids;
        }
        // Byte-level BPE and SentencePiece with byte fallback are lossless;
        // WordPiece (bert) lowercases, strips accents and drops whitespace,
        // so its decode is checked against HF's in tests/tokenizers instead.
        const bool lossless = fam.rfind("bert", 0) != 0;
        for (const Case &c : lossless ? cases : std::vector<Case>{}) {
            INFO("round trip, family " << fam << ", text [" << c.text << "]");
            const std::vector<int32_t> ids = tok->encode(c.text, false, false);
            CHECK(tok->decode(ids.data(), ids.size(), false) == c.text);
        }
        if (ok == cases.size()) passed.push_back(fam);
        else WARN("family " << fam << ": " << ok << "/" << cases.size() << " vectors match");
    }
    // The data holds a dozen families vt reads: a run that matched none of
    // them checked nothing.
    CHECK(!passed.empty());
    std::string p, s;
    for (const auto &f : passed) p += " " + f;
    for (const auto &f : skipped) s += "\n  " + f;
    WARN("vocabulary families passing all vectors:" << p);
    if (!skipped.empty()) WARN("vocabulary families skipped:" << s);
}

TEST_CASE("tokenizer: SmolLM2 special tokens and chat markers", "[tokenizer]") {
    Smol *s = smol();
    if (!s) {
        VT_SKIP(vt::test::default_model_hint());
    }
    const vt::Tokenizer &t = *s->tok;
    CHECK(t.n_vocab() == 49152);
    CHECK(t.bos() == 1);
    CHECK(t.eos() == 2);

    // Ids from llama.cpp (llama-cpp-python 0.3.36, vocab_only, special=True).
    const std::string chat = "<|im_start|>user\nHello<|im_end|>";
    CHECK(show(t.encode(chat, false, true)) == show({1, 4093, 198, 19556, 2}));
    // add_bos_token is false in this model: add_special adds nothing.
    CHECK(show(t.encode(chat, true, true)) == show({1, 4093, 198, 19556, 2}));
    // Without parse_special the markers are plain text (prompt-injection guard).
    const std::vector<int32_t> plain = t.encode(chat, false, false);
    CHECK(std::find(plain.begin(), plain.end(), 1) == plain.end());
    CHECK(std::find(plain.begin(), plain.end(), 2) == plain.end());
    CHECK(t.decode(plain.data(), plain.size(), false) == chat);

    // <|im_end|> ends a chat turn; <|endoftext|> too; ordinary tokens do not.
    CHECK(t.is_eog(2));
    CHECK(t.is_eog(0));
    CHECK_FALSE(t.is_eog(1));
    CHECK_FALSE(t.is_eog(19556));

    CHECK(t.token_to_piece(2, false).empty());
    CHECK(t.token_to_piece(2, true) == "<|im_end|>");
    CHECK(t.token_to_piece(198, false) == "\n");
    const std::vector<int32_t> ids = t.encode(chat, false, true);
    CHECK(t.decode(ids.data(), ids.size(), true) == chat);
    CHECK(t.decode(ids.data(), ids.size(), false) == "user\nHello");
}

TEST_CASE("tokenizer: invalid UTF-8 is rejected with its offset", "[tokenizer]") {
    Smol *s = smol();
    std::unique_ptr<vt::GgufFile> holder;
    std::unique_ptr<vt::Tokenizer> own;
    const vt::Tokenizer *t = s ? s->tok.get() : nullptr;
    if (!t) {
        const fs::path p = vocab_dir() / "ggml-vocab-gpt-2.gguf";
        if (!fs::exists(p)) {
            VT_SKIP("no tokenizer available");
        }
        own = load(p, holder);
        t = own.get();
    }
    const std::vector<std::pair<std::string, size_t>> bad = {
        {std::string("ab\xff", 3), 2},                 // invalid byte
        {std::string("abc\xc3", 4), 3},                // truncated sequence
        {std::string("x\xc0\xaf", 3), 1},              // overlong '/'
        {std::string("xy\xed\xa0\x80", 5), 2},         // surrogate
        {std::string("\xf4\x90\x80\x80", 4), 0},       // above U+10FFFF
        {std::string("ok \xe2\x82", 5), 3},            // cut in the middle
    };
    for (const auto &[text, off] : bad) {
        try {
            t->encode(text, false, false);
            FAIL("no error for invalid UTF-8 at " << off);
        } catch (const vt::Error &e) {
            CHECK(e.status() == VT_ERR_INVALID_UTF8);
            std::string expect = "byte offset ";
            expect += std::to_string(off);
            CHECK(std::string(e.what()).find(expect) != std::string::npos);
        }
    }
    CHECK_NOTHROW(t->encode("\xf0\x9f\xa6\x99 ok", false, false));
}

TEST_CASE("tokenizer: concurrent encode gives identical results", "[tokenizer]") {
    Smol *s = smol();
    if (!s) {
        VT_SKIP("SmolLM2 model not found");
    }
    const std::string text = "Hello, y'all! How are you \xf0\x9f\x98\x81 ?\xe6\x88\x91\xe6\x83\xb3 1314151   <|im_end|>\n\n";
    const std::vector<int32_t> ref = s->tok->encode(text, true, true);
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int i = 0; i < 4; ++i) {
        threads.emplace_back([&, i] {
            int good = 0;
            for (int k = 0; k < 200; ++k) good += s->tok->encode(text, true, true) == ref;
            ok[i] = good;
        });
    }
    for (auto &th : threads) th.join();
    for (int v : ok) CHECK(v == 200);
}

TEST_CASE("tokenizer: a 64 KB word is handled (heap merge, not quadratic)", "[tokenizer]") {
    Smol *s = smol();
    if (!s) {
        VT_SKIP("SmolLM2 model not found");
    }
    std::string word;
    for (int i = 0; i < 65536; ++i) word.push_back("abcdefghij"[(i * 7 + i / 3) % 10]);
    const std::vector<int32_t> ids = s->tok->encode(word, false, false);
    CHECK(!ids.empty());
    CHECK(ids.size() < word.size());
    CHECK(s->tok->decode(ids.data(), ids.size(), false) == word);

    const std::string spaces(65536, ' ');
    const std::vector<int32_t> sp = s->tok->encode(spaces + "x", false, false);
    CHECK(s->tok->decode(sp.data(), sp.size(), false) == spaces + "x");
}

TEST_CASE("tokenizer: SentencePiece (llama-spm) specials, prefix space, bytes", "[tokenizer]") {
    const fs::path p = vocab_dir() / "ggml-vocab-llama-spm.gguf";
    if (!fs::exists(p)) {
        VT_SKIP(p.string() << " not found");
    }
    std::unique_ptr<vt::GgufFile> holder;
    const auto t = load(p, holder);
    CHECK(t->bos() == 1);
    CHECK(t->eos() == 2);
    CHECK(t->is_eog(2));
    // Ids from llama.cpp (llama-cpp-python 0.3.36, vocab_only).
    CHECK(show(t->encode("Hello world", true, true)) == show({1, 15043, 3186}));
    CHECK(show(t->encode(" Hello\n\tworld", false, false)) == show({29871, 15043, 13, 12, 11526}));
    // A fragment after a special token gets the space prefix again.
    CHECK(show(t->encode("<s>Hi</s>", true, true)) == show({1, 1, 6324, 2}));
    CHECK(show(t->encode("<s>Hi</s>", false, false)) == show({529, 29879, 29958, 18567, 829, 29879, 29958}));
    // Byte fallback: the llama emoji has no piece.
    CHECK(show(t->encode("\xf0\x9f\xa6\x99 llama", false, false)) ==
          show({29871, 243, 162, 169, 156, 11148, 3304}));

    CHECK(t->token_to_piece(13, false) == "\n");
    CHECK(t->token_to_piece(15043, false) == " Hello");
    CHECK(t->token_to_piece(1, false).empty());
    CHECK(t->token_to_piece(1, true) == "<s>");
    // The prefix space is dropped on decode (as Hugging Face does); a
    // rendered BOS keeps it, as in "<s> Hello world".
    const std::vector<int32_t> ids = {1, 15043, 3186};
    CHECK(t->decode(ids.data(), ids.size(), false) == "Hello world");
    CHECK(t->decode(ids.data(), ids.size(), true) == "<s> Hello world");
    CHECK(t->decode(ids.data() + 1, 2, false) == "Hello world");
    CHECK_THROWS_AS(t->token_to_piece(32000, false), vt::Error);
}

TEST_CASE("tokenizer: GPT-2 control token needs parse_special", "[tokenizer]") {
    const fs::path p = vocab_dir() / "ggml-vocab-gpt-2.gguf";
    if (!fs::exists(p)) {
        VT_SKIP(p.string() << " not found");
    }
    std::unique_ptr<vt::GgufFile> holder;
    const auto t = load(p, holder);
    // Ids from llama.cpp (llama-cpp-python 0.3.36, vocab_only).
    CHECK(show(t->encode("Hello<|endoftext|> world", true, true)) == show({15496, 50256, 995}));
    CHECK(show(t->encode("Hello<|endoftext|> world", false, false)) ==
          show({15496, 27, 91, 437, 1659, 5239, 91, 29, 995}));
    CHECK(t->is_eog(50256));
    CHECK(t->encode("", true, true).empty());  // no add_bos_token in this vocabulary
}
