// Regex pre-tokenizer: splits text into "words" before BPE runs on each.
//
// A pre-tokenizer is an ordered list of PCRE2 patterns applied the way
// llama.cpp's unicode_regex_split applies them (and HF's Split pre-tokenizer
// with behaviour "Isolated"): each pattern re-splits every piece produced by
// the previous one; matches and the gaps between them both become pieces.
// A pattern only sees its own piece, so look-arounds and `$` stop at the
// piece's edges.
//
// Patterns are compiled once (UTF + UCP, JIT) and shared; match state lives
// in per-thread storage, so split() is const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vt::tok {

struct Span {
    uint32_t begin = 0;  // byte offset into the text handed to split()
    uint32_t len = 0;
};

// What a GGUF tokenizer.ggml.pre name implies besides its patterns
// (llama.cpp's per-name switches).
struct PreTokenizerSpec {
    std::vector<std::string> patterns;
    bool ignore_merges = false;    // a word that is itself a token skips BPE
    int add_bos_default = -1;      // -1: keep the model's default, else 0/1
};

// Looks up a tokenizer.ggml.pre name. Returns false for an unknown name.
bool lookup_pre_tokenizer(std::string_view name, PreTokenizerSpec &spec);

class PreTokenizer {
public:
    // Throws vt::Error(VT_ERR_FORMAT) when a pattern does not compile.
    explicit PreTokenizer(const std::vector<std::string> &patterns);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer &) = delete;
    PreTokenizer &operator=(const PreTokenizer &) = delete;

    // Splits valid UTF-8 text (the caller validated it) into spans that
    // cover the text exactly, in order; appends them to `out`.
    void split(std::string_view text, std::vector<Span> &out) const;

    bool empty() const { return codes_.empty(); }

private:
    struct Code;
    std::vector<std::unique_ptr<Code>> codes_;
};

} // namespace vt::tok
