#include "tokenizer/utf8.h"

#include "core/error.h"

namespace vt::tok {

size_t utf8_find_invalid(std::string_view s) {
    const auto *p = reinterpret_cast<const uint8_t *>(s.data());
    const size_t n = s.size();
    size_t i = 0;
    while (i < n) {
        const uint8_t c = p[i];
        if (c < 0x80) { ++i; continue; }
        size_t len;
        uint32_t min_cpt;
        uint32_t cpt;
        if ((c & 0xE0) == 0xC0) { len = 2; min_cpt = 0x80; cpt = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { len = 3; min_cpt = 0x800; cpt = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { len = 4; min_cpt = 0x10000; cpt = c & 0x07; }
        else return i;
        if (n - i < len) return i;
        for (size_t k = 1; k < len; ++k) {
            if ((p[i + k] & 0xC0) != 0x80) return i;
            cpt = (cpt << 6) | (p[i + k] & 0x3F);
        }
        if (cpt < min_cpt || cpt > 0x10FFFF || (cpt >= 0xD800 && cpt <= 0xDFFF)) return i;
        i += len;
    }
    return std::string_view::npos;
}

void utf8_validate(std::string_view s) {
    const size_t bad = utf8_find_invalid(s);
    if (bad != std::string_view::npos) {
        fail(VT_ERR_INVALID_UTF8, "invalid UTF-8 in tokenizer input at byte offset %zu", bad);
    }
}

void utf8_append(std::string &out, uint32_t cpt) {
    if (cpt < 0x80) {
        out.push_back(static_cast<char>(cpt));
    } else if (cpt < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
        out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
    } else if (cpt < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cpt >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
    }
}

uint32_t utf8_decode(std::string_view s, size_t &i) {
    const auto *p = reinterpret_cast<const uint8_t *>(s.data());
    const uint8_t c = p[i];
    const size_t len = utf8_len(c);
    if (len == 1 || i + len > s.size()) { ++i; return c; }
    uint32_t cpt = c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) cpt = (cpt << 6) | (p[i + k] & 0x3F);
    i += len;
    return cpt;
}

} // namespace vt::tok
