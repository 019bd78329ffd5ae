// AVX2 dots of TQ1_0 and TQ2_0 with Q8_K activations (built with -mavx2
// -mfma -mf16c; the AVX-512 tables keep them), in the canonical order of
// ternary-scalar.cpp, bit-identical to it: a block's codes (0..2, or 0..3)
// times the activations summed exactly with maddubs, minus the activations'
// sum (Q8_K's bsums) for the codes' offset of 1; then the block's one FMA
// into its lane. The gemm decodes each row's codes once per 64 tokens.
#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/iq-unpack.h"
#include "cpu/kernels/simd-x86.h"
#include "cpu/kernels/legacy-x86.h"
#include "cpu/kernels/ternary-x86.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace vt::quant {
namespace {
using namespace x86;

// Trits of 32 TQ1_0 bytes (tq_trit), the powers of 3 in p per 16-bit lane
// (both its bytes): a byte alone in the high half of a 16-bit lane times p
// keeps byte * p mod 256 there exactly, and the high 16 bits of that times 3
// are the trit.
static inline __m256i trits32(__m256i v, __m256i p) {
    const __m256i three = _mm256_set1_epi16(3);
    const __m256i te = _mm256_mulhi_epu16(_mm256_mullo_epi16(_mm256_slli_epi16(v, 8), p), three);
    const __m256i to =
        _mm256_mulhi_epu16(_mm256_mullo_epi16(_mm256_and_si256(v, _mm256_set1_epi16((short)0xFF00)), p), three);
    return _mm256_or_si256(te, _mm256_slli_epi16(to, 8));
}
static inline __m256i pow3(int n) {
    static constexpr short kPow3[5] = {1, 3, 9, 27, 81};
    return _mm256_set1_epi16(kPow3[n]);
}

// A block's 256 codes as 8 vectors in element order: trit n of qs[0..31]
// (n = 0..4); qs[32..47]'s trits 0 and 1, then 2 and 3, side by side; its
// trit 4 beside qh's 16 (byte 4n + j: trit n of qh[j], the power per
// 16-bit lane k 3^(k / 2)).
static inline void code_vectors_tq1(const BlockTQ1_0 &x, __m256i c[8]) {
    const __m256i a = _mm256_loadu_si256((const __m256i *)x.qs);
    for (int n = 0; n < 5; ++n) c[n] = trits32(a, pow3(n));
    const __m128i b = _mm_loadu_si128((const __m128i *)(x.qs + 32));
    uint32_t qh;
    std::memcpy(&qh, x.qh, 4);
    const __m256i bb = _mm256_set_m128i(b, b);
    c[5] = trits32(bb, _mm256_set_m128i(_mm_set1_epi16(3), _mm_set1_epi16(1)));
    c[6] = trits32(bb, _mm256_set_m128i(_mm_set1_epi16(27), _mm_set1_epi16(9)));
    c[7] = trits32(_mm256_set_m128i(_mm_set1_epi32((int)qh), b),
                   _mm256_setr_epi16(81, 81, 81, 81, 81, 81, 81, 81, 1, 1, 3, 3, 9, 9, 27, 27));
}

// The block's integer from its code vectors' vpmaddubsw pairs summed in
// int16, where they fit: a pair is at most 2 * 3 * 128 (vt's Q8_K bytes stay
// in -127..127; ggml's -128 would fit too), 8 of them 6144 per lane, and the
// bsums (at most 16 * 128 each) come
// off in the same lanes before one widening and one horizontal sum.
static inline int block_isum(__m256i s16, const BlockQ8_K &y) {
    const __m256i bs = _mm256_loadu_si256((const __m256i *)y.bsums);
    return hsum_epi32(_mm256_madd_epi16(_mm256_sub_epi16(s16, bs), _mm256_set1_epi16(1)));
}

int isum_tq1(const BlockTQ1_0 &x, const BlockQ8_K &y) {
    __m256i c[8];
    code_vectors_tq1(x, c);
    __m256i s16 = _mm256_setzero_si256();
    for (int v = 0; v < 8; ++v) s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(c[v], load256(y.qs + 32 * v)));
    return block_isum(s16, y);
}

int isum_tq2(const BlockTQ2_0 &x, const BlockQ8_K &y) {
    __m256i s16 = _mm256_setzero_si256();
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(x.qs + 32 * h));
        for (int l = 0; l < 4; ++l) {
            const __m256i c = _mm256_and_si256(_mm256_srli_epi16(v, 2 * l), m3);
            s16 = _mm256_add_epi16(s16, _mm256_maddubs_epi16(c, load256(y.qs + 128 * h + 32 * l)));
        }
    }
    return block_isum(s16, y);
}

