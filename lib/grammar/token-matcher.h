// Grammars bound to a vocabulary: token masks (include/vt/vt_grammar.h).
//
// Compiling for a vocabulary precomputes, for every `bytes` position a stack
// top can have, how each token fares when matched from that position alone
// with an unknown caller (xgrammar's adaptive token mask cache):
//  - accepted: its bytes are consumed inside the rule, whatever called it;
//  - rejected: it fails inside the rule before the rule could return;
//  - uncertain: the rule can return before the token ends, so the rest of
//    its bytes depend on the caller. Only these are matched at run time,
//    against the real stacks.
// A mask is then the union over the state's distinct top positions of
// their accepted sets and the uncertain tokens that the real stacks take.
// Tokens are walked in byte order with the automaton states of the shared
// prefix kept, so a prefix is matched once for all tokens that start with it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "grammar/grammar-ir.h"
#include "grammar/pda.h"

namespace vt {
class Tokenizer;
}

namespace vt::grammar {

// The bytes of every token of a tokenizer, sorted for prefix sharing.
// Control tokens (no bytes) are left out; end-of-generation tokens are
// kept apart (allowed exactly when the grammar accepts).
struct TokenVocab {
    uint32_t n_vocab = 0;
    std::vector<std::string> bytes;      // by token id; empty for control tokens
    std::vector<int32_t> sorted;         // ids of the other tokens, by bytes
    std::vector<uint32_t> first_begin;   // 257 entries: sorted range of each first byte
    std::vector<int32_t> eog;            // end-of-generation ids
    size_t max_len = 0;                  // the longest token's bytes

    // Shared per tokenizer (built on first use; the tokenizer must outlive it).
    static std::shared_ptr<const TokenVocab> of(const Tokenizer &tok);
};

class StaticContext;  // token-matcher.cpp

// A token set over a vocabulary: a bitmask when dense, a list when sparse.
struct TokenSet {
    std::vector<uint32_t> bits;  // n_vocab bits, or empty
    std::vector<int32_t> ids;    // when bits is empty
    void add_to(uint32_t *mask) const;
};

struct PositionMask {
    TokenSet accepted;
    std::vector<uint32_t> uncertain;  // indices into TokenVocab::sorted, ascending
};

class CompiledGrammar {
public:
    CompiledGrammar(std::shared_ptr<const Grammar> g, std::shared_ptr<const TokenVocab> v);

    const Grammar &grammar() const { return *g_; }
    const TokenVocab &vocab() const { return *v_; }
    // The cache entry of a `bytes` position.
    const PositionMask &at(uint32_t pos) const { return masks_[pos_index_[pos]]; }

private:
    void derive_chain_copies(const std::vector<uint32_t> &outer, const StaticContext &ctx,
                             StackArena &arena, LazyDfa &dfa);

    std::shared_ptr<const Grammar> g_;
    std::shared_ptr<const TokenVocab> v_;
    std::vector<uint32_t> pos_index_;  // by element position
    std::vector<PositionMask> masks_;
};

// One output's walk through a compiled grammar. Not thread-safe.
class TokenMatcher {
public:
    explicit TokenMatcher(std::shared_ptr<const CompiledGrammar> cg);
    // A copy walks on from the same state on its own.
    TokenMatcher(const TokenMatcher &o);
    TokenMatcher &operator=(const TokenMatcher &) = delete;

    // mask: (n_vocab + 31) / 32 words, fully overwritten.
    void fill_mask(uint32_t *mask);
    // False, with the state unchanged, when the token is not allowed.
    bool accept(int32_t token) { return check(token, true); }
    // Whether the mask would allow the token (state unchanged).
    bool allows(int32_t token) { return check(token, false); }
    bool accept_bytes(std::string_view bytes);
    bool is_accepting() const { return state_.accept; }
    bool is_completed() const { return terminated_ || (state_.accept && state_.dead()); }
    bool is_terminated() const { return terminated_; }
    void reset();
    const CompiledGrammar &compiled() const { return *cg_; }

private:
    bool check(int32_t token, bool commit);
    bool step_bytes(std::string_view bytes, bool commit);

    std::shared_ptr<const CompiledGrammar> cg_;
    StackArena arena_;
    Pda pda_;
    PdaState state_;
    bool terminated_ = false;
    LazyDfa dfa_;  // for the walks of one fill_mask
};

// The walk both sides use: matches the tokens sorted[idx[i]] from the
// state `start` of dfa (idx ascending) and reports each one's verdict.
enum class TokenVerdict : uint8_t { rejected, accepted, uncertain };
void walk_tokens(LazyDfa &dfa, uint32_t start, const TokenVocab &v, std::span<const uint32_t> idx,
                 std::vector<TokenVerdict> &verdicts);

} // namespace vt::grammar
