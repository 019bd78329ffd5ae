// A tokenizer.json tokenizer: Hugging Face's added-token split, then
// normalizer -> pre-tokenizer -> model -> post-processor, and the decoder
// chain for the way back (pipeline.h has the stages).
//
// Encoding follows HF's Tokenizer::encode:
//   1. added tokens whose "normalized" is false are cut out of the raw text;
//   2. each remaining fragment is normalized, then added tokens whose
//      "normalized" is true are cut out of the normalized text;
//   3. each remaining fragment is pre-tokenized and every piece goes
//      through the model;
//   4. with add_special, the post-processor's tokens go around the ids.
// Special added tokens are matched only with parse_special (HF's
// split_special_tokens=False); without it their text is ordinary text, so
// user input cannot forge control tokens. Non-special added tokens are
// always matched, as in HF.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/added-tokens.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace vt::tok {

class PipelineTokenizer final : public Tokenizer {
public:
    // `doc` is a tokenizer.json document; `config` the tokenizer_config.json
    // beside it, or nullptr. Throws vt::Error(VT_ERR_FORMAT /
    // VT_ERR_UNSUPPORTED) naming the offending field.
    PipelineTokenizer(const nlohmann::json &doc, const nlohmann::json *config);
    ~PipelineTokenizer() override;

    std::vector<int32_t> encode(std::string_view text, bool add_special, const SpecialGate &specials) const override;
    std::string token_to_piece(int32_t id, bool render_special) const override;
    std::string decode(const int32_t *ids, size_t n, bool render_special) const override;

    uint32_t n_vocab() const override { return vocab_.size(); }
    int32_t bos() const override { return vocab_.bos; }
    int32_t eos() const override { return vocab_.eos; }
    bool is_eog(int32_t id) const override { return vocab_.is_eog(id); }

private:
    void read_vocab(const nlohmann::json &doc, const nlohmann::json *config);
    void read_config(const nlohmann::json &config);
    // Steps 2-3 of the class comment for one fragment of raw text;
    // `specials` is the gate at the fragment's start.
    void encode_fragment(std::string_view text, bool at_origin, const SpecialGate &specials,
                         std::vector<int32_t> &out) const;
    void encode_normalized(std::string_view text, bool at_origin, std::vector<int32_t> &out) const;
    // raw_bytes: decode_chain_bytes (lossless pieces) instead of decode_chain.
    std::string decode_tokens(std::vector<std::string> &tokens, size_t first_index,
                              bool raw_bytes = false) const;
    std::string_view token_text(int32_t id) const;

    Vocab vocab_;
    std::vector<AddedToken> added_;
    std::vector<uint8_t> special_;  // per id: a special added token
    std::unordered_map<int32_t, std::string> normalized_text_;  // normalized added tokens whose text changed
    AddedTokenMatcher raw_matcher_;
    AddedTokenMatcher normalized_matcher_;
    std::unique_ptr<Normalizer> normalizer_;
    std::unique_ptr<PreTokenizeStep> pre_tokenizer_;
    std::unique_ptr<Model> model_;
    std::unique_ptr<Decoder> decoder_;
    PostProcessor post_;
};

} // namespace vt::tok
