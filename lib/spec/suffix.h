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

// Where each pair of adjacent tokens occurs in a set of sequences, how often
// each token occurs, and each token's followers with the most frequent one
// kept current; grown by appending to a sequence and shrunk by dropping the
// oldest sequence (the cache's FIFO). Matches of one token read the
// followers, longer ones start from the pair's occurrences, so a lookup
// never scans the many places where a frequent last token occurs
// (measured with a cache of 10000 outputs of 350 Zipf-distributed tokens:
// 0.05-0.1 ms a proposal; 2-3 ms when the followers were scanned each time).
// Finishing a request costs about 1 ms there (its output indexed, the oldest
// dropped).
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

    // An occurrence of a string being matched: its sequence's tokens, the
    // sequence's creation order, and the position of the string's last token.
    struct Occ {
        const std::vector<int32_t> *seq;
        uint32_t serial;
        uint32_t end;
        bool after(const Occ &o) const { return serial > o.serial || (serial == o.serial && end > o.end); }
    };

private:
    struct Seq {
        uint32_t serial;  // creation order: later sequences are more recent
        std::vector<int32_t> tokens;
    };
    struct At {  // the second token of a pair: its sequence and position
        const Seq *seq;
        uint32_t pos;
        bool after(const At &o) const { return seq->serial > o.seq->serial || (seq == o.seq && pos > o.pos); }
    };
    struct Follower {  // the pairs (t, u) of one u
        uint32_t count = 0;
        At latest{};
        bool beats(const Follower &o) const { return count > o.count || (count == o.count && latest.after(o.latest)); }
    };
    struct Followers {  // the tokens u after one t, and the most frequent
        std::unordered_map<int32_t, Follower> by;
        mutable int32_t best = 0;
        mutable bool stale = false;  // best lost an occurrence: found again at the next lookup
    };
    struct Pairs {  // the occurrences of one pair, oldest first, from `head` on
        std::vector<At> at;
        uint32_t head = 0;
    };
    static uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t)(uint32_t)a << 32 | (uint32_t)b; }
    void add_pair(const Seq &s, uint32_t pos);
    static std::vector<Occ> occurrences(const Pairs &ps);
    SuffixDraft after_one(int32_t t, const SuffixConfig &cfg, uint32_t max_tokens) const;
    std::unordered_map<uint64_t, Seq> seqs_;  // node-based: a Seq stays where it is
    std::deque<uint64_t> order_;             // sequence ids, oldest first
    uint32_t next_serial_ = 0;
    std::unordered_map<int32_t, uint32_t> count_;                              // occurrences of each token
    std::unordered_map<int32_t, Followers> followers_;  // t -> u -> pairs (t, u)
    std::unordered_map<uint64_t, Pairs> pairs_;                                // (t, u) -> its occurrences
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
