#include "tokenizer/model-bpe.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "core/error.h"
#include "tokenizer/piece-cache.h"
#include "tokenizer/utf8.h"

namespace vt::tok {

namespace {

// Up to this many symbols a piece rescans its pairs after each merge
// (cheaper than heap upkeep for the short words that dominate text).
constexpr size_t kShortPiece = 16;
constexpr uint32_t kNoRank = UINT32_MAX;
constexpr uint32_t kCharTable = 0x800;  // one- and two-byte characters

// Per-thread scratch, so that tokenizing a piece allocates nothing.
struct Scratch {
    std::vector<int32_t> syms;
    std::string text;
    struct Node {
        int32_t id;  // -1: merged into its left neighbour
        int32_t prev, next;
    };
    std::vector<Node> nodes;
    std::vector<uint64_t> heap;  // rank << 32 | position of the left symbol
};

Scratch &scratch() {
    thread_local Scratch s;
    return s;
}

} // namespace

BpeModel::BpeModel(const Vocab &vocab, const BpeOptions &options)
    : vocab_(vocab), opt_(options), cache_owner_(PieceCache::new_owner()) {
    n_model_ = std::min(opt_.model_vocab_size, vocab.size());
    if (opt_.unk_token) unk_id_ = find_model(*opt_.unk_token);
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        byte_id_[b] = find_model(name);
    }
    plain_chars_ = opt_.continuing_subword_prefix.empty() && opt_.end_of_word_suffix.empty();
    char_id_.assign(kCharTable, -1);
    std::string ch;
    for (uint32_t cp = 0; cp < kCharTable; ++cp) {
        ch.clear();
        utf8_append(ch, cp);
        char_id_[cp] = find_model(ch);
    }

    // A later duplicate of a pair replaces the earlier one, as the map HF
    // collects its merges into does.
    const size_t prefix_len = opt_.continuing_subword_prefix.size();
    merges_.reserve(opt_.merges.size());
    for (size_t rank = 0; rank < opt_.merges.size(); ++rank) {
        const auto &[a, b] = opt_.merges[rank];
        const int32_t a_id = find_model(a);
        const int32_t b_id = find_model(b);
        if (a_id < 0 || b_id < 0) {
            fail(VT_ERR_FORMAT, "BPE merges[%zu] \"%s %s\": \"%s\" is not in the vocabulary", rank, a.c_str(),
                 b.c_str(), (a_id < 0 ? a : b).c_str());
        }
        if (b.size() < prefix_len) {
            fail(VT_ERR_FORMAT, "BPE merges[%zu] \"%s %s\": right side shorter than continuing_subword_prefix",
                 rank, a.c_str(), b.c_str());
        }
        const std::string merged = a + b.substr(prefix_len);
        const int32_t merged_id = find_model(merged);
        if (merged_id < 0) {
            fail(VT_ERR_FORMAT, "BPE merges[%zu] \"%s %s\": \"%s\" is not in the vocabulary", rank, a.c_str(),
                 b.c_str(), merged.c_str());
        }
        merges_.set(uint64_t(uint32_t(a_id)) << 32 | uint32_t(b_id), uint64_t(rank) << 32 | uint32_t(merged_id));
    }
}

int32_t BpeModel::find_model(std::string_view text) const {
    const int32_t id = vocab_.find(text);
    return id >= 0 && static_cast<uint32_t>(id) < n_model_ ? id : -1;
}

int32_t BpeModel::unk_id_or_fail() const {
    if (unk_id_ < 0) {
        fail(VT_ERR_INVALID_ARGUMENT, "BPE: unk_token \"%s\" is needed for an unknown character but is not in "
             "the vocabulary", opt_.unk_token->c_str());
    }
    return unk_id_;
}

void BpeModel::tokenize(std::string_view piece, std::vector<int32_t> &out) const {
    if (piece.empty()) return;
    tokenize_cached(cache_owner_, piece, out, [this](std::string_view p, std::vector<int32_t> &ids) {
        const int32_t whole = opt_.ignore_merges ? find_model(p) : -1;
        if (whole >= 0) ids.push_back(whole);
        else tokenize_uncached(p, ids);
    });
}

size_t BpeModel::tokenize_uncached(std::string_view piece, std::vector<int32_t> &out, bool force_heap) const {
    std::vector<int32_t> &syms = scratch().syms;
    initial_symbols(piece, syms);
    const size_t ops = merge(syms, force_heap);
    out.insert(out.end(), syms.begin(), syms.end());
    return ops;
}

