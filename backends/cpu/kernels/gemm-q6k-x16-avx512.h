// AVX-512 kernels for the Q6_K_X16 layout: an in-place row-lane tile for
// decode and small batches, and for prefill Q6KLanes (gemm-q6k-x86.h) over
// rows packed per call straight from the layout. Both mirror dot_q6_k.
// Include after gemm-q6k-x86.h, in AVX-512 units only.
#pragma once

#include "cpu/kernels/gemm-q6k-x86.h"

namespace vt::quant::x86 {
namespace {

// The Q6_K_X16 layout in place (blocks.h): per super-block and 16 rows, the
// payload dwords: the scales (u = 0..3), then for half h and l = 4j the ql
// dwords of l and 32 + l and the qh dword of l (u = 4 + 3 (8h + j) + 0..2),
// then d. In the base order these three are 512 and 2048 bytes apart, and
// decode streamed at half the bandwidth of one sequential read. The operands
// keep the vec_dot's sides: the weights q (0..63) unsigned, the activations
// y signed (|q * y| <= 63 * 128, within dpbusd512's bound), and the -32
// comes in through the activations: each group's accumulator starts at -32 *
// bsum (Q6KX16Acts), since sum (q - 32) y = sum q y - 32 sum y.
//
// ql bytes l and 32 + l hold the low nibbles of elements l and 32 + l and
// the high ones of 64 + l and 96 + l; qh byte l holds their top 2 bits,
// pairs from bit 0 up. Step k (elements 32k + l..) is in group 2k + j / 4 of
// the half.

// Step j of half h of the super-block payload at q, 16 rows: the 6-bit
// values (0..63) of elements 32k + 4j.. of the half, k = 0..3.
static inline void q6k_x16_step(const uint8_t *q, int h, int j, __m512i v[4]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    const uint8_t *step = q + 64 * (4 + 3 * (8 * h + j));
    const __m512i a = _mm512_loadu_si512(step), c = _mm512_loadu_si512(step + 64), qh = _mm512_loadu_si512(step + 128);
    // A 2-bit field to bits 4..5: one 16-bit shift and a mask (bits shifted
    // across a byte boundary are masked off).
    v[0] = _mm512_or_si512(_mm512_and_si512(a, m4), _mm512_and_si512(_mm512_slli_epi16(qh, 4), m30));
    v[1] = _mm512_or_si512(_mm512_and_si512(c, m4), _mm512_and_si512(_mm512_slli_epi16(qh, 2), m30));
    v[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), m4), _mm512_and_si512(qh, m30));
    v[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(c, 4), m4),
                           _mm512_and_si512(_mm512_srli_epi16(qh, 2), m30));
}

// Group g's scale (signed byte g % 4 of dword g / 4) for 16 rows, as int32.
static inline __m512i q6k_x16_scale(const uint8_t *q, int g) {
    return _mm512_srai_epi32(_mm512_slli_epi32(_mm512_loadu_si512(q + 64 * (g / 4)), 24 - 8 * (g % 4)), 24);
}

struct Q6KX16Acts {
    const uint8_t *a;
    size_t as;
    int64_t nsb;
    int32_t *neg_bsums; // [token][super-block][group]: -32 * bsums
    Q6KX16Acts(const uint8_t *a_, size_t as_, int64_t nt, int64_t nsb_) : a(a_), as(as_), nsb(nsb_) {
        thread_local std::vector<Line> buf;
        neg_bsums = (int32_t *)scratch(buf, (size_t)(nt * nsb) * 16 * 4);
        for (int64_t t = 0; t < nt; ++t)
            for (int64_t b = 0; b < nsb; ++b) {
                const BlockQ8_K &y = ((const BlockQ8_K *)(a + t * as))[b];
                for (int g = 0; g < 16; ++g) neg_bsums[(t * nsb + b) * 16 + g] = -32 * y.bsums[g];
            }
    }
};

