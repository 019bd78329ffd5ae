// Byte-level BPE (GPT-2 family; tokenizer.ggml.model = "gpt2").
//
// Text -> regex pre-tokenizer words -> each byte becomes its GPT-2 alphabet
// symbol -> merges applied by rank (lowest first, leftmost on ties), exactly
// as llama.cpp's llm_tokenizer_bpe_session and HF's BPE model do.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer-base.h"

namespace vt::tok {

class ByteLevelBpeTokenizer final : public VocabTokenizer {
public:
    // merges: "left right" strings in rank order (tokenizer.ggml.merges).
    ByteLevelBpeTokenizer(Vocab vocab, const std::vector<std::string_view> &merges,
                          const PreTokenizerSpec &pre);

protected:
    void encode_text(std::string_view text, bool after_special, std::vector<int32_t> &out) const override;
    std::string normal_piece(int32_t id) const override;

private:
    struct Merge {
        int32_t rank;
        int32_t result;  // symbol id of left+right
    };

    // Symbols are interned strings: ids below n_vocab are the token ids of
    // their text; merge sides and results that are not tokens get ids from
    // n_vocab upwards. Merging then works on integers, never on strings.
    int32_t intern(const std::string &text);
    void encode_word(std::string_view word, std::vector<int32_t> &out) const;

    PreTokenizer pre_;
    bool ignore_merges_ = false;
    std::unordered_map<std::string, int32_t> extra_syms_;  // construction only
    int32_t n_syms_ = 0;
    int32_t byte_sym_[256] = {};
    std::unordered_map<uint64_t, Merge> merges_;  // (left << 32 | right)
};

} // namespace vt::tok
