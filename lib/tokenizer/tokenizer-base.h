// Shared half of every vocabulary-based tokenizer: UTF-8 validation,
// special-token partition, BOS/EOS, piece rendering and decoding. A model
// (byte-level BPE, SentencePiece BPE, later WordPiece/Unigram) supplies only
// how one raw-text fragment becomes ids and how a NORMAL token renders.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/special.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace vt::tok {

class VocabTokenizer : public Tokenizer {
public:
    // `vocab` must be finalized with derive_specials() already run.
    explicit VocabTokenizer(Vocab vocab);

    std::vector<int32_t> encode(std::string_view text, bool add_special,
                                const SpecialGate &specials) const final;
    std::string token_to_piece(int32_t id, bool render_special) const final;
    std::string decode(const int32_t *ids, size_t n, bool render_special) const final;

    uint32_t n_vocab() const final { return vocab_.size(); }
    int32_t bos() const final { return vocab_.bos; }
    int32_t eos() const final { return vocab_.eos; }
    bool is_eog(int32_t id) const final { return vocab_.is_eog(id); }

    const Vocab &vocab() const { return vocab_; }

protected:
    // Appends the ids of one raw-text fragment (valid UTF-8, non-empty).
    // `after_special`: the fragment opens the text or follows a special
    // token (SentencePiece adds its space prefix there).
    virtual void encode_text(std::string_view text, bool after_special,
                             std::vector<int32_t> &out) const = 0;

    // Bytes of a NORMAL token.
    virtual std::string normal_piece(int32_t id) const = 0;

    // Derived constructors call this last: renders every token once so
    // token_to_piece is a lookup.
    void build_piece_cache();

    // decode() drops one leading space of the first non-empty piece
    // (SentencePiece with add_space_prefix).
    bool strip_leading_space_ = false;

    Vocab vocab_;
    SpecialMatcher specials_;

private:
    std::vector<std::string> pieces_;  // rendered with render_special = true
};

} // namespace vt::tok
