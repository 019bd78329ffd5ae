// AVX-512 dots of the lattice i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S, IQ1_S, IQ1_M) with Q8_K activations, compiled into the plain and
// the VNNI archive like quant-avx512.cpp. Where iquants-avx2.cpp builds each
// 32 elements' magnitudes, signs and multipliers from scalar table reads,
// this takes two sub-blocks (64 elements) a step: the grid entries still by
// scalar loads (the one part that stays as it was: see grid64), but each
// super-block's signs formed at once as mask bits that negate the
// activations, and its 16 multipliers as one vector a permute hands out.
// The integer of each super-block is exact whatever adds it up, and its f32
// step is the scalar reference's (iquants-scalar.cpp), so the dots are
// bit-identical to it and to the AVX2 ones. 1 thread, 8192 x 2048 decode,
// GFLOP/s AVX2 -> here (before indices4): IQ2_XS 25 -> 32, IQ2_S 24 -> 35,
// IQ1_M 18 -> 28, IQ1_S 28 -> 30-32, IQ3_S 17 -> 20, IQ3_XXS 24 -> 25,
// IQ2_XXS 32 -> 32; IQ1_M and IQ1_S then 33 -> 36, 35 -> 38-39 by their
// values stored unsigned (iq1_pair).
#include <array>
#include <cstdint>
#include <cstring>

#include "core/quant/blocks.h"
#include "core/quant/iq-grids.h"
#include "cpu/kernels/iq1-values.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant {
namespace {
using namespace x86;

// A super-block's decoding state: the sign (negate) bits of its 256
// elements, 64 per pair of sub-blocks (IQ1 takes its signs from the values
// instead), the odd multiplier m of each 16 elements as the int16 pair
// m | m << 16 (madd's operand) per dword, and what its integer starts from.
struct Pre {
    alignas(16) uint64_t neg[4];
    __m512i m16;
    __m512i base = _mm512_setzero_si512(); // what the integer starts from
};

// Pair p of sub-blocks as madd's operands: 64 unsigned magnitudes, the
// elements whose sign is negative.
struct Pair {
    __m512i mag;
    __mmask64 neg;
};

// The odd multipliers 2 f + 1 of 16 dword fields f (3 or 4 bits), and
// multipliers as madd's operand: m in both int16 halves of each dword.
static inline __m512i odd(__m512i f) { return _mm512_or_si512(_mm512_add_epi32(f, f), _mm512_set1_epi32(1)); }
static inline __m512i int16_pairs(__m512i m) { return _mm512_or_si512(m, _mm512_slli_epi32(m, 16)); }
static inline __m512i odd_pairs(__m512i f) { return int16_pairs(odd(f)); }

// ggml's 7-bit sign indices (16, one per dword, bits above 6 cleared) to
// their sign bytes: bit 7 is the parity of the 7 (iq_signs).
static inline __m128i sign_bytes(__m512i f) {
    __m512i p = _mm512_xor_si512(f, _mm512_srli_epi32(f, 4));
    p = _mm512_xor_si512(p, _mm512_srli_epi32(p, 2));
    p = _mm512_xor_si512(p, _mm512_srli_epi32(p, 1));
    return _mm512_cvtepi32_epi8(_mm512_or_si512(f, _mm512_slli_epi32(_mm512_and_si512(p, _mm512_set1_epi32(1)), 7)));
}

// Four 7-bit sign indices per word: words w at the dword positions idx (each
// repeated 4 times), fields 7l.. of each.
static inline __m128i sign_bytes_of_words(__m512i w, __m512i idx) {
    const __m512i shifts = _mm512_setr_epi32(0, 7, 14, 21, 0, 7, 14, 21, 0, 7, 14, 21, 0, 7, 14, 21);
    return sign_bytes(_mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(idx, w), shifts),
                                       _mm512_set1_epi32(127)));
}

static inline void store_signs(Pre &pre, __m128i lo, __m128i hi) {
    _mm_store_si128((__m128i *)pre.neg, lo);
    _mm_store_si128((__m128i *)(pre.neg + 2), hi);
}

