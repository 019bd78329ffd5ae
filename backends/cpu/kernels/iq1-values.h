// IQ1_S / IQ1_M's grid as the dots' values (x86 dots and tiles): kIq1sGrid's
// bytes (-1, 0, 1) times 8, and for IQ1_M with each group's delta sign
// folded in, so that a group's 4-bit qh nibble (3 grid bits, the delta's
// sign) indexes the table as it stands: no mask, and no delta vector built
// per group (a compare and a blend per 8 weights, the dots' bottleneck with
// the index work).
// Internal linkage, as iq-grids.h: a unique symbol shared by the ISA
// archives is what check-isa-linkage.py refuses.
#pragma once

#include <array>
#include <cstdint>

#include "core/quant/iq-grids.h"

namespace vt::quant {

// Group bytes v = 8 g (IQ1_S: the delta is one sign per sub-block, added
// apart from the grid).
constexpr std::array<uint64_t, 2048> make_iq1_grid8() {
    std::array<uint64_t, 2048> t{};
    for (size_t i = 0; i < t.size(); ++i)
        for (int j = 0; j < 8; ++j)
            t[i] |= (uint64_t)(uint8_t)(8 * (int8_t)(kIq1sGrid[i] >> 8 * j)) << 8 * j;
    return t;
}
static constexpr std::array<uint64_t, 2048> kIq1sGrid8 = make_iq1_grid8();

// IQ1_M: entry q | nibble << 8 (bits 0..10 the grid index, bit 11 the delta
// sign) holds v = 8 g + 1, or 8 g - 1 where bit 11 is set (never 0).
constexpr std::array<uint64_t, 4096> make_iq1m_values() {
    std::array<uint64_t, 4096> t{};
    for (size_t i = 0; i < t.size(); ++i)
        for (int j = 0; j < 8; ++j)
            t[i] |= (uint64_t)(uint8_t)(8 * (int8_t)(kIq1sGrid[i & 2047] >> 8 * j) + (i & 2048 ? -1 : 1)) << 8 * j;
    return t;
}
static constexpr std::array<uint64_t, 4096> kIq1mValues = make_iq1m_values();

} // namespace vt::quant
