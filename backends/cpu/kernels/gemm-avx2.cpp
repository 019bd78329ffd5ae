// AVX2 multi-token tiles (Kernels::gemm) for CPUs without AVX-512, each
// bit-identical to the AVX2 table's vec_dot (see gemm-x86.h), F16_X16 and
// BF16_X16 to their own orders (dot_f16_pairs, dot_bf16_pairs): the
// row-major float tiles; the row-lane tiles of Q5_0, Q5_1, Q6_K, MXFP4,
// IQ4_NL, Q1_0, Q2_0, the lattice i-quants and IQ4_XS (rows packed per
// call); and the row-lane tiles of the _X16 layouts of Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, MXFP4, NVFP4, Q1_0, Q2_0, TQ1_0, TQ2_0, Q4_K, Q6_K, F16 and BF16
// (whose gemm entries make the loader repack those matrices; decode goes
// through them too). The AVX-512 tables without vdpbf16ps keep the BF16_X16
// tile.
#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"
#include "cpu/kernels/gemm-x86.h"
#include "cpu/kernels/gemm-lanes-avx2.h"
#include "cpu/kernels/gemm-q4k-avx2.h"
#include "cpu/kernels/gemm-q6k-avx2.h"
#include "cpu/kernels/gemm-q6k-x16-avx2.h"
#include "cpu/kernels/gemm-pairs-x86.h"
#include "cpu/kernels/gemm-ternary-avx2.h"
#include "cpu/kernels/gemm-nvfp4-avx2.h"
#include "cpu/kernels/gemm-iq-avx2.h"

namespace vt::quant {
namespace {
using namespace x86;

// Float tiles: 3 rows x 4 tokens, 12 accumulators plus 3 weight vectors and
// one activation vector in the 16 registers.
constexpr int kRows = 3, kTokens = 4;

} // namespace

void fill_gemm_avx2(Kernels &k) {
    k.gemm[x16_slot(DType::Q4_0)] = gemm_legacy_x16_avx2<OpsQ4_0>;
    k.gemm[x16_slot(DType::Q4_1)] = gemm_legacy_x16_avx2<OpsQ4_1>;
    k.gemm[x16_slot(DType::Q8_0)] = gemm_legacy_x16_avx2<OpsQ8_0>;
    k.gemm[(int)DType::Q5_0] = gemm_legacy_avx2<OpsQ5_0>;
    k.gemm[(int)DType::Q5_1] = gemm_legacy_avx2<OpsQ5_1>;
    k.gemm[(int)DType::MXFP4] = gemm_legacy_avx2<OpsMXFP4>;
    k.gemm[(int)DType::IQ4_NL] = gemm_legacy_avx2<OpsIQ4NL>;
    k.gemm[(int)DType::Q1_0] = gemm_legacy_avx2<OpsQ1_0>;
    k.gemm[(int)DType::Q2_0] = gemm_legacy_avx2<OpsQ2_0>;
    k.gemm[x16_slot(DType::MXFP4)] = gemm_legacy_x16_avx2<OpsMXFP4>;
    k.gemm[x16_slot(DType::Q5_0)] = gemm_legacy_packed_x16_avx2<OpsQ5_0, X16Q5Src8<OpsQ5_0>>;
    k.gemm[x16_slot(DType::Q5_1)] = gemm_legacy_packed_x16_avx2<OpsQ5_1, X16Q5Src8<OpsQ5_1>>;
    k.gemm[x16_slot(DType::Q1_0)] = gemm_legacy_packed_x16_avx2<OpsQ1_0, X16Q1Src8>;
    k.gemm[x16_slot(DType::Q2_0)] = gemm_legacy_packed_x16_avx2<OpsQ2_0, X16Q2Src8>;
    k.gemm[x16_slot(DType::NVFP4)] = gemm_x16<Nvfp4Lanes8<Nvfp4X16Src8>>;
    k.gemm[x16_slot(DType::TQ1_0)] = gemm_x16<TernaryLanes8<Tq1X16Src8>>;
    k.gemm[x16_slot(DType::TQ2_0)] = gemm_x16<TernaryLanes8<Tq2X16Src8>>;
    k.gemm[(int)DType::IQ2_XXS] = gemm_lanes<IQLanes8<DType::IQ2_XXS>>;
    k.gemm[(int)DType::IQ2_XS] = gemm_lanes<IQLanes8<DType::IQ2_XS>>;
    k.gemm[(int)DType::IQ2_S] = gemm_lanes<IQLanes8<DType::IQ2_S>>;
    k.gemm[(int)DType::IQ3_XXS] = gemm_lanes<IQLanes8<DType::IQ3_XXS>>;
    k.gemm[(int)DType::IQ3_S] = gemm_lanes<IQLanes8<DType::IQ3_S>>;
    k.gemm[(int)DType::IQ1_S] = gemm_lanes<IQLanes8<DType::IQ1_S>>;
    k.gemm[(int)DType::IQ1_M] = gemm_lanes<IQLanes8<DType::IQ1_M>>;
    k.gemm[(int)DType::IQ4_XS] = gemm_lanes<IQ4XSLanes8>;
    k.gemm[x16_slot(DType::Q4_K)] = gemm_x16<Q4KX16Avx2>;
    k.gemm[(int)DType::Q6_K] = gemm_lanes<Q6KLanes8>;
    k.gemm[x16_slot(DType::Q6_K)] = gemm_q6k_x16_avx2;
    k.gemm[x16_slot(DType::F16)] = gemm_pairs_x16<F16Pairs8>;
    k.gemm[x16_slot(DType::BF16)] = gemm_pairs_x16<Bf16Pairs8>;
    k.gemm_f32_acts[x16_slot(DType::F16)] = k.gemm_f32_acts[x16_slot(DType::BF16)] = true;
    k.gemm[(int)DType::F16] = gemm_tiled<FloatTile<F16x8>::T, kRows, kTokens>;
    k.gemm[(int)DType::BF16] = gemm_tiled<FloatTile<Bf16x8>::T, kRows, kTokens>;
    k.gemm[(int)DType::F32] = gemm_tiled<FloatTile<F32x8>::T, kRows, kTokens>;
}

} // namespace vt::quant
