// Where the fp16 scale and min fields sit in each block format, so tests can
// fill blocks with random bytes and then overwrite those fields with finite,
// moderate values (random bytes there would be NaN/inf or huge).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/quant.h"

namespace vt::test {

// Byte offsets of a block's fp16 scale fields (d-like) and min fields.
struct Fields {
    std::vector<int> scales, mins;
};

inline Fields fp16_fields(DType t) {
    switch (t) {
    case DType::Q4_0: case DType::Q5_0: case DType::Q8_0: return {{0}, {}};
    case DType::Q4_1: case DType::Q5_1: return {{0}, {2}};
    case DType::Q2_K: return {{80}, {82}};
    case DType::Q3_K: return {{108}, {}};
    case DType::Q4_K: case DType::Q5_K: return {{0}, {2}};
    case DType::Q6_K: return {{208}, {}};
    default: return {};
    }
}

inline void put_f16(uint8_t *p, float v) {
    const uint16_t h = f32_to_fp16(v);
    std::memcpy(p, &h, 2);
}

} // namespace vt::test
