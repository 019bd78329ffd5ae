// AVX2 row-lane tiles for the lattice i-quants and IQ4_XS (GGUF rows packed
// per call), the 256-bit twins of gemm-iq4xs-x86.h's GroupScaledTile: a
// register holds 8 rows (half a group of 16) x 4 values, a step is one
// vpmaddubsw per token and one vpmaddwd that multiplies the pairs by their
// group's multiplier, no horizontal sums. Bit-identical to the AVX2 dots
// (iquants-avx2.cpp, kquants-avx2.cpp's dot_iq4_xs): each super-block's
// exact integer (the values times the activations times their group's
// multiplier), then the f32 step (dk * dy) * isum added to the row's sum.
//
// Two forms of the values, for vpmaddubsw's unsigned operand:
// - the lattice i-quants (|v| <= 62): v + 64 (iq-unpack.h), a pair at most
//   2 * 126 * 127 = 32004; the +64 comes off per super-block and token as
//   -64 * m times each 16 activations' sum (Q8_K's bsums), 8 vpmaddwd;
// - IQ4_XS (levels -127..113): |v| against the activations with v's sign
//   (vpsignb; vt's Q8_K bytes stay in -127..127), a pair at most 32258.
#pragma once

#include "cpu/kernels/gemm-lanes-avx2.h"
#include "cpu/kernels/iq-unpack.h"

namespace vt::quant::x86 {
namespace {

// Per 16 rows and super-block: step s, row r its 4 values (4096); for group
// g, row r its multiplier m as the int16 pair (m, m) (64 per group); the
// offset form's 8 correction dwords per row, (-64 m) of elements 32i..32i+15
// and of 32i+16..32i+31 (512); the rows' dk as f32 (64).
template <int kGroups, bool kSigned>
struct GroupScaledLanes8 {
    static constexpr int kTokens = 4;
    static constexpr int64_t kBlockElems = QK_K;
    static constexpr int kSteps = QK_K / 4 / kGroups; // per group
    static constexpr size_t kMm = 4096, kCc = kMm + 64 * kGroups, kD = kCc + (kSigned ? 0 : 512), kBlock = kD + 64;
    using Acts = Q8KRows;

    static inline int32_t pair16(int a, int b) {
        return (int32_t)((uint32_t)(uint16_t)(int16_t)a | (uint32_t)(uint16_t)(int16_t)b << 16);
    }

    // Packs nr rows of nsb super-blocks: decode(r, b, q, m, dk) gives row r's
    // super-block b as values q[256] (offset or signed), multipliers m[16]
    // (per 16 elements) and dk; rows past the matrix are zero.
    template <class Decode>
    static void pack_rows(int64_t nr, int64_t nsb, uint8_t *dst, Decode &&decode) {
        alignas(64) uint8_t q[kLaneRows][QK_K];
        int32_t m[kLaneRows][16];
        float dk[kLaneRows];
        for (int64_t r0 = 0; r0 < nr; r0 += kLaneRows)
            for (int64_t b = 0; b < nsb; ++b) {
                for (int r = 0; r < kLaneRows; ++r) {
                    if (r0 + r < nr) {
                        decode(r0 + r, b, q[r], m[r], &dk[r]);
                        continue;
                    }
                    std::memset(q[r], 0, QK_K);
                    std::memset(m[r], 0, sizeof m[r]);
                    dk[r] = 0.f;
                }
                store(q, m, dk, dst + ((r0 / kLaneRows) * nsb + b) * kBlock);
            }
    }

    // One super-block of 16 rows into its packed block at p.
    static void store(const uint8_t (*q)[QK_K], const int32_t (*m)[16], const float *dk, uint8_t *p) {
        interleave_rows(q, p);
        int32_t *mm = (int32_t *)(p + kMm), *cc = (int32_t *)(p + kCc);
        for (int r = 0; r < kLaneRows; ++r) {
            for (int g = 0; g < kGroups; ++g) {
                const int v = m[r][16 / kGroups * g];
                mm[g * kLaneRows + r] = pair16(v, v);
            }
            if constexpr (!kSigned)
                for (int i = 0; i < 8; ++i)
                    cc[i * kLaneRows + r] = pair16(-kIqUnpackOff * m[r][2 * i], -kIqUnpackOff * m[r][2 * i + 1]);
            ((float *)(p + kD))[r] = dk[r];
        }
    }

