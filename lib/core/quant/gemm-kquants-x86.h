// Multi-token tiles for Q4_K (mirrors dot_q45_k<false> in kquants-avx2.cpp).
// Include after gemm-x86.h. (Q6_K: gemm-q6k-x86.h.)
//
// Per super-block that dot is all integer up to its f32 steps, so a tile
// may form the integers any exact way: nibbles unpacked
// once per call, vpmaddubsw per (row, token) pair as in the vec_dot, the
// scale multiply-add fused into vpdpwssd where VNNI is there. The f32 steps
// per super-block (scale products, the FMA into the same lanes, the min
// sum) are replayed for 16 pairs at once, lanes t*4 + r.
#pragma once

#include "core/quant/gemm-x86.h"

namespace vt::quant::x86 {
namespace {

static inline __m256i madd_acc16(__m256i acc, __m256i p, __m256i sc) {
#if defined(VT_QUANT_VNNI)
    return _mm256_dpwssd_epi32(acc, p, sc);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
#endif
}

// Q8_K activations of a 4-token tile, per super-block: 16 f32 d (lanes
// t*4 + r), then per pair of 16-sums (bsums 2jj, 2jj+1) 16 dwords of int16
// pairs, for jj = 0..7. The int8 values are read from the rows themselves.
constexpr size_t kKActBlock = 64 + 8 * 64;

static void pack_acts_k(const uint8_t *a, size_t as, int64_t nt, int64_t nsb, uint8_t *dst) {
    for (int64_t t0 = 0; t0 < nt; t0 += kC)
        for (int64_t b = 0; b < nsb; ++b) {
            uint8_t *p = dst + ((t0 / kC) * nsb + b) * kKActBlock;
            float *d = (float *)p;
            uint32_t *bs = (uint32_t *)(p + 64);
            for (int t = 0; t < kC; ++t) {
                float fd = 0.f;
                uint32_t pairs[8] = {};
                if (t0 + t < nt) {
                    const BlockQ8_K &y = ((const BlockQ8_K *)(a + (t0 + t) * as))[b];
                    fd = y.d;
                    std::memcpy(pairs, y.bsums, 32);
                }
                for (int r = 0; r < kR; ++r) {
                    d[t * kR + r] = fd;
                    for (int jj = 0; jj < 8; ++jj) bs[jj * kPairs + t * kR + r] = pairs[jj];
                }
            }
        }
}

// Token t's Q8_K block b (padding tokens read token 0: their outputs are
// dropped).
static inline const BlockQ8_K *act_block(const uint8_t *a, size_t as, int64_t nt, int64_t t, int64_t b) {
    return (const BlockQ8_K *)(a + (t < nt ? t : 0) * as) + b;
}

// ---- Q4_K ------------------------------------------------------------------

// Weights of a 4-row tile per super-block: for chunk c, row r the 32 low
// and 32 high nibbles (1024 bytes); for sub-block j, row r the scale as an
// int16 pair (128); d and dmin (32); for sub-block j, row r the min as an
// int16 pair, which vpmaddwd against the bsums pair (2j, 2j+1) gives
// mn[j] * (bsums[2j] + bsums[2j+1]) (128).
constexpr size_t kQ4KQ = 1024, kQ4KSc = kQ4KQ, kQ4KD = kQ4KSc + 128, kQ4KMn = kQ4KD + 32,
                 kQ4KBlock = kQ4KMn + 128;

static void pack_weights_q4k(const uint8_t *w, size_t ws, int64_t nr, int64_t nsb, uint8_t *dst) {
    for (int64_t r0 = 0; r0 < nr; r0 += kR)
        for (int64_t b = 0; b < nsb; ++b) {
            uint8_t *p = dst + ((r0 / kR) * nsb + b) * kQ4KBlock;
            for (int r = 0; r < kR; ++r) {
                if (r0 + r >= nr) {
                    for (int c = 0; c < 4; ++c) std::memset(p + (c * kR + r) * 64, 0, 64);
                    for (int j = 0; j < 8; ++j) std::memset(p + kQ4KSc + (j * kR + r) * 4, 0, 4);
                    ((float *)(p + kQ4KD))[r] = ((float *)(p + kQ4KD))[kR + r] = 0.f;
                    for (int j = 0; j < 8; ++j) std::memset(p + kQ4KMn + (j * kR + r) * 4, 0, 4);
                    continue;
                }
                const BlockQ4_K &x = ((const BlockQ4_K *)(w + (r0 + r) * ws))[b];
                const __m256i m4 = _mm256_set1_epi8(0x0F);
                for (int c = 0; c < 4; ++c) {
                    const __m256i q = _mm256_loadu_si256((const __m256i *)(x.qs + 32 * c));
                    _mm256_storeu_si256((__m256i *)(p + (c * kR + r) * 64), _mm256_and_si256(q, m4));
                    _mm256_storeu_si256((__m256i *)(p + (c * kR + r) * 64 + 32),
                                        _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
                }
                for (int j = 0; j < 8; ++j) {
                    int sc, mn;
                    scale_min_k4(j, x.scales, sc, mn);
                    const uint32_t sp = (uint32_t)sc | (uint32_t)sc << 16, mp = (uint32_t)mn | (uint32_t)mn << 16;
                    std::memcpy(p + kQ4KSc + (j * kR + r) * 4, &sp, 4);
                    std::memcpy(p + kQ4KMn + (j * kR + r) * 4, &mp, 4);
                }
                ((float *)(p + kQ4KD))[r] = f16_at(&x.d);
                ((float *)(p + kQ4KD))[kR + r] = f16_at(&x.dmin);
            }
        }
}

// One 4 x 4 tile over all super-blocks.
static void q4k_tile(int64_t nsb, const uint8_t *pw, const uint8_t *pa, const uint8_t *a, size_t as, int64_t nt,
                     int64_t t0, float *sc, __m256 acc[kPairs], __m512 &accm) {
    for (int i = 0; i < kPairs; ++i) acc[i] = _mm256_setzero_ps();
    accm = _mm512_setzero_ps();
    const BlockQ8_K *y[kC];
    for (int t = 0; t < kC; ++t) y[t] = act_block(a, as, nt, t0 + t, 0);
    for (int64_t b = 0; b < nsb; ++b) {
        const uint8_t *w = pw + b * kQ4KBlock, *ap = pa + b * kKActBlock;
        const __m512 dy = _mm512_load_ps((const float *)ap);
        const __m512 d = _mm512_broadcast_f32x4(_mm_load_ps((const float *)(w + kQ4KD)));
        const __m512 dmin = _mm512_broadcast_f32x4(_mm_load_ps((const float *)(w + kQ4KD) + kR));
        _mm512_store_ps(sc, _mm512_mul_ps(d, dy));
        // acc_m += dmin * dy * (float)mins_dot, left to right.
        __m512i mins = _mm512_setzero_si512();
        for (int j = 0; j < 8; ++j) {
            const __m512i mp = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)(w + kQ4KMn + 16 * j)));
            mins = _mm512_add_epi32(mins, _mm512_madd_epi16(mp, _mm512_load_si512(ap + 64 + 64 * j)));
        }
        accm = _mm512_add_ps(accm, _mm512_mul_ps(_mm512_mul_ps(dmin, dy), _mm512_cvtepi32_ps(mins)));

