// SentencePiece BPE (tokenizer.ggml.model = "llama"): spaces become U+2581,
// an optional space prefix, pieces merged greedily by highest vocabulary
// score (leftmost on ties), and characters with no piece emitted as
// <0xXX> byte tokens. Matches llama.cpp's llm_tokenizer_spm.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer-base.h"

namespace vt::tok {

class SpmTokenizer final : public VocabTokenizer {
public:
    SpmTokenizer(Vocab vocab, bool add_space_prefix);

protected:
    void encode_text(std::string_view text, bool after_special, std::vector<int32_t> &out) const override;
    std::string normal_piece(int32_t id) const override;

private:
    bool add_space_prefix_;
    int32_t byte_token_[256];  // <0xXX> (or the raw byte as a token), -1 if none
};

} // namespace vt::tok
