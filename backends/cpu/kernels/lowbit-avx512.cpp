// AVX-512 dots of NVFP4, Q1_0 and Q2_0 with Q8_0 activations, compiled into
// the plain and the VNNI archive like quant-avx512.cpp (vpdpbusd in the
// VNNI one). 64 elements a step where AVX2 takes 32, the codes decoded with
// mask registers, then lowbit-x86.h's drivers: the canonical order of
// lowbit-scalar.cpp, bit-identical to it and to lowbit-avx2.cpp (every
// group's integer is exact, whatever the width adds it up in).
#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/lowbit-x86.h"

namespace vt::quant {
namespace {
using namespace x86;

// Two consecutive Q8_0 blocks' quants as one register.
static inline __m512i q8_0_pair(const BlockQ8_0 *y) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load256(y[0].qs)), load256(y[1].qs), 1);
}

// 4 registers of 2 groups each (group 2k in the low half of p[k]) -> the
// 8 groups' sums in lanes 0..7: pairs of dwords, then each 128-bit lane's
// sums of p[0..3] side by side, then the two lanes of a group added.
static inline __m256i reduce_halves(const __m512i p[4]) {
    const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi64(p[0], p[1]), _mm512_unpackhi_epi64(p[0], p[1]));
    const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi64(p[2], p[3]), _mm512_unpackhi_epi64(p[2], p[3]));
    // s01 lane: p0's dwords 0+2, 1+3, p1's; s23 the same for p2, p3.
    const __m512 a = _mm512_castsi512_ps(s01), b = _mm512_castsi512_ps(s23);
    const __m512i t = _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))),
                                       _mm512_castps_si512(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))));
    // t's lane L: the sums of lane L of p0..p3; groups 2k are lanes 0, 1.
    const __m512i r = _mm512_add_epi32(t, _mm512_shuffle_i32x4(t, t, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm512_castsi512_si256(
        _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 0, 0, 0, 0, 0, 0, 0, 0), r));
}

// NVFP4: one block (4 sub-blocks, one per 128-bit lane) a register. Lane s
// takes qs[8s..8s+7] twice (one qword permute) and keeps the low nibbles in
// its first qword, the high ones in its second (one variable shift); the
// magnitudes come from a table, the signs (code bit 3) negate y by mask.
struct Nvfp4Avx512 {
    static inline __m512i block(const BlockNVFP4 &x, const BlockQ8_0 *y) {
        const __m512i q = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 0, 1, 1, 2, 2, 3, 3),
                                                   _mm512_castsi256_si512(load256(x.qs)));
        const __m512i c = _mm512_and_si512(_mm512_srlv_epi64(q, _mm512_setr_epi64(0, 4, 0, 4, 0, 4, 0, 4)),
                                           _mm512_set1_epi8(0x0F));
        const __m512i mag = _mm512_shuffle_epi8(
            _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12)), c);
        const __m512i yv = q8_0_pair(y);
        const __m512i ys = _mm512_mask_sub_epi8(yv, _mm512_test_epi8_mask(c, _mm512_set1_epi8(8)),
                                                _mm512_setzero_si512(), yv);
        return dpbusd512(_mm512_setzero_si512(), mag, ys);
    }
    static inline __m256i isum8(const BlockNVFP4 &x0, const BlockNVFP4 &x1, const BlockQ8_0 *ya) {
        __m512i t0 = block(x0, ya), t1 = block(x1, ya + 2);
        // Each 128-bit lane's sum in all its dwords, then sub-block s (lane s
        // % 4 of t0 or t1) to canonical lane (s % 2) * 4 + s / 2.
        t0 = _mm512_add_epi32(t0, _mm512_shuffle_epi32(t0, _MM_PERM_BADC));
        t1 = _mm512_add_epi32(t1, _mm512_shuffle_epi32(t1, _MM_PERM_BADC));
        t0 = _mm512_add_epi32(t0, _mm512_shuffle_epi32(t0, _MM_PERM_CDAB));
        t1 = _mm512_add_epi32(t1, _mm512_shuffle_epi32(t1, _MM_PERM_CDAB));
        const __m512i idx = _mm512_setr_epi32(0, 8, 16, 24, 4, 12, 20, 28, 0, 0, 0, 0, 0, 0, 0, 0);
        return _mm512_castsi512_si256(_mm512_permutex2var_epi32(t0, idx, t1));
    }
};

// Q1_0: two groups' 64 bits as a mask; y negated where a bit is clear.
struct Q1_0Avx512 {
    static inline __m256i isum8(const BlockQ1_0 *x, const BlockQ8_0 *y, int64_t g) {
        __m512i p[4];
        for (int k = 0; k < 4; ++k) {
            const int64_t gk = g + 2 * k;  // even: both groups in block gk / 4
            uint64_t bits;
            std::memcpy(&bits, x[gk / 4].qs + 4 * (gk % 4), 8);
            const __m512i yv = q8_0_pair(y + gk);
            const __m512i ys = _mm512_mask_sub_epi8(yv, _knot_mask64(_cvtu64_mask64(bits)), _mm512_setzero_si512(), yv);
            p[k] = dpbusd512(_mm512_setzero_si512(), _mm512_set1_epi8(1), ys);
        }
        return reduce_halves(p);
    }
};

// Q2_0: a block's 16 bytes, bytes 4L..4L+3 spread over 128-bit lane L as in
// q2_0_codes32, then codes q against y minus the sum of y.
struct Q2_0Avx512 {
    static inline __m256i isum8(const BlockQ2_0 *x, const BlockQ8_0 *y, int64_t g) {
        alignas(64) static constexpr int8_t kSpread[64] = {
            0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 9,
            9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15};
        const __m512i spread_idx = _mm512_load_si512(kSpread);
        const __m512i q_of = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0));
        const __m512i m4 = _mm512_set1_epi8(0x0F), ones = _mm512_set1_epi8(1), z = _mm512_setzero_si512();
        __m512i p[4];
        for (int k = 0; k < 4; ++k) {
            const int64_t gk = g + 2 * k;  // even: block gk / 2
            const __m512i spread = _mm512_shuffle_epi8(
                _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)x[gk / 2].qs)), spread_idx);
            const __m512i m = _mm512_and_si512(spread, _mm512_set1_epi32((int)0xC0300C03));
            const __m512i q = _mm512_add_epi8(_mm512_shuffle_epi8(q_of, _mm512_and_si512(m, m4)),
                                              _mm512_shuffle_epi8(q_of, _mm512_and_si512(_mm512_srli_epi16(m, 4), m4)));
            const __m512i yv = q8_0_pair(y + gk);
            p[k] = _mm512_sub_epi32(dpbusd512(z, q, yv), dpbusd512(z, ones, yv));
        }
        return reduce_halves(p);
    }
};

} // namespace

#if defined(VT_QUANT_VNNI)
void avx512vnni_fill_lowbit(Kernels &k) {
#else
void avx512_fill_lowbit(Kernels &k) {
#endif
    k.dot[(int)DType::NVFP4] = dot_nvfp4<Nvfp4Avx512>;
    k.dot[(int)DType::Q1_0] = dot_signed<BlockQ1_0, 128, Q1_0Avx512, q1_0_values32>;
    k.dot[(int)DType::Q2_0] = dot_signed<BlockQ2_0, 64, Q2_0Avx512, q2_0_values32>;
}

} // namespace vt::quant