// 8 64-bit grid entries, or 16 32-bit ones, by scalar loads at indices
// formed in scalar registers (as iquants-avx2.cpp): vpgatherqq/dd, and
// indices formed in a vector and moved out lane by lane, measured 30%
// slower here (Zen 5).
static inline __m512i grid64(const uint64_t *g, const uint32_t (&i)[8]) {
    return _mm512_setr_epi64((long long)g[i[0]], (long long)g[i[1]], (long long)g[i[2]], (long long)g[i[3]],
                             (long long)g[i[4]], (long long)g[i[5]], (long long)g[i[6]], (long long)g[i[7]]);
}
static inline __m512i grid32(const uint32_t *g, const uint32_t (&i)[16]) {
    const __m256i lo = _mm256_setr_epi32((int)g[i[0]], (int)g[i[1]], (int)g[i[2]], (int)g[i[3]], (int)g[i[4]],
                                         (int)g[i[5]], (int)g[i[6]], (int)g[i[7]]);
    const __m256i hi = _mm256_setr_epi32((int)g[i[8]], (int)g[i[9]], (int)g[i[10]], (int)g[i[11]], (int)g[i[12]],
                                         (int)g[i[13]], (int)g[i[14]], (int)g[i[15]]);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
// Four grid indices q[l] | (field l of hf) << 8, the fields kStride bits
// apart in hf (bits the index does not take cleared by the caller), into
// i[0..3]: two pdep deposit them in 16-bit lanes, where a shift and a
// mask per index made the scalar work the dots' bottleneck (IQ1_M: ~47
// scalar operations per 64 weights). 1 thread decode, GFLOP/s: IQ3_S 18 ->
// 21-22, IQ2_S 28-34 -> 33-37, IQ1_S 31 -> 34, IQ1_M 28 -> 28-29.
template <int kStride>
static inline void indices4(const uint8_t *q, uint32_t hf, uint32_t *i) {
    uint32_t q4;
    std::memcpy(&q4, q, 4);
    constexpr uint64_t f = (1u << kStride) - 1;
    const uint64_t v = _pdep_u64(q4, 0x00FF00FF00FF00FFull) | _pdep_u64(hf, f << 8 | f << 24 | f << 40 | f << 56);
    for (int l = 0; l < 4; ++l) i[l] = (uint16_t)(v >> 16 * l);
}

static inline Pair signed_pair(__m512i mag, const Pre &pre, int p) { return {mag, _cvtu64_mask64(pre.neg[p])}; }

// IQ1: the values plus kIq1Off, all >= 0 (iq1-values.h), maddubs's
// unsigned operand as they stand; prep starts the integer at -kIq1Off times
// each 16 activations' sum times its multiplier. Kept signed, they cost an
// abs and a masked negate per 64 weights.
constexpr int kIq1Off = 9;
static inline Pair iq1_pair(__m512i u) { return {u, 0}; }
// -kIq1Off sum_q m_q bsums_q + sum_q e_q bsums_q: m16's int16 (quarter
// order) and e an int16 term per quarter (IQ1_S's delta), 8 int32.
static inline __m512i iq1_base(const BlockQ8_K &y, __m512i m, __m512i e) {
    const __m512i me = _mm512_sub_epi32(e, _mm512_mullo_epi32(m, _mm512_set1_epi32(kIq1Off)));
    return _mm512_zextsi256_si512(
        _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y.bsums), _mm512_cvtepi32_epi16(me)));
}

static inline __m512i repeat_pairs() { return _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7); }

struct IQ2XXS {
    using B = BlockIQ2XXS;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    // Sub-block s: grid bytes qs[8s..8s+3], word b at qs[8s+4] (signs, ls >> 28).
    static void prep(const B &x, const BlockQ8_K &, Pre &pre) {
        const __m512i q = _mm512_loadu_si512(x.qs);
        const __m512i lo = _mm512_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3, 5, 5, 5, 5, 7, 7, 7, 7);
        const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
        store_signs(pre, sign_bytes_of_words(q, lo), sign_bytes_of_words(q, hi));
        const __m512i words = _mm512_permutexvar_epi32(
            _mm512_setr_epi32(1, 1, 3, 3, 5, 5, 7, 7, 9, 9, 11, 11, 13, 13, 15, 15), q);
        pre.m16 = odd_pairs(_mm512_srli_epi32(words, 28));
    }
    static Pair pair(const B &x, const Pre &pre, int p) {
        const uint8_t *q = x.qs + 16 * p;
        const uint32_t i[8] = {q[0], q[1], q[2], q[3], q[8], q[9], q[10], q[11]};
        return signed_pair(grid64(kIq2xxsGrid, i), pre, p);
    }
};

