// AVX2 dots of NVFP4, Q1_0 and Q2_0 with Q8_0 activations (built with
// -mavx2 -mfma -mf16c; the AVX-512 tables keep them). Each group's integer
// sum is formed in one 256-bit step, the f32 steps are the scalar
// reference's (lowbit-scalar.cpp) in its order, so the results are
// bit-identical to it.
#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant {
namespace {
using namespace x86;

static inline __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

// The two 128-bit halves' int32 sums of v.
static inline int hsum_i32_128(__m128i s) {
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

// One Q8_0 block's worth (32 elements, two sub-blocks) of NVFP4 codes
// qs[0..15] as signed doubled e2m1 values in element order: low nibbles of
// qs[0..7], their high nibbles, then the same for qs[8..15].
static inline __m256i nvfp4_values32(const uint8_t *qs) {
    const __m128i t = _mm_loadu_si128((const __m128i *)qs), m4 = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(t, m4), hi = _mm_and_si128(_mm_srli_epi16(t, 4), m4);
    const __m128i table = _mm_loadu_si128((const __m128i *)kMxfp4Values);
    return _mm256_set_m128i(_mm_shuffle_epi8(table, _mm_unpackhi_epi64(lo, hi)),
                            _mm_shuffle_epi8(table, _mm_unpacklo_epi64(lo, hi)));
}

float dot_nvfp4(int64_t n, const void *w, const void *act) {
    const BlockNVFP4 *x = (const BlockNVFP4 *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)act;
    float sum = 0;
    for (int64_t i = 0; i < n / 64; ++i)
        for (int h = 0; h < 2; ++h) {
            const BlockQ8_0 &ya = y[2 * i + h];
            const __m256i p = dot_ss8(nvfp4_values32(x[i].qs + 16 * h), load256(ya.qs));
            const float dy = h2f_f16c(ya.d);
            sum += (ue4m3_half(x[i].d[2 * h]) * dy) * (float)hsum_i32_128(_mm256_castsi256_si128(p));
            sum += (ue4m3_half(x[i].d[2 * h + 1]) * dy) * (float)hsum_i32_128(_mm256_extracti128_si256(p, 1));
        }
    return sum;
}

// 32 bits -> +1 where set, -1 where clear.
static inline __m256i q1_0_values32(const uint8_t *qs) {
    return _mm256_or_si256(_mm256_andnot_si256(bits_to_bytes(load_u32(qs)), _mm256_set1_epi8(-1)),
                           _mm256_set1_epi8(1));
}

// 8 bytes of 2-bit fields -> 32 values q - 1 (-1..2): byte j takes byte j / 4
// (one shuffle of the 8 bytes in both lanes), the field at bits 2(j % 4) is
// masked in place, and one table per nibble maps each masked field to q.
static inline __m256i q2_0_values32(const uint8_t *qs) {
    uint64_t b;
    std::memcpy(&b, qs, 8);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi64x((long long)b),
        _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7));
    const __m256i m = _mm256_and_si256(spread, _mm256_set1_epi32((int)0xC0300C03));
    const __m256i q_of = _mm256_setr_epi8(0, 1, 2, 3, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 1, 2, 3, 1, 0, 0, 0, 2, 0, 0, 0,
                                          3, 0, 0, 0);
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i q = _mm256_add_epi8(_mm256_shuffle_epi8(q_of, _mm256_and_si256(m, m4)),
                                      _mm256_shuffle_epi8(q_of, _mm256_and_si256(_mm256_srli_epi16(m, 4), m4)));
    return _mm256_sub_epi8(q, _mm256_set1_epi8(1));
}

template <class B, int QKB, __m256i (*Values)(const uint8_t *)>
float dot_signed(int64_t n, const void *w, const void *act) {
    const B *x = (const B *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)act;
    constexpr int kBytes = (int)sizeof(B::qs) / (QKB / QK);  // code bytes per 32 elements
    float sum = 0;
    for (int64_t i = 0; i < n / QKB; ++i) {
        const float d = h2f_f16c(x[i].d);
        for (int k = 0; k < QKB / QK; ++k) {
            const BlockQ8_0 &ya = y[i * (QKB / QK) + k];
            const int isum = hsum_i32(dot_ss8(Values(x[i].qs + kBytes * k), load256(ya.qs)));
            sum += (d * h2f_f16c(ya.d)) * (float)isum;
        }
    }
    return sum;
}

} // namespace

void avx2_fill_lowbit(Kernels &k) {
    k.dot[(int)DType::NVFP4] = dot_nvfp4;
    k.dot[(int)DType::Q1_0] = dot_signed<BlockQ1_0, 128, q1_0_values32>;
    k.dot[(int)DType::Q2_0] = dot_signed<BlockQ2_0, 64, q2_0_values32>;
}

} // namespace vt::quant