// A block's 256 codes (0..2, or 0..3) in element order, one byte each: what
// the gemm decodes once per row and block of tokens.
void codes_tq1(const BlockTQ1_0 &x, uint8_t c[256]) {
    __m256i v[8];
    code_vectors_tq1(x, v);
    for (int i = 0; i < 8; ++i) _mm256_storeu_si256((__m256i *)(c + 32 * i), v[i]);
}
void codes_tq2(const BlockTQ2_0 &x, uint8_t c[256]) {
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
        const __m256i v = _mm256_loadu_si256((const __m256i *)(x.qs + 32 * h));
        for (int l = 0; l < 4; ++l)
            _mm256_storeu_si256((__m256i *)(c + 128 * h + 32 * l), _mm256_and_si256(_mm256_srli_epi16(v, 2 * l), m3));
    }
}

// kernels.h's GemmFn: each row's blocks decoded to codes once per block of
// 64 tokens, then per token the exact integer (codes times activations,
// minus the activations' sum) and the dot's f32 step into the block's lane.
template <class B, void (*Codes)(const B &, uint8_t *)>
void gemm_ternary(int64_t k, const void *wv, size_t ws, int64_t nr, const void *av, size_t as, int64_t nt, float *out,
                  size_t os) {
    constexpr int64_t kTokenBlock = 64;
    const int64_t nb = k / QK_K;
    thread_local std::vector<Line> buf;
    uint8_t *const codes = scratch(buf, (size_t)(nb * QK_K));
    for (int64_t t0 = 0; t0 < nt; t0 += kTokenBlock) {
        const int64_t t1 = t0 + kTokenBlock < nt ? t0 + kTokenBlock : nt;
        for (int64_t r = 0; r < nr; ++r) {
            const B *x = (const B *)((const uint8_t *)wv + r * ws);
            for (int64_t b = 0; b < nb; ++b) Codes(x[b], codes + b * QK_K);
            // Four tokens per loaded code vector; maddubs's int16 pairs
            // (at most 2 * 3 * 127) sum over the block's 8 chunks within
            // int16, one madd a block.
            auto tokens = [&]<int T>(int64_t t) {
                const BlockQ8_K *y[T];
                for (int j = 0; j < T; ++j) y[j] = (const BlockQ8_K *)((const uint8_t *)av + (t + j) * as);
                float acc[T][8] = {};
                for (int64_t b = 0; b < nb; ++b) {
                    const uint8_t *c = codes + b * QK_K;
                    __m256i s16[T];
                    for (int j = 0; j < T; ++j) s16[j] = _mm256_setzero_si256();
                    for (int q = 0; q < 8; ++q) {
                        const __m256i cv = load256(c + 32 * q);
                        for (int j = 0; j < T; ++j)
                            s16[j] = _mm256_add_epi16(s16[j], _mm256_maddubs_epi16(cv, load256(y[j][b].qs + 32 * q)));
                    }
                    for (int j = 0; j < T; ++j) {
                        const int isum = hsum_epi32(_mm256_madd_epi16(s16[j], _mm256_set1_epi16(1))) - q8k_sum(y[j][b]);
                        acc[j][b % 8] = std::fma(h2f_f16c(x[b].d) * y[j][b].d, (float)isum, acc[j][b % 8]);
                    }
                }
                for (int j = 0; j < T; ++j) {
                    const float *a = acc[j];
                    out[(t + j) * os + r] = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
                }
            };
            int64_t t = t0;
            for (; t + 4 <= t1; t += 4) tokens.template operator()<4>(t);
            for (; t < t1; ++t) tokens.template operator()<1>(t);
        }
    }
}

template <class B, void (*Codes)(const B &, uint8_t *)>
void unpack(const void *block, uint8_t *c, float *d) {
    Codes(*(const B *)block, c);
    *d = h2f_f16c(((const B *)block)->d);
}

} // namespace

TernaryUnpackFn ternary_unpack_avx2(DType t) {
    if (t == DType::TQ1_0) return unpack<BlockTQ1_0, codes_tq1>;
    if (t == DType::TQ2_0) return unpack<BlockTQ2_0, codes_tq2>;
    return nullptr;
}

void avx2_fill_ternary(Kernels &k) {
    k.dot[(int)DType::TQ1_0] = dot_ternary<BlockTQ1_0, isum_tq1>;
    k.dot[(int)DType::TQ2_0] = dot_ternary<BlockTQ2_0, isum_tq2>;
    k.gemm[(int)DType::TQ1_0] = gemm_ternary<BlockTQ1_0, codes_tq1>;
    k.gemm[(int)DType::TQ2_0] = gemm_ternary<BlockTQ2_0, codes_tq2>;
}

} // namespace vt::quant
