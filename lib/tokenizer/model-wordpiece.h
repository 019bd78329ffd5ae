// HF `WordPiece` model (BERT): greedy longest-match-first. The first
// sub-token matches the start of the piece as is, each later one with the
// continuing-subword prefix ("##"); a piece with an unmatchable rest, or
// longer than max_input_chars_per_word characters, becomes one unk token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pipeline.h"

namespace vt::tok {

struct WordPieceOptions {
    std::string unk_token = "[UNK]";
    std::string continuing_subword_prefix = "##";
    size_t max_input_chars_per_word = 100;
    // Ids at or above this are added tokens, not the model's own (by
    // default every id of the vocabulary is the model's).
    uint32_t model_vocab_size = UINT32_MAX;
};

class WordPieceModel final : public Model {
public:
    WordPieceModel(const Vocab &vocab, const WordPieceOptions &options);

    // Throws vt::Error(VT_ERR_INVALID_ARGUMENT) when the piece needs the unk
    // token and the vocabulary lacks it.
    void tokenize(std::string_view piece, std::vector<int32_t> &out) const override;

private:
    int32_t find_model(std::string_view text) const;
    int32_t unk_id_or_fail() const;

    const Vocab &vocab_;
    WordPieceOptions opt_;
    uint32_t n_model_;
    int32_t unk_id_;
    // Longest token in bytes: no match can be longer, which bounds the
    // search at each start.
    size_t max_token_len_ = 0;
};

} // namespace vt::tok