struct IQ2XS {
    using B = BlockIQ2XS;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    // Group l of sub-block s: qs[4s + l] = grid index (9 bits) | sign index << 9.
    static void prep(const B &x, const BlockQ8_K &, Pre &pre) {
        const __m512i q = _mm512_loadu_si512(x.qs);
        store_signs(pre, sign_bytes(_mm512_srli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(q)), 9)),
                    sign_bytes(_mm512_srli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(q, 1)), 9)));
        pre.m16 = scales_nibbles(x.scales);
    }
    // Quarter 2s + h: nibble h of scales[s] (IQ2_XS and IQ2_S).
    static __m512i scales_nibbles(const uint8_t *scales) {
        const __m512i s =
            _mm512_permutexvar_epi32(repeat_pairs(), _mm512_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)scales)));
        const __m512i shifts = _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4);
        return odd_pairs(_mm512_and_si512(_mm512_srlv_epi32(s, shifts), _mm512_set1_epi32(15)));
    }
    static Pair pair(const B &x, const Pre &pre, int p) {
        const uint16_t *q = x.qs + 8 * p;
        uint32_t i[8];
        for (int l = 0; l < 8; ++l) i[l] = q[l] & 511u;
        return signed_pair(grid64(kIq2xsGrid, i), pre, p);
    }
};

struct IQ2S {
    using B = BlockIQ2S;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    // Group l of sub-block s: qs[4s + l] | (bits 2l.. of qh[s]) << 8; sign
    // bytes qs[32..63] as they are.
    static void prep(const B &x, const BlockQ8_K &, Pre &pre) {
        std::memcpy(pre.neg, x.qs + 32, 32);
        pre.m16 = IQ2XS::scales_nibbles(x.scales);
    }
    static Pair pair(const B &x, const Pre &pre, int p) {
        const uint8_t *q = x.qs + 8 * p;
        uint32_t i[8];
        indices4<2>(q, x.qh[2 * p], i);
        indices4<2>(q + 4, x.qh[2 * p + 1], i + 4);
        return signed_pair(grid64(kIq2sGrid, i), pre, p);
    }
};

struct IQ3XXS {
    using B = BlockIQ3XXS;
    static constexpr float kScale = 0.25f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    // Sub-block s: 8 grid bytes qs[8s..8s+7]; word s at qs[64 + 4s].
    static void prep(const B &x, const BlockQ8_K &, Pre &pre) {
        const __m512i w = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(x.qs + 64)));
        store_signs(pre, sign_bytes_of_words(w, _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)),
                    sign_bytes_of_words(w, _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7)));
        pre.m16 = odd_pairs(_mm512_srli_epi32(_mm512_permutexvar_epi32(repeat_pairs(), w), 28));
    }
    static Pair pair(const B &x, const Pre &pre, int p) {
        const uint8_t *q = x.qs + 16 * p;
        uint32_t i[16];
        for (int k = 0; k < 16; ++k) i[k] = q[k];
        return signed_pair(grid32(kIq3xxsGrid, i), pre, p);
    }
};

struct IQ3S {
    using B = BlockIQ3S;
    static constexpr float kScale = 1.f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    // Half k of sub-block s: qs[8s + k] | (bit k of qh[s]) << 8; sign bytes
    // as they are; ls in nibble s % 2 of scales[s / 2].
    static void prep(const B &x, const BlockQ8_K &, Pre &pre) {
        std::memcpy(pre.neg, x.signs, 32);
        uint32_t sc;
        std::memcpy(&sc, x.scales, 4);
        const __m512i shifts = _mm512_setr_epi32(0, 0, 4, 4, 8, 8, 12, 12, 16, 16, 20, 20, 24, 24, 28, 28);
        pre.m16 =
            odd_pairs(_mm512_and_si512(_mm512_srlv_epi32(_mm512_set1_epi32((int)sc), shifts), _mm512_set1_epi32(15)));
    }
    static Pair pair(const B &x, const Pre &pre, int p) {
        const uint8_t *q = x.qs + 16 * p;
        const uint32_t h = x.qh[2 * p] | x.qh[2 * p + 1] << 8;
        uint32_t i[16];
        for (int k = 0; k < 16; k += 4) indices4<1>(q + k, h >> k & 15, i + k);
        return signed_pair(grid32(kIq3sGrid, i), pre, p);
    }
};

