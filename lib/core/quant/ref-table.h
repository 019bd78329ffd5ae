// The per-type reference table behind ref::row_kernels (quant-ref.cpp),
// filled by the scalar translation units of each family.
#pragma once

#include "core/quant.h"

namespace vt::ref {

constexpr int kTypeIds = 44;  // the type ids vt knows are below this (FP8_E4M3 is 43)

void fill_legacy(RowKernels *by_type);   // F32/F16/BF16 and the 32-element blocks (quant-scalar.cpp)
void fill_kquants(RowKernels *by_type);  // the K quants (kquants-scalar.cpp)
void fill_mxfp4(RowKernels *by_type);    // MXFP4 (mxfp4-scalar.cpp)
void fill_iq4(RowKernels *by_type);      // IQ4_NL, IQ4_XS (iq4-scalar.cpp)
void fill_lowbit(RowKernels *by_type);   // NVFP4, Q1_0, Q2_0 (lowbit-scalar.cpp)
void fill_iquants(RowKernels *by_type);  // IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M (iquants-scalar.cpp)
void fill_fp8(RowKernels *by_type);      // FP8_E4M3 (fp8-scalar.cpp)
void fill_ternary(RowKernels *by_type);  // TQ1_0, TQ2_0 (ternary-scalar.cpp)

} // namespace vt::ref
