// Row-lane tiles (one weight row per 32-bit lane) for the quantized types:
// the pieces every vector width shares, the AVX-512 tiles of
// gemm-rows-x86.h, gemm-q4k-x86.h, gemm-q6k-x86.h and
// gemm-legacy-lanes-x86.h, and the AVX2 ones of gemm-lanes-avx2.h,
// gemm-q4k-avx2.h and gemm-q6k-avx2.h: the 32-element types' weight bytes
// (Ops*), the drivers over packed rows (gemm_lanes) and over the _X16
// layouts (gemm_x16), the activations made ready per call.
#pragma once

#include "cpu/kernels/gemm-x86.h"
#include "cpu/kernels/legacy-x86.h"

namespace vt::quant::x86 {
namespace {

static inline __m256i load_q(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

// ---- 32-element block types: what the row-lane tiles need per type. kOff:
// the u8 offset of W (0: no correction, < 0: signed weights, the sign trick
// per product); W(): a weight block as 32 bytes; kMin: weights carry a min
// (activation is Q8_1).
struct OpsQ4_0 {
    using BW = BlockQ4_0;
    using BA = BlockQ8_0;
    static constexpr int kOff = 8;
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x) { return nibbles32(x.qs); }
};
struct OpsQ4_1 {
    using BW = BlockQ4_1;
    using BA = BlockQ8_1;
    static constexpr int kOff = 0;
    static constexpr bool kMin = true;
    static inline __m256i W(const BW &x) { return nibbles32(x.qs); }
};
static inline __m256i q5_bytes(const uint8_t *qh, const uint8_t *qs) {
    const __m256i hi = _mm256_and_si256(bits_to_bytes(load_u32(qh)), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(nibbles32(qs), hi);
}
struct OpsQ5_0 {
    using BW = BlockQ5_0;
    using BA = BlockQ8_0;
    static constexpr int kOff = 16;
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x) { return q5_bytes(x.qh, x.qs); }
};
struct OpsQ5_1 {
    using BW = BlockQ5_1;
    using BA = BlockQ8_1;
    static constexpr int kOff = 0;
    static constexpr bool kMin = true;
    static inline __m256i W(const BW &x) { return q5_bytes(x.qh, x.qs); }
};
#if defined(VT_QUANT_VNNI)
// (x + 128) * y - 128 * y; x + 128 is x ^ 0x80 as u8.
struct OpsQ8_0 {
    using BW = BlockQ8_0;
    using BA = BlockQ8_0;
    static constexpr int kOff = 128;
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x) { return _mm256_xor_si256(load_q(x.qs), _mm256_set1_epi8((char)0x80)); }
};
#else
// Without VNNI the unsigned form would saturate vpmaddubsw (255 * 127 * 2):
// keep the weights signed (kOff < 0) for the sign trick.
struct OpsQ8_0 {
    using BW = BlockQ8_0;
    using BA = BlockQ8_0;
    static constexpr int kOff = -1;
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x) { return load_q(x.qs); }
};
#endif

// MXFP4: the doubled e2m1 values (-12..12) plus 12, unsigned; the scale is
// the e8m0 exponent's (weight_d, legacy-x86.h).
struct OpsMXFP4 {
    using BW = BlockMXFP4;
    using BA = BlockQ8_0;
    static constexpr int kOff = 12;
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x) { return mxfp4_bytes(x.qs, kOff); }
};

// IQ4_NL: its levels (-127..113), plus 128 for vpdpbusd's unsigned operand
// (as Q8_0's); without VNNI signed, for the sign trick (vpmaddubsw would
// saturate 241 * 127 * 2).
struct OpsIQ4NL {
    using BW = BlockIQ4NL;
    using BA = BlockQ8_0;
#if defined(VT_QUANT_VNNI)
    static constexpr int kOff = 128;
#else
    static constexpr int kOff = -1;
#endif
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x) { return iq4nl_bytes(x.qs, kOff > 0 ? kOff : 0); }
};

// Q1_0 (128 per block) and Q2_0 (64): each 32-element piece is one group of
// the legacy order with its block's d (lowbit-scalar.cpp), so the 32-element
// tiles take them piece by piece (kParts pieces a block; W(x, part)). The
// codes go unsigned: Q1_0's +-1 as 0 or 2, Q2_0's q, both minus 1 (kOff).
static inline __m256i q1_0_bytes(const uint8_t *qs) {
    return _mm256_and_si256(bits_to_bytes(load_u32(qs)), _mm256_set1_epi8(2));
}
struct OpsQ1_0 {
    using BW = BlockQ1_0;
    using BA = BlockQ8_0;
    static constexpr int kParts = 4;
    static constexpr int kOff = 1;
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x, int part) { return q1_0_bytes(x.qs + 4 * part); }
};
struct OpsQ2_0 {
    using BW = BlockQ2_0;
    using BA = BlockQ8_0;
    static constexpr int kParts = 2;
    static constexpr int kOff = 1;
    static constexpr bool kMin = false;
    static inline __m256i W(const BW &x, int part) { return q2_0_codes32(x.qs + 8 * part); }
};

