// AVX2 dot products of the K quants with Q8_K activations (built with
// -mavx2 -mfma -mf16c). Layouts: blocks.h. Per super-block everything is
// integer; the f32 work is one FMA per super-block (plus one for the mins).
//
// Offsets such as Q6_K's -32 and Q3_K's -4 are not applied per element:
// sum_j sc_j * sum(q - o) * a = sum_j sc_j * sum(q * a) - o * sum_j sc_j * bsum_j,
// with the activation's per-16 sums (bsums) from the Q8_K block, so the
// weights stay unsigned and feed maddubs directly.
#include <type_traits>

#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant {
namespace {
using namespace x86;

static inline __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

// [s[j] x 8 | s[j+1] x 8] as int16 from 16 int8 scales: the scales of the
// two 16-element halves of a 32-element group, for madd against maddubs'
// 16 pair sums. j is a constant after unrolling, so this is pshufb + pmovsx.
static inline __m256i scale_pair(__m128i s8, int j) {
    const __m128i ctrl = _mm_add_epi8(_mm_set1_epi8((char)j), _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s8, ctrl));
}

// sum_j sc[j] * bsums[j] over the 16 sub-blocks (sc as 16 int16).
static inline int scaled_bsums(const int16_t *bsums, __m256i sc16) {
    return hsum_i32(_mm256_madd_epi16(load256(bsums), sc16));
}

// Q3_K's 16 six-bit scales minus 32 as int8, in registers (the same bit
// moves as q3k_scales in blocks.h; a round trip through memory here costs a
// store-forwarding stall per block). Word k of the result holds scales
// 4k..4k+3: low nibbles from word (k & 1) shifted by 4 * (k >> 1), top bits
// from word 2 shifted by 2k.
static inline __m128i q3k_scales_v(const uint8_t *s) {
    const __m128i a = _mm_insert_epi32(_mm_loadl_epi64((const __m128i *)s), (int)load_u32(s + 8), 2);
    const __m128i lo = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(a, _MM_SHUFFLE(1, 0, 1, 0)), _mm_setr_epi32(0, 0, 4, 4)),
                                     _mm_set1_epi8(0x0F));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(a, _MM_SHUFFLE(2, 2, 2, 2)), _mm_setr_epi32(0, 2, 4, 6)),
                                     _mm_set1_epi8(0x03));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi32(hi, 4)), _mm_set1_epi8(32));
}

// Q4_K/Q5_K: 8 six-bit scales and mins, as bytes (see scale_min_k4).
static inline void unpack_scales_k4(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]) {
    uint32_t u[3];
    std::memcpy(u, s, 12);
    const uint32_t lo[2] = {u[0] & 0x3f3f3f3f, u[1] & 0x3f3f3f3f};
    const uint32_t sc_hi = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
    const uint32_t mn_hi = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
    std::memcpy(sc, &lo[0], 4);
    std::memcpy(sc + 4, &sc_hi, 4);
    std::memcpy(mn, &lo[1], 4);
    std::memcpy(mn + 4, &mn_hi, 4);
}

// sum_j mn[j] * (bsums[2j] + bsums[2j+1]).
static inline int mins_dot(const int16_t *bsums, const uint8_t mn[8]) {
    uint64_t m8;
    std::memcpy(&m8, mn, 8);
    const __m128i m = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)m8));
    const __m256i mdup = _mm256_set_m128i(_mm_unpackhi_epi16(m, m), _mm_unpacklo_epi16(m, m));
    return hsum_i32(_mm256_madd_epi16(load256(bsums), mdup));
}

// Each super-block's scaled products are reduced to one exact integer before
// the f32 step (as in dot_q6_k), so the row-lane gemm tiles (gemm-q4k-x86.h)
// can form it their own way and stay bit-identical.
template <bool Q5>
float dot_q45_k(int64_t n, const void *w, const void *act) {
    using Block = std::conditional_t<Q5, BlockQ5_K, BlockQ4_K>;
    const Block *x = (const Block *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)act;
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    float acc = 0;
    float acc_m = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        uint8_t sc[8], mn[8];
        unpack_scales_k4(x[i].scales, sc, mn);
        const float dy = y[i].d;
        acc_m += h2f_f16c(x[i].dmin) * dy * (float)mins_dot(y[i].bsums, mn);
        __m256i hbits = _mm256_setzero_si256();
        if constexpr (Q5) hbits = load256(x[i].qh);
        __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            const __m256i q = load256(x[i].qs + 32 * c);
            __m256i lo = _mm256_and_si256(q, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            if constexpr (Q5) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hbits, one), 4));
                hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 1), one), 4));
                hbits = _mm256_srli_epi16(hbits, 2);
            }
            const __m256i plo = _mm256_maddubs_epi16(lo, load256(y[i].qs + 64 * c));
            const __m256i phi = _mm256_maddubs_epi16(hi, load256(y[i].qs + 64 * c + 32));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * c])));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * c + 1])));
        }
        acc += h2f_f16c(x[i].d) * dy * (float)hsum_i32(sumi);
    }
    return acc - acc_m;
}

