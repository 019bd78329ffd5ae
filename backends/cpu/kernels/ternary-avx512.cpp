// AVX-512 dots of TQ1_0 and TQ2_0 with Q8_K activations, compiled into the
// plain and the VNNI archive like quant-avx512.cpp: a block's 256 codes as
// four 512-bit vectors (64 elements each, in element order), against the
// activations with vpdpbusd (or vpmaddubsw pairs: codes <= 3); the exact
// integer then takes ternary-x86.h's driver, so the result is
// bit-identical to the scalar reference and the AVX2 dots.
#include <cstring>

#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/ternary-x86.h"

namespace vt::quant {
namespace {
using namespace x86;

// Trits of 64 TQ1_0 bytes (tq_trit), the powers of 3 in p per 16-bit lane,
// as ternary-avx2.cpp's trits32: a byte alone in the high half of a 16-bit
// lane times p keeps byte * p mod 256 there, and the high 16 bits of that
// times 3 are the trit.
static inline __m512i trits64(__m512i v, __m512i p) {
    const __m512i three = _mm512_set1_epi16(3);
    const __m512i te = _mm512_mulhi_epu16(_mm512_mullo_epi16(_mm512_slli_epi16(v, 8), p), three);
    const __m512i to =
        _mm512_mulhi_epu16(_mm512_mullo_epi16(_mm512_and_si512(v, _mm512_set1_epi16((short)0xFF00)), p), three);
    return _mm512_or_si512(te, _mm512_slli_epi16(to, 8));
}

// The power of 3 per 16-element quarter of a vector (8 lanes of 16 bits each).
static inline __m512i pow3_quarters(short q0, short q1, short q2, short q3) {
    return _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_set_m128i(_mm_set1_epi16(q1), _mm_set1_epi16(q0))),
        _mm256_set_m128i(_mm_set1_epi16(q3), _mm_set1_epi16(q2)), 1);
}

// Quarter q of the 256 elements (16 each): q < 10 trit q / 2 of
// qs[16 (q % 2)..+15]; q < 15 trit q - 10 of qs[32..47]; q = 15 qh's trits
// (byte 4n + j: trit n of qh[j], the power per 16-bit lane k 3^(k / 2)).
int isum_tq1(const BlockTQ1_0 &x, const BlockQ8_K &y) {
    const __m512i a = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x.qs));
    const __m128i b = _mm_loadu_si128((const __m128i *)(x.qs + 32));
    uint32_t qh;
    std::memcpy(&qh, x.qh, 4);
    const __m512i bq = _mm512_broadcast_i32x4(b);
    const __m512i v2 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)x.qs)),
                                          _mm256_set_m128i(b, b), 1);
    const __m512i v3 = _mm512_inserti32x4(bq, _mm_set1_epi32((int)qh), 3);
    const __m512i p3 = _mm512_inserti32x4(pow3_quarters(9, 27, 81, 0), _mm_setr_epi16(1, 1, 3, 3, 9, 9, 27, 27), 3);
    __m512i acc = _mm512_setzero_si512();
    acc = dpbusd512(acc, trits64(a, pow3_quarters(1, 1, 3, 3)), _mm512_loadu_si512(y.qs));
    acc = dpbusd512(acc, trits64(a, pow3_quarters(9, 9, 27, 27)), _mm512_loadu_si512(y.qs + 64));
    acc = dpbusd512(acc, trits64(v2, pow3_quarters(81, 81, 1, 3)), _mm512_loadu_si512(y.qs + 128));
    acc = dpbusd512(acc, trits64(v3, p3), _mm512_loadu_si512(y.qs + 192));
    return _mm512_reduce_add_epi32(acc) - q8k_sum(y);
}

// TQ2_0: element 128h + 32l + m is field l of qs[32h + m]: a vector of 64
// elements is one half's 32 bytes twice, shifted by 2l and 2(l + 1).
int isum_tq2(const BlockTQ2_0 &x, const BlockQ8_K &y) {
    const __m512i m3 = _mm512_set1_epi8(3);
    __m512i acc = _mm512_setzero_si512();
    for (int h = 0; h < 2; ++h) {
        const __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x.qs + 32 * h)));
        for (int l = 0; l < 4; l += 2) {
            const __m512i s = _mm512_setr_epi64(2 * l, 2 * l, 2 * l, 2 * l, 2 * l + 2, 2 * l + 2, 2 * l + 2, 2 * l + 2);
            const __m512i c = _mm512_and_si512(_mm512_srlv_epi64(v, s), m3);
            acc = dpbusd512(acc, c, _mm512_loadu_si512(y.qs + 128 * h + 32 * l));
        }
    }
    return _mm512_reduce_add_epi32(acc) - q8k_sum(y);
}

} // namespace

#if defined(VT_QUANT_VNNI)
void avx512vnni_fill_ternary(Kernels &k) {
#else
void avx512_fill_ternary(Kernels &k) {
#endif
    k.dot[(int)DType::TQ1_0] = dot_ternary<BlockTQ1_0, isum_tq1>;
    k.dot[(int)DType::TQ2_0] = dot_ternary<BlockTQ2_0, isum_tq2>;
}

} // namespace vt::quant
