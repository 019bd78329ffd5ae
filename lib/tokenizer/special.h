// Special-token partition: finds the texts of special tokens in the input
// and cuts the input into raw-text fragments and token fragments before any
// model runs (llama.cpp's tokenizer_st_partition, HF's added-token split).
//
// Semantics follow llama.cpp exactly: special tokens are tried longest text
// first; each one splits every raw fragment left at its turn. USER_DEFINED
// tokens are always recognised; CONTROL and UNKNOWN ones only where the
// SpecialGate lets them (so user text cannot inject "<|im_start|>"): an
// occurrence the gate refuses stays raw text. LSTRIP/RSTRIP tokens eat
// adjacent ASCII whitespace.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace vt::tok {

struct Fragment {
    int32_t token = -1;  // >= 0: this fragment is that special token
    uint32_t begin = 0;  // raw text: byte range of the input
    uint32_t len = 0;
};

class SpecialMatcher {
public:
    explicit SpecialMatcher(const Vocab &vocab);

    // Appends the fragments of `text` to `out` (none for empty text).
    void partition(std::string_view text, const SpecialGate &specials, std::vector<Fragment> &out) const;

private:
    // Ranks (positions in vocab.special_ids) of special tokens occurring
    // anywhere in text, ascending: the only ones worth a splitting pass.
    void candidates(std::string_view text, bool parse_special, std::vector<uint32_t> &ranks) const;

    const Vocab &vocab_;
    // Byte trie over the special texts; node 0 is the root. A node's rank is
    // the first special (in priority order) whose text ends there, or -1.
    std::vector<int32_t> node_rank_;
    std::unordered_map<uint64_t, uint32_t> edges_;  // (node << 8 | byte) -> child
    bool first_byte_[256] = {};
};

} // namespace vt::tok
