// Suffix decoding's proposer (spec/suffix.h) against the structure it stands
// for: an explicit suffix trie of depth max_depth over the same sequences,
// built here node by node with a count per node (how many suffixes pass
// through it) as Arctic Inference's SuffixTree keeps them, and the path
// speculation walked on it (the child with the largest count, probability
// count(child) / count(node), stop below min_token_prob, at most
// floor(m * max_spec_factor) tokens, best score over match lengths). The
// index computes the same thing from occurrence lists; random sequences
// over a small vocabulary, with many repeats, must give the same draft,
// score and match length. Then the proposer: its own sequence and the cache
// of finished outputs, eviction, and the documented cases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <random>

#include "spec/suffix.h"

using namespace vt;
using Toks = std::vector<int32_t>;

namespace {

struct Trie {
    struct Node {
        uint32_t count = 0;
        std::pair<uint64_t, uint32_t> latest{0, 0};  // the last suffix through it: sequence, start
        std::map<int32_t, std::unique_ptr<Node>> next;
    };
    Node root;
    uint32_t depth;

    Trie(const std::vector<Toks> &seqs, uint32_t max_depth) : depth(max_depth) {
        for (uint64_t s = 0; s < seqs.size(); ++s)
            for (uint32_t i = 0; i < seqs[s].size(); ++i) {
                Node *n = &root;
                ++n->count;
                for (uint32_t j = i; j < seqs[s].size() && j < i + max_depth; ++j) {
                    auto &c = n->next[seqs[s][j]];
                    if (!c) c = std::make_unique<Node>();
                    n = c.get();
                    ++n->count;
                    n->latest = std::max(n->latest, std::make_pair(s, i));
                }
            }
    }

    SuffixDraft speculate(const Toks &pattern, const SuffixConfig &cfg, uint32_t max_tokens) const {
        SuffixDraft best;
        const size_t n = pattern.size();
        if (n < 2 || max_tokens == 0) return best;
        for (uint32_t m = 1; m < n; ++m) {
            const Node *node = &root;
            for (size_t i = n - m; i < n && node; ++i) {
                auto it = node->next.find(pattern[i]);
                node = it == node->next.end() ? nullptr : it->second.get();
            }
            if (!node) break;
            const auto cap = (uint32_t)std::max(0.0f, (float)m * cfg.max_spec_factor + 1e-6f);
            SuffixDraft d;
            float p = 1.0f;
            while (d.tokens.size() < std::min(max_tokens, cap) && !node->next.empty()) {
                const Node *child = nullptr;
                int32_t tok = 0;
                for (const auto &[t, c] : node->next)
                    if (!child || c->count > child->count || (c->count == child->count && c->latest > child->latest))
                        child = c.get(), tok = t;
                p *= (float)child->count / (float)node->count;
                if (p < cfg.min_token_prob) break;
                d.tokens.push_back(tok);
                d.score += p;
                node = child;
            }
            if (d.score >= best.score) {
                best = d;
                best.match_len = m;
            }
        }
        return best;
    }
};

SuffixConfig suffix(uint32_t k, uint32_t depth = 24, float factor = 1.0f, float min_prob = 0.1f,
                    uint32_t cached = 10000) {
    SuffixConfig c;
    c.k = k;
    c.max_depth = depth;
    c.max_spec_factor = factor;
    c.min_token_prob = min_prob;
    c.max_cached = cached;
    return c;
}

Toks last(const Toks &t, uint32_t depth) { return Toks(t.end() - std::min<size_t>(depth, t.size()), t.end()); }

} // namespace

