#include "tokenizer/detok-stream.h"

#include <algorithm>
#include <string_view>

#include "tokenizer/utf8.h"

namespace vt::tok {

namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Unfinished for a raw-bytes decode (GGUF families) is a cut UTF-8 sequence;
// decoders that replace invalid bytes (ByteFallback, byte-level's lossy
// conversion) show the same cut as a trailing U+FFFD, which is why Hugging
// Face holds that back too.
bool ends_unfinished(std::string_view s) {
    return utf8_unfinished_tail(s) > 0 || s.ends_with(kReplacementChar);
}

// Where the new part of `text` begins. Normally the text extends the prefix.
// A decoder that rewrote text already handed out (Hugging Face raises
// InvalidPrefix there) cannot take it back: the new part starts where the
// two differ, at a character start.
size_t new_part(std::string_view prefix, std::string_view text) {
    if (text.starts_with(prefix)) return prefix.size();
    const size_t m = std::min(prefix.size(), text.size());
    size_t n = (size_t)(std::mismatch(prefix.begin(), prefix.begin() + m, text.begin()).first - prefix.begin());
    while (n > 0 && n < text.size() && ((uint8_t)text[n] & 0xC0) == 0x80) --n;
    return n;
}

} // namespace

size_t utf8_unfinished_tail(std::string_view s) {
    const size_t n = s.size();
    // A lead byte more than 3 bytes back has all its continuation bytes.
    for (size_t k = 1; k <= 3 && k <= n; ++k) {
        const uint8_t c = (uint8_t)s[n - k];
        if ((c & 0xC0) == 0x80) continue;
        return c >= 0xC0 && utf8_len(c) > k ? k : 0;
    }
    return 0;
}

DecodeStream::DecodeStream(const Tokenizer &tok, bool render_special) : tok_(tok), render_special_(render_special) {}

std::string DecodeStream::decode_window() const { return tok_.decode(ids_.data(), ids_.size(), render_special_); }

void DecodeStream::reset(const int32_t *context, size_t n) {
    ids_.clear();
    n_context_ = 0;
    prefix_.clear();
    if (n == 0) return;
    std::vector<int32_t> window(context + (n - std::min(n, kMaxContext)), context + n);
    // The longest head whose text ends on a character boundary is the
    // context; the tokens after it wait for the ones that finish their
    // character. (A trailing U+FFFD counts as finished here: in a raw-bytes
    // decode it is the text's own, and a lossy decoder's is recovered in
    // push, where the text stops extending the prefix.)
    size_t k = window.size();
    std::string text;
    for (; k > 0; --k) {
        text = tok_.decode(window.data(), k, render_special_);
        if (utf8_unfinished_tail(text) == 0) break;
    }
    if (k == 0) text.clear();
    ids_ = std::move(window);
    n_context_ = k;
    prefix_ = std::move(text);
}

void DecodeStream::slide() {
    std::vector<int32_t> pending(ids_.begin() + (ptrdiff_t)n_context_, ids_.end());
    std::string prefix = tok_.decode(pending.data(), pending.size(), render_special_);
    ids_ = std::move(pending);
    n_context_ = ids_.size();
    prefix_ = std::move(prefix);
}

void DecodeStream::push(int32_t id, std::string &out) {
    ids_.push_back(id);
    try {
        const std::string text = decode_window();
        const bool grew = text.size() > prefix_.size();
        const bool ready = grew && !ends_unfinished(text);
        if (!ready && ids_.size() - n_context_ < kMaxPending) return;  // wait for more
        if (!grew) {
            // kMaxPending tokens with no text of their own (unrendered
            // control tokens): forget them rather than grow the window.
            ids_.resize(n_context_);
            return;
        }
        const size_t from = new_part(prefix_, text);
        out.reserve(out.size() + (text.size() - from));  // nothing throws once slid
        slide();
        out.append(text, from, std::string::npos);
    } catch (...) {
        ids_.pop_back();
        throw;
    }
}

void DecodeStream::finish(std::string &out) {
    if (ids_.size() > n_context_) {
        const std::string text = decode_window();
        if (text.size() > prefix_.size()) out.append(text, new_part(prefix_, text), std::string::npos);
    }
    reset();
}

} // namespace vt::tok
