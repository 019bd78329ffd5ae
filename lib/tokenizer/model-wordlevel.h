// HF `WordLevel` model: each piece is one token, or unk_token.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/pipeline.h"

namespace vt::tok {

struct WordLevelOptions {
    std::string unk_token = "<unk>";
    // Ids at or above this are added tokens, not the model's own (by
    // default every id of the vocabulary is the model's).
    uint32_t model_vocab_size = UINT32_MAX;
};

class WordLevelModel final : public Model {
public:
    WordLevelModel(const Vocab &vocab, const WordLevelOptions &options);

    // Throws vt::Error(VT_ERR_INVALID_ARGUMENT) for a piece that is not a
    // token when the vocabulary lacks unk_token.
    void tokenize(std::string_view piece, std::vector<int32_t> &out) const override;

private:
    int32_t find_model(std::string_view text) const;

    const Vocab &vocab_;
    WordLevelOptions opt_;
    uint32_t n_model_;
    int32_t unk_id_;
};

} // namespace vt::tok
