#include "tokenizer/tokenizer-base.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace vt {

bool SpecialGate::allows(size_t begin, size_t end) const {
    if (!any_) return false;
    if (!content_) return true;
    begin += offset_;
    end += offset_;
    // The first content range that ends after `begin`; overlap if it starts before `end`.
    auto it = std::upper_bound(content_->begin(), content_->end(), begin,
                               [](size_t b, const Range &r) { return b < r.end; });
    return it == content_->end() || it->begin >= end;
}

} // namespace vt

namespace vt::tok {

namespace {
int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}
} // namespace

VocabTokenizer::VocabTokenizer(Vocab vocab) : vocab_(std::move(vocab)), specials_(vocab_) {}

std::vector<int32_t> VocabTokenizer::encode(std::string_view text, bool add_special,
                                            const SpecialGate &specials) const {
    utf8_validate(text);
    if (text.size() > UINT32_MAX) fail(VT_ERR_INVALID_ARGUMENT, "tokenizer input over 4 GiB");

    std::vector<Fragment> frags;
    specials_.partition(text, specials, frags);

    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 4);
    if (add_special && vocab_.add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
    bool after_special = true;
    for (const Fragment &f : frags) {
        if (f.token >= 0) {
            out.push_back(f.token);
            after_special = true;
        } else {
            encode_text(text.substr(f.begin, f.len), after_special, out);
            after_special = false;
        }
    }
    if (add_special && vocab_.add_eos && vocab_.eos >= 0) out.push_back(vocab_.eos);
    return out;
}

void VocabTokenizer::build_piece_cache() {
    pieces_.assign(vocab_.size(), std::string());
    for (uint32_t i = 0; i < vocab_.size(); ++i) {
        const auto id = static_cast<int32_t>(i);
        const uint32_t a = vocab_.attr(id);
        const std::string_view t = vocab_.text(id);
        if (a & (ATTR_CONTROL | ATTR_UNKNOWN | ATTR_USER_DEFINED)) {
            pieces_[i] = std::string(t);
        } else if (a & ATTR_NORMAL) {
            pieces_[i] = normal_piece(id);
        } else if (a & ATTR_BYTE) {
            // "<0xAB>" -> the byte 0xAB.
            const int hi = t.size() == 6 ? hex_digit(t[3]) : -1;
            const int lo = t.size() == 6 ? hex_digit(t[4]) : -1;
            if (t.substr(0, 3) == "<0x" && t.size() == 6 && t[5] == '>' && hi >= 0 && lo >= 0) {
                pieces_[i] = std::string(1, static_cast<char>(hi * 16 + lo));
            } else {
                pieces_[i] = normal_piece(id);
            }
        }
        // UNUSED and UNDEFINED tokens render as nothing (llama.cpp does too).
    }
}

std::string VocabTokenizer::token_to_piece(int32_t id, bool render_special) const {
    if (!vocab_.valid(id)) fail(VT_ERR_INVALID_ARGUMENT, "token id %d out of range [0, %u)", id, vocab_.size());
    if (!render_special && (vocab_.attr(id) & (ATTR_CONTROL | ATTR_UNKNOWN))) return {};
    return pieces_[id];
}

std::string VocabTokenizer::decode(const int32_t *ids, size_t n, bool render_special) const {
    std::string out;
    bool strip = strip_leading_space_;
    for (size_t i = 0; i < n; ++i) {
        const int32_t id = ids[i];
        if (!vocab_.valid(id)) fail(VT_ERR_INVALID_ARGUMENT, "token id %d at position %zu out of range [0, %u)", id, i, vocab_.size());
        if (!render_special && (vocab_.attr(id) & (ATTR_CONTROL | ATTR_UNKNOWN))) continue;
        const std::string &p = pieces_[id];
        if (p.empty()) continue;
        // The space SentencePiece put in front of the text is not part of
        // it; a rendered special token ("<s>") ends the chance to strip, as
        // in Hugging Face's decode with skip_special_tokens=False.
        if (strip && p[0] == ' ') out.append(p, 1, std::string::npos);
        else out.append(p);
        strip = false;
    }
    return out;
}

} // namespace vt::tok
