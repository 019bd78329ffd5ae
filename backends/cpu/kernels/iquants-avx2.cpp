// AVX2 dots of the i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
// IQ1_M) with Q8_K activations (built with -mavx2 -mfma -mf16c; the AVX-512
// tables keep them), bit-identical to the scalar references
// (lib/core/quant/iquants-scalar.cpp): per sub-block of 32 the grid entries
// are gathered into one vector of magnitudes, the signs moved onto the
// activations (vpsignb), maddubs forms the pair sums and madd multiplies
// them by the 16-element halves' multipliers m, all exact in int16/int32;
// the super-block's 8 vectors sum to the reference's exact isum, and its
// one f32 step is the reference's, operation for operation. The decoders
// (iq-unpack.h) hand the same values and multipliers to the row-lane tiles
// (gemm-iq-avx2.h, gemm-iq-x86.h).
//
// IQ1_S/IQ1_M's values v = 8 grid +- 1 are signed and never 0: maddubs
// takes |v| and the activations with v's sign.
//
// 1 thread, 8192 x 2048 decode, GFLOP/s, before -> after the multipliers
// per super-block (pick16) and IQ1's value tables (iq1-values.h): IQ1_M 24
// -> 33, IQ2_XS 25 -> 32, IQ2_S 26 -> 33, IQ3_S 18 -> 21, IQ1_S 28 -> 32;
// IQ2_XXS 32 and IQ3_XXS 24 unchanged.
#include <cstdint>
#include <cstring>

#include "core/quant/blocks.h"
#include "core/quant/iq-grids.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/iq-unpack.h"
#include "cpu/kernels/iq1-values.h"
#include "cpu/kernels/legacy-x86.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant {
namespace {
using namespace x86;

static inline __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

// Sign bytes as 8 bytes of +1 / -1 (bit j set: byte j is -1): by the byte
// itself, and by ggml's 7-bit sign index (iq_signs).
struct SignTables {
    uint64_t byte[256];
    uint64_t idx7[128];
};
constexpr uint64_t pm_bytes(uint32_t signs) {
    uint64_t v = 0;
    for (int j = 0; j < 8; ++j) v |= (uint64_t)((signs >> j) & 1 ? 0xFF : 0x01) << 8 * j;
    return v;
}
constexpr SignTables make_sign_tables() {
    SignTables t{};
    for (uint32_t i = 0; i < 256; ++i) t.byte[i] = pm_bytes(i);
    for (uint32_t i = 0; i < 128; ++i) t.idx7[i] = pm_bytes(iq_signs(i));
    return t;
}
constexpr SignTables kSigns = make_sign_tables();

static inline __m256i q64(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
    return _mm256_set_epi64x((long long)d, (long long)c, (long long)b, (long long)a);
}
// 32 sign bits (bit j: element j is negative) as +-1 bytes, in vector: the
// table reads of kSigns.byte per 8 and the vector built from them cost
// twice the operations.
static inline __m256i sign_bits_pm(const uint8_t *b) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32((int)load_u32(b)),
        _mm256_setr_epi64x(0, 0x0101010101010101, 0x0202020202020202, 0x0303030303030303));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    return _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(1));
}
// A super-block's 16 multipliers m = 2 f + 1 as one vector, formed once per
// super-block (the dot's unrolled subs share it; built per sub-block from
// scalars they cost IQ1_M a quarter of its time): sub-block s's low half's
// at int16 k(s) of the low lane, its high half's at k(s) of the high lane,
// k(s) = s unless the type says otherwise. madd's operand for sub-block s
// is then one shuffle.
static inline __m256i odd16(__m256i f) { return _mm256_or_si256(_mm256_add_epi16(f, f), _mm256_set1_epi16(1)); }
static inline __m256i pick16(__m256i m, int k) {
    return _mm256_shuffle_epi8(m, _mm256_set1_epi16((short)(2 * k | (2 * k + 1) << 8)));
}
// One multiplier per sub-block (fields f[s], 8 int16): the same in both lanes.
static inline __m256i per32(__m128i f) { return odd16(_mm256_broadcastsi128_si256(f)); }
// Nibbles of bytes b[s]: the low the first half's field, the high the second's.
static inline __m256i nibble_multipliers(const uint8_t *b) {
    const __m128i t = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)b));
    return odd16(_mm256_set_m128i(_mm_srli_epi16(t, 4), _mm_and_si128(t, _mm_set1_epi16(15))));
}
// The top nibbles of 8 dwords (IQ2_XXS / IQ3_XXS's ls: a scale per 32).
static inline __m256i top_nibble_multipliers(__m256i w) {
    const __m256i f = _mm256_srli_epi32(w, 28);
    return per32(_mm_packus_epi32(_mm256_castsi256_si128(f), _mm256_extracti128_si256(f, 1)));
}
// A sub-block of 32 decoded for the integer dot: unsigned magnitudes, the
// signs to put on the activations (+-1 bytes, or for IQ1 the signed values
// themselves: never 0), and the 16-element halves' multipliers as madd's
// int16 operand.
struct Sub {
    __m256i mag, sgn, m16;
};
// 32 unsigned magnitudes with +-1 signs.
static inline Sub signed_sub(__m256i mag, __m256i pm, __m256i m16) { return {mag, pm, m16}; }
// IQ1: 32 values v (never 0) are their own signs.
static inline Sub iq1_sub(__m256i v, __m256i m16) { return {_mm256_abs_epi8(v), v, m16}; }
// The sub-block times 32 activations: pairs summed by maddubs, times the
// multipliers by madd, 8 exact int32.
static inline __m256i sub_dot(const Sub &u, const int8_t *q8) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u.mag, _mm256_sign_epi8(load256(q8), u.sgn)), u.m16);
}

