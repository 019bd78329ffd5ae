// GGUF/ggml block layouts and the scalar helpers every kernel file shares.
//
// Every struct is bit-identical to ggml's block_<type> (ggml-common.h): fp16
// fields are raw IEEE binary16 bits in a uint16_t, little-endian, no padding.
// Rows in a GGUF file are only guaranteed 2-byte alignment for the 18/22/34-byte
// blocks, so SIMD code loads them unaligned.
//
// The helpers are `static inline` on purpose: this header is included by
// translation units built with different -m flags, and an inline function
// with external linkage could be emitted there with AVX-512 code and then
// picked by the linker for the scalar callers too.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace vt::quant {

constexpr int QK = 32;    // elements per legacy block (Q4_0 .. Q8_1)
constexpr int QK_K = 256; // elements per K-quant super-block

// x = d * (q - 8); element j in low nibble of qs[j], element j+16 in the high nibble.
struct BlockQ4_0 { uint16_t d; uint8_t qs[QK / 2]; };
// x = d * q + m; same nibble order as Q4_0.
struct BlockQ4_1 { uint16_t d, m; uint8_t qs[QK / 2]; };
// x = d * (q - 16); q = nibble | bit j of qh (uint32 LE) << 4, elements j / j+16
// use bits j / j+16.
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[QK / 2]; };
// x = d * q + m; nibbles and high bits as Q5_0.
struct BlockQ5_1 { uint16_t d, m; uint8_t qh[4]; uint8_t qs[QK / 2]; };
// x = d * q.
struct BlockQ8_0 { uint16_t d; int8_t qs[QK]; };
// x = d * q; s = d * sum(q) (the activation side of Q4_1/Q5_1 dots).
struct BlockQ8_1 { uint16_t d, s; int8_t qs[QK]; };

// 16 sub-blocks of 16; scales[j] = scale (low nibble) | min (high nibble);
// x = d*sc*q - dmin*m, q = 2 bits. For each 128-element half h, byte l of
// qs[32h..32h+31] holds elements 128h + 32s + l at bits 2s (s = 0..3).
struct BlockQ2_K { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d, dmin; };
// x = d * (sc - 32) * (q - (hmask bit ? 0 : 4)); q as Q2_K's 2-bit layout,
// hmask[l] bit (4h + s) is the high bit of element 128h + 32s + l;
// 16 six-bit scales packed in 12 bytes (see kquants-scalar.cpp).
struct BlockQ3_K { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; };
// 8 sub-blocks of 32, 6-bit scale and min each packed in 12 bytes
// (scale_min_k4); x = d*sc*q - dmin*m. qs[32c + l]: low nibble = element
// 64c + l, high nibble = element 64c + 32 + l.
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; };
// Q4_K plus a fifth bit: qh[l] bit 2c (2c+1) is the high bit of element
// 64c + l (64c + 32 + l).
struct BlockQ5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; };
// x = d * scales[e/16] * (q - 32), q 6 bits: per 128-half h, l = 0..31:
// element 128h + l      = ql[64h + l] & 15      | (qh[32h + l] >> 0 & 3) << 4
// element 128h + 32 + l = ql[64h + 32 + l] & 15 | (qh[32h + l] >> 2 & 3) << 4
// element 128h + 64 + l = ql[64h + l] >> 4      | (qh[32h + l] >> 4 & 3) << 4
// element 128h + 96 + l = ql[64h + 32 + l] >> 4 | (qh[32h + l] >> 6 & 3) << 4
struct BlockQ6_K { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; };
// Activation side of all K-quant dots: f32 scale, bsums[j] = sum of qs[16j..16j+15].
struct BlockQ8_K { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; };

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
// MXFP4 (OCP microscaling FP4, ggml's block_mxfp4): one e8m0 exponent e and
// 32 e2m1 codes, element j in the low nibble of qs[j], element j+16 in the
// high nibble (Q4_0's order). x = kMxfp4Values[code] * 2^(e - 128): the table
// holds the e2m1 values doubled (integers), so the scale is half of e8m0's
// 2^(e - 127). ggml gives every e a finite scale, 255 included (2^127; the
// format's NaN is not special-cased), and e = 0, 1 subnormal ones.
struct BlockMXFP4 { uint8_t e; uint8_t qs[QK / 2]; };

