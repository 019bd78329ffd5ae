// N-gram prompt lookup, the draft proposer of vLLM's "ngram" method: the
// longest n-gram (min_n <= n <= max_n) that ends the sequence's known
// tokens and occurs earlier among them, at its earliest place, proposes the
// up to k tokens that followed it there. Text that repeats its input
// (editing code, quoting a document, a record turned into JSON) drafts
// itself this way at no model cost; a sequence with no such n-gram gets no
// draft and decodes one token per step as before.
//
// Pure function over token ids; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace vt {

struct NgramConfig {
    uint32_t min_n = 5;  // vLLM's prompt_lookup_min / prompt_lookup_max (both 5 when
    uint32_t max_n = 5;  // neither is given, the other's value when one is)
    uint32_t k = 0;      // num_speculative_tokens: the most tokens one draft proposes
};

// Up to min(cfg.k, k_max) tokens that followed the match, or none.
std::vector<int32_t> propose_ngram(std::span<const int32_t> tokens, const NgramConfig &cfg, uint32_t k_max);

} // namespace vt