struct IQ2XXS {
    using B = BlockIQ2XXS;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    static Sub sub(const B &x, int s) {
        const uint8_t *p = x.qs + 8 * s;
        const uint32_t b = load_u32(p + 4);
        const uint64_t *g = kIq2xxsGrid, *sg = kSigns.idx7;
        return signed_sub(q64(g[p[0]], g[p[1]], g[p[2]], g[p[3]]),
                          q64(sg[b & 127], sg[b >> 7 & 127], sg[b >> 14 & 127], sg[b >> 21 & 127]),
                          pick16(multipliers(x), s));
    }
    // Words b at qs[8s + 4]: the high dwords of the block's 8 qwords.
    static __m256i multipliers(const B &x) {
        const __m256i lo = load256(x.qs), hi = load256(x.qs + 32);
        const __m256i odd = _mm256_setr_epi32(1, 3, 5, 7, 1, 3, 5, 7);
        return top_nibble_multipliers(_mm256_blend_epi32(_mm256_permutevar8x32_epi32(lo, odd),
                                                         _mm256_permutevar8x32_epi32(hi, odd), 0xF0));
    }
};

struct IQ2XS {
    using B = BlockIQ2XS;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    static Sub sub(const B &x, int s) {
        const uint16_t *q = x.qs + 4 * s;
        const uint64_t *g = kIq2xsGrid, *sg = kSigns.idx7;
        return signed_sub(q64(g[q[0] & 511], g[q[1] & 511], g[q[2] & 511], g[q[3] & 511]),
                          q64(sg[q[0] >> 9], sg[q[1] >> 9], sg[q[2] >> 9], sg[q[3] >> 9]),
                          pick16(nibble_multipliers(x.scales), s));
    }
};

struct IQ2S {
    using B = BlockIQ2S;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    static Sub sub(const B &x, int s) {
        const uint8_t *q = x.qs + 4 * s, *sb = x.qs + 32 + 4 * s;
        const unsigned h = x.qh[s];
        const uint64_t *g = kIq2sGrid;
        return signed_sub(q64(g[q[0] | (h & 3) << 8], g[q[1] | (h >> 2 & 3) << 8], g[q[2] | (h >> 4 & 3) << 8],
                              g[q[3] | (h >> 6 & 3) << 8]),
                          sign_bits_pm(sb), pick16(nibble_multipliers(x.scales), s));
    }
};