// IQ4_NL (ggml's block_iq4_nl): x = d * kIq4nlValues[code], codes in
// Q4_0's nibble order (element j low nibble of qs[j], j+16 high nibble).
struct BlockIQ4NL { uint16_t d; uint8_t qs[QK / 2]; };
// IQ4_XS (block_iq4_xs): 8 sub-blocks of 32 with IQ4_NL's codes and order,
// sub-block s scaled by d * (ls - 32), ls 6 bits: the low 4 in nibble s % 2
// of scales_l[s / 2], the high 2 in bits 2s..2s+1 of scales_h (iq4xs_scale).
struct BlockIQ4XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; };

static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockIQ4NL) == 18 && sizeof(BlockIQ4XS) == 136);
// NVFP4 (ggml's block_nvfp4, type 40): 64 elements in 4 sub-blocks of 16,
// each with a UE4M3 scale byte d[s] (ue4m3_half) and 8 code bytes
// qs[8s..8s+7] of e2m1 codes (kMxfp4Values, doubled): element 16s + j in
// the low nibble of qs[8s + j], 16s + 8 + j in its high nibble (j < 8).
struct BlockNVFP4 { uint8_t d[4]; uint8_t qs[32]; };
// TQ1_0 (block_tq1_0, type 34): 256 ternary weights x = (t - 1) * d, t in
// 0..2, as base-3 fractions: a byte b holds trits b * 3^n mod 256 * 3 >> 8
// (n = 0..4, the first the most significant; tq_trit). Elements 32n + m
// are trit n of qs[m] (m < 32), 160 + 16n + m trit n of qs[32 + m] (m <
// 16), 240 + 4n + j trit n of qh[j] (n < 4).
struct BlockTQ1_0 { uint8_t qs[48]; uint8_t qh[4]; uint16_t d; };
// TQ2_0 (block_tq2_0, type 35): x = (q - 1) * d, q 2 bits: element
// 128h + 32l + m is bits 2l..2l+1 of qs[32h + m].
struct BlockTQ2_0 { uint8_t qs[64]; uint16_t d; };
static_assert(sizeof(BlockTQ1_0) == 54 && sizeof(BlockTQ2_0) == 66);

// FP8_E4M3 (vt's own type 43, no GGUF's): the FP8 checkpoint formats
// (DeepSeek's and Qwen's 128 x 128 blocks, compressed-tensors' per-channel,
// per-tensor and block scales) as one row layout: 64 e4m3fn bytes q (sign,
// 4 exponent bits of bias 7, 3 mantissa bits; 0x7F and 0xFF are NaN, which
// no weight holds) and the f32 scale d of the checkpoint block they lie in,
// repeated for each 64 of a row (x = e4m3(q) * d).
struct BlockFP8 { float d; uint8_t q[64]; };
static_assert(sizeof(BlockFP8) == 68);
// Q1_0 (block_q1_0, type 41): x = bit ? d : -d, element j at bit j % 8 of
// qs[j / 8], 128 per block.
struct BlockQ1_0 { uint16_t d; uint8_t qs[16]; };
// Q2_0 (block_q2_0, type 42): x = (q - 1) * d, q = bits 2(j % 4)..+1 of
// qs[j / 4], 64 per block.
struct BlockQ2_0 { uint16_t d; uint8_t qs[16]; };
static_assert(sizeof(BlockNVFP4) == 36 && sizeof(BlockQ1_0) == 18 && sizeof(BlockQ2_0) == 18);

