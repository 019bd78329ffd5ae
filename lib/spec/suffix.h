// Suffix decoding, the draft proposer of vLLM's "suffix" method (Arctic
// Inference's SuffixDecoding, arXiv 2411.04975): the tokens that most often
// followed the end of a request's sequence, counted over its own prompt and
// output and over the outputs of earlier requests.
//
// The semantics are those of a suffix tree of depth max_depth over the
// sequences, written here as occurrence counts: for a string Q of at most
// max_depth tokens, count(Q) is how many times Q occurs in the sequences
// (an occurrence at a sequence's very end counts, with no continuation).
// For each match length m = 1 .. (pattern length - 1), where the pattern is
// the last max_depth tokens, Q starts as the last m tokens; while the draft
// is shorter than min(k, floor(m * max_spec_factor)) and Q can grow within
// max_depth, the next token is the t with the largest count(Q t) (ties: the
// most recent occurrence), p *= count(Q t) / count(Q), and the draft stops
// once p < min_token_prob; each drafted token adds its p to the draft's
// score. The highest score wins, a longer match on a tie; between the
// request's own sequence and the cache of earlier outputs, the higher score
// (the request's own on a tie). A pattern that occurs nowhere else drafts
// nothing.
//
// Not thread-safe: the engine's step loop owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <vector>

namespace vt {

struct SuffixConfig {
    uint32_t k = 0;                  // num_speculative_tokens: the most tokens one draft proposes
    uint32_t max_depth = 24;         // vLLM's suffix_decoding_max_tree_depth
    uint32_t max_cached = 10000;     // suffix_decoding_max_cached_requests (0: no cache of outputs)
    float max_spec_factor = 1.0f;    // suffix_decoding_max_spec_factor
    float min_token_prob = 0.1f;     // suffix_decoding_min_token_prob
};

struct SuffixDraft {
    std::vector<int32_t> tokens;
    float score = 0;
    uint32_t match_len = 0;
};

// Where each token occurs in a set of sequences, grown by appending to a
// sequence and shrunk by dropping the oldest sequence (the cache's FIFO).
class SuffixIndex {
public:
    // Appends tokens to sequence `seq` (created on first use). Sequences
    // must be created in increasing id order for drop_oldest() to work.
    void append(uint64_t seq, std::span<const int32_t> tokens);
    // Removes the sequence with the smallest id, if any.
    void drop_oldest();
    size_t size() const { return seqs_.size(); }
    size_t length(uint64_t seq) const;
    // The best draft continuing `pattern` (its last tokens are the context
    // to match), in at most max_tokens tokens.
    SuffixDraft speculate(std::span<const int32_t> pattern, const SuffixConfig &cfg, uint32_t max_tokens) const;

private:
    struct At {
        uint64_t seq;
        uint32_t pos;
    };
    const int32_t *tokens_of(uint64_t seq) const;
    std::unordered_map<uint64_t, std::vector<int32_t>> seqs_;
    std::deque<uint64_t> order_;  // sequence ids, oldest first
    // Each token's occurrences, in order of sequence id and position.
    std::unordered_map<int32_t, std::deque<At>> where_;
};

// The proposer of one engine: an index per running request (its prompt and
// output, appended as they grow) and the cache of finished requests'
// outputs.
class SuffixProposer {
public:
    explicit SuffixProposer(const SuffixConfig &cfg) : cfg_(cfg) {}
    // Up to min(cfg.k, k_max) tokens for request `id`, whose sequence
    // (prompt then output) is `tokens`.
    std::vector<int32_t> propose(uint64_t id, std::span<const int32_t> tokens, uint32_t k_max);
    // Request `id` ended: its output (the tokens after n_prompt) joins the
    // cache, whose oldest output leaves once it holds cfg.max_cached.
    void finish(uint64_t id, std::span<const int32_t> tokens, size_t n_prompt);
    const SuffixConfig &config() const { return cfg_; }

private:
    SuffixConfig cfg_;
    std::unordered_map<uint64_t, SuffixIndex> running_;  // one sequence each, id 0
    SuffixIndex cache_;
    uint64_t next_cached_ = 0;
};

} // namespace vt