constexpr int kLaneRows = 16; // rows per _X16 group: the 32-bit lanes of a zmm

template <class F, int T>
static void lane_tiles(int64_t nb, const uint8_t *pw, const typename F::Acts &acts, int64_t t, int nr, float *out,
                       size_t os, int nt) {
    if constexpr (T > 1)
        if (nt < T) return lane_tiles<F, T - 1>(nb, pw, acts, t, nr, out, os, nt);
    F::template tile<T>(nb, pw, acts, t, nr, out, os);
}

// Block b of an _X16 group at pw (blocks.h's x16_at): its payload dwords
// (q) and its header fields (h, then h + field for the second), for a group
// block of kBlock bytes of which kPayload are payload.
struct X16Loc {
    const uint8_t *q, *h;
    size_t field;
};
template <size_t kBlock, size_t kPayload, size_t kField = 2>
static inline X16Loc x16_locate(const uint8_t *pw, int64_t b, int64_t nb) {
    const X16At at = x16_at(kBlock / 16, kPayload / 16, b, nb, kField);
    return {pw + at.q, pw + at.h, at.field};
}

// The level table of a 32-element type whose 4-bit codes index one (MXFP4's
// doubled e2m1 values, IQ4_NL's levels), else null.
template <class Ops>
constexpr const int8_t *kLevels = nullptr;
template <>
constexpr const int8_t *kLevels<OpsMXFP4> = kMxfp4Values;
template <>
constexpr const int8_t *kLevels<OpsIQ4NL> = kIq4nlValues;

// Whether a 32-element type's scale is MXFP4's e8m0 byte, not an f16 d.
template <class Ops>
constexpr bool kE8M0 = std::is_same_v<typename Ops::BW, BlockMXFP4>;
// Its _X16 header field per row (x16-layout.h): 2 bytes, MXFP4's 1.
template <class Ops>
constexpr size_t kX16Field = kE8M0<Ops> ? 1 : 2;
// A 32-element type's _X16 payload per block and 16 rows: everything after
// its header (d, and m where the weights carry a min; MXFP4's e).
template <class Ops>
constexpr size_t kX16Payload = 16 * (sizeof(typename Ops::BW) - (Ops::kMin ? 4 : kX16Field<Ops>));

// The layouts whose steps take work to unpack (Q6_K; Q5_0 and Q5_1 on AVX2)
// are read in place below this many tokens and packed per call from the
// layout above: decode reads each weight once (packing would write and read
// it again), while prefill would unpack each step once per token tile.
constexpr int64_t kX16PackTokens = 4;

// An _X16 matrix in place with the format F (its tiles read the layout):
// nr a multiple of 16, w at a group, ws a row's bytes, any token count
// (decode is nt = 1).
template <class F>
void gemm_x16(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt, float *out,
              size_t os) {
    const int64_t nb = k / F::kBlockElems;
    const typename F::Acts acts((const uint8_t *)a, as, nt, nb);
    for (int64_t g = 0; g + kLaneRows <= nr; g += kLaneRows)
        for (int64_t t = 0; t < nt; t += F::kTokens)
            lane_tiles<F, F::kTokens>(nb, (const uint8_t *)w + g * ws, acts, t, kLaneRows, out + t * os + g, os,
                                      (int)(nt - t));
}

// Calls f(b, j) for blocks b = 0..nb-1 in order with j = b % 8 a constant.
template <class F>
static inline void for_blocks8(int64_t nb, F &&f) {
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8) {
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) f(b + j, j);
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
        if (b + j < nb) f(b + j, j);
}

// Activations read in place (the K-quant tiles take the Q8_K rows as they are).
struct Q8KRows {
    const uint8_t *a;
    size_t as;
    Q8KRows(const uint8_t *a_, size_t as_, int64_t, int64_t) : a(a_), as(as_) {}
};

