// GPT-2 byte-level alphabet: every byte maps to one printable code point so
// that BPE vocabularies never contain raw control bytes or spaces ("Ġ" is
// the space byte 0x20, "Ċ" is '\n'). Shared by byte-level BPE and, later,
// tokenizer.json's ByteLevel pre-tokenizer and decoder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vt::tok {

// Code point that stands for byte b.
uint32_t byte_to_cpt(uint8_t b);

// UTF-8 text of the code point that stands for byte b.
const std::string &byte_to_unicode(uint8_t b);

// Inverse: the byte a code point stands for, or -1 when it is not part of
// the alphabet.
int unicode_to_byte(uint32_t cpt);

// Decodes a byte-level token text back to raw bytes. Characters outside the
// alphabet are copied through unchanged (they cannot come from the
// alphabet, so this is the most faithful rendering); returns false then.
bool byte_level_decode(std::string_view text, std::string &out);

} // namespace vt::tok