// The i-quants (ggml types 16-19, 21, 22, 29; ggml-common.h block_iq*):
// 256 elements in 8 sub-blocks s of 32, each 4 groups l of 8 (group
// g = 4s + l, elements 8g..8g+7). A group's 8 magnitudes are one entry of a
// lattice grid (iq-grids.h, element j = byte j), its signs one byte (bit j
// set: element j negative), directly or as a 7-bit index into iq_signs.
// Each sub-block (or 16-element half) has an odd multiplier m = 2 ls + 1.
// The values below are exact: x = d * m * grid * sign / 8 (IQ2_*),
// / 4 (IQ3_XXS), / 1 (IQ3_S); IQ1: x = d * m * (grid + delta), grid -1/0/1,
// delta = +-1/8 (ggml's IQ1S_DELTA), i.e. d * m * (8 grid +- 1) / 8.
//
// IQ2_XXS: qs as 8 pairs of u32 (a, b) per sub-block s (bytes 8s..8s+7):
// byte l of a is group l's kIq2xxsGrid index, bits 7l..7l+6 of b its sign
// index, b >> 28 the sub-block's ls.
struct BlockIQ2XXS { uint16_t d; uint8_t qs[64]; };
// IQ2_XS: qs[4s + l] = group's kIq2xsGrid index (low 9 bits) | sign index
// << 9; ls of the half h = l / 2 in nibble h of scales[s].
struct BlockIQ2XS { uint16_t d; uint16_t qs[32]; uint8_t scales[8]; };
// IQ2_S: group index = qs[4s + l] | (bits 2l..2l+1 of qh[s]) << 8 into
// kIq2sGrid (1024); its sign byte is qs[32 + 4s + l]; scales as IQ2_XS.
struct BlockIQ2S { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t scales[8]; };
// IQ3_XXS: group l's two halves of 4 are kIq3xxsGrid[qs[8s + 2l]] and
// [qs[8s + 2l + 1]]; the u32 at qs + 64 + 4s holds the 4 sign indices
// (bits 7l..) and ls (>> 28).
struct BlockIQ3XXS { uint16_t d; uint8_t qs[96]; };
// IQ3_S: half k (0..7) of sub-block s is kIq3sGrid[qs[8s + k] | (bit k of
// qh[s]) << 8]; group l's sign byte signs[4s + l]; ls in nibble s % 2 of
// scales[s / 2].
struct BlockIQ3S { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t signs[32]; uint8_t scales[4]; };
// IQ1_S: group index qs[4s + l] | (bits 3l..3l+2 of qh[s]) << 8 into
// kIq1sGrid (2048); qh[s] bits 12..14 ls, bit 15 set: delta = -1/8.
struct BlockIQ1S { uint16_t d; uint8_t qs[32]; uint16_t qh[8]; };
// IQ1_M: group index qs[4s + l] | (low 3 bits of nibble n) << 8, nibble n
// = l % 2 of qh[2s + l / 2], whose bit 3 set means delta = -1/8; the
// scales as four u16 words w: bits 6(s % 2) + 3h .. +2 of w[s / 2] are ls of
// half h of sub-block s, and the top nibbles of w[0..3] are the four nibbles
// (low first) of the block's f16 d (iq1m_d).
struct BlockIQ1M { uint8_t qs[32]; uint8_t qh[16]; uint8_t scales[8]; };
static_assert(sizeof(BlockIQ2XXS) == 66 && sizeof(BlockIQ2XS) == 74 && sizeof(BlockIQ2S) == 82);
static_assert(sizeof(BlockIQ3XXS) == 98 && sizeof(BlockIQ3S) == 110);
static_assert(sizeof(BlockIQ1S) == 50 && sizeof(BlockIQ1M) == 56);
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// Exact binary16 -> f32 (subnormals and NaN payloads kept; a signalling NaN
// comes back quiet, as F16C's vcvtph2ps does).
static inline float h2f(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    const uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    uint32_t bits;
    if (e == 0) {
        if (m == 0) return std::bit_cast<float>(sign);
        float v = (float)m * 0x1p-24f; // exact: m < 2^10
        return std::bit_cast<float>(std::bit_cast<uint32_t>(v) | sign);
    } else if (e == 31) {
        bits = sign | 0x7f800000 | (m << 13) | (m ? 0x400000u : 0u);
    } else {
        bits = sign | ((e + 112) << 23) | (m << 13);
    }
    return std::bit_cast<float>(bits);
}

