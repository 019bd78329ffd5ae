// Character classes as Hugging Face tokenizers (Rust) defines them, backed
// by utf8proc's tables. Private to the hf-* components.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <utf8proc.h>

#include "tokenizer/utf8.h"

namespace vt::tok::hf {

// Rust char::is_whitespace: the Unicode White_Space property (a fixed set).
inline bool is_white_space(uint32_t c) {
    if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
    if (c < 0x85) return false;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

inline utf8proc_category_t category(uint32_t c) {
    return static_cast<utf8proc_category_t>(utf8proc_category(static_cast<utf8proc_int32_t>(c)));
}

// General category M (Mn, Mc, Me): unicode-normalization's is_combining_mark.
inline bool is_mark(uint32_t c) {
    if (c < 0x300) return false;
    const auto k = category(c);
    return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_MC || k == UTF8PROC_CATEGORY_ME;
}

// Rust char::is_numeric: Nd, Nl, No.
inline bool is_numeric(uint32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    const auto k = category(c);
    return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

// char::is_ascii_punctuation || unicode_categories' is_punctuation (P*):
// the Punctuation and Bert pre-tokenizers' test.
inline bool is_punctuation(uint32_t c) {
    if (c < 0x80) {
        return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
               (c >= 0x7B && c <= 0x7E);
    }
    const auto k = category(c);
    return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

// Calls f(code_point, byte_offset, byte_length) for each code point of valid UTF-8.
template <class F> inline void for_each_cpt(std::string_view s, F &&f) {
    size_t i = 0;
    while (i < s.size()) {
        const size_t start = i;
        const uint32_t c = static_cast<uint8_t>(s[i]) < 0x80 ? static_cast<uint8_t>(s[i++]) : utf8_decode(s, i);
        f(c, start, i - start);
    }
}

} // namespace vt::tok::hf