struct IQ3XXS {
    using B = BlockIQ3XXS;
    static constexpr float kScale = 0.25f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    static Sub sub(const B &x, int s) {
        const uint8_t *q = x.qs + 8 * s;
        const uint32_t b = load_u32(x.qs + 64 + 4 * s);
        const uint32_t *g = kIq3xxsGrid;
        const uint64_t *sg = kSigns.idx7;
        const __m256i mag = _mm256_setr_epi32((int)g[q[0]], (int)g[q[1]], (int)g[q[2]], (int)g[q[3]], (int)g[q[4]],
                                              (int)g[q[5]], (int)g[q[6]], (int)g[q[7]]);
        return signed_sub(mag, q64(sg[b & 127], sg[b >> 7 & 127], sg[b >> 14 & 127], sg[b >> 21 & 127]),
                          pick16(top_nibble_multipliers(load256(x.qs + 64)), s));
    }
};

struct IQ3S {
    using B = BlockIQ3S;
    static constexpr float kScale = 1.f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    static Sub sub(const B &x, int s) {
        const uint8_t *q = x.qs + 8 * s, *sb = x.signs + 4 * s;
        const unsigned h = x.qh[s];
        const uint32_t *g = kIq3sGrid;
        const __m256i mag = _mm256_setr_epi32(
            (int)g[q[0] | (h << 8 & 256)], (int)g[q[1] | (h << 7 & 256)], (int)g[q[2] | (h << 6 & 256)],
            (int)g[q[3] | (h << 5 & 256)], (int)g[q[4] | (h << 4 & 256)], (int)g[q[5] | (h << 3 & 256)],
            (int)g[q[6] | (h << 2 & 256)], (int)g[q[7] | (h << 1 & 256)]);
        return signed_sub(mag, sign_bits_pm(sb), pick16(multipliers(x), s));
    }
    // ls of sub-block s: nibble s % 2 of scales[s / 2].
    static __m256i multipliers(const B &x) {
        const __m128i t = _mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)load_u32(x.scales)));
        return per32(_mm_unpacklo_epi16(_mm_and_si128(t, _mm_set1_epi16(15)), _mm_srli_epi16(t, 4)));
    }
};

struct IQ1S {
    using B = BlockIQ1S;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    static Sub sub(const B &x, int s) {
        const uint8_t *q = x.qs + 4 * s;
        const unsigned h = x.qh[s];
        const uint64_t *g = kIq1sValues<0>.data();
        const __m256i g8 = q64(g[q[0] | (h & 7) << 8], g[q[1] | (h >> 3 & 7) << 8], g[q[2] | (h >> 6 & 7) << 8],
                               g[q[3] | (h >> 9 & 7) << 8]);
        return iq1_sub(_mm256_add_epi8(g8, _mm256_set1_epi8(h & 0x8000 ? -1 : 1)), pick16(multipliers(x), s));
    }
    // ls of sub-block s: bits 12..14 of qh[s].
    static __m256i multipliers(const B &x) {
        const __m128i h = _mm_loadu_si128((const __m128i *)x.qh);
        return per32(_mm_and_si128(_mm_srli_epi16(h, 12), _mm_set1_epi16(7)));
    }
};

