// GgufFile lookups, typed getters and value rendering.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "model/gguf-internal.h"

namespace vt {

namespace {

using gguf_detail::is_int;
using gguf_detail::is_signed_int;

bool is_number(GgufType t) { return is_int(t) || t == GgufType::FLOAT32 || t == GgufType::FLOAT64; }
bool is_bool(GgufType t) { return t == GgufType::BOOL; }
bool is_string(GgufType t) { return t == GgufType::STRING; }

// Reads element i of a fixed-size array as a scalar GgufValue (widened fields).
GgufValue element(const GgufValue &a, uint64_t i) {
    if (a.type != GgufType::ARRAY || a.arr_type == GgufType::STRING || i >= a.arr_n || !a.raw)
        fail(VT_ERR_FORMAT, "gguf: element %llu of a %s array of %llu is not a number", (unsigned long long)i,
             gguf_type_name(a.arr_type), (unsigned long long)a.arr_n);
    GgufValue v;
    v.type = a.arr_type;
    gguf_detail::load_scalar(a.arr_type, a.raw + i * gguf_detail::scalar_size((uint32_t)a.arr_type), v);
    return v;
}

// Shortest text that reads back to the same value, laid out like Python's
// repr (fixed notation with ".0" for whole numbers in [1e-4, 1e16),
// exponent form elsewhere), so metadata dumps read like gguf-py's. A float32
// is printed as a float: 0.1f shows as 0.1, not 0.10000000149011612.
// Non-finite values use the spelling of Python's json module.
template <class T> std::string number(T x) {
    if (std::isnan(x)) return "NaN";
    if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
    const T ax = std::fabs(x);
    const bool fixed = x == 0 || (ax >= (T)1e-4 && ax < (T)1e16);
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, x, fixed ? std::chars_format::fixed : std::chars_format::scientific);
    std::string s(buf, r.ptr);
    if (fixed && s.find('.') == std::string::npos) s += ".0";
    return s;
}

std::string scalar_text(const GgufValue &v) {
    switch (v.type) {
    case GgufType::BOOL: return v.u ? "true" : "false";
    case GgufType::FLOAT32: return number((float)v.f);
    case GgufType::FLOAT64: return number(v.f);
    default: return is_signed_int(v.type) ? std::to_string(v.i) : std::to_string(v.u);
    }
}

void json_string(std::string &out, std::string_view s) {
    out += '"';
    for (unsigned char ch : s) {
        switch (ch) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (ch < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", ch);
                out += buf;
            } else {
                out += (char)ch;  // UTF-8 passes through as is
            }
        }
    }
    out += '"';
}

} // namespace

const char *gguf_type_name(GgufType t) {
    switch (t) {
    case GgufType::UINT8: return "uint8";
    case GgufType::INT8: return "int8";
    case GgufType::UINT16: return "uint16";
    case GgufType::INT16: return "int16";
    case GgufType::UINT32: return "uint32";
    case GgufType::INT32: return "int32";
    case GgufType::FLOAT32: return "float32";
    case GgufType::BOOL: return "bool";
    case GgufType::STRING: return "string";
    case GgufType::ARRAY: return "array";
    case GgufType::UINT64: return "uint64";
    case GgufType::INT64: return "int64";
    case GgufType::FLOAT64: return "float64";
    }
    return "unknown";
}

int64_t GgufValue::int_at(uint64_t i) const {
    GgufValue v = element(*this, i);
    if (!is_int(v.type) && v.type != GgufType::BOOL)
        fail(VT_ERR_FORMAT, "gguf: int_at on a %s array", gguf_type_name(arr_type));
    if (v.type == GgufType::UINT64 && v.u > (uint64_t)INT64_MAX)
        fail(VT_ERR_FORMAT, "gguf: array element %llu does not fit in int64", (unsigned long long)i);
    return v.i;
}

uint64_t GgufValue::uint_at(uint64_t i) const {
    GgufValue v = element(*this, i);
    if (!is_int(v.type) && v.type != GgufType::BOOL)
        fail(VT_ERR_FORMAT, "gguf: uint_at on a %s array", gguf_type_name(arr_type));
    if (is_signed_int(v.type) && v.i < 0)
        fail(VT_ERR_FORMAT, "gguf: array element %llu is negative", (unsigned long long)i);
    return v.u;
}

double GgufValue::float_at(uint64_t i) const { return element(*this, i).f; }

const GgufKV *GgufFile::find(std::string_view key) const {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kvs_[it->second];
}

const GgufTensorInfo *GgufFile::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufValue *GgufFile::typed(std::string_view key, const char *want, bool ok(GgufType)) const {
    const GgufKV *kv = find(key);
    if (!kv) return nullptr;
    if (!ok(kv->value.type))
        fail(VT_ERR_FORMAT, "%s: key '%s' has type %s, expected %s", name_.c_str(), kv->key.c_str(),
             gguf_type_name(kv->value.type), want);
    return &kv->value;
}

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
    const GgufValue *v = typed(key, "an unsigned integer", is_int);
    if (!v) return std::nullopt;
    if (is_signed_int(v->type) && v->i < 0)
        fail(VT_ERR_FORMAT, "%s: key '%.*s' is negative (%lld), expected an unsigned integer", name_.c_str(),
             (int)key.size(), key.data(), (long long)v->i);
    return v->u;
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
    const GgufValue *v = typed(key, "an integer", is_int);
    if (!v) return std::nullopt;
    if (v->type == GgufType::UINT64 && v->u > (uint64_t)INT64_MAX)
        fail(VT_ERR_FORMAT, "%s: key '%.*s' (%llu) does not fit in int64", name_.c_str(), (int)key.size(),
             key.data(), (unsigned long long)v->u);
    return v->i;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
    const GgufValue *v = typed(key, "a number", is_number);
    if (!v) return std::nullopt;
    return v->f;
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const GgufValue *v = typed(key, "bool", is_bool);
    if (!v) return std::nullopt;
    return v->u != 0;
}

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
    const GgufValue *v = typed(key, "string", is_string);
    if (!v) return std::nullopt;
    return v->str;
}

const GgufValue *GgufFile::get_array(std::string_view key, GgufType elem) const {
    const GgufValue *v = typed(key, "array", [](GgufType t) { return t == GgufType::ARRAY; });
    if (!v) return nullptr;
    if (v->arr_type != elem)
        fail(VT_ERR_FORMAT, "%s: key '%.*s' is an array of %s, expected an array of %s", name_.c_str(),
             (int)key.size(), key.data(), gguf_type_name(v->arr_type), gguf_type_name(elem));
    return v;
}

std::string GgufFile::to_string(const GgufValue &v) {
    if (v.type == GgufType::STRING) return std::string(v.str);
    if (v.type != GgufType::ARRAY) return scalar_text(v);
    std::string out = "[";
    for (uint64_t i = 0; i < v.arr_n; ++i) {
        if (i) out += ',';
        if (v.arr_type == GgufType::STRING) {
            if (i < v.strs.size()) json_string(out, v.strs[i]);
        } else {
            out += scalar_text(element(v, i));
        }
    }
    out += ']';
    return out;
}

} // namespace vt
