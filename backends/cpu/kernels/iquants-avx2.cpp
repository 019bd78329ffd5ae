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
#include <cstdint>

#include "core/quant/blocks.h"
#include "core/quant/iq-grids.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/iq-unpack.h"
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
// The multipliers of the low and high 16 elements as madd's int16 operand.
static inline __m256i mult16(int lo, int hi) {
    return _mm256_set_m128i(_mm_set1_epi16((short)hi), _mm_set1_epi16((short)lo));
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
// IQ1: 32 int8 grid values g (-1, 0, 1) and +-1 delta signs ds: v = 8 g + ds.
static inline Sub iq1_sub(__m256i g, __m256i ds, __m256i m16) {
    const __m256i v = _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), g), ds);
    return {_mm256_abs_epi8(v), v, m16};
}
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
        const int m = 2 * (int)(b >> 28) + 1;
        return signed_sub(q64(g[p[0]], g[p[1]], g[p[2]], g[p[3]]),
                          q64(sg[b & 127], sg[b >> 7 & 127], sg[b >> 14 & 127], sg[b >> 21 & 127]), mult16(m, m));
    }
};

struct IQ2XS {
    using B = BlockIQ2XS;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    static Sub sub(const B &x, int s) {
        const uint16_t *q = x.qs + 4 * s;
        const uint64_t *g = kIq2xsGrid, *sg = kSigns.idx7;
        const int sc = x.scales[s];
        return signed_sub(q64(g[q[0] & 511], g[q[1] & 511], g[q[2] & 511], g[q[3] & 511]),
                          q64(sg[q[0] >> 9], sg[q[1] >> 9], sg[q[2] >> 9], sg[q[3] >> 9]),
                          mult16(2 * (sc & 15) + 1, 2 * (sc >> 4) + 1));
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
        const int sc = x.scales[s];
        return signed_sub(q64(g[q[0] | (h & 3) << 8], g[q[1] | (h >> 2 & 3) << 8], g[q[2] | (h >> 4 & 3) << 8],
                              g[q[3] | (h >> 6 & 3) << 8]),
                          sign_bits_pm(sb), mult16(2 * (sc & 15) + 1, 2 * (sc >> 4) + 1));
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
        const int m = 2 * (int)(b >> 28) + 1;
        const __m256i mag = _mm256_setr_epi32((int)g[q[0]], (int)g[q[1]], (int)g[q[2]], (int)g[q[3]], (int)g[q[4]],
                                              (int)g[q[5]], (int)g[q[6]], (int)g[q[7]]);
        return signed_sub(mag, q64(sg[b & 127], sg[b >> 7 & 127], sg[b >> 14 & 127], sg[b >> 21 & 127]),
                          mult16(m, m));
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
        const int m = 2 * ((x.scales[s / 2] >> 4 * (s % 2)) & 15) + 1;
        const __m256i mag = _mm256_setr_epi32(
            (int)g[q[0] | (h << 8 & 256)], (int)g[q[1] | (h << 7 & 256)], (int)g[q[2] | (h << 6 & 256)],
            (int)g[q[3] | (h << 5 & 256)], (int)g[q[4] | (h << 4 & 256)], (int)g[q[5] | (h << 3 & 256)],
            (int)g[q[6] | (h << 2 & 256)], (int)g[q[7] | (h << 1 & 256)]);
        return signed_sub(mag, sign_bits_pm(sb), mult16(m, m));
    }
};

struct IQ1S {
    using B = BlockIQ1S;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(x.d); }
    static Sub sub(const B &x, int s) {
        const uint8_t *q = x.qs + 4 * s;
        const unsigned h = x.qh[s];
        const uint64_t *g = kIq1sGrid;
        const int m = 2 * (int)(h >> 12 & 7) + 1;
        return iq1_sub(q64(g[q[0] | (h & 7) << 8], g[q[1] | (h >> 3 & 7) << 8], g[q[2] | (h >> 6 & 7) << 8],
                           g[q[3] | (h >> 9 & 7) << 8]),
                       _mm256_set1_epi8(h & 0x8000 ? -1 : 1), mult16(m, m));
    }
};

struct IQ1M {
    using B = BlockIQ1M;
    static constexpr float kScale = 0.125f;
    static float d(const B &x) { return h2f_f16c(iq1m_d(x)); }
    static Sub sub(const B &x, int s) {
        const uint8_t *q = x.qs + 4 * s;
        const unsigned h0 = x.qh[2 * s], h1 = x.qh[2 * s + 1];
        const uint64_t *g = kIq1sGrid;
        const unsigned w = (unsigned)(x.scales[s / 2 * 2] | x.scales[s / 2 * 2 + 1] << 8) >> 6 * (s % 2);
        // The groups' delta signs (bits 3, 7, 11, 15 of h0 | h1 << 8) as
        // 8 bytes each of -1 where set, +1 where clear, compared in vector:
        // per-group selects built the vector from scalars at twice the cost.
        const __m256i bit = _mm256_setr_epi64x(0x0008000800080008, 0x0080008000800080, 0x0800080008000800,
                                               (long long)0x8000800080008000ull);
        const __m256i set = _mm256_cmpeq_epi16(_mm256_and_si256(_mm256_set1_epi16((short)(h0 | h1 << 8)), bit), bit);
        return iq1_sub(q64(g[q[0] | (h0 & 7) << 8], g[q[1] | (h0 >> 4 & 7) << 8], g[q[2] | (h1 & 7) << 8],
                           g[q[3] | (h1 >> 4 & 7) << 8]),
                       _mm256_or_si256(set, _mm256_set1_epi8(1)),
                       mult16(2 * (int)(w & 7) + 1, 2 * (int)(w >> 3 & 7) + 1));
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