// Activations of a call, per token and block: d (and s) as f32, and each
// block's isum starting value -kOff * sum(y) (the weights go unsigned).
template <class Ops>
struct LegacyActs {
    using BA = typename Ops::BA;
    const uint8_t *a;
    size_t as;
    int64_t nb;
    float *d, *s;
    int32_t *corr;
    LegacyActs(const uint8_t *a_, size_t as_, int64_t nt, int64_t nb_) : a(a_), as(as_), nb(nb_) {
        thread_local std::vector<Line> f_buf, c_buf;
        d = (float *)scratch(f_buf, (size_t)(nt * nb) * 8);
        s = d + nt * nb;
        corr = (int32_t *)scratch(c_buf, (size_t)(nt * nb) * 4);
        for (int64_t t = 0; t < nt; ++t)
            for (int64_t b = 0; b < nb; ++b) {
                const BA &y = ((const BA *)(a + t * as))[b];
                d[t * nb + b] = f16_at(&y.d);
                if constexpr (Ops::kMin) s[t * nb + b] = f16_at(&y.s);
                int32_t c = 0;
                if constexpr (Ops::kOff > 0) c = -Ops::kOff * hsum_i32(dot_us8(_mm256_set1_epi8(1), load_q(y.qs)));
                corr[t * nb + b] = c;
            }
    }
};

// NVFP4's tiles (gemm-nvfp4-x86.h, gemm-nvfp4-avx2.h) take its doubled e2m1
// values + kNvfp4Off, unsigned.
constexpr int kNvfp4Off = 12; // the values' offset: 0..24 unsigned for vpdpbusd

// Per token of a call: each Q8_0 block's d as f32, each sub-block's
// correction -12 * sum(y) over its 16 activations.
struct Nvfp4Acts {
    const uint8_t *a;
    size_t as;
    float *d;
    int32_t *corr;
    Nvfp4Acts(const uint8_t *a_, size_t as_, int64_t nt, int64_t nb) : a(a_), as(as_) {
        thread_local std::vector<Line> f_buf, c_buf;
        d = (float *)scratch(f_buf, (size_t)(nt * nb * 2) * 4);
        corr = (int32_t *)scratch(c_buf, (size_t)(nt * nb * 4) * 4);
        const __m256i ones = _mm256_set1_epi8(1);
        const __m128i z = _mm_setzero_si128();
        for (int64_t t = 0; t < nt; ++t)
            for (int64_t i = 0; i < 2 * nb; ++i) {
                const BlockQ8_0 &y = ((const BlockQ8_0 *)(a + t * as))[i];
                d[t * 2 * nb + i] = f16_at(&y.d);
                const __m256i s = dot_us8(ones, load_q(y.qs)); // dwords 0-3: the first 16 elements
                corr[t * 4 * nb + 2 * i] = -kNvfp4Off * hsum_i32(_mm256_set_m128i(z, _mm256_castsi256_si128(s)));
                corr[t * 4 * nb + 2 * i + 1] =
                    -kNvfp4Off * hsum_i32(_mm256_set_m128i(z, _mm256_extracti128_si256(s, 1)));
            }
    }
};

// 16 rows of kBytes each (32-byte aligned) -> kBytes / 4 steps of (16 rows x
// 4 bytes): per 8 rows and 8 dwords one 8 x 8 dword transpose.
template <size_t kBytes>
static inline void interleave_rows8(const uint8_t (*q)[kBytes], uint8_t *dst) {
    for (int half = 0; half < 2; ++half)
        for (size_t c = 0; c < kBytes / 32; ++c) {
            __m256i r[8], t[8];
            for (int i = 0; i < 8; ++i) r[i] = _mm256_load_si256((const __m256i *)(q[8 * half + i] + 32 * c));
            for (int i = 0; i < 8; i += 2) {
                t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
                t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
            }
            // r[4q + j], 128-bit lane L: dword 4L + j of rows 4q..4q+3.
            for (int i = 0; i < 8; i += 4) {
                r[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
                r[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
                r[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
                r[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
            }
            for (int j = 0; j < 4; ++j) {
                _mm256_store_si256((__m256i *)(dst + (8 * c + j) * 64 + 32 * half),
                                   _mm256_permute2x128_si256(r[j], r[4 + j], 0x20));
                _mm256_store_si256((__m256i *)(dst + (8 * c + 4 + j) * 64 + 32 * half),
                                   _mm256_permute2x128_si256(r[j], r[4 + j], 0x31));
            }
        }
}


// Rows of a 32-element type packed per call (Q5_0, Q5_1, and matrices the
// _X16 layouts do not fit), for the tiles of either width: per 16 rows and
// block, 8 steps of 16 rows x 4 bytes as Ops::W gives them (512), then d
// (64) and m (64) as f32; rows past nr are zero.
constexpr size_t kU8StepsBlock = 640;
template <class Ops>
static void pack_u8_steps(const uint8_t *w, size_t ws, int64_t nr, int64_t nb, uint8_t *dst) {
    using BW = typename Ops::BW;
    alignas(32) uint8_t q[kLaneRows][QK];
    for (int64_t r0 = 0; r0 < nr; r0 += kLaneRows)
        for (int64_t b = 0; b < nb; ++b) {
            uint8_t *p = dst + ((r0 / kLaneRows) * nb + b) * kU8StepsBlock;
            float *d = (float *)(p + 512), *m = d + kLaneRows;
            for (int r = 0; r < kLaneRows; ++r) {
                if (r0 + r >= nr) {
                    std::memset(q[r], 0, QK);
                    d[r] = m[r] = 0.f;
                    continue;
                }
                if constexpr (requires { Ops::kParts; }) {  // b is a piece of a block
                    const BW &x = ((const BW *)(w + (r0 + r) * ws))[b / Ops::kParts];
                    _mm256_store_si256((__m256i *)q[r], Ops::W(x, (int)(b % Ops::kParts)));
                    d[r] = weight_d(x);
                    m[r] = 0.f;
                } else {
                    const BW &x = ((const BW *)(w + (r0 + r) * ws))[b];
                    _mm256_store_si256((__m256i *)q[r], Ops::W(x));
                    d[r] = weight_d(x);
                    if constexpr (Ops::kMin) m[r] = f16_at(&x.m);
                    else m[r] = 0.f;
                }
            }
            interleave_rows8<QK>(q, p);
        }
}

#if defined(__AVX512F__)
// r[i] = dwords 0..15 of row i -> r[j] = dword j of rows 0..15.
static inline void transpose16x16_epi32(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    // Then r[4q + j], 128-bit lane L: dword 4L + j of rows 4q..4q+3.
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int j = 0; j < 4; ++j) {
        const __m512i ab_lo = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x44);
        const __m512i ab_hi = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xEE);
        const __m512i cd_lo = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x44);
        const __m512i cd_hi = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xEE);
        t[j] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0x88);
        t[4 + j] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0xDD);
        t[8 + j] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0x88);
        t[12 + j] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0xDD);
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
}

