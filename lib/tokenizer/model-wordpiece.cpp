#include "tokenizer/model-wordpiece.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace vt::tok {

namespace {

bool is_continuation(char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; }

} // namespace

WordPieceModel::WordPieceModel(const Vocab &vocab, const WordPieceOptions &options)
    : vocab_(vocab), opt_(options) {
    n_model_ = std::min(opt_.model_vocab_size, vocab.size());
    unk_id_ = find_model(opt_.unk_token);
    for (uint32_t id = 0; id < n_model_; ++id) max_token_len_ = std::max(max_token_len_, vocab.text(id).size());
}

int32_t WordPieceModel::find_model(std::string_view text) const {
    const int32_t id = vocab_.find(text);
    return id >= 0 && static_cast<uint32_t>(id) < n_model_ ? id : -1;
}

int32_t WordPieceModel::unk_id_or_fail() const {
    if (unk_id_ < 0) {
        fail(VT_ERR_INVALID_ARGUMENT, "WordPiece: unk_token \"%s\" is needed but is not in the vocabulary",
             opt_.unk_token.c_str());
    }
    return unk_id_;
}

void WordPieceModel::tokenize(std::string_view piece, std::vector<int32_t> &out) const {
    size_t n_chars = 0;
    for (char c : piece) n_chars += !is_continuation(c);
    if (n_chars > opt_.max_input_chars_per_word) {
        out.push_back(unk_id_or_fail());
        return;
    }

    thread_local std::string key;
    const size_t first = out.size();
    size_t start = 0;
    while (start < piece.size()) {
        size_t end = std::min(piece.size(), start + max_token_len_);
        while (end > start && end < piece.size() && is_continuation(piece[end])) --end;
        int32_t id = -1;
        while (end > start) {
            if (start == 0) {
                id = find_model(piece.substr(0, end));
            } else {
                key.assign(opt_.continuing_subword_prefix);
                key.append(piece.substr(start, end - start));
                id = find_model(key);
            }
            if (id >= 0) break;
            do --end; while (end > start && is_continuation(piece[end]));
        }
        if (id < 0) {
            out.resize(first);
            out.push_back(unk_id_or_fail());
            return;
        }
        out.push_back(id);
        start = end;
    }
}

} // namespace vt::tok