struct IQ1M {
    using B = BlockIQ1M;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(iq1m_d(x)); }
    // Group l's qh nibble whole indexes kIq1mValues (delta sign included).
    static Sub sub(const B &x, int s) {
        const uint8_t *q = x.qs + 4 * s;
        const unsigned h0 = x.qh[2 * s], h1 = x.qh[2 * s + 1];
        const uint64_t *g = kIq1mValues<0>.data();
        const __m256i v = q64(g[q[0] | (h0 & 15) << 8], g[q[1] | (h0 >> 4) << 8], g[q[2] | (h1 & 15) << 8],
                              g[q[3] | (h1 >> 4) << 8]);
        return iq1_sub(v, pick16(multipliers(x), (s >> 1) + 4 * (s & 1)));
    }
    // Quarter q's 3 bits at 3 (q % 4) of scale word q / 4: each 64-bit
    // lane shifted so that its int16 hold quarters 0, 4, 8, 12 (shift 0),
    // 2, 6, .. (6), 1, 5, .. (3), 3, 7, .. (9): sub-block s's at int16
    // (s >> 1) + 4 (s & 1) of each lane.
    static __m256i multipliers(const B &x) {
        uint64_t w;
        std::memcpy(&w, x.scales, 8);
        return odd16(_mm256_and_si256(
            _mm256_srlv_epi64(_mm256_set1_epi64x((long long)w), _mm256_setr_epi64x(0, 6, 3, 9)), _mm256_set1_epi16(7)));
    }
};

// The super-block's f32 step of the scalar reference, operation for operation.
template <class T>
static inline float step(const typename T::B &x, const BlockQ8_K &y, __m256i acc) {
    return (T::d(x) * T::kScale) * y.d * (float)hsum_i32(acc);
}

template <class T>
float dot(int64_t n, const void *w, const void *act) {
    const typename T::B *x = (const typename T::B *)w;
    const BlockQ8_K *y = (const BlockQ8_K *)act;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        __m256i acc = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int s = 0; s < QK_K / 32; ++s) acc = _mm256_add_epi32(acc, sub_dot(T::sub(x[i], s), y[i].qs + 32 * s));
        sum += step<T>(x[i], y[i], acc);
    }
    return sum;
}

// iq-unpack.h's decoder: each sub-block's signed values (mag with its
// signs) + the offset, and its halves' multipliers.
template <class T_>
void unpack(const void *block, uint8_t *u, int32_t *m, float *dk) {
    const typename T_::B &x = *(const typename T_::B *)block;
    for (int s = 0; s < 8; ++s) {
        const Sub v = T_::sub(x, s);
        _mm256_storeu_si256((__m256i *)(u + 32 * s), _mm256_add_epi8(_mm256_sign_epi8(v.mag, v.sgn),
                                                                     _mm256_set1_epi8((char)kIqUnpackOff)));
        m[2 * s] = (int16_t)_mm256_extract_epi16(v.m16, 0);
        m[2 * s + 1] = (int16_t)_mm256_extract_epi16(v.m16, 8);
    }
    *dk = T_::d(x) * T_::kScale;
}

} // namespace

IqUnpackFn iq_unpack_avx2(DType t) {
    switch (t) {
    case DType::IQ2_XXS: return unpack<IQ2XXS>;
    case DType::IQ2_XS: return unpack<IQ2XS>;
    case DType::IQ2_S: return unpack<IQ2S>;
    case DType::IQ3_XXS: return unpack<IQ3XXS>;
    case DType::IQ3_S: return unpack<IQ3S>;
    case DType::IQ1_S: return unpack<IQ1S>;
    case DType::IQ1_M: return unpack<IQ1M>;
    default: return nullptr;
    }
}

void avx2_fill_iquants(Kernels &k) {
    k.dot[(int)DType::IQ2_XXS] = dot<IQ2XXS>;
    k.dot[(int)DType::IQ2_XS] = dot<IQ2XS>;
    k.dot[(int)DType::IQ2_S] = dot<IQ2S>;
    k.dot[(int)DType::IQ3_XXS] = dot<IQ3XXS>;
    k.dot[(int)DType::IQ3_S] = dot<IQ3S>;
    k.dot[(int)DType::IQ1_S] = dot<IQ1S>;
    k.dot[(int)DType::IQ1_M] = dot<IQ1M>;
}

} // namespace vt::quant