// 16 rows of 256 bytes each -> 64 steps of (16 rows x 4 bytes), 4 KiB.
static inline void interleave_rows(const uint8_t (*q)[QK_K], uint8_t *dst) {
    for (int c = 0; c < QK_K / 64; ++c) {
        __m512i v[16];
        for (int r = 0; r < kLaneRows; ++r) v[r] = _mm512_load_si512(q[r] + 64 * c);
        transpose16x16_epi32(v);
        for (int s = 0; s < 16; ++s) _mm512_store_si512(dst + (16 * c + s) * 64, v[s]);
    }
}

#else
// Without AVX-512: 8 x 8 dword transposes.
static inline void interleave_rows(const uint8_t (*q)[QK_K], uint8_t *dst) { interleave_rows8<QK_K>(q, dst); }
#endif

// Driver for a format F: F::kBlockElems elements per block, F::kBlock
// packed bytes per 16 rows and block, F::pack(w, ws, nr, nb, dst), F::Acts
// (activations made ready once per call), F::tile<T>(nb, packed rows, acts,
// first token, rows to store, out, os) for T <= F::kTokens.
//
// Rows per pass: their packed super-blocks fill about a quarter of L2 and
// stay there while every token tile reads them. The weights are packed
// once per call; the activations stream from L3 instead, at a few bytes per
// cycle, which a tile's work hides (with token chunks sized for L2, the
// repacking of every chunk cost a third of Q6_K's prefill).
template <class F>
static void gemm_lanes(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt,
                       float *out, size_t os) {
    const int64_t nb = k / F::kBlockElems;
    const typename F::Acts acts((const uint8_t *)a, as, nt, nb);
    thread_local std::vector<Line> w_buf;
    const size_t group_bytes = (size_t)nb * F::kBlock;
    int64_t groups = (int64_t)((256 * 1024) / group_bytes);
    if (groups < 1) groups = 1;
    const int64_t rows_per_block = groups * kLaneRows;
    uint8_t *pw = scratch(w_buf, (size_t)groups * group_bytes);
    for (int64_t r0 = 0; r0 < nr; r0 += rows_per_block) {
        const int64_t rn = nr - r0 < rows_per_block ? nr - r0 : rows_per_block;
        F::pack((const uint8_t *)w + r0 * ws, ws, rn, nb, pw);
        for (int64_t g = 0; g * kLaneRows < rn; ++g) {
            const int rows = (int)(rn - g * kLaneRows < kLaneRows ? rn - g * kLaneRows : kLaneRows);
            for (int64_t t = 0; t < nt; t += F::kTokens)
                lane_tiles<F, F::kTokens>(nb, pw + g * group_bytes, acts, t, rows, out + t * os + r0 + g * kLaneRows,
                                          os, (int)(nt - t));
        }
    }
}

} // namespace
} // namespace vt::quant::x86
