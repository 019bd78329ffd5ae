// AVX2 + FMA + F16C kernels for F32/F16/BF16 and the 32-element block types,
// plus the activation quantizers. Built with -mavx2 -mfma -mf16c into its own
// archive; reached only through the table the dispatcher builds after
// checking the CPU (quant-dispatch.cpp).
//
// Quantizers reproduce quant-scalar.cpp byte for byte (the same f32 ops:
// max|x|, amax/127, 127/amax, one multiply, round to nearest-even). Dots
// compute the same per-block integer sums; only the f32 accumulation order
// differs from the scalar reference.
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
namespace {
using namespace x86;

// ---- plain floats --------------------------------------------------------

void deq_f16(const void *src, float *dst, int64_t n) {
    const uint16_t *s = (const uint16_t *)src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, Ymm::f16(s + i));
    for (; i < n; ++i) dst[i] = h2f(s[i]);
}

void q_f16(const float *src, void *dst, int64_t n) {
    uint16_t *d = (uint16_t *)dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; ++i) d[i] = f2h(src[i]);
}

// q_f16 then deq_f16 without the f16 row between them: an F16 prefill
// rounds every matmul input so (ops-matmul.cpp), and attention its queries
// and probabilities (1B F16 pp512: 1.8% of the samples as two passes, 1.1%
// as one).
void round_f16(const float *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT)));
    for (; i < n; ++i) dst[i] = h2f(f2h(src[i]));
}

// ---- activation quantizers -------------------------------------------------

// One 32-element block -> 32 int8 in order; returns d = amax/127 (f32).
static inline float quant_block_q8(const float *x, int8_t *q, __m256i *isum) {
    __m256 v[4];
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 mx = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        mx = _mm256_max_ps(mx, _mm256_and_ps(v[k], abs_mask));
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    const float d = amax / 127.f;
    const __m256 id = _mm256_set1_ps(amax != 0.f ? 127.f / amax : 0.f);
    __m256i i[4];
    for (int k = 0; k < 4; ++k)
        i[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    if (isum) *isum = _mm256_add_epi32(_mm256_add_epi32(i[0], i[1]), _mm256_add_epi32(i[2], i[3]));
    // packs work per 128-bit lane; the final dword permute restores element order.
    const __m256i p01 = _mm256_packs_epi32(i[0], i[1]);
    const __m256i p23 = _mm256_packs_epi32(i[2], i[3]);
    const __m256i b = _mm256_packs_epi16(p01, p23);
    _mm256_storeu_si256((__m256i *)q, _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    return d;
}

void q_q8_0(const float *x, void *dst, int64_t n) {
    BlockQ8_0 *b = (BlockQ8_0 *)dst;
    for (int64_t i = 0; i < n / QK; ++i, x += QK) b[i].d = f2h(quant_block_q8(x, b[i].qs, nullptr));
}

void q_q8_1(const float *x, void *dst, int64_t n) {
    BlockQ8_1 *b = (BlockQ8_1 *)dst;
    for (int64_t i = 0; i < n / QK; ++i, x += QK) {
        __m256i s;
        const float d = quant_block_q8(x, b[i].qs, &s);
        b[i].d = f2h(d);
        b[i].s = f2h(d * (float)hsum_i32(s));
    }
}

// ---- dequantize -------------------------------------------------------------

void deq_q8_0(const void *src, float *y, int64_t n) {
    const BlockQ8_0 *b = (const BlockQ8_0 *)src;
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const __m256 d = _mm256_set1_ps(h2f_f16c(b[i].d));
        for (int k = 0; k < 4; ++k) {
            const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b[i].qs + 8 * k)));
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
        }
    }
}

// Bytes 0..31 (u8 or i8 values) * d (+ m), no FMA so it rounds like scalar.
static inline void store_scaled(float *y, __m256i bytes, __m256 d, const __m256 *m) {
    const __m128i lo = _mm256_castsi256_si128(bytes), hi = _mm256_extracti128_si256(bytes, 1);
    const __m128i parts[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};
    for (int k = 0; k < 4; ++k) {
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(parts[k])), d);
        if (m) v = _mm256_add_ps(v, *m);
        _mm256_storeu_ps(y + 8 * k, v);
    }
}