// HF's BPE::merge_word before merging, quirks included: a character with no
// token falls back to its bytes (all of them or none), else to unk, which
// stays pending (and fuses with the next unknown under fuse_unk) until a
// known character arrives, so byte-fallback tokens can precede it.
void BpeModel::initial_symbols(std::string_view piece, std::vector<int32_t> &syms) const {
    syms.clear();
    std::string &text = scratch().text;
    const auto *p = reinterpret_cast<const uint8_t *>(piece.data());
    const size_t n = piece.size();
    bool unk_pending = false;
    for (size_t i = 0; i < n;) {
        const size_t len = std::min(utf8_len(p[i]), n - i);
        std::string_view s = piece.substr(i, len);
        int32_t id;
        if (plain_chars_) {
            if (len == 1) {
                id = char_id_[p[i]];
            } else if (len == 2) {
                id = char_id_[(uint32_t(p[i] & 0x1F) << 6) | (p[i + 1] & 0x3F)];
            } else {
                id = find_model(s);
            }
        } else {
            text.clear();
            if (i > 0) text += opt_.continuing_subword_prefix;
            text += s;
            if (i + len == n) text += opt_.end_of_word_suffix;
            s = text;
            id = find_model(s);
        }
        i += len;

        if (id >= 0) {
            if (unk_pending) syms.push_back(unk_id_);
            unk_pending = false;
            syms.push_back(id);
            continue;
        }
        if (opt_.byte_fallback) {
            bool all = true;
            for (unsigned char c : s) all = all && byte_id_[c] >= 0;
            if (all) {
                for (unsigned char c : s) syms.push_back(byte_id_[c]);
                continue;
            }
        }
        if (!opt_.unk_token) continue;  // dropped, as HF does without unk
        if (unk_pending && opt_.fuse_unk) continue;
        if (unk_pending) syms.push_back(unk_id_);
        unk_id_or_fail();
        unk_pending = true;
    }
    if (unk_pending) syms.push_back(unk_id_);
}

size_t BpeModel::merge(std::vector<int32_t> &syms, bool force_heap) const {
    if (syms.size() < 2 || merges_.size() == 0) return 0;
    if (syms.size() <= kShortPiece && !force_heap) {
        merge_short(syms);
        return 0;
    }
    return merge_heap(syms);
}

void BpeModel::merge_short(std::vector<int32_t> &syms) const {
    size_t n = syms.size();
    uint32_t rank[kShortPiece];
    int32_t result[kShortPiece];
    auto look = [&](size_t i) {
        const uint64_t *m = find_merge(syms[i], syms[i + 1]);
        rank[i] = m ? uint32_t(*m >> 32) : kNoRank;
        result[i] = m ? int32_t(uint32_t(*m)) : -1;
    };
    for (size_t i = 0; i + 1 < n; ++i) look(i);
    for (;;) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; ++i) {
            if (rank[i] < rank[best]) best = i;
        }
        if (rank[best] == kNoRank) break;
        syms[best] = result[best];
        for (size_t i = best + 1; i + 1 < n; ++i) {
            syms[i] = syms[i + 1];
            rank[i] = rank[i + 1];
            result[i] = result[i + 1];
        }
        --n;
        if (best > 0) look(best - 1);
        if (best + 1 < n) {
            look(best);
        } else {
            rank[best] = kNoRank;
        }
        if (n < 2) break;
    }
    syms.resize(n);
}

// Tokenizers' Word::merge_all: a min-heap of (rank, left position). An
// entry is stale when its left symbol was merged away or now forms a pair
// of another rank (ranks identify pairs, so comparing them suffices).
size_t BpeModel::merge_heap(std::vector<int32_t> &syms) const {
    Scratch &sc = scratch();
    auto &nodes = sc.nodes;
    auto &heap = sc.heap;
    const auto n = static_cast<int32_t>(syms.size());
    nodes.resize(syms.size());
    for (int32_t i = 0; i < n; ++i) nodes[i] = {syms[i], i - 1, i + 1 < n ? i + 1 : -1};
    heap.clear();
    size_t ops = 0;
    auto push = [&](int32_t left) {
        const uint64_t *m = find_merge(nodes[left].id, nodes[nodes[left].next].id);
        if (!m) return;
        heap.push_back((*m & ~uint64_t(UINT32_MAX)) | uint32_t(left));
        std::push_heap(heap.begin(), heap.end(), std::greater<>());
        ++ops;
    };
    for (int32_t i = 0; i + 1 < n; ++i) push(i);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), std::greater<>());
        const uint64_t top = heap.back();
        heap.pop_back();
        ++ops;
        const auto pos = static_cast<int32_t>(uint32_t(top));
        auto &left = nodes[pos];
        if (left.id < 0 || left.next < 0) continue;
        auto &right = nodes[left.next];
        const uint64_t *m = find_merge(left.id, right.id);
        if (!m || (*m >> 32) != (top >> 32)) continue;
        left.id = int32_t(uint32_t(*m));
        right.id = -1;
        left.next = right.next;
        if (left.next >= 0) nodes[left.next].prev = pos;
        if (left.prev >= 0) push(left.prev);
        if (left.next >= 0) push(pos);
    }
    syms.clear();
    for (int32_t i = 0; i >= 0; i = nodes[i].next) syms.push_back(nodes[i].id);
    return ops;
}

} // namespace vt::tok
