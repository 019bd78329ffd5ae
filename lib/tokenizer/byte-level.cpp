#include "tokenizer/byte-level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace vt::tok {
namespace {

// Printable Latin-1 bytes stand for themselves; the other 68 bytes take the
// code points from U+0100 upwards in byte order (GPT-2's bytes_to_unicode).
struct Tables {
    std::array<uint32_t, 256> cpt{};
    std::array<std::string, 256> utf8;
    std::array<int16_t, 512> inverse{};  // every alphabet code point is < 0x144

    Tables() {
        inverse.fill(-1);
        uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
                                   (b >= 0xAE && b <= 0xFF);
            cpt[b] = printable ? static_cast<uint32_t>(b) : next++;
            utf8_append(utf8[b], cpt[b]);
            inverse[cpt[b]] = static_cast<int16_t>(b);
        }
    }
};

const Tables &tables() {
    static const Tables t;  // thread-safe initialisation (C++11 magic statics)
    return t;
}

} // namespace

uint32_t byte_to_cpt(uint8_t b) { return tables().cpt[b]; }

const std::string &byte_to_unicode(uint8_t b) { return tables().utf8[b]; }

int unicode_to_byte(uint32_t cpt) {
    return cpt < tables().inverse.size() ? tables().inverse[cpt] : -1;
}

bool byte_level_decode(std::string_view text, std::string &out) {
    bool ok = true;
    size_t i = 0;
    while (i < text.size()) {
        const size_t start = i;
        const uint32_t cpt = utf8_decode(text, i);
        const int b = unicode_to_byte(cpt);
        if (b >= 0) {
            out.push_back(static_cast<char>(b));
        } else {
            out.append(text.substr(start, i - start));
            ok = false;
        }
    }
    return ok;
}

} // namespace vt::tok
