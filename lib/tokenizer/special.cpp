#include "tokenizer/special.h"

#include <algorithm>

namespace vt::tok {

SpecialMatcher::SpecialMatcher(const Vocab &vocab) : vocab_(vocab) {
    node_rank_.push_back(-1);
    for (uint32_t rank = 0; rank < vocab.special_ids.size(); ++rank) {
        const std::string_view t = vocab.text(vocab.special_ids[rank]);
        if (t.empty()) continue;
        first_byte_[static_cast<uint8_t>(t[0])] = true;
        uint32_t node = 0;
        for (char ch : t) {
            const uint64_t key = (uint64_t(node) << 8) | static_cast<uint8_t>(ch);
            auto it = edges_.find(key);
            if (it == edges_.end()) {
                const auto child = static_cast<uint32_t>(node_rank_.size());
                node_rank_.push_back(-1);
                it = edges_.emplace(key, child).first;
            }
            node = it->second;
        }
        // Duplicate texts: the earlier rank takes every occurrence.
        if (node_rank_[node] < 0) node_rank_[node] = static_cast<int32_t>(rank);
    }
}

void SpecialMatcher::candidates(std::string_view text, bool parse_special,
                                std::vector<uint32_t> &ranks) const {
    const auto *p = reinterpret_cast<const uint8_t *>(text.data());
    for (size_t i = 0; i < text.size(); ++i) {
        if (!first_byte_[p[i]]) continue;
        uint32_t node = 0;
        for (size_t j = i; j < text.size(); ++j) {
            auto it = edges_.find((uint64_t(node) << 8) | p[j]);
            if (it == edges_.end()) break;
            node = it->second;
            const int32_t rank = node_rank_[node];
            if (rank < 0) continue;
            const uint32_t a = vocab_.attr(vocab_.special_ids[rank]);
            if (!parse_special && (a & (ATTR_CONTROL | ATTR_UNKNOWN))) continue;
            ranks.push_back(static_cast<uint32_t>(rank));
        }
    }
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
}

namespace {

// ASCII isspace, as llama.cpp strips with isspace() in the C locale.
inline bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

} // namespace

void SpecialMatcher::partition(std::string_view text, const SpecialGate &specials,
                               std::vector<Fragment> &out) const {
    if (text.empty()) return;
    std::vector<Fragment> cur{{-1, 0, static_cast<uint32_t>(text.size())}};
    if (!edges_.empty()) {
        std::vector<uint32_t> ranks;
        candidates(text, specials.any(), ranks);
        std::vector<Fragment> next;
        for (uint32_t rank : ranks) {
            const int32_t id = vocab_.special_ids[rank];
            const std::string_view tok = vocab_.text(id);
            const uint32_t a = vocab_.attr(id);
            const bool gated = a & (ATTR_CONTROL | ATTR_UNKNOWN);
            next.clear();
            for (const Fragment &f : cur) {
                if (f.token >= 0) { next.push_back(f); continue; }
                const std::string_view raw = text.substr(f.begin, f.len);
                size_t pos = 0, from = 0;  // raw text starts at pos; the search at from
                while (from < raw.size()) {
                    const size_t m = raw.find(tok, from);
                    if (m == std::string_view::npos) break;
                    if (gated && !specials.allows(f.begin + m, f.begin + m + tok.size())) {
                        from = m + 1;  // refused here (message content): stays text
                        continue;
                    }
                    size_t left_len = m - pos;
                    if (a & ATTR_LSTRIP) {
                        while (left_len > 0 && is_space(raw[pos + left_len - 1])) --left_len;
                    }
                    if (left_len > 0) next.push_back({-1, f.begin + uint32_t(pos), uint32_t(left_len)});
                    next.push_back({id, 0, 0});
                    pos = m + tok.size();
                    if (a & ATTR_RSTRIP) {
                        while (pos < raw.size() && is_space(raw[pos])) ++pos;
                    }
                    from = pos;
                }
                if (pos < raw.size()) next.push_back({-1, f.begin + uint32_t(pos), uint32_t(raw.size() - pos)});
            }
            cur.swap(next);
        }
    }
    out.insert(out.end(), cur.begin(), cur.end());
}

} // namespace vt::tok