struct Q6KX16 {
    static constexpr int kTokens = 4; // 16 group accumulators + 4 totals + the steps in 32 registers
    static constexpr int64_t kBlockElems = QK_K;
    static constexpr size_t kBlock = 16 * sizeof(BlockQ6_K), kPayload = 16 * (sizeof(BlockQ6_K) - 2);
    using Acts = Q6KX16Acts;

    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        __m512 sum[T];
        for (int t = 0; t < T; ++t) sum[t] = _mm512_setzero_ps();
        const BlockQ8_K *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BlockQ8_K *)(acts.a + (t0 + t) * acts.as);
        const int32_t *nbs = acts.neg_bsums + t0 * nb * 16;
        for (int64_t b = 0; b < nb; ++b) {
            const X16Loc w = x16_locate<kBlock, kPayload>(pw, b, nb);
            prefetch_ahead<kBlock>(pw + b * kBlock, t0);
            __m512i tot[T];
            for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
            for (int h = 0; h < 2; ++h)
                for (int jh = 0; jh < 2; ++jh) { // j = 4jh..4jh+3: groups 8h + 2k + jh
                    __m512i acc[4][T];
                    for (int k = 0; k < 4; ++k)
                        for (int t = 0; t < T; ++t)
                            acc[k][t] = _mm512_set1_epi32(nbs[(t * nb + b) * 16 + 8 * h + 2 * k + jh]);
                    for (int jj = 0; jj < 4; ++jj) {
                        const int j = 4 * jh + jj;
                        __m512i q[4];
                        q6k_x16_step(w.q, h, j, q);
                        for (int k = 0; k < 4; ++k)
                            for (int t = 0; t < T; ++t)
                                acc[k][t] = dpbusd512(acc[k][t], q[k], bcast32(y[t][b].qs + 128 * h + 32 * k + 4 * j));
                    }
                    for (int k = 0; k < 4; ++k) {
                        const __m512i sc = q6k_x16_scale(w.q, 8 * h + 2 * k + jh);
                        for (int t = 0; t < T; ++t) tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(acc[k][t], sc));
                    }
                }
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)w.h));
            for (int t = 0; t < T; ++t)
                sum[t] = _mm512_add_ps(sum[t], _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(y[t][b].d)),
                                                             _mm512_cvtepi32_ps(tot[t])));
        }
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * os, row_mask(nr), sum[t]);
    }
};

// Q6_K_X16 with many tokens: Q6KLanes (8 tokens per tile over unpacked
// bytes) with its rows packed per call from the layout, the steps of Q6KX16
// giving Q6KPack's values directly (same result as pack on the base rows).
// The in-place tile unpacks per token tile, which made 1B prefill 25% slower.
struct Q6KLanesX16 : Q6KLanes {
    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nsb, uint8_t *dst) {
        const __m512i ones = _mm512_set1_epi8(1);
        for (int64_t g0 = 0; g0 < nr / kLaneRows; ++g0)
            for (int64_t b = 0; b < nsb; ++b) {
                const X16Loc x = x16_locate<Q6KX16::kBlock, Q6KX16::kPayload>(w + g0 * kLaneRows * ws, b, nsb);
                uint8_t *p = dst + (g0 * nsb + b) * kBlock;
                __m512i qsum[16]; // per group, the sum of q (0..63)
                for (int g = 0; g < 16; ++g) qsum[g] = _mm512_setzero_si512();
                for (int h = 0; h < 2; ++h)
                    for (int j = 0; j < 8; ++j) {
                        __m512i q[4];
                        q6k_x16_step(x.q, h, j, q);
                        for (int k = 0; k < 4; ++k) {
                            _mm512_store_si512(p + 64 * (32 * h + 8 * k + j), _mm512_sub_epi8(q[k], _mm512_set1_epi8(32)));
                            qsum[8 * h + 2 * k + j / 4] = dpbusd512(qsum[8 * h + 2 * k + j / 4], q[k], ones);
                        }
                    }
                __m512i off = _mm512_setzero_si512();
                for (int g = 0; g < 16; ++g) {
                    const __m512i sc = q6k_x16_scale(x.q, g);
                    _mm512_store_si512(p + kSc + 64 * g, sc);
                    off = _mm512_add_epi32(off, _mm512_mullo_epi32(sc, _mm512_sub_epi32(qsum[g], _mm512_set1_epi32(16 * 32))));
                }
                _mm512_store_si512(p + kOff, _mm512_slli_epi32(off, 7)); // 128 * sum_g sc_g sum (q - 32)
                _mm512_store_ps(p + kD, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)x.h)));
            }
    }
};

void gemm_q6k_x16(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt, float *out,
                  size_t os) {
    if (nt < kX16PackTokens) return gemm_x16<Q6KX16>(k, w, ws, nr, a, as, nt, out, os);
    gemm_lanes<Q6KLanesX16>(k, w, ws, nr, a, as, nt, out, os);
}

} // namespace
} // namespace vt::quant::x86