void deq_q4_0(const void *src, float *y, int64_t n) {
    const BlockQ4_0 *b = (const BlockQ4_0 *)src;
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const __m256i q = _mm256_sub_epi8(nibbles32(b[i].qs), _mm256_set1_epi8(8));
        store_scaled(y, q, _mm256_set1_ps(h2f_f16c(b[i].d)), nullptr);
    }
}

void deq_q4_1(const void *src, float *y, int64_t n) {
    const BlockQ4_1 *b = (const BlockQ4_1 *)src;
    for (int64_t i = 0; i < n / QK; ++i, y += QK) {
        const __m256 m = _mm256_set1_ps(h2f_f16c(b[i].m));
        store_scaled(y, nibbles32(b[i].qs), _mm256_set1_ps(h2f_f16c(b[i].d)), &m);
    }
}

void deq_mxfp4(const void *src, float *y, int64_t n) {
    const BlockMXFP4 *b = (const BlockMXFP4 *)src;
    for (int64_t i = 0; i < n / QK; ++i, y += QK) store_scaled(y, mxfp4_bytes(b[i].qs), _mm256_set1_ps(e8m0_half(b[i].e)), nullptr);
}

} // namespace

void avx2_fill_kquants(Kernels &k); // kquants-avx2.cpp
void avx2_fill_lowbit(Kernels &k);  // lowbit-avx2.cpp
void avx2_fill_ternary(Kernels &k); // ternary-avx2.cpp
void avx2_fill_iquants(Kernels &k); // iquants-avx2.cpp

void fill_avx2(Kernels &k) {
    k.isa = "avx2";
    const auto id = [](DType t) { return (int)t; };
    k.dot[id(DType::F32)] = dot_float<F32x8>;
    k.dot[id(DType::F16)] = dot_float<F16x8>;
    k.dot[id(DType::BF16)] = dot_float<Bf16x8>;
    k.dot[id(DType::Q4_0)] = dot_legacy<BlockQ4_0, BlockQ8_0, prod_q4_0, false>;
    k.dot[id(DType::Q4_1)] = dot_legacy<BlockQ4_1, BlockQ8_1, prod_q4_1, true>;
    k.dot[id(DType::Q5_0)] = dot_legacy<BlockQ5_0, BlockQ8_0, prod_q5_0, false>;
    k.dot[id(DType::Q5_1)] = dot_legacy<BlockQ5_1, BlockQ8_1, prod_q5_1, true>;
    k.dot[id(DType::Q8_0)] = dot_legacy<BlockQ8_0, BlockQ8_0, prod_q8_0, false>;
    k.dot[id(DType::MXFP4)] = dot_legacy<BlockMXFP4, BlockQ8_0, prod_mxfp4, false>;
    k.dot[id(DType::IQ4_NL)] = dot_legacy<BlockIQ4NL, BlockQ8_0, prod_iq4nl, false>;
    k.dequant[id(DType::F16)] = deq_f16;
    k.dequant[id(DType::MXFP4)] = deq_mxfp4;
    k.dequant[id(DType::Q4_0)] = deq_q4_0;
    k.dequant[id(DType::Q4_1)] = deq_q4_1;
    k.dequant[id(DType::Q8_0)] = deq_q8_0;
    k.quant[id(DType::F16)] = q_f16;
    k.round[id(DType::F16)] = round_f16;
    k.quant[id(DType::Q8_0)] = q_q8_0;
    k.quant[id(DType::Q8_1)] = q_q8_1;
    k.dot[id(DType::FP8_E4M3)] = fp8_dot<Ymm2>;
    k.gemm[id(DType::FP8_E4M3)] = fp8_gemm<Ymm2, 1, 2>;
    k.gemm_f32_acts[id(DType::FP8_E4M3)] = true;
    avx2_fill_lowbit(k);
    avx2_fill_ternary(k);
    avx2_fill_kquants(k);
    avx2_fill_iquants(k);
    k.attn_scores = attn_scores<Ymm>;
    k.attn_values = attn_values<Ymm>;
    k.softmax = softmax_row<YmmExp>;
    k.swiglu = swiglu_row<YmmExp>;
    k.delta_rows = delta_rows<Ymm>;
    k.ssm_rows = ssm_rows<Ymm>;
    k.ssm_chunk = ssm_chunk<Ymm, YmmExp>;
}

} // namespace vt::quant