// Decode runs this per row (ops-matmul.cpp), so its integer work is kept
// short; the f32 steps are dot_q6_k's order (one per super-block), which the
// gemm tiles mirror. A 2-bit field moved to bits 4..5 of each byte is one
// 16-bit shift and a mask (bits crossing into the next byte are masked off),
// a group's two scales one vpshufb of the int16 scales held in both lanes,
// and the -32 offset is taken off before the one horizontal sum.
float dot_q6_k(int64_t n, const void *w, const void *act) {
    const BlockQ6_K *x = (const BlockQ6_K *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)act;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    // The bytes of int16 0 in the low lane, of int16 1 in the high one.
    const __m256i pick = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
                                          2, 3, 2, 3, 2, 3);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[i].scales));
        // Scales 0..7 (first half) and 8..15 (second half), in both lanes.
        const __m256i sc_half[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00),
                                    _mm256_permute2x128_si256(sc16, sc16, 0x11)};
        __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i ql0 = load256(x[i].ql + 64 * h), ql1 = load256(x[i].ql + 64 * h + 32);
            const __m256i qh = load256(x[i].qh + 32 * h);
            const __m256i q[4] = {
                _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30)),
                _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30)),
            };
#pragma GCC unroll 4
            for (int g = 0; g < 4; ++g) {
                // int16 scales 2g (low lane) and 2g + 1 (high lane) of this half.
                const __m256i ctrl = _mm256_add_epi8(_mm256_set1_epi8((char)(4 * g)), pick);
                const __m256i p = _mm256_maddubs_epi16(q[g], load256(y[i].qs + 128 * h + 32 * g));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_shuffle_epi8(sc_half[h], ctrl)));
            }
        }
        const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(load256(y[i].bsums), sc16), 5); // 32 * sc * bsum
        const int isum = hsum_i32(_mm256_sub_epi32(sumi, offset));
        sum += h2f_f16c(x[i].d) * y[i].d * (float)isum;
    }
    return sum;
}

float dot_q2_k(int64_t n, const void *w, const void *act) {
    const BlockQ2_K *x = (const BlockQ2_K *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)act;
    const __m256i m2 = _mm256_set1_epi8(0x03);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const __m128i s8 = _mm_loadu_si128((const __m128i *)x[i].scales);
        const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s8, 4), _mm_set1_epi8(0x0F)));
        const __m128i sc8 = _mm_and_si128(s8, _mm_set1_epi8(0x0F));
        __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i qs = load256(x[i].qs + 32 * h);
#pragma GCC unroll 4
            for (int s = 0; s < 4; ++s) {
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * s), m2);
                const __m256i p = _mm256_maddubs_epi16(q, load256(y[i].qs + 128 * h + 32 * s));
                const int j = 8 * h + 2 * s;
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scale_pair(sc8, j)));
            }
        }
        const float dy = y[i].d;
        sum += dy * h2f_f16c(x[i].d) * (float)hsum_i32(sumi) -
               dy * h2f_f16c(x[i].dmin) * (float)scaled_bsums(y[i].bsums, mn16);
    }
    return sum;
}

