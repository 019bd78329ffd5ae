// Python str semantics over UTF-8 bytes: templates index, slice and measure
// strings in code points, and strip/split on Unicode whitespace, as Python
// does. Invalid UTF-8 bytes are carried through as single units.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vt::jinja {

std::vector<uint32_t> to_code_points(std::string_view s);
std::string from_code_points(const std::vector<uint32_t> &cps, size_t begin, size_t end);
void append_utf8(std::string &out, uint32_t cp);
size_t code_point_count(std::string_view s);

// str.isspace() for one code point.
bool py_is_space(uint32_t cp);

// str.strip/lstrip/rstrip; `chars` null: Unicode whitespace.
std::string py_strip(std::string_view s, const std::string *chars, bool left, bool right);
// str.split(sep, maxsplit); `sep` null: runs of whitespace.
std::vector<std::string> py_split(std::string_view s, const std::string *sep, int64_t maxsplit);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);  // first upper, rest lower
std::string py_title(std::string_view s);       // str.title()
std::string replace_all(std::string_view s, std::string_view from, std::string_view to, int64_t count);

} // namespace vt::jinja
