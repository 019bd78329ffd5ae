#include "spec/ngram.h"

#include <algorithm>

namespace vt {

std::vector<int32_t> propose_ngram(std::span<const int32_t> tokens, const NgramConfig &cfg, uint32_t k_max) {
    const size_t len = tokens.size(), k = std::min(cfg.k, k_max);
    if (k == 0 || cfg.min_n == 0 || len <= cfg.min_n) return {};
    // Longest first: a longer match is likelier to go on the same way. Each
    // n scans the earlier places in order, so the first hit is the earliest
    // (vLLM's choice). The match must end before the suffix does (start +
    // n < len): the suffix itself is no earlier occurrence. Quadratic in the
    // worst case only for n, which is a handful: a few microseconds per
    // sequence and step at thousands of tokens.
    for (size_t n = std::min<size_t>(cfg.max_n, len - 1); n >= cfg.min_n; --n) {
        const std::span<const int32_t> suffix = tokens.subspan(len - n);
        for (size_t start = 0; start + n < len; ++start) {
            if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + (ptrdiff_t)start)) continue;
            const size_t from = start + n, count = std::min(k, len - from);
            return {tokens.begin() + (ptrdiff_t)from, tokens.begin() + (ptrdiff_t)(from + count)};
        }
    }
    return {};
}

} // namespace vt
