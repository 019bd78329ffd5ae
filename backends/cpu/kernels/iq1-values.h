// IQ1_S / IQ1_M's grid as the x86 dots' values: kIq1sGrid's bytes (-1, 0,
// 1) times 8, plus an offset kOff the dot takes back out (0 where it keeps
// the signs; the AVX-512 dots store them unsigned, so that maddubs takes
// them as they are and the offset times the activations' sums comes off
// once per super-block). For IQ1_M each group's delta sign is folded in,
// so that a group's 4-bit qh nibble (3 grid bits, the delta's sign) indexes
// the table as it stands: no mask, and no delta vector built per group (a
// compare and a blend per 8 weights, the dots' bottleneck with the index
// work). Internal linkage, as iq-grids.h: a unique symbol shared by the ISA
// archives is what check-isa-linkage.py refuses.
#pragma once

#include <array>
#include <cstdint>

#include "core/quant/iq-grids.h"

namespace vt::quant {

// 8 bytes of value v + kOff each.
template <int kOff>
constexpr uint64_t iq1_group(uint64_t grid, int delta) {
    uint64_t t = 0;
    for (int j = 0; j < 8; ++j) t |= (uint64_t)(uint8_t)(8 * (int8_t)(grid >> 8 * j) + delta + kOff) << 8 * j;
    return t;
}

// IQ1_S: v = 8 g (its delta is one sign per sub-block, added apart).
template <int kOff>
constexpr std::array<uint64_t, 2048> make_iq1s_values() {
    std::array<uint64_t, 2048> t{};
    for (size_t i = 0; i < t.size(); ++i) t[i] = iq1_group<kOff>(kIq1sGrid[i], 0);
    return t;
}
template <int kOff>
static constexpr std::array<uint64_t, 2048> kIq1sValues = make_iq1s_values<kOff>();

// IQ1_M: entry q | nibble << 8 (bits 0..10 the grid index, bit 11 the delta
// sign) holds v = 8 g + 1, or 8 g - 1 where bit 11 is set (never 0).
template <int kOff>
constexpr std::array<uint64_t, 4096> make_iq1m_values() {
    std::array<uint64_t, 4096> t{};
    for (size_t i = 0; i < t.size(); ++i) t[i] = iq1_group<kOff>(kIq1sGrid[i & 2047], i & 2048 ? -1 : 1);
    return t;
}
template <int kOff>
static constexpr std::array<uint64_t, 4096> kIq1mValues = make_iq1m_values<kOff>();

} // namespace vt::quant
