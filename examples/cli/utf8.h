// Streaming UTF-8 helper for examples: token pieces may split a character
// across tokens (byte-fallback tokens), so a streaming printer holds back an
// incomplete trailing sequence until the next piece completes it.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vt_example {

// Number of leading bytes of s that can be printed now: everything except an
// incomplete multi-byte sequence at the very end. Invalid bytes (a stray
// continuation byte, 0xF8..0xFF) are never held back, so output cannot stall.
inline size_t utf8_complete_prefix(std::string_view s) {
    const size_t n = s.size();
    for (size_t k = 1; k <= 4 && k <= n; ++k) {
        const unsigned char c = (unsigned char)s[n - k];
        if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking back
        size_t need = 1;
        if ((c & 0xE0) == 0xC0) need = 2;
        else if ((c & 0xF0) == 0xE0) need = 3;
        else if ((c & 0xF8) == 0xF0) need = 4;
        return need > k ? n - k : n;
    }
    return n;
}

// Accumulates pieces and hands out the printable prefix.
class Utf8Stream {
public:
    // Appends a piece; returns the bytes that are complete now (valid until
    // the next call).
    std::string_view push(std::string_view piece) {
        pending_.erase(0, emitted_);
        pending_.append(piece);
        emitted_ = utf8_complete_prefix(pending_);
        return std::string_view(pending_).substr(0, emitted_);
    }
    // Whatever is left (an incomplete sequence at the end of the stream).
    std::string_view flush() {
        pending_.erase(0, emitted_);
        emitted_ = pending_.size();
        return pending_;
    }

private:
    std::string pending_;
    size_t emitted_ = 0;
};

} // namespace vt_example