// f32 -> binary16, round to nearest-even, bit-identical to F16C's
// vcvtps2ph with imm 0 (NaN: quiet, top payload bits kept). Pure integer
// code so the result does not depend on MXCSR (FTZ/DAZ, rounding mode).
static inline uint16_t f2h(float f) {
    const uint32_t x = std::bit_cast<uint32_t>(f);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    const uint32_t ax = x & 0x7fffffff;
    if (ax > 0x7f800000) return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
    if (ax >= 0x477ff000) return (uint16_t)(sign | 0x7c00); // >= 65520 rounds to inf
    if (ax >= 0x38800000) {                                 // normal half (>= 2^-14)
        uint32_t r = ax - 0x38000000;                       // rebias exponent 127 -> 15
        r += 0xfff + ((r >> 13) & 1);
        return (uint16_t)(sign | (r >> 13));
    }
    const uint32_t e = ax >> 23;
    if (e < 102) return sign; // below 2^-25: rounds to zero
    // Subnormal half: value / 2^-24 = mant * 2^(e - 126), shift in [14, 24].
    const uint32_t mant = (ax & 0x7fffff) | 0x800000;
    const uint32_t s = 126 - e;
    uint32_t q = mant >> s;
    const uint32_t rem = mant & ((1u << s) - 1), half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1))) ++q; // q == 0x400 is the smallest normal
    return (uint16_t)(sign | q);
}

static inline float b2f(uint16_t h) { return std::bit_cast<float>((uint32_t)h << 16); }

// f32 -> bfloat16 as ggml's GGML_FP32_TO_BF16: nearest-even, NaN forced quiet.
static inline uint16_t f2b(float f) {
    const uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 64);
    return (uint16_t)((u + (0x7fff + ((u >> 16) & 1))) >> 16);
}

// Round to nearest, ties to even, for |v| < 2^22 (ggml's nearest_int): the
// same result as cvtps2dq under the default MXCSR, without depending on it.
static inline int nearest_int(float v) {
    const float t = v + 12582912.f; // 1.5 * 2^23 pins the integer into the mantissa
    return (int)(std::bit_cast<uint32_t>(t) & 0x007fffff) - 0x00400000;
}

