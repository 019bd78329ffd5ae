// HF `BPE` model: a piece starts as its UTF-8 characters (each looked up in
// the vocabulary, with the continuing-subword prefix / end-of-word suffix
// where configured, else byte fallback or unk), then merges apply by rank,
// lowest first, leftmost on ties, exactly as tokenizers' Word::merge_all.
//
// Merging runs on integer ids over flat arrays: a short piece rescans its
// few pairs, a long one keeps a heap of candidate merges with lazy
// invalidation, so a piece of n characters costs O(n log n), never O(n^2).
// Results of short pieces are memoized per thread (piece-cache.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/pipeline.h"
#include "tokenizer/u64-map.h"

namespace vt::tok {

struct BpeOptions {
    // In rank order. Both sides and their concatenation (the right side
    // without the continuing-subword prefix) must be model tokens.
    std::vector<std::pair<std::string, std::string>> merges;
    std::optional<std::string> unk_token;
    std::string continuing_subword_prefix;  // empty: none
    std::string end_of_word_suffix;         // empty: none
    bool fuse_unk = false;                  // consecutive unknowns give one unk
    bool byte_fallback = false;             // unknown characters as <0xXX> tokens
    bool ignore_merges = false;             // a piece that is a token is taken whole
    // Ids at or above this are added tokens, not the model's own (by
    // default every id of the vocabulary is the model's).
    uint32_t model_vocab_size = UINT32_MAX;
};

class BpeModel final : public Model {
public:
    // Throws vt::Error(VT_ERR_FORMAT) naming a merge whose tokens are not in
    // the vocabulary.
    BpeModel(const Vocab &vocab, const BpeOptions &options);

    // Throws vt::Error(VT_ERR_INVALID_ARGUMENT) when an unknown character
    // needs unk_token and the vocabulary lacks it.
    void tokenize(std::string_view piece, std::vector<int32_t> &out) const override;

    // Test hook: tokenize() without the cache and the whole-piece shortcut;
    // `force_heap` uses the heap even for short pieces. Returns the number
    // of heap pushes and pops, which stays linear in the piece's length.
    size_t tokenize_uncached(std::string_view piece, std::vector<int32_t> &out, bool force_heap = false) const;

private:
    int32_t find_model(std::string_view text) const;
    int32_t unk_id_or_fail() const;
    void initial_symbols(std::string_view piece, std::vector<int32_t> &syms) const;
    size_t merge(std::vector<int32_t> &syms, bool force_heap) const;
    void merge_short(std::vector<int32_t> &syms) const;
    size_t merge_heap(std::vector<int32_t> &syms) const;
    // The merge of (left, right): rank << 32 | result, or nullptr.
    const uint64_t *find_merge(int32_t left, int32_t right) const {
        return merges_.find(uint64_t(uint32_t(left)) << 32 | uint32_t(right));
    }

    const Vocab &vocab_;
    BpeOptions opt_;
    uint32_t n_model_;
    int32_t unk_id_ = -1;
    U64Map merges_;
    // Model ids of one-character pieces below U+0800 (-1: not a token):
    // every character of the GPT-2 byte alphabet is in here.
    std::vector<int32_t> char_id_;
    int32_t byte_id_[256];  // <0xXX> tokens, -1 where absent
    bool plain_chars_;      // no prefix or suffix: char_id_ applies
    uint64_t cache_owner_;
};

} // namespace vt::tok
