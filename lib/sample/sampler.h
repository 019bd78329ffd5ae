// Sampler chain: turns one row of logits into a token (include/vt/vt_sampler.h
// is the public face; lib/api/api-sampler.cpp the shims).
//
// A chain is a list of stages applied in order to a candidate list built from
// the logits, ending in a final stage (greedy or dist). Stage semantics follow
// llama.cpp's samplers (penalties, top-k, top-p, min-p, temp, greedy, dist),
// with two deliberate differences:
//  - every reordering uses one total order (logit descending, then token id
//    ascending) and never an unstable partition, so the candidate order after
//    any chain is unique and independent of the standard library;
//  - dist draws with its own arithmetic from the raw mt19937 output
//    (u = (rng() >> 8) * 2^-24, then a cumulative walk), because
//    std::discrete_distribution and uniform_real_distribution are
//    implementation-defined. Same seed + same logits = same token on every
//    platform whose expf agrees (IEEE hardware, any mainstream libm gives
//    the same ordering of draws up to last-ulp ties).
//
// Errors are thrown as vt::Error: VT_ERR_INVALID_ARGUMENT for parameters out
// of range, VT_ERR_INVALID_STATE for a stage after a final one or sampling
// without a final one. Not thread-safe: one chain per thread at a time (it
// holds the RNG and the penalty history).
//
// Memory: the candidate buffer is sized on the first sample() and reused;
// later calls with the same (or a smaller) n_vocab do not allocate. accept()
// may allocate (history ring and counts).
//
// Speed: sample() of a chain without a grammar whose stages before the first
// top-k (or before greedy) are only penalties and logit biases never builds
// the full candidate list: those stages edit a copy of the row, then a block
// maximum scan bounds the k-th best logit and only the blocks that can hold
// the k best are gathered and sorted (greedy: one vectorizable maximum scan).
// Every shortcut yields the candidates and token the full path does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

namespace vt {

namespace grammar {
class CompiledGrammar;
class TokenMatcher;
}

// The lowest index of the greatest value of row[0..n), NaN counting as -inf
// (all -inf or NaN: 0). A vectorizable scan; the same index as comparing
// one element after the other with ties to the lower index.
size_t first_max_index(const float *row, size_t n);

struct SamplerCandidate {
    int32_t id;    // token id = index into the logits row
    float logit;   // after the stages applied so far
};

class Sampler {
public:
    Sampler() = default;
    // Copies are independent chains (the grammar's matcher is copied too).
    Sampler(const Sampler &o);
    Sampler &operator=(const Sampler &) = delete;
    Sampler(Sampler &&) = default;

    // Stage builders (see vt_sampler.h for ranges). Throw on bad values or
    // when the chain already ends in a final stage.
    void add_penalties(int32_t last_n, float repeat, float freq, float present);
    void add_top_k(int32_t k);
    void add_top_p(float p, size_t min_keep);
    void add_min_p(float p, size_t min_keep);
    void add_temp(float t);
    // bias[i] added to the logit of tokens[i] (ids past the row ignored).
    void add_logit_bias(const int32_t *tokens, const float *bias, size_t n);
    // Keeps only the tokens the grammar allows next; the chain owns a
    // matcher, advanced by accept() and rewound by reset(). One per chain.
    void add_grammar(std::shared_ptr<const grammar::CompiledGrammar> g);
    void add_greedy();
    void add_dist(uint32_t seed);

    // Runs the non-final stages over logits[0..n_vocab) and returns the
    // surviving candidates in their current order. The span is valid until
    // the next call on this chain. NaN logits are treated as -inf.
    std::span<const SamplerCandidate> apply(const float *logits, size_t n_vocab);

    // apply() then the final stage. Throws VT_ERR_INVALID_STATE if the chain
    // has no final stage. Does not record the token (see accept).
    int32_t sample(const float *logits, size_t n_vocab);

