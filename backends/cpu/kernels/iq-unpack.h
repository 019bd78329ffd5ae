// The lattice i-quants' and the ternary types' blocks decoded for the
// AVX-512 row-lane tiles (gemm-iq-x86.h): iquants-avx2.cpp's grid gathers
// and ternary-avx2.cpp's code decoding (the AVX2 archive; every
// AVX-512 CPU runs them), called through a plain function pointer, which
// no ISA rule forbids (meson.build: only inline functions may not cross).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace vt::quant {

// Each element's value v (iquants-scalar.cpp: grid value times sign, or
// IQ1's 8 grid + delta sign; |v| <= 62) plus this offset, as u8.
constexpr int kIqUnpackOff = 64;

// The types whose two 16-element halves share one multiplier (a scale per
// 32): their tiles sum 32 elements per group, half the multiplies.
constexpr bool iq_scale_per_32(DType t) {
    return t == DType::IQ2_XXS || t == DType::IQ3_XXS || t == DType::IQ3_S || t == DType::IQ1_S;
}

// One super-block: u[256] its values + kIqUnpackOff in element order,
// m[16] the odd multiplier of each 16 elements, *dk its d times kScale (the
// f32 factor of the scalar reference's step).
using IqUnpackFn = void (*)(const void *block, uint8_t *u, int32_t *m, float *dk);

// The AVX2 decoder of an i-quant type, null for any other type.
IqUnpackFn iq_unpack_avx2(DType t);

// TQ1_0 / TQ2_0 (ternary-avx2.cpp): c[256] a block's codes (0..2, or 0..3:
// the values + 1) in element order, *d its d as f32.
using TernaryUnpackFn = void (*)(const void *block, uint8_t *c, float *d);
TernaryUnpackFn ternary_unpack_avx2(DType t);

} // namespace vt::quant
