// Helpers shared by the GGUF parser (gguf.cpp) and its accessors
// (gguf-values.cpp). Not for use outside lib/model/gguf*.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/gguf.h"

namespace vt::gguf_detail {

// Size of a fixed-width value type id, 0 for STRING, ARRAY and unknown ids.
size_t scalar_size(uint32_t type);

// Loads one little-endian element of fixed-size type t from possibly
// unaligned bytes into v's widened fields (u, i and f; bool as 0/1).
void load_scalar(GgufType t, const uint8_t *p, GgufValue &v);

inline bool is_int(GgufType t) {
    return t == GgufType::UINT8 || t == GgufType::INT8 || t == GgufType::UINT16 || t == GgufType::INT16 ||
           t == GgufType::UINT32 || t == GgufType::INT32 || t == GgufType::UINT64 || t == GgufType::INT64;
}
inline bool is_signed_int(GgufType t) {
    return t == GgufType::INT8 || t == GgufType::INT16 || t == GgufType::INT32 || t == GgufType::INT64;
}

} // namespace vt::gguf_detail
