#include "tokenizer/bpe.h"

#include <queue>

#include "tokenizer/byte-level.h"

namespace vt::tok {

namespace {

inline uint64_t pair_key(int32_t l, int32_t r) {
    return (uint64_t(uint32_t(l)) << 32) | uint32_t(r);
}

// One symbol of a word being merged: a byte range of the word in a doubly
// linked list over a flat array (merged-away symbols keep len 0).
struct Symbol {
    int32_t sym;
    int32_t prev, next;
    uint32_t start, len;
};

// A candidate merge of two adjacent symbols. Stale entries (one side was
// merged meanwhile) are detected on pop by comparing the symbol ids.
struct Bigram {
    int32_t rank;
    int32_t left, right;        // indices into the symbol array
    int32_t left_sym, right_sym;
    int32_t result;             // symbol of the merged pair
};

struct BigramWorse {
    bool operator()(const Bigram &a, const Bigram &b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

} // namespace

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(Vocab vocab, const std::vector<std::string_view> &merges,
                                             const PreTokenizerSpec &pre)
    : VocabTokenizer(std::move(vocab)), pre_(pre.patterns), ignore_merges_(pre.ignore_merges) {
    n_syms_ = static_cast<int32_t>(vocab_.size());
    for (int b = 0; b < 256; ++b) byte_sym_[b] = intern(byte_to_unicode(static_cast<uint8_t>(b)));

    merges_.reserve(merges.size());
    std::string left, right;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string_view m = merges[rank];
        // The separator is the first space after the first character, so a
        // left side may itself be a space (llama.cpp's find(' ', 1)).
        const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
        if (sp == std::string_view::npos) continue;
        left.assign(m.substr(0, sp));
        right.assign(m.substr(sp + 1));
        const int32_t l = intern(left);
        const int32_t r = intern(right);
        const int32_t res = intern(left + right);
        // The first (lowest) rank of a duplicated pair wins.
        merges_.emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), res});
    }
    extra_syms_.clear();
    extra_syms_.rehash(0);
    build_piece_cache();
}

int32_t ByteLevelBpeTokenizer::intern(const std::string &text) {
    const int32_t id = vocab_.find(text);
    if (id >= 0) return id;
    auto [it, inserted] = extra_syms_.emplace(text, n_syms_);
    if (inserted) ++n_syms_;
    return it->second;
}

std::string ByteLevelBpeTokenizer::normal_piece(int32_t id) const {
    std::string out;
    byte_level_decode(vocab_.text(id), out);
    return out;
}

void ByteLevelBpeTokenizer::encode_text(std::string_view text, bool /*after_special*/,
                                        std::vector<int32_t> &out) const {
    std::vector<Span> words;
    pre_.split(text, words);
    for (const Span &w : words) encode_word(text.substr(w.begin, w.len), out);
}

void ByteLevelBpeTokenizer::encode_word(std::string_view word, std::vector<int32_t> &out) const {
    const auto *bytes = reinterpret_cast<const uint8_t *>(word.data());
    const auto n = static_cast<uint32_t>(word.size());
    if (n == 0) return;

    if (n == 1) {  // the common case of punctuation and spaces
        if (byte_sym_[bytes[0]] < static_cast<int32_t>(vocab_.size())) out.push_back(byte_sym_[bytes[0]]);
        return;
    }

    if (ignore_merges_) {
        // Llama 3 style: a word that is a token is taken whole, even when
        // the merges would not build it.
        std::string enc;
        enc.reserve(word.size() * 2);
        for (uint32_t i = 0; i < n; ++i) enc += byte_to_unicode(bytes[i]);
        if (int32_t id = vocab_.find(enc); id >= 0) {
            out.push_back(id);
            return;
        }
    }

    std::vector<Symbol> syms(n);
    for (uint32_t i = 0; i < n; ++i) {
        syms[i] = Symbol{byte_sym_[bytes[i]], int32_t(i) - 1, i + 1 < n ? int32_t(i + 1) : -1, i, 1};
    }

    std::vector<Bigram> heap_storage;
    heap_storage.reserve(n);
    std::priority_queue<Bigram, std::vector<Bigram>, BigramWorse> heap(BigramWorse{}, std::move(heap_storage));
    auto try_push = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        auto it = merges_.find(pair_key(syms[l].sym, syms[r].sym));
        if (it == merges_.end()) return;
        heap.push(Bigram{it->second.rank, l, r, syms[l].sym, syms[r].sym, it->second.result});
    };
    for (uint32_t i = 1; i < n; ++i) try_push(int32_t(i - 1), int32_t(i));

    while (!heap.empty()) {
        const Bigram b = heap.top();
        heap.pop();
        Symbol &L = syms[b.left];
        Symbol &R = syms[b.right];
        if (L.len == 0 || R.len == 0 || L.next != b.right || L.sym != b.left_sym || R.sym != b.right_sym) {
            continue;  // stale
        }
        L.sym = b.result;
        L.len += R.len;
        R.len = 0;
        L.next = R.next;
        if (R.next >= 0) syms[R.next].prev = b.left;
        try_push(L.prev, b.left);
        try_push(b.left, L.next);
    }

    const auto n_vocab = static_cast<int32_t>(vocab_.size());
    for (int32_t i = 0; i != -1; i = syms[i].next) {
        const Symbol &s = syms[i];
        if (s.sym < n_vocab) {
            out.push_back(s.sym);
            continue;
        }
        // A merge produced a string the vocabulary lacks (inconsistent
        // metadata): fall back to the symbols of its bytes.
        for (uint32_t k = s.start; k < s.start + s.len; ++k) {
            if (byte_sym_[bytes[k]] < n_vocab) out.push_back(byte_sym_[bytes[k]]);
        }
    }
}

} // namespace vt::tok
