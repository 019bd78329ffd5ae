// Added tokens of a tokenizer.json and Hugging Face's way of cutting them
// out of text before the pipeline runs (pipeline-tokenizer.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "tokenizer/tokenizer.h"

namespace vt::tok {

struct AddedToken {
    int32_t id = -1;
    std::string content;
    std::string pattern;       // what is matched: content, normalized when `normalized`
    bool single_word = false;  // only where no word character touches it
    bool lstrip = false;       // swallows whitespace on its left
    bool rstrip = false;       // ... and on its right
    bool normalized = false;   // matched in the normalized text
    bool special = false;      // needs parse_special; skipped by decode unless rendering specials
};

// Leftmost-longest matcher over a set of added tokens (HF uses an
// Aho-Corasick automaton with the same semantics; the sets are small, so a
// byte trie walked from each candidate position is enough).
class AddedTokenMatcher {
public:
    struct Match {
        int32_t token = -1;  // index into the AddedToken list, -1 for text
        uint32_t begin = 0;
        uint32_t end = 0;
    };

    AddedTokenMatcher() = default;
    // Indexes the tokens of `all` whose `normalized` equals `normalized`.
    AddedTokenMatcher(const std::vector<AddedToken> &all, bool normalized);

    bool empty() const { return node_token_.size() <= 1; }
    // Cuts `text` into added-token and text fragments covering it in order
    // (empty text gives nothing). A special token is matched only where
    // `specials` allows its match.
    void split(std::string_view text, const SpecialGate &specials, std::vector<Match> &out) const;

private:
    int32_t longest_at(std::string_view text, size_t pos, size_t &len) const;

    const std::vector<AddedToken> *tokens_ = nullptr;
    std::vector<int32_t> node_token_{-1};           // trie node (0 = root) -> token ending there
    std::unordered_map<uint64_t, int32_t> edges_;  // (node << 8 | byte) -> child
    bool first_byte_[256] = {};
};

// One entry of tokenizer.json's "added_tokens" (its "id" is read but the
// caller decides the final id). Throws vt::Error(VT_ERR_FORMAT).
AddedToken read_added_token(const nlohmann::json &j);

// A token id: a non-negative integer that fits int32 (signed or unsigned in
// nlohmann's terms: parsed files give unsigned, converters may build signed).
bool is_token_id(const nlohmann::json &j);

} // namespace vt::tok