float dot_q3_k(int64_t n, const void *w, const void *act) {
    const BlockQ3_K *x = (const BlockQ3_K *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)act;
    const __m256i m2 = _mm256_set1_epi8(0x03), one = _mm256_set1_epi8(1);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const __m128i sc8 = q3k_scales_v(x[i].scales);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        const __m256i hm = load256(x[i].hmask);
        __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i qs = load256(x[i].qs + 32 * h);
#pragma GCC unroll 4
            for (int s = 0; s < 4; ++s) {
                // u = q2 | hbit << 2, in 0..7; the -4 is applied through bsums.
                const __m256i hb = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * h + s), one);
                const __m256i q = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * s), m2), _mm256_slli_epi16(hb, 2));
                const __m256i p = _mm256_maddubs_epi16(q, load256(y[i].qs + 128 * h + 32 * s));
                const int j = 8 * h + 2 * s;
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scale_pair(sc8, j)));
            }
        }
        const int isum = hsum_i32(sumi) - 4 * scaled_bsums(y[i].bsums, sc16);
        sum += h2f_f16c(x[i].d) * y[i].d * (float)isum;
    }
    return sum;
}

// Q8_K activations, byte-identical to the scalar q_q8_k: the first element
// of largest magnitude gives max, iscale = -127/max, q = min(127,
// round-nearest-even(iscale * x)), d = 1/iscale, bsums per 16.
void q_q8_k(const float *x, void *dst, int64_t n) {
    BlockQ8_K *b = (BlockQ8_K *)dst;
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
        __m256 mx = _mm256_setzero_ps();
        for (int k = 0; k < QK_K; k += 8) mx = _mm256_max_ps(mx, _mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask));
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float amax = _mm_cvtss_f32(m4);
        if (amax == 0.f) {
            std::memset(&b[i], 0, sizeof(BlockQ8_K));
            continue;
        }
        int first = 0;
        const __m256 va = _mm256_set1_ps(amax);
        for (int k = 0; k < QK_K; k += 8) {
            const int m = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask), va, _CMP_EQ_OQ));
            if (m) {
                first = k + __builtin_ctz((unsigned)m);
                break;
            }
        }
        const float iscale = -127.f / x[first];
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i lim = _mm256_set1_epi32(127);
        for (int k = 0; k < QK_K; k += 32) {
            __m256i q[4];
            for (int j = 0; j < 4; ++j) {
                const __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + k + 8 * j), vs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                q[j] = _mm256_min_epi32(_mm256_cvtps_epi32(v), lim);
            }
            b[i].bsums[k / 16] = (int16_t)hsum_i32(_mm256_add_epi32(q[0], q[1]));
            b[i].bsums[k / 16 + 1] = (int16_t)hsum_i32(_mm256_add_epi32(q[2], q[3]));
            const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
            _mm256_storeu_si256((__m256i *)(b[i].qs + k), _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
        }
        b[i].d = 1.f / iscale;
    }
}

} // namespace

// IQ4_XS: per sub-block the codes through the level table (signed bytes),
// the exact product pairs times the sub-block's ls - 32 into 8 int32 lanes,
// then the super-block's one f32 step, in the scalar reference's order
// (iq4-scalar.cpp), so the result is bit-identical to it.
float dot_iq4_xs(int64_t n, const void *w, const void *act) {
    const BlockIQ4XS *x = (const BlockIQ4XS *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)act;
    const __m128i t = _mm_loadu_si128((const __m128i *)kIq4nlValues);
    const __m256i table = _mm256_set_m128i(t, t);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int s = 0; s < QK_K / QK; ++s) {
            // The pairs times ls - 32 by vpmaddwd (exact: |pair| <= 2 * 127 *
            // 127), where a widening vpmaddwd and a vpmulld took two steps.
            const __m256i v = _mm256_shuffle_epi8(table, nibbles32(x[i].qs + s * QK / 2));
            const __m256i pairs =
                _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(load256(y[i].qs + s * QK), v));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(pairs, _mm256_set1_epi16((short)iq4xs_scale(x[i], s))));
        }
        sum += h2f_f16c(x[i].d) * y[i].d * (float)hsum_i32(sumi);
    }
    return sum;
}

void avx2_fill_kquants(Kernels &k) {
    k.quant[(int)DType::Q8_K] = q_q8_k;
    k.dot[(int)DType::Q2_K] = dot_q2_k;
    k.dot[(int)DType::Q3_K] = dot_q3_k;
    k.dot[(int)DType::Q4_K] = dot_q45_k<false>;
    k.dot[(int)DType::Q5_K] = dot_q45_k<true>;
    k.dot[(int)DType::Q6_K] = dot_q6_k;
    k.dot[(int)DType::IQ4_XS] = dot_iq4_xs;
}

} // namespace vt::quant
