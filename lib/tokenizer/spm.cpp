#include "tokenizer/spm.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "tokenizer/utf8.h"

namespace vt::tok {

namespace {

constexpr std::string_view kSpace = "\xe2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

struct Symbol {
    int32_t prev, next;
    uint32_t start, len;  // bytes of the escaped text
};

struct Bigram {
    float score;
    int32_t left, right;
    uint32_t size;  // bytes of left+right when queued; differs once stale
};

struct BigramWorse {
    bool operator()(const Bigram &a, const Bigram &b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

} // namespace

SpmTokenizer::SpmTokenizer(Vocab vocab, bool add_space_prefix)
    : VocabTokenizer(std::move(vocab)), add_space_prefix_(add_space_prefix) {
    strip_leading_space_ = add_space_prefix;
    for (int b = 0; b < 256; ++b) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "<0x%02X>", b);
        int32_t id = vocab_.find(hex);
        if (id < 0) id = vocab_.find(std::string(1, static_cast<char>(b)));
        byte_token_[b] = id >= 0 ? id : vocab_.unk;
    }
    build_piece_cache();
}

std::string SpmTokenizer::normal_piece(int32_t id) const {
    const std::string_view t = vocab_.text(id);
    std::string out;
    out.reserve(t.size());
    for (size_t i = 0; i < t.size();) {
        if (t.substr(i, kSpace.size()) == kSpace) {
            out.push_back(' ');
            i += kSpace.size();
        } else {
            out.push_back(t[i++]);
        }
    }
    return out;
}

void SpmTokenizer::encode_text(std::string_view text, bool after_special, std::vector<int32_t> &out) const {
    // Escape spaces; the prefix space goes to the start of the text and of
    // every fragment that follows a special token.
    std::string s;
    s.reserve(text.size() + 8);
    if (add_space_prefix_ && after_special) s.append(kSpace);
    for (char c : text) {
        if (c == ' ') s.append(kSpace);
        else s.push_back(c);
    }

    std::vector<Symbol> syms;
    syms.reserve(s.size());
    for (uint32_t off = 0; off < s.size();) {
        const auto len = static_cast<uint32_t>(std::min<size_t>(utf8_len(static_cast<uint8_t>(s[off])), s.size() - off));
        const auto idx = static_cast<int32_t>(syms.size());
        syms.push_back(Symbol{idx - 1, off + len < s.size() ? idx + 1 : -1, off, len});
        off += len;
    }
    if (syms.empty()) return;

    const std::string_view sv(s);
    std::vector<Bigram> storage;
    storage.reserve(syms.size());
    std::priority_queue<Bigram, std::vector<Bigram>, BigramWorse> heap(BigramWorse{}, std::move(storage));
    // Symbols are contiguous, so left+right is a view of the text: no
    // string is built per candidate.
    auto try_push = [&](int32_t l, int32_t r) {
        if (l < 0 || r < 0) return;
        const uint32_t size = syms[l].len + syms[r].len;
        const int32_t id = vocab_.find(sv.substr(syms[l].start, size));
        if (id < 0) return;
        heap.push(Bigram{vocab_.score(id), l, r, size});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_push(i - 1, i);

    while (!heap.empty()) {
        const Bigram b = heap.top();
        heap.pop();
        Symbol &L = syms[b.left];
        Symbol &R = syms[b.right];
        if (L.len == 0 || R.len == 0 || L.len + R.len != b.size) continue;  // stale
        L.len += R.len;
        R.len = 0;
        L.next = R.next;
        if (R.next >= 0) syms[R.next].prev = b.left;
        try_push(L.prev, b.left);
        try_push(b.left, L.next);
    }

    for (int32_t i = 0; i != -1; i = syms[i].next) {
        const Symbol &sym = syms[i];
        const int32_t id = vocab_.find(sv.substr(sym.start, sym.len));
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        // Byte fallback: a character without a piece becomes its UTF-8 bytes.
        for (uint32_t k = sym.start; k < sym.start + sym.len; ++k) {
            const int32_t bt = byte_token_[static_cast<uint8_t>(s[k])];
            if (bt >= 0) out.push_back(bt);
        }
    }
}

} // namespace vt::tok