// 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K super-block.
// Bytes 0..3: scales 0..3 (low 6 bits), bytes 4..7: mins 0..3 (low 6 bits);
// bytes 8..11: low nibble = scale 4..7 low bits, high nibble = min 4..7 low
// bits; their top 2 bits are the top 2 bits of bytes 0..3 (scale) / 4..7 (min).
static inline void scale_min_k4(int j, const uint8_t *q, int &sc, int &m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// The 16 signed scales of a Q3_K block (already minus 32). Scale j: low 4 bits
// from nibble (j / 8) of byte j % 8, top 2 bits from bits 2*(j/4) of byte
// 8 + j % 4. Done four scales per 32-bit word.
static inline void q3k_scales(const uint8_t *s, int8_t out[16]) {
    uint32_t a[3], r[4];
    std::memcpy(a, s, 12);
    r[0] = (a[0] & 0x0f0f0f0f) | ((a[2] & 0x03030303) << 4);              // scales 0..3
    r[1] = (a[1] & 0x0f0f0f0f) | (((a[2] >> 2) & 0x03030303) << 4);       // 4..7
    r[2] = ((a[0] >> 4) & 0x0f0f0f0f) | (((a[2] >> 4) & 0x03030303) << 4); // 8..11
    r[3] = ((a[1] >> 4) & 0x0f0f0f0f) | (((a[2] >> 6) & 0x03030303) << 4); // 12..15
    uint8_t u[16];
    std::memcpy(u, r, 16);
    for (int j = 0; j < 16; ++j) out[j] = (int8_t)(u[j] - 32);
}

// An e4m3fn byte as the IEEE binary16 bits of its value / 256: the sign to
// bit 15, exponent and mantissa to bits 13..7. Both formats keep the
// subnormals' step (e4m3's m * 2^-9, binary16's 2^-14 steps times 2^-8
// after the shift), so the conversion is exact for every non-NaN byte.
static inline uint16_t fp8_e4m3_half16(uint8_t x) {
    return (uint16_t)((x & 0x80) << 8 | (x & 0x7F) << 7);
}

// Trit n (0..4) of a TQ1_0 byte: 0, 1 or 2.
static inline int tq_trit(uint8_t b, int n) {
    static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    return (int)(((uint16_t)(uint8_t)(b * kPow3[n]) * 3) >> 8);
}

// Twice the e2m1 value of each 4-bit code: sign bit 3, exponent bits 2..1,
// mantissa bit 0 (codes 0 and 8 are +0 and -0).
static constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// NVFP4's sub-block scale as ggml reads its UE4M3 byte (ggml-impl.h
// ggml_ue4m3_to_fp32), halved for the doubled e2m1 table: bits 6..3 the
// exponent (bias 7), 2..0 the mantissa, bit 7 not read; 0 and 0x7F (the
// format's NaN) give 0. Every value is exact in f32.
static inline float ue4m3_half(uint8_t x) {
    if (x == 0 || x == 0x7F) return 0.f;
    const int e = (x >> 3) & 0xF, m = x & 7;
    // (e ? 8 + m : m) * 2^(e ? e - 7 - 3 : -9) / 2, built from the bits: a
    // normal f32 with exponent e - 8 and mantissa m << 20, or m * 2^-10.
    if (e == 0) return (float)m * 0x1p-10f;
    return std::bit_cast<float>((uint32_t)(e - 8 + 127) << 23 | (uint32_t)m << 20);
}

// The 16 signed levels of IQ4_NL and IQ4_XS codes (ggml's kvalues_iq4nl: a
// non-uniform grid fitted to weight distributions).
static constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// Sub-block s's signed scale (ls - 32, -32..31) of an IQ4_XS block.
static inline int iq4xs_scale(const BlockIQ4XS &x, int s) {
    return (((x.scales_l[s / 2] >> 4 * (s % 2)) & 0xF) | (((x.scales_h >> 2 * s) & 3) << 4)) - 32;
}

// 2^(e - 128) as an f32, exactly: the MXFP4 block scale (e8m0's 2^(e - 127),
// halved for the doubled table). e >= 2 is a normal with biased exponent
// e - 1; e = 1 and 0 are the subnormals 2^-127 and 2^-128.
static inline float e8m0_half(uint8_t e) {
    return std::bit_cast<float>(e >= 2 ? (uint32_t)(e - 1) << 23 : 0x00200000u << e);
}

static inline uint32_t load_u32(const uint8_t *p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

// ggml's ksigns_iq2xs, computed: a 7-bit sign index plus an eighth bit that
// makes the count of set (negative) bits even.
static constexpr uint8_t iq_signs(uint32_t i) {
    return (uint8_t)((i & 127) | (uint32_t)(std::popcount(i & 127) & 1) << 7);
}

// IQ1_M's f16 d, from the top nibbles of its four scale words.
static inline uint16_t iq1m_d(const BlockIQ1M &x) {
    uint16_t w[4];
    std::memcpy(w, x.scales, 8);
    return (uint16_t)((w[0] >> 12) | ((w[1] >> 8) & 0x00F0) | ((w[2] >> 4) & 0x0F00) | (w[3] & 0xF000));
}

} // namespace vt::quant
