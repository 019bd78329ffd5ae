// AVX-512 multi-token tiles (Kernels::gemm), compiled twice like
// quant-avx512.cpp: plain and with VT_QUANT_VNNI, each table getting the
// tiles that match its own vec_dot kernels bit for bit (see gemm-x86.h).
// F16 mirrors the AVX2 dot the AVX-512 tables keep; the 256-bit tiles still
// gain from the 32 vector registers of EVEX.
#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"
#include "cpu/kernels/legacy-x86.h"
#include "cpu/kernels/gemm-x86.h"
#include "cpu/kernels/gemm-rows-x86.h"
#include "cpu/kernels/gemm-q4k-x86.h"
#include "cpu/kernels/gemm-iq4xs-x86.h"
#include "cpu/kernels/gemm-q6k-x86.h"
#include "cpu/kernels/gemm-q6k-x16-avx512.h"
#include "cpu/kernels/gemm-legacy-lanes-x86.h"
#include "cpu/kernels/gemm-nvfp4-x86.h"
#include "cpu/kernels/gemm-iq-x86.h"
#include "cpu/kernels/gemm-pairs-x86.h"

namespace vt::quant {
namespace {
using namespace x86;

// Float tiles: 4 rows x 4 tokens, 16 accumulators per pass plus the 4
// weight vectors in the 32 registers. The quantized types use the row-lane
// tiles (gemm-rows-x86.h: 16 rows per register).
constexpr int kRows = 4, kTokens = 4;

void fill(Kernels &k) {
    k.gemm[(int)DType::Q4_0] = gemm_legacy<OpsQ4_0>;
    k.gemm[(int)DType::Q4_1] = gemm_legacy<OpsQ4_1>;
    k.gemm[(int)DType::Q5_0] = gemm_legacy<OpsQ5_0>;
    k.gemm[(int)DType::Q5_1] = gemm_legacy<OpsQ5_1>;
    k.gemm[(int)DType::Q8_0] = gemm_legacy<OpsQ8_0>;
    k.gemm[(int)DType::MXFP4] = gemm_legacy<OpsMXFP4>;
    k.gemm[(int)DType::IQ4_NL] = gemm_legacy<OpsIQ4NL>;
    k.gemm[(int)DType::Q1_0] = gemm_legacy<OpsQ1_0>;
    k.gemm[(int)DType::Q2_0] = gemm_legacy<OpsQ2_0>;
    k.gemm[(int)DType::NVFP4] = gemm_lanes<NVFP4Lanes>;
    k.gemm[(int)DType::IQ2_XXS] = gemm_lanes<IQLanes<DType::IQ2_XXS>>;
    k.gemm[(int)DType::IQ2_XS] = gemm_lanes<IQLanes<DType::IQ2_XS>>;
    k.gemm[(int)DType::IQ2_S] = gemm_lanes<IQLanes<DType::IQ2_S>>;
    k.gemm[(int)DType::IQ3_XXS] = gemm_lanes<IQLanes<DType::IQ3_XXS>>;
    k.gemm[(int)DType::IQ3_S] = gemm_lanes<IQLanes<DType::IQ3_S>>;
    k.gemm[(int)DType::IQ1_S] = gemm_lanes<IQLanes<DType::IQ1_S>>;
    k.gemm[(int)DType::IQ1_M] = gemm_lanes<IQLanes<DType::IQ1_M>>;
    k.gemm[(int)DType::TQ1_0] = gemm_lanes<TernaryLanes<DType::TQ1_0>>;
    k.gemm[(int)DType::TQ2_0] = gemm_lanes<TernaryLanes<DType::TQ2_0>>;
    // The load-time layouts: every token count, decode included.
    k.gemm[x16_slot(DType::Q4_0)] = gemm_legacy_x16<OpsQ4_0>;
    k.gemm[x16_slot(DType::Q4_1)] = gemm_legacy_x16<OpsQ4_1>;
    k.gemm[x16_slot(DType::Q8_0)] = gemm_legacy_x16<OpsQ8_0>;
    k.gemm[x16_slot(DType::Q5_0)] = gemm_legacy_x16<OpsQ5_0>;
    k.gemm[x16_slot(DType::Q5_1)] = gemm_legacy_x16<OpsQ5_1>;
    k.gemm[x16_slot(DType::MXFP4)] = gemm_legacy_x16<OpsMXFP4>;
    // AVX-512 only: the AVX2 tiles' nibble path sums unsigned codes in int16.
    k.gemm[x16_slot(DType::IQ4_NL)] = gemm_legacy_x16<OpsIQ4NL>;
    k.gemm[x16_slot(DType::NVFP4)] = gemm_x16<NVFP4X16>;
    k.gemm[x16_slot(DType::Q1_0)] = gemm_x16<LegacyLanes<OpsQ1_0, X16StepsQ1_0>>;
    k.gemm[x16_slot(DType::Q2_0)] = gemm_x16<LegacyLanes<OpsQ2_0, X16StepsQ2_0>>;
    k.gemm[x16_slot(DType::TQ2_0)] = gemm_x16<TernaryX16>;
    k.gemm[x16_slot(DType::TQ1_0)] = gemm_x16<TernaryX16Tq1>;
    k.gemm[x16_slot(DType::Q4_K)] = gemm_x16<Q4KX16>;
    k.gemm[x16_slot(DType::Q6_K)] = gemm_q6k_x16;
    k.gemm[x16_slot(DType::F16)] = gemm_pairs_x16<F16Pairs>;
    k.gemm_f32_acts[x16_slot(DType::F16)] = true;
    k.gemm[(int)DType::Q4_K] = gemm_lanes<Q4KLanes>;
    k.gemm[(int)DType::Q6_K] = gemm_lanes<Q6KLanes>;
#if defined(VT_QUANT_VNNI)
    k.gemm[(int)DType::IQ4_XS] = gemm_lanes<IQ4XSLanes>;
    k.gemm[x16_slot(DType::IQ4_XS)] = gemm_x16<IQ4XSX16>;
#endif
    k.gemm[(int)DType::F16] = gemm_tiled<FloatTile<F16x8>::T, kRows, kTokens>;
    k.gemm[(int)DType::BF16] = gemm_tiled<FloatTile<Bf16x16>::T, kRows, kTokens>;
    k.gemm[(int)DType::F32] = gemm_tiled<FloatTile<F32x16>::T, kRows, kTokens>;
}

} // namespace

#if defined(VT_QUANT_VNNI)
void fill_gemm_avx512vnni(Kernels &k) { fill(k); }
#else
void fill_gemm_avx512(Kernels &k) { fill(k); }
#endif

} // namespace vt::quant