TEST_CASE("suffix index: the drafts of an explicit suffix trie, on random repetitive sequences", "[spec]") {
    std::mt19937 rng(2411);
    int drafted = 0;
    for (int rep = 0; rep < 400; ++rep) {
        const int vocab = 2 + (int)(rng() % 4);
        const int n_seqs = 1 + (int)(rng() % 3);
        std::vector<Toks> seqs(n_seqs);
        SuffixIndex ix;
        for (int s = 0; s < n_seqs; ++s) {
            seqs[s].resize(1 + rng() % 60);
            for (int32_t &t : seqs[s]) t = (int32_t)(rng() % vocab);
            // Appended in pieces, as a running request grows.
            for (size_t i = 0; i < seqs[s].size();) {
                const size_t piece = std::min<size_t>(1 + rng() % 7, seqs[s].size() - i);
                ix.append((uint64_t)s, std::span<const int32_t>(seqs[s]).subspan(i, piece));
                i += piece;
            }
        }
        if (n_seqs > 1 && rep % 3 == 0) {  // the cache's FIFO: the oldest sequence leaves
            ix.drop_oldest();
            seqs.erase(seqs.begin());
        }
        const float factors[] = {0.5f, 1.0f, 2.5f}, probs[] = {0.0f, 0.1f, 0.4f};
        const SuffixConfig cfg = suffix(16, 2 + rng() % 9, factors[rng() % 3], probs[rng() % 3]);
        const Trie trie(seqs, cfg.max_depth);
        const uint32_t max_tokens = 1 + rng() % 10;
        // The last sequence's own end (a running request's pattern), or any tokens.
        Toks pattern = rep % 2 ? last(seqs.back(), cfg.max_depth) : Toks(1 + rng() % cfg.max_depth);
        if (rep % 2 == 0)
            for (int32_t &t : pattern) t = (int32_t)(rng() % vocab);
        const SuffixDraft want = trie.speculate(pattern, cfg, max_tokens);
        const SuffixDraft got = ix.speculate(pattern, cfg, max_tokens);
        INFO("rep " << rep << " depth " << cfg.max_depth << " factor " << cfg.max_spec_factor << " min prob "
                    << cfg.min_token_prob << " max tokens " << max_tokens);
        REQUIRE(got.tokens == want.tokens);
        REQUIRE(got.score == want.score);
        REQUIRE(got.match_len == want.match_len);
        drafted += !got.tokens.empty();
    }
    CHECK(drafted > 100);  // the comparison saw drafts, not only empty ones
}

TEST_CASE("suffix index: dropping the oldest sequence forgets its occurrences", "[spec]") {
    SuffixIndex ix;
    ix.append(0, Toks{1, 2, 3});
    ix.append(1, Toks{1, 2, 4, 1, 2, 4});
    const SuffixConfig cfg = suffix(4, 24, 2.0f, 0.0f);
    // 1 2 occurs three times: twice followed by 4, once by 3.
    CHECK(ix.speculate(Toks{9, 1, 2}, cfg, 4).tokens == Toks{4, 1, 2, 4});
    ix.drop_oldest();
    CHECK(ix.size() == 1);
    const Trie trie({Toks{1, 2, 4, 1, 2, 4}}, 24);
    const SuffixDraft d = ix.speculate(Toks{9, 1, 2}, cfg, 4);
    CHECK(d.tokens == trie.speculate(Toks{9, 1, 2}, cfg, 4).tokens);
    CHECK(d.score == trie.speculate(Toks{9, 1, 2}, cfg, 4).score);
    ix.drop_oldest();
    CHECK(ix.speculate(Toks{9, 1, 2}, cfg, 4).tokens.empty());
}

TEST_CASE("suffix proposer: a request's own text, then earlier outputs, within its limits", "[spec]") {
    SuffixProposer sp(suffix(8, 24, 1.0f, 0.1f, 2));
    // The prompt repeats "5 6 7 8": after "5 6" the request's own text says "7 8 ...".
    const Toks own{5, 6, 7, 8, 5, 6, 7, 8, 5, 6};
    const Toks d = sp.propose(1, own, 8);
    REQUIRE(!d.empty());
    CHECK(d.front() == 7);
    CHECK(d.size() <= 8);
    CHECK(sp.propose(1, own, 1).size() == 1);  // k_max, as the scheduler's limit
    // A new request with nothing to match in itself drafts from request 1's
    // output once 1 has finished (and not before).
    const Toks fresh{40, 41, 42, 43, 44, 10, 11};
    CHECK(sp.propose(2, fresh, 8).empty());
    sp.finish(1, Toks{5, 6, 7, 8, 5, 6, 10, 11, 12, 13, 14, 15}, 6);  // output: 10 11 12 13 14 15
    const Toks from_cache = sp.propose(2, fresh, 8);
    REQUIRE(!from_cache.empty());
    CHECK(from_cache.front() == 12);
    // The cache keeps 2 outputs: two more finished requests push request 1's out.
    sp.finish(3, Toks{1, 20, 21}, 1);
    sp.finish(4, Toks{1, 22, 23}, 1);
    CHECK(sp.propose(5, Toks{30, 31, 10, 11}, 8).empty());
    // Ended without its output (cancelled, failed): forgotten, the cache as it was.
    sp.finish(2, {}, 0);
    CHECK(sp.propose(6, Toks{50, 51, 20}, 8) == Toks{21});
}

TEST_CASE("suffix proposer: no cache of outputs when max_cached is 0", "[spec]") {
    SuffixProposer sp(suffix(8, 24, 1.0f, 0.1f, 0));
    sp.finish(1, Toks{1, 10, 11, 12, 13}, 1);
    CHECK(sp.propose(2, Toks{7, 8, 10, 11}, 8).empty());
}
