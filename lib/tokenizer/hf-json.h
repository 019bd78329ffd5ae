// Field access for tokenizer.json component nodes. Every accessor checks
// presence and type itself, so a malformed node fails with VT_ERR_FORMAT
// naming the component and the field rather than with a nlohmann::json
// exception.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace vt::tok::hf {

using json = nlohmann::json;

inline const json &member(const json &j, const char *key, const char *where) {
    if (!j.is_object()) fail(VT_ERR_FORMAT, "%s: node is not an object", where);
    auto it = j.find(key);
    if (it == j.end()) fail(VT_ERR_FORMAT, "%s: missing field \"%s\"", where, key);
    return *it;
}

// Optional fields: absent and null both mean "use the default", as serde's
// #[serde(default)] / Option fields do.
inline const json *optional_member(const json &j, const char *key) {
    if (!j.is_object()) return nullptr;
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? nullptr : &*it;
}

inline std::string str_member(const json &j, const char *key, const char *where) {
    const json &v = member(j, key, where);
    if (!v.is_string()) fail(VT_ERR_FORMAT, "%s: field \"%s\" is not a string", where, key);
    return v.get<std::string>();
}

inline std::string str_member(const json &j, const char *key, const char *where, const char *def) {
    const json *v = optional_member(j, key);
    if (!v) return def;
    if (!v->is_string()) fail(VT_ERR_FORMAT, "%s: field \"%s\" is not a string", where, key);
    return v->get<std::string>();
}

inline bool bool_member(const json &j, const char *key, const char *where, bool def) {
    const json *v = optional_member(j, key);
    if (!v) return def;
    if (!v->is_boolean()) fail(VT_ERR_FORMAT, "%s: field \"%s\" is not a boolean", where, key);
    return v->get<bool>();
}

inline uint64_t uint_member(const json &j, const char *key, const char *where, uint64_t def) {
    const json *v = optional_member(j, key);
    if (!v) return def;
    if (!v->is_number_integer() || (!v->is_number_unsigned() && v->get<int64_t>() < 0))
        fail(VT_ERR_FORMAT, "%s: field \"%s\" is not a non-negative integer", where, key);
    return v->get<uint64_t>();
}

// A Rust `char` field: a string of exactly one code point.
inline uint32_t char_member(const json &j, const char *key, const char *where, uint32_t def) {
    const json *v = optional_member(j, key);
    if (!v) return def;
    if (!v->is_string()) fail(VT_ERR_FORMAT, "%s: field \"%s\" is not a string", where, key);
    const std::string &s = v->get_ref<const std::string &>();
    if (s.empty() || utf8_find_invalid(s) != std::string::npos)
        fail(VT_ERR_FORMAT, "%s: field \"%s\" is not one character", where, key);
    size_t i = 0;
    const uint32_t c = utf8_decode(s, i);
    if (i != s.size()) fail(VT_ERR_FORMAT, "%s: field \"%s\" is not one character", where, key);
    return c;
}

inline std::string type_of(const json &j, const char *stage) {
    return str_member(j, "type", stage);
}

} // namespace vt::tok::hf
