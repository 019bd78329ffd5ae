// Small AVX2 helpers shared by the x86 kernel files, and the f32 vector
// traits per width (Zmm only where the unit is built with AVX-512). Include
// only from translation units compiled with at least -mavx2 -mfma -mf16c;
// everything is static inline or in an anonymous namespace, so no
// out-of-line copy with wider ISA flags can leak into a narrower file's link.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace vt::quant::x86 {

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

namespace { // member functions of a named-namespace class would link as one weak copy

// f32 vector traits, one per width, for the kernels written once over the
// width (attention products, exp, the float gemm tiles): F the vector, W
// its lanes.
struct Ymm {
    using F = __m256;
    static constexpr int W = 8;
    static inline F zero() { return _mm256_setzero_ps(); }
    static inline F set1(float v) { return _mm256_set1_ps(v); }
    static inline F load(const float *p) { return _mm256_loadu_ps(p); }
    static inline void store(float *p, F v) { _mm256_storeu_ps(p, v); }
    static inline F f16(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
    // The first n (< W) lanes, the others zero: nothing past p + n is read.
    static inline F f16_n(const uint16_t *p, int n) {
        alignas(16) uint16_t t[W] = {};
        std::memcpy(t, p, (size_t)n * sizeof *p);
        return _mm256_cvtph_ps(_mm_load_si128((const __m128i *)t));
    }
    static inline __m256i first_n(int n) {
        return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    }
    static inline void store_n(float *p, F v, int n) { _mm256_maskstore_ps(p, first_n(n), v); }
    // Lanes n and above zeroed (n may be <= 0 or >= W).
    static inline F keep_first(F v, int n) { return _mm256_and_ps(v, _mm256_castsi256_ps(first_n(n))); }
    static inline F bf16(const uint16_t *p) {
        const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
        return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    }
    static inline F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
    static inline F add(F a, F b) { return _mm256_add_ps(a, b); }
    static inline F sub(F a, F b) { return _mm256_sub_ps(a, b); }
    static inline F mul(F a, F b) { return _mm256_mul_ps(a, b); }
    static inline F div(F a, F b) { return _mm256_div_ps(a, b); }
    static inline F max(F a, F b) { return _mm256_max_ps(a, b); }
    static inline F neg(F a) { return _mm256_xor_ps(a, set1(-0.f)); }
    static inline float hsum(F v) { return x86::hsum(v); }
    static inline float hmax(F v) {
        __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
    }
};
#if defined(__AVX512F__)
struct Zmm {
    using F = __m512;
    static constexpr int W = 16;
    static inline F zero() { return _mm512_setzero_ps(); }
    static inline F set1(float v) { return _mm512_set1_ps(v); }
    static inline F load(const float *p) { return _mm512_loadu_ps(p); }
    static inline void store(float *p, F v) { _mm512_storeu_ps(p, v); }
    static inline F f16(const uint16_t *p) { return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)); }
    // The first n (< W) lanes, the others zero: masked, nothing past p + n is read.
    static inline F f16_n(const uint16_t *p, int n) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16((__mmask16)((1u << n) - 1), p));
    }
    static inline void store_n(float *p, F v, int n) { _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1), v); }
    // Lanes n and above zeroed (n may be <= 0 or >= W).
    static inline F keep_first(F v, int n) {
        return _mm512_maskz_mov_ps(n <= 0 ? 0 : n >= W ? 0xFFFF : (__mmask16)((1u << n) - 1), v);
    }
    static inline F bf16(const uint16_t *p) {
        const __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
        return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
    }
    static inline F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
    static inline F add(F a, F b) { return _mm512_add_ps(a, b); }
    static inline F sub(F a, F b) { return _mm512_sub_ps(a, b); }
    static inline F mul(F a, F b) { return _mm512_mul_ps(a, b); }
    static inline F div(F a, F b) { return _mm512_div_ps(a, b); }
    static inline F max(F a, F b) { return _mm512_max_ps(a, b); }
    static inline F neg(F a) {
        return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(INT32_MIN)));
    }
    static inline float hsum(F v) { return _mm512_reduce_add_ps(v); }
    static inline float hmax(F v) { return _mm512_reduce_max_ps(v); }
};
#endif

// Per-thread scratch of the ISA sources, grown on demand and kept between
// calls: a vector of this type, not of float or uint8_t, whose members
// would link as weak copies shared with every other translation unit (the
// isa-linkage test).
struct alignas(64) Line {
    uint8_t b[64];
};
static inline uint8_t *scratch(std::vector<Line> &v, size_t bytes) {
    if (v.empty() || v.size() * 64 < bytes) v.resize(bytes / 64 + 1);
    return v.data()->b;
}
} // namespace

static inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

static inline float h2f_f16c(uint16_t h) { return _cvtsh_ss(h); }

// 16 packed bytes -> 32 nibbles: bytes 0..15 = low nibbles, 16..31 = high.
static inline __m256i nibbles32(const uint8_t *p) {
    const __m128i t = _mm_loadu_si128((const __m128i *)p);
    const __m256i v = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

// Bit i of x -> byte i = 0xFF or 0x00.
static inline __m256i bits_to_bytes(uint32_t x) {
    const __m256i shuf = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                            0x0202020202020202, 0x0303030303030303);
    __m256i r = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x), shuf);
    r = _mm256_or_si256(r, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    return _mm256_cmpeq_epi8(r, _mm256_set1_epi64x(-1));
}

// sum over pairs of u8 * s8 -> 8 x i32 (each i16 pair sum must not saturate,
// true for |u| <= 128, |s| <= 127).
// With VT_QUANT_VNNI (a translation unit built with -mavx512vnni -mavx512vl)
// this is one vpdpbusd, which has no int16 intermediate at all.
static inline __m256i dot_us8(__m256i u, __m256i s) {
#if defined(VT_QUANT_VNNI)
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// acc + the products of dot_us8 (with VNNI in one instruction).
static inline __m256i dot_us8_acc(__m256i acc, __m256i u, __m256i s) {
#if defined(VT_QUANT_VNNI)
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

#if defined(__AVX512F__)
// acc + sum of 4 u8 * s8 products per 32-bit lane. Without VNNI the
// vpmaddubsw pairs must not saturate: callers keep |u * s| <= 8160.
static inline __m512i dpbusd512(__m512i acc, __m512i u, __m512i s) {
#if defined(VT_QUANT_VNNI)
    return _mm512_dpbusd_epi32(acc, u, s);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
#endif
}
#endif

// Signed x signed bytes (x may be -128, y in -127..127).
static inline __m256i dot_ss8(__m256i x, __m256i y) {
    return dot_us8(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

} // namespace vt::quant::x86