struct IQ1S {
    using B = BlockIQ1S;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    // Group l of sub-block s: qs[4s + l] | (bits 3l.. of qh[s]) << 8; qh[s]
    // bits 12..14 ls, bit 15 the delta's sign. The delta is one sign per
    // sub-block, so m (8 g + ds) q8 splits into m 8 g q8, by the pairs, and
    // m ds times the activations' sums (Q8_K's bsums), with the offset
    // (iq1_base).
    static void prep(const B &x, const BlockQ8_K &y, Pre &pre) {
        const __m512i h = _mm512_permutexvar_epi32(
            repeat_pairs(), _mm512_castsi256_si512(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)x.qh))));
        const __m512i f = _mm512_and_si512(_mm512_srli_epi32(h, 12), _mm512_set1_epi32(7));
        const __m512i m = odd(f);
        pre.m16 = int16_pairs(m);
        const __m512i md = _mm512_mask_sub_epi32(m, _mm512_test_epi32_mask(h, _mm512_set1_epi32(0x8000)),
                                                 _mm512_setzero_si512(), m);
        pre.base = iq1_base(y, m, md);
    }
    static Pair pair(const B &x, const Pre &, int p) {
        const uint8_t *q = x.qs + 8 * p;
        uint32_t i[8];
        indices4<3>(q, x.qh[2 * p] & 0xFFF, i);  // bits 12..15: ls and the delta's sign
        indices4<3>(q + 4, x.qh[2 * p + 1] & 0xFFF, i + 4);
        return iq1_pair(grid64(kIq1sValues<kIq1Off>.data(), i));
    }
};

struct IQ1M {
    using B = BlockIQ1M;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(iq1m_d(x)); }
    // Group j of pair p (groups 8p..8p+7): nibble j of the qh dword p, its
    // low 3 bits the grid index's bits 8.., bit 3 the delta's sign; quarter
    // q's ls bits 3(q % 4).. of scale word q / 4.
    static void prep(const B &x, const BlockQ8_K &y, Pre &pre) {
        const __m512i w =
            _mm512_castsi256_si512(_mm256_cvtepu16_epi32(_mm_loadl_epi64((const __m128i *)x.scales)));
        const __m512i idx = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        const __m512i shifts = _mm512_setr_epi32(0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9, 0, 3, 6, 9);
        const __m512i m =
            odd(_mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(idx, w), shifts), _mm512_set1_epi32(7)));
        pre.m16 = int16_pairs(m);
        pre.base = iq1_base(y, m, _mm512_setzero_si512());
    }
    static Pair pair(const B &x, const Pre &, int p) {
        uint32_t h;
        std::memcpy(&h, x.qh + 4 * p, 4);
        const uint8_t *q = x.qs + 8 * p;
        uint32_t i[8];
        indices4<4>(q, h & 0xFFFF, i);  // the nibbles whole: kIq1mValues holds the delta
        indices4<4>(q + 4, h >> 16, i + 4);
        return iq1_pair(grid64(kIq1mValues<kIq1Off>.data(), i));
    }
};

// Quarter q of the super-block as dwords 4q'.. of each 128-bit lane of pair p.
static inline __m512i pair_multipliers(__m512i m16, int p) {
    const __m512i q = _mm512_set1_epi32(4 * p);
    return _mm512_permutexvar_epi32(
        _mm512_add_epi32(q, _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)), m16);
}

template <class T>
float dot(int64_t n, const void *w, const void *act) {
    const typename T::B *x = (const typename T::B *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)act;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        Pre pre;
        T::prep(x[i], y[i], pre);
        __m512i acc = pre.base;
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) {
            const Pair u = T::pair(x[i], pre, p);
            const __m512i q8 = _mm512_loadu_si512(y[i].qs + 64 * p);
            const __m512i a = _mm512_mask_sub_epi8(q8, u.neg, _mm512_setzero_si512(), q8);
            acc = _mm512_add_epi32(acc,
                                   _mm512_madd_epi16(_mm512_maddubs_epi16(u.mag, a), pair_multipliers(pre.m16, p)));
        }
        // The scalar reference's f32 step, operation for operation.
        sum += (T::d(x[i]) * T::kScale) * y[i].d * (float)_mm512_reduce_add_epi32(acc);
    }
    return sum;
}

} // namespace

#if defined(VT_QUANT_VNNI)
void avx512vnni_fill_iquants(Kernels &k) {
#else
void avx512_fill_iquants(Kernels &k) {
#endif
    k.dot[(int)DType::IQ2_XXS] = dot<IQ2XXS>;
    k.dot[(int)DType::IQ2_XS] = dot<IQ2XS>;
    k.dot[(int)DType::IQ2_S] = dot<IQ2S>;
    k.dot[(int)DType::IQ3_XXS] = dot<IQ3XXS>;
    k.dot[(int)DType::IQ3_S] = dot<IQ3S>;
    k.dot[(int)DType::IQ1_S] = dot<IQ1S>;
    k.dot[(int)DType::IQ1_M] = dot<IQ1M>;
}

} // namespace vt::quant