        __m256i sumi[kPairs];
        for (int i = 0; i < kPairs; ++i) sumi[i] = _mm256_setzero_si256();
        for (int c = 0; c < 4; ++c) {
            __m256i lo[kR], hi[kR];
            for (int r = 0; r < kR; ++r) {
                lo[r] = _mm256_load_si256((const __m256i *)(w + (c * kR + r) * 64));
                hi[r] = _mm256_load_si256((const __m256i *)(w + (c * kR + r) * 64 + 32));
            }
            const int32_t *scp = (const int32_t *)(w + kQ4KSc);
            for (int t = 0; t < kC; ++t) {
                const __m256i ylo = _mm256_loadu_si256((const __m256i *)(y[t][b].qs + 64 * c));
                const __m256i yhi = _mm256_loadu_si256((const __m256i *)(y[t][b].qs + 64 * c + 32));
                for (int r = 0; r < kR; ++r) {
                    const int i = t * kR + r;
                    sumi[i] = madd_acc16(sumi[i], _mm256_maddubs_epi16(lo[r], ylo),
                                         _mm256_set1_epi32(scp[(2 * c) * kR + r]));
                    sumi[i] = madd_acc16(sumi[i], _mm256_maddubs_epi16(hi[r], yhi),
                                         _mm256_set1_epi32(scp[(2 * c + 1) * kR + r]));
                }
            }
        }
        for (int i = 0; i < kPairs; ++i)
            acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(sc[i]), _mm256_cvtepi32_ps(sumi[i]), acc[i]);
    }
}

static void gemm_q4_k(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt,
                      float *out, size_t os) {
    const int64_t nsb = k / QK_K, ntiles_t = (nt + kC - 1) / kC;
    thread_local std::vector<Line> act_buf, w_buf, sc_buf;
    uint8_t *pa = scratch(act_buf, (size_t)(ntiles_t * nsb) * kKActBlock);
    pack_acts_k((const uint8_t *)a, as, nt, nsb, pa);
    float *sc = (float *)scratch(sc_buf, kPairs * 4);

    int64_t rows_per_block = (int64_t)(kWeightBlockBytes / ((size_t)nsb * kQ4KBlock)) * kR;
    if (rows_per_block < kR) rows_per_block = kR;
    uint8_t *pw = scratch(w_buf, (size_t)(rows_per_block / kR * nsb) * kQ4KBlock);
    // Token chunks whose packed activations stay in L2 while the weights
    // (repacked per chunk) pass over them.
    const int64_t chunk = chunk_tiles(nsb * (kKActBlock + kC * sizeof(BlockQ8_K)));
    for (int64_t tc = 0; tc < ntiles_t; tc += chunk) {
        const int64_t tc_end = tc + chunk < ntiles_t ? tc + chunk : ntiles_t;
        for (int64_t r0 = 0; r0 < nr; r0 += rows_per_block) {
            const int64_t rn = nr - r0 < rows_per_block ? nr - r0 : rows_per_block;
            pack_weights_q4k((const uint8_t *)w + r0 * ws, ws, rn, nsb, pw);
            for (int64_t tt = tc; tt < tc_end; ++tt)
                for (int64_t rt = 0; rt * kR < rn; ++rt) {
                    __m256 acc[kPairs];
                    __m512 accm;
                    q4k_tile(nsb, pw + rt * nsb * kQ4KBlock, pa + tt * nsb * kKActBlock, (const uint8_t *)a, as, nt,
                             tt * kC, sc, acc, accm);
                    alignas(64) float m[kPairs];
                    _mm512_store_ps(m, accm);
                    for (int t = 0; t < kC && tt * kC + t < nt; ++t)
                        for (int r = 0; r < kR && rt * kR + r < rn; ++r) {
                            const int i = t * kR + r;
                            out[(tt * kC + t) * os + r0 + rt * kR + r] = hsum(acc[i]) - m[i];
                        }
                }
        }
    }
}

} // namespace
} // namespace vt::quant::x86
