#include "tokenizer/model-wordlevel.h"

#include <algorithm>

#include "core/error.h"

namespace vt::tok {

WordLevelModel::WordLevelModel(const Vocab &vocab, const WordLevelOptions &options)
    : vocab_(vocab), opt_(options) {
    n_model_ = std::min(opt_.model_vocab_size, vocab.size());
    unk_id_ = find_model(opt_.unk_token);
}

int32_t WordLevelModel::find_model(std::string_view text) const {
    const int32_t id = vocab_.find(text);
    return id >= 0 && static_cast<uint32_t>(id) < n_model_ ? id : -1;
}

void WordLevelModel::tokenize(std::string_view piece, std::vector<int32_t> &out) const {
    int32_t id = find_model(piece);
    if (id < 0) id = unk_id_;
    if (id < 0) {
        fail(VT_ERR_INVALID_ARGUMENT, "WordLevel: \"%.*s\" is not in the vocabulary and neither is unk_token \"%s\"",
             static_cast<int>(std::min<size_t>(piece.size(), 64)), piece.data(), opt_.unk_token.c_str());
    }
    out.push_back(id);
}

} // namespace vt::tok