    // Records a token in the history of every penalties stage and advances
    // the grammar. token >= 0. Throws VT_ERR_INVALID_ARGUMENT, recording
    // nothing, if the grammar does not allow it.
    void accept(int32_t token);

    // Whether the chain has a grammar and nothing but end of generation can
    // follow what it accepted (or it accepted end of generation).
    bool grammar_completed() const;

    // Clears the histories and reseeds dist with its original seed.
    void reset();

    bool has_final() const { return final_ != Final::none; }
    size_t n_stages() const { return stages_.size() + (has_final() ? 1 : 0); }

private:
    enum class Kind { penalties, top_k, top_p, min_p, temp, logit_bias, grammar };
    enum class Final { none, greedy, dist };

    // Penalty history: the last `last_n` accepted tokens (ring) and their
    // counts. last_n == -1 keeps counts of all tokens and no ring.
    struct History {
        std::vector<int32_t> ring;
        size_t head = 0;  // oldest entry once the ring is full
        std::unordered_map<int32_t, int32_t> counts;
    };

    struct Stage {
        Kind kind;
        int32_t n = 0;        // top_k: k; penalties: last_n
        float a = 0, b = 0, c = 0;  // top_p/min_p/temp: a; penalties: repeat, freq, present
        size_t min_keep = 0;  // top_p, min_p
        History hist;         // penalties only
        std::vector<std::pair<int32_t, float>> bias;  // logit_bias: sorted by id
    };

    void check_open() const;
    void run_penalties(Stage &s);
    void run_top_k(int32_t k);
    void run_top_p(float p, size_t min_keep);
    void run_min_p(float p, size_t min_keep);
    void run_temp(float t);
    void run_logit_bias(const Stage &s);
    void run_grammar();
    void run_stages(bool skip_grammar);
    void load(const float *logits, size_t n_vocab);  // candidates = the row
    static void check_row(const float *logits, size_t n_vocab);
    // The shortcut of sample() (see the top of this file): the token, or -1
    // when the chain does not qualify and the full path must run.
    int32_t sample_fast(const float *logits, size_t n_vocab);
    // The leading penalties / logit-bias stages that change something,
    // applied to row_ (a NaN-free copy of logits); returns row_ or, when
    // there are none, logits itself.
    const float *edited_row(const float *logits, size_t n_vocab, size_t n_lead);
    // cands_ = the k best of row (NaN as -inf) in order; false (cands_
    // untouched) when the block bound cannot prove the selection.
    bool select_top_k(const float *row, size_t n_vocab, size_t k);
    void run_stages_from(size_t first, bool skip_grammar);
    int32_t finish();  // the final stage over the current candidates
    void apply_unmasked(const float *logits, size_t n_vocab);
    void sort_prefix(size_t m);  // makes cands[0..m) the m best, in order
    size_t nucleus_prefix(float max, double target);  // run_top_p's sorted prefix
    size_t argmax() const;
    size_t draw();

    std::vector<Stage> stages_;
    std::shared_ptr<grammar::TokenMatcher> matcher_;  // the grammar stage's
    std::vector<uint32_t> mask_;                      // its token bitmask, reused
    Final final_ = Final::none;
    uint32_t seed_ = 0;
    std::mt19937 rng_;

    // Candidate buffer: capacity kept across calls; n_ is the live prefix.
    std::vector<SamplerCandidate> cands_;
    size_t n_ = 0;
    bool sorted_ = false;    // cands_[0..n_) in (logit desc, id asc) order
    bool identity_ = false;  // cands_[i].id == i for all i < n_ == n_vocab

    // Scratch of the shortcut and of dist, sized once like cands_.
    std::vector<float> row_;        // the edited row
    std::vector<float> block_max_;  // per block of the row
    std::vector<float> kth_;        // block_max_ copy for nth_element
    std::vector<float> weights_;    // dist, top-p: exp(logit - max) per candidate
};

} // namespace vt
