// UTF-8 helpers shared by the tokenizer models. Strict validation follows
// RFC 3629 (no overlongs, no surrogates, nothing above U+10FFFF) so that
// every later stage (PCRE2 with NO_UTF_CHECK, BPE over characters) can
// assume well-formed input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vt::tok {

// Length in bytes of the UTF-8 sequence that starts with `lead` (1 for a
// stray continuation byte, so callers always make progress on bad input).
inline size_t utf8_len(uint8_t lead) {
    if (lead < 0x80) return 1;
    if ((lead & 0xE0) == 0xC0) return 2;
    if ((lead & 0xF0) == 0xE0) return 3;
    if ((lead & 0xF8) == 0xF0) return 4;
    return 1;
}

// Offset of the first byte that is not part of a well-formed UTF-8
// sequence, or npos when the whole text is valid.
size_t utf8_find_invalid(std::string_view s);

// Throws vt::Error(VT_ERR_INVALID_UTF8, "... at byte offset N") on bad input.
void utf8_validate(std::string_view s);

// Appends the UTF-8 encoding of a code point (must be <= U+10FFFF).
void utf8_append(std::string &out, uint32_t cpt);

// Decodes the code point at s[i] (input must be valid UTF-8); advances i.
uint32_t utf8_decode(std::string_view s, size_t &i);

} // namespace vt::tok