    // Rows 8h..8h+7 of the group at pw x T tokens.
    template <int T>
    static void half(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int h, int nr, float *out,
                     size_t os) {
        const BlockQ8_K *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_K *)(acts.a + (t0 + t) * acts.as);
        __m256 acc[T];
        for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t *blk = pw + b * kBlock, *w = blk + 32 * h; // w: this half's bytes of each 64
            __m256i tot[T];
            for (int t = 0; t < T; ++t) tot[t] = _mm256_setzero_si256();
            if constexpr (!kSigned)
                for (int i = 0; i < 8; ++i) {
                    const __m256i c = _mm256_load_si256((const __m256i *)(w + kCc + 64 * i));
                    for (int t = 0; t < T; ++t)
                        tot[t] = _mm256_add_epi32(tot[t], _mm256_madd_epi16(c, bcast32_256(y[t][b].bsums + 2 * i)));
                }
            for (int g = 0; g < kGroups; ++g) {
                const __m256i mm = _mm256_load_si256((const __m256i *)(w + kMm + 64 * g));
#pragma GCC unroll 8
                for (int s = 0; s < kSteps; ++s) {
                    const int e = 4 * (kSteps * g + s);
                    const __m256i q = _mm256_load_si256((const __m256i *)(w + 16 * e));
                    if constexpr (kSigned) {
                        const __m256i aq = _mm256_abs_epi8(q);
                        for (int t = 0; t < T; ++t) {
                            const __m256i ys = _mm256_sign_epi8(bcast32_256(y[t][b].qs + e), q);
                            tot[t] = _mm256_add_epi32(tot[t], _mm256_madd_epi16(_mm256_maddubs_epi16(aq, ys), mm));
                        }
                    } else {
                        for (int t = 0; t < T; ++t)
                            tot[t] = _mm256_add_epi32(
                                tot[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q, bcast32_256(y[t][b].qs + e)), mm));
                    }
                }
            }
            const __m256 dk = _mm256_load_ps((const float *)(blk + kD) + 8 * h);
            for (int t = 0; t < T; ++t)
                acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(_mm256_mul_ps(dk, _mm256_set1_ps(y[t][b].d)),
                                                             _mm256_cvtepi32_ps(tot[t])));
        }
        for (int t = 0; t < T; ++t) _mm256_maskstore_ps(out + t * os + 8 * h, lanes_below(nr - 8 * h), acc[t]);
    }

    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        half<T>(nb, pw, acts, t0, 0, nr, out, os);
        if (nr > 8) half<T>(nb, pw, acts, t0, 1, nr, out, os);
    }
};

// Rows of a lattice i-quant through its AVX2 decoder (iq-unpack.h).
template <DType kType, int kGroups = iq_scale_per_32(kType) ? 8 : 16>
struct IQLanes8 : GroupScaledLanes8<kGroups, false> {
    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nsb, uint8_t *dst) {
        const IqUnpackFn unpack = iq_unpack_avx2(kType);
        const size_t bb = dtype_info(kType).block_bytes;
        GroupScaledLanes8<kGroups, false>::pack_rows(
            nr, nsb, dst, [&](int64_t r, int64_t b, uint8_t *q, int32_t *m, float *dk) {
                unpack(w + r * ws + b * bb, q, m, dk);
            });
    }
};

// IQ4_XS rows: the levels as signed bytes, ls - 32 per 32, d.
struct IQ4XSLanes8 : GroupScaledLanes8<8, true> {
    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nsb, uint8_t *dst) {
        pack_rows(nr, nsb, dst, [&](int64_t r, int64_t b, uint8_t *q, int32_t *m, float *dk) {
            const BlockIQ4XS &x = ((const BlockIQ4XS *)(w + r * ws))[b];
            for (int s = 0; s < 8; ++s) {
                _mm256_store_si256((__m256i *)(q + 32 * s), iq4nl_bytes(x.qs + 16 * s));
                m[2 * s] = m[2 * s + 1] = iq4xs_scale(x, s);
            }
            *dk = f16_at(&x.d);
        });
    }
};

} // namespace
} // namespace vt::quant::x86
