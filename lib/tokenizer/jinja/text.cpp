#include "text.h"

#include <utf8proc.h>

#include "value.h"  // RenderBudget

namespace vt::jinja {

namespace {

// Decodes one code point at s[i]; a malformed byte stands for itself
// (mapped above U+10FFFF so it never equals a real character).
uint32_t decode_at(std::string_view s, size_t &i) {
    auto *p = reinterpret_cast<const utf8proc_uint8_t *>(s.data() + i);
    utf8proc_int32_t cp = 0;
    utf8proc_ssize_t n = utf8proc_iterate(p, utf8proc_ssize_t(s.size() - i), &cp);
    if (n <= 0) {
        uint32_t raw = 0x110000u + uint8_t(s[i]);
        i += 1;
        return raw;
    }
    i += size_t(n);
    return uint32_t(cp);
}

template <class F>
std::string map_code_points(std::string_view s, F f) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) append_utf8(out, f(decode_at(s, i)));
    return out;
}

bool is_cased(uint32_t cp) {
    if (cp > 0x10FFFF) return false;
    return utf8proc_toupper(utf8proc_int32_t(cp)) != utf8proc_int32_t(cp) ||
           utf8proc_tolower(utf8proc_int32_t(cp)) != utf8proc_int32_t(cp);
}

uint32_t upper(uint32_t cp) { return cp > 0x10FFFF ? cp : uint32_t(utf8proc_toupper(utf8proc_int32_t(cp))); }
uint32_t lower(uint32_t cp) { return cp > 0x10FFFF ? cp : uint32_t(utf8proc_tolower(utf8proc_int32_t(cp))); }
uint32_t title(uint32_t cp) { return cp > 0x10FFFF ? cp : uint32_t(utf8proc_totitle(utf8proc_int32_t(cp))); }

} // namespace

void append_utf8(std::string &out, uint32_t cp) {
    if (cp > 0x10FFFF) {  // a malformed byte carried through
        out += char(cp - 0x110000u);
    } else if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

std::vector<uint32_t> to_code_points(std::string_view s) {
    std::vector<uint32_t> out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) out.push_back(decode_at(s, i));
    return out;
}

std::string from_code_points(const std::vector<uint32_t> &cps, size_t begin, size_t end) {
    std::string out;
    for (size_t i = begin; i < end && i < cps.size(); ++i) append_utf8(out, cps[i]);
    return out;
}

size_t code_point_count(std::string_view s) {
    size_t n = 0;
    for (size_t i = 0; i < s.size(); ++n) decode_at(s, i);
    return n;
}

bool py_is_space(uint32_t cp) {
    switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x1C: case 0x1D: case 0x1E:
    case 0x1F: case 0x20: case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

std::string py_strip(std::string_view s, const std::string *chars, bool left, bool right) {
    std::vector<uint32_t> cps = to_code_points(s);
    std::vector<uint32_t> set;
    if (chars) set = to_code_points(*chars);
    auto strip_it = [&](uint32_t cp) {
        if (!chars) return py_is_space(cp);
        for (uint32_t c : set)
            if (c == cp) return true;
        return false;
    };
    size_t b = 0, e = cps.size();
    if (left)
        while (b < e && strip_it(cps[b])) ++b;
    if (right)
        while (e > b && strip_it(cps[e - 1])) --e;
    return from_code_points(cps, b, e);
}

std::vector<std::string> py_split(std::string_view s, const std::string *sep, int64_t maxsplit) {
    std::vector<std::string> out;
    if (sep) {
        size_t pos = 0;
        while (maxsplit < 0 || int64_t(out.size()) < maxsplit) {
            size_t hit = s.find(*sep, pos);
            if (hit == std::string_view::npos) break;
            out.emplace_back(s.substr(pos, hit - pos));
            pos = hit + sep->size();
        }
        out.emplace_back(s.substr(pos));
        return out;
    }
    std::vector<uint32_t> cps = to_code_points(s);
    size_t i = 0, n = cps.size();
    while (true) {
        while (i < n && py_is_space(cps[i])) ++i;
        if (i == n) break;
        if (maxsplit >= 0 && int64_t(out.size()) == maxsplit) {
            size_t e = n;
            while (e > i && py_is_space(cps[e - 1])) --e;
            out.push_back(from_code_points(cps, i, e));
            break;
        }
        size_t b = i;
        while (i < n && !py_is_space(cps[i])) ++i;
        out.push_back(from_code_points(cps, b, i));
    }
    return out;
}

std::string py_upper(std::string_view s) { return map_code_points(s, upper); }
std::string py_lower(std::string_view s) { return map_code_points(s, lower); }

std::string py_capitalize(std::string_view s) {
    bool first = true;
    return map_code_points(s, [&](uint32_t cp) {
        uint32_t r = first ? title(cp) : lower(cp);
        first = false;
        return r;
    });
}

std::string py_title(std::string_view s) {
    bool prev_cased = false;
    return map_code_points(s, [&](uint32_t cp) {
        uint32_t r = prev_cased ? lower(cp) : title(cp);
        prev_cased = is_cased(cp);
        return r;
    });
}

std::string replace_all(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
    std::string out;
    if (from.empty()) {  // Python inserts `to` around every character
        std::vector<uint32_t> cps = to_code_points(s);
        int64_t done = 0;
        for (size_t i = 0; i <= cps.size(); ++i) {
            if (count < 0 || done < count) {
                out += to;
                ++done;
                RenderBudget::check_size(out.size());
            }
            if (i < cps.size()) append_utf8(out, cps[i]);
        }
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        size_t hit = s.find(from, pos);
        if (hit == std::string_view::npos) break;
        out.append(s.substr(pos, hit - pos));
        out.append(to);
        RenderBudget::check_size(out.size());
        pos = hit + from.size();
        ++done;
    }
    out.append(s.substr(pos));
    return out;
}

} // namespace vt::jinja
