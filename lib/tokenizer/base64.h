// Standard base64 (RFC 4648), strict: tiktoken rank files and the
// precompiled_charsmap of tokenizer.json carry binary data this way. Small
// enough to stay inline.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vt::tok {

// Standard base64 (RFC 4648 alphabet, '=' padding).
inline std::string base64_encode(std::string_view bytes) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const uint32_t v = (uint32_t)(uint8_t)bytes[i] << 16 | (uint32_t)(uint8_t)bytes[i + 1] << 8 |
                           (uint8_t)bytes[i + 2];
        for (int shift = 18; shift >= 0; shift -= 6) out += alphabet[(v >> shift) & 63];
    }
    if (const size_t rest = bytes.size() - i; rest > 0) {
        uint32_t v = (uint32_t)(uint8_t)bytes[i] << 16;
        if (rest == 2) v |= (uint32_t)(uint8_t)bytes[i + 1] << 8;
        out += alphabet[(v >> 18) & 63];
        out += alphabet[(v >> 12) & 63];
        out += rest == 2 ? alphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

// Strict decoding: false for a character outside the alphabet, a length that
// is not a multiple of 4, or misplaced padding.
inline bool base64_decode(std::string_view text, std::string &out) {
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    out.clear();
    if (text.size() % 4 != 0) return false;
    for (size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        const int pad = (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=');
        if (pad > 0 && !last) return false;
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const int d = k >= 4 - pad ? 0 : value(text[i + k]);
            if (d < 0) return false;
            v = v << 6 | (uint32_t)d;
        }
        out += (char)(v >> 16);
        if (pad < 2) out += (char)(v >> 8 & 0xff);
        if (pad < 1) out += (char)(v & 0xff);
    }
    return true;
}

} // namespace vt::tok
