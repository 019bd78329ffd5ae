// HF `Unigram` model (SentencePiece unigram): the segmentation of a piece
// into vocabulary pieces with the highest total score (Viterbi over the
// lattice that a trie's common-prefix search yields at each character).
//
// As tokenizers does: a character that starts no one-character piece gets
// an unk node of score (lowest score - 10); consecutive unk nodes fuse into
// one token, whose text is looked up again, then split into <0xXX> byte
// tokens under byte_fallback, else it is unk_id. Scores are added in
// double precision as HF does, so ties break the same way (or in float for
// SentencePiece .model files, see UnigramOptions::float_scores).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/pipeline.h"
#include "tokenizer/u64-map.h"

namespace vt::tok {

struct UnigramOptions {
    int32_t unk_id = -1;  // -1: none (an unknown character is then an error)
    bool byte_fallback = false;
    // The model's pieces are ids [0, model_vocab_size) (by default the
    // whole vocabulary).
    uint32_t model_vocab_size = UINT32_MAX;
    // Scores by id at full precision (tokenizer.json stores doubles); empty:
    // Vocab::score.
    std::vector<double> scores;
    // Path scores in float as SentencePiece's EncodeOptimized keeps them,
    // rebased near zero past 1e5 as it does (its .model files are checked
    // against it); HF sums in double. The two break some near-ties
    // differently.
    bool float_scores = false;
};

class UnigramModel final : public Model {
public:
    // Throws vt::Error(VT_ERR_FORMAT) when unk_id is not a model id.
    UnigramModel(const Vocab &vocab, const UnigramOptions &options);

    // Throws vt::Error(VT_ERR_INVALID_ARGUMENT) when the piece needs an unk
    // token and the model has no unk_id.
    void tokenize(std::string_view piece, std::vector<int32_t> &out) const override;

private:
    struct Match {
        uint32_t end;  // byte offset where the matched piece ends
        int32_t id;
    };
    void encode(std::string_view piece, std::vector<int32_t> &out) const;
    void emit_unknown(std::string_view text, std::vector<int32_t> &out) const;
    int32_t find_model(std::string_view text) const;
    double add(double a, double b) const;
    struct BestPath;
    void rebase(std::vector<BestPath> &best, uint32_t start, uint32_t max_frontier) const;

    const Vocab &vocab_;
    UnigramOptions opt_;
    uint32_t n_model_;
    std::vector<double> scores_;
    double unk_score_ = 0;
    int32_t byte_id_[256];
    // Trie over piece bytes: (node << 8 | byte) -> child node; node_id_[node]
    // is the piece that ends there (the last id of a duplicated text, as
    // tokenizers' text -> id map keeps), or -1.
    U64Map edges_;
    std::vector<int32_t> node_id_;
    uint64_t cache_owner_;
};

} // namespace vt::tok
