// AVX2 dots of NVFP4, Q1_0 and Q2_0 with Q8_0 activations (built with
// -mavx2 -mfma -mf16c; the AVX-512 tables keep them), in the canonical order
// of lowbit-scalar.cpp, bit-identical to it: 8 groups' exact integer sums in
// one vector, one conversion and one FMA into the 8 lanes; a tail of fewer
// than 8 groups goes lane by lane in the same order.
#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"
#include "cpu/kernels/legacy-x86.h"

#include <cmath>

namespace vt::quant {
namespace {
using namespace x86;

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

// NVFP4's UE4M3 scale byte as f32 (ue4m3_half), for every byte. Built on
// the first call, not at load: this file's code may use AVX2, and a static
// initializer here would run on every CPU the library loads on.
struct Ue4m3Table {
    float v[256];
    Ue4m3Table() {
        for (int i = 0; i < 256; ++i) v[i] = ue4m3_half((uint8_t)i);
    }
};

float dot_nvfp4(int64_t n, const void *w, const void *act) {
    static const Ue4m3Table kUe4m3;
    const BlockNVFP4 *x = (const BlockNVFP4 *)w;
    const BlockQ8_0 *y = (const BlockQ8_0 *)act;
    const int64_t ng = n / 16;  // sub-blocks
    __m256 acc = _mm256_setzero_ps();
    int64_t g = 0;
    // 8 sub-blocks (2 blocks, 4 Q8_0 blocks) a step: p_k holds Q8_0 block
    // k's two sub-blocks in its halves; two rounds of hadd leave sub-block
    // 2k in lane k and 2k + 1 in lane 4 + k, the canonical lanes.
    for (; g + 8 <= ng; g += 8) {
        const BlockNVFP4 &x0 = x[g / 4], &x1 = x[g / 4 + 1];
        const BlockQ8_0 *ya = y + g / 2;
        __m256i p[4];
        for (int k = 0; k < 4; ++k) p[k] = dot_ss8(nvfp4_values32((k < 2 ? x0 : x1).qs + 16 * (k % 2)), load256(ya[k].qs));
        const __m256i isum = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
        const __m256 d = _mm256_setr_ps(kUe4m3.v[x0.d[0]], kUe4m3.v[x0.d[2]], kUe4m3.v[x1.d[0]], kUe4m3.v[x1.d[2]],
                                        kUe4m3.v[x0.d[1]], kUe4m3.v[x0.d[3]], kUe4m3.v[x1.d[1]], kUe4m3.v[x1.d[3]]);
        const __m128 dy4 = _mm_cvtph_ps(_mm_set_epi16(0, 0, 0, 0, (short)ya[3].d, (short)ya[2].d, (short)ya[1].d,
                                                      (short)ya[0].d));
        const __m256 sc = _mm256_mul_ps(d, _mm256_set_m128(dy4, dy4));
        acc = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(isum), acc);
    }
    if (g < ng) {  // 4 sub-blocks left (n is a multiple of 64): lane by lane
        alignas(32) float a[8];
        _mm256_store_ps(a, acc);
        const BlockNVFP4 &xb = x[g / 4];
        for (int h = 0; h < 2; ++h) {
            const BlockQ8_0 &ya = y[g / 2 + h];
            const __m256i p = dot_ss8(nvfp4_values32(xb.qs + 16 * h), load256(ya.qs));
            const float dy = h2f_f16c(ya.d);
            const __m128i lo = _mm256_castsi256_si128(p), hi = _mm256_extracti128_si256(p, 1);
            const int s0 = 2 * h, s1 = 2 * h + 1;  // sub-blocks g + s0, g + s1 (g % 8 == 0)
            a[s0 / 2] = std::fma(kUe4m3.v[xb.d[s0]] * dy, (float)hsum_i32(_mm256_set_m128i(_mm_setzero_si128(), lo)), a[s0 / 2]);
            a[4 + s1 / 2] = std::fma(kUe4m3.v[xb.d[s1]] * dy, (float)hsum_i32(_mm256_set_m128i(_mm_setzero_si128(), hi)), a[4 + s1 / 2]);
        }
        acc = _mm256_load_ps(a);
    }
    return hsum(acc);
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
    constexpr int kPer = QKB / QK;                           // 32-element groups per block
    constexpr int kBytes = (int)sizeof(B::qs) / kPer;         // their code bytes
    const int64_t ng = n / QK;
    const auto values = [&](int64_t g) { return Values(x[g / kPer].qs + kBytes * (g % kPer)); };
    __m256 acc = _mm256_setzero_ps();
    int64_t g = 0;
    for (; g + 8 <= ng; g += 8) {
        __m256i p[8];
        for (int k = 0; k < 8; ++k) p[k] = dot_ss8(values(g + k), load256(y[g + k].qs));
        alignas(32) float d[8];
        for (int k = 0; k < 8; ++k) d[k] = h2f_f16c(x[(g + k) / kPer].d);
        const __m256 sc = _mm256_mul_ps(_mm256_load_ps(d), _mm256_cvtph_ps(f16x8(&y[g].d, sizeof(BlockQ8_0))));
        acc = _mm256_fmadd_ps(sc, _mm256_cvtepi32_ps(reduce8_epi32(p)), acc);
    }
    if (g < ng) {  // the last groups, lane by lane
        alignas(32) float a[8];
        _mm256_store_ps(a, acc);
        for (int k = 0; g + k < ng; ++k) {
            const int isum = hsum_i32(dot_ss8(values(g + k), load256(y[g + k].qs)));
            a[k] = std::fma(h2f_f16c(x[(g + k) / kPer].d) * h2f_f16c(y[g + k].d), (float)isum, a[k]);
        }
        acc = _mm256_load_ps(a);
    }
    return hsum(acc);
}

} // namespace

void avx2_fill_lowbit(Kernels &k) {
    k.dot[(int)DType::NVFP4] = dot_nvfp4;
    k.dot[(int)DType::Q1_0] = dot_signed<BlockQ1_0, 128, q1_0_values32>;
    k.dot[(int)DType::Q2_0] = dot_signed<BlockQ2_0, 64, q2_0_values32>;
}

} // namespace vt::quant
