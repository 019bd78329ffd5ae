// AVX-512 (F, BW, VL) kernels. This one source is compiled twice, into two
// archives: plain, and with VT_QUANT_VNNI (+ -mavx512vnni), because GCC may
// turn madd+add into vpdpwssd on its own once VNNI is enabled, so the kernels
// for VNNI-less CPUs must come from a build without it.
//
// What it adds over the AVX2 table: 512-bit F32/BF16 dots (16 lanes per
// FMA), and the 32-element block dots recompiled with EVEX/VL (32 vector
// registers) and, in the VNNI build, vpdpbusd for the u8 x s8 products. The
// K-quant dots stay on the AVX2 kernels (their int16 scale multiply gains
// nothing from VNNI). NVFP4, Q1_0 and Q2_0 take lowbit-avx512.cpp's dots,
// TQ1_0 and TQ2_0 ternary-avx512.cpp's, the lattice i-quants
// iquants-avx512.cpp's.
#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"
#include "cpu/kernels/float-x86.h"
#include "cpu/kernels/legacy-x86.h"
#include "cpu/kernels/attn-x86.h"
#include "cpu/kernels/exp-x86.h"
#include "cpu/kernels/delta-x86.h"
#include "cpu/kernels/ssm-x86.h"
#include "cpu/kernels/fp8-x86.h"

namespace vt::quant {
#if defined(VT_QUANT_VNNI)
void avx512vnni_fill_lowbit(Kernels &k);  // lowbit-avx512.cpp, the same archive
void avx512vnni_fill_ternary(Kernels &k); // ternary-avx512.cpp, the same archive
void avx512vnni_fill_iquants(Kernels &k); // iquants-avx512.cpp, the same archive
#else
void avx512_fill_lowbit(Kernels &k);
void avx512_fill_ternary(Kernels &k);
void avx512_fill_iquants(Kernels &k);
#endif
namespace {
using namespace x86;

// f32 -> bf16 as blocks.h's f2b, 16 at a time (the activations of BF16
// matmuls).
void q_bf16(const float *src, void *dst, int64_t n) {
    uint16_t *d = (uint16_t *)dst;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i u = _mm512_loadu_si512(src + i);
        const __m512i hi = _mm512_srli_epi32(u, 16);
        const __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1)));
        const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                      _mm512_set1_epi32(0x7f800000));
        const __m512i r = _mm512_mask_or_epi32(rounded, nan, hi, _mm512_set1_epi32(64));
        _mm256_storeu_si256((__m256i *)(d + i), _mm512_cvtepi32_epi16(r));
    }
    for (; i < n; ++i) d[i] = f2b(src[i]);
}

void fill(Kernels &k) {
    k.dot[(int)DType::F32] = dot_float<F32x16>;
    // F16 keeps the AVX2 kernel: 512-bit vcvtph2ps measured slower from L2
    // (35 vs 54 GB/s) and equal from DRAM.
    k.dot[(int)DType::BF16] = dot_float<Bf16x16>;
    k.dot[(int)DType::Q4_0] = dot_legacy<BlockQ4_0, BlockQ8_0, prod_q4_0, false>;
    k.dot[(int)DType::Q4_1] = dot_legacy<BlockQ4_1, BlockQ8_1, prod_q4_1, true>;
    k.dot[(int)DType::Q5_0] = dot_legacy<BlockQ5_0, BlockQ8_0, prod_q5_0, false>;
    k.dot[(int)DType::Q5_1] = dot_legacy<BlockQ5_1, BlockQ8_1, prod_q5_1, true>;
    k.dot[(int)DType::Q8_0] = dot_legacy<BlockQ8_0, BlockQ8_0, prod_q8_0, false>;
    k.dot[(int)DType::MXFP4] = dot_legacy<BlockMXFP4, BlockQ8_0, prod_mxfp4, false>;
    k.dot[(int)DType::IQ4_NL] = dot_legacy<BlockIQ4NL, BlockQ8_0, prod_iq4nl, false>;
    k.quant[(int)DType::BF16] = q_bf16;
#if defined(VT_QUANT_VNNI)
    avx512vnni_fill_lowbit(k);
    avx512vnni_fill_ternary(k);
    avx512vnni_fill_iquants(k);
#else
    avx512_fill_lowbit(k);
    avx512_fill_ternary(k);
    avx512_fill_iquants(k);
#endif
    k.dot[(int)DType::FP8_E4M3] = fp8_dot<Zmm16>;
    k.gemm[(int)DType::FP8_E4M3] = fp8_gemm<Zmm16, 2, 6>;
    k.gemm_f32_acts[(int)DType::FP8_E4M3] = true;
    k.attn_scores = attn_scores<Zmm>;
    k.attn_values = attn_values<Zmm>;
    k.softmax = softmax_row<ZmmExp>;
    k.swiglu = swiglu_row<ZmmExp>;
    k.delta_rows = delta_rows<Zmm>;
    k.ssm_rows = ssm_rows<Zmm>;
    k.ssm_chunk = ssm_chunk<Zmm, ZmmExp>;
}

} // namespace

#if defined(VT_QUANT_VNNI)
void fill_avx512vnni(Kernels &k) {
    k.isa = "avx512vnni";
    fill(k);
}
#else
void fill_avx512(Kernels &k) {
    k.isa = "avx512";
    fill(k);
}
#endif

} // namespace vt::quant
