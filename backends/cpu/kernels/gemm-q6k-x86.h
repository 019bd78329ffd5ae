// Row-lane tiles for Q6_K (mirrors dot_q6_k in kquants-avx2.cpp: one exact
// integer per super-block, then sum += d * dy * isum): the packing every
// vector width shares (Q6KPack) and the AVX-512 tile (Q6KLanes; the AVX2 one
// is in gemm-q6k-avx2.h).
//
// The operands are swapped against the vec_dot so the offsets cost nothing
// per token: activations become unsigned (y + 128, copied once per call),
// weights signed (q - 32), and
//   sum_g sc_g sum_i (q_i - 32) y_i
//     = sum_g sc_g sum_i (q_i - 32)(y_i + 128) - 128 sum_g sc_g sum_i (q_i - 32),
// where the last term depends on the row only and is packed with it.
// Bounds: |(q - 32)(y + 128)| <= 32 * 255, and every sum fits in int32.
#pragma once

#include "cpu/kernels/gemm-lanes-x86.h"
#if defined(__AVX512F__)
#include "cpu/kernels/gemm-rows-x86.h"
#endif

namespace vt::quant::x86 {
namespace {

struct Q6KPack {
    static constexpr int64_t kBlockElems = QK_K;
    // Per 16 rows and super-block: for step s (elements 4s..4s+3), row r the
    // 4 values q - 32 (4096 bytes); for group g (16 elements), row r the
    // scale as int32 (1024); row r's offset term (64); row r's d (64).
    static constexpr size_t kSc = 4096, kOff = kSc + 1024, kD = kOff + 64, kBlock = kD + 64;

    // One row's super-block as 256 values q - 32 in element order, and the
    // sum of q - 32 over each 16-element group.
    static void unpack(const BlockQ6_K &x, int8_t *q, int32_t gsum[16]) {
        const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03), off = _mm256_set1_epi8(32);
        for (int h = 0; h < 2; ++h) {
            const __m256i ql0 = load_q(x.ql + 64 * h), ql1 = load_q(x.ql + 64 * h + 32), qh = load_q(x.qh + 32 * h);
            const __m256i v[4] = {
                _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4)),
                _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4)),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
                                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4)),
            };
            for (int g = 0; g < 4; ++g) {
                _mm256_storeu_si256((__m256i *)(q + 128 * h + 32 * g), _mm256_sub_epi8(v[g], off));
                // Sums of the unsigned values per 8 bytes, then per 16.
                __m256i sad = _mm256_sad_epu8(v[g], _mm256_setzero_si256());
                sad = _mm256_add_epi64(sad, _mm256_srli_si256(sad, 8));
                gsum[8 * h + 2 * g] = (int32_t)_mm256_extract_epi64(sad, 0) - 16 * 32;
                gsum[8 * h + 2 * g + 1] = (int32_t)_mm256_extract_epi64(sad, 2) - 16 * 32;
            }
        }
    }

    static void pack(const uint8_t *w, size_t ws, int64_t nr, int64_t nsb, uint8_t *dst) {
        alignas(64) uint8_t q[kLaneRows][QK_K];
        for (int64_t r0 = 0; r0 < nr; r0 += kLaneRows)
            for (int64_t b = 0; b < nsb; ++b) {
                uint8_t *p = dst + ((r0 / kLaneRows) * nsb + b) * kBlock;
                int32_t *sc = (int32_t *)(p + kSc), *off = (int32_t *)(p + kOff);
                float *d = (float *)(p + kD);
                for (int r = 0; r < kLaneRows; ++r) {
                    if (r0 + r >= nr) { // rows past the matrix are zero
                        std::memset(q[r], 0, QK_K);
                        for (int g = 0; g < 16; ++g) sc[g * kLaneRows + r] = 0;
                        off[r] = 0;
                        d[r] = 0.f;
                        continue;
                    }
                    const BlockQ6_K &x = ((const BlockQ6_K *)(w + (r0 + r) * ws))[b];
                    int32_t gsum[16];
                    unpack(x, (int8_t *)q[r], gsum);
                    int32_t o = 0;
                    for (int g = 0; g < 16; ++g) {
                        sc[g * kLaneRows + r] = x.scales[g];
                        o += x.scales[g] * gsum[g];
                    }
                    off[r] = 128 * o;
                    d[r] = f16_at(&x.d);
                }
                interleave_rows(q, p);
            }
    }

    // Per token, its super-blocks' 256 bytes y + 128 (ya) and d (dy).
    struct Acts {
        uint8_t *ya;
        float *dy;
        int64_t nsb;
        Acts(const uint8_t *a, size_t as, int64_t nt, int64_t nsb_) : nsb(nsb_) {
            thread_local std::vector<Line> ya_buf, dy_buf;
            ya = scratch(ya_buf, (size_t)(nt * nsb) * QK_K);
            dy = (float *)scratch(dy_buf, (size_t)(nt * nsb) * 4);
            const __m256i flip = _mm256_set1_epi8((char)0x80);
            for (int64_t t = 0; t < nt; ++t)
                for (int64_t b = 0; b < nsb; ++b) {
                    const BlockQ8_K &y = ((const BlockQ8_K *)(a + t * as))[b];
                    uint8_t *dst = ya + (t * nsb + b) * QK_K;
                    for (int i = 0; i < QK_K; i += 32)
                        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_xor_si256(load_q(y.qs + i), flip));
                    dy[t * nsb + b] = y.d;
                }
        }
    };

};

#if defined(__AVX512F__)
struct Q6KLanes : Q6KPack {
    static constexpr int kTokens = 8;

    template <int T>
    static void tile(int64_t nsb, const uint8_t *pw, const Acts &acts, int64_t t0, int nr, float *out, size_t os) {
        __m512 sum[T];
        for (int t = 0; t < T; ++t) sum[t] = _mm512_setzero_ps();
        const uint8_t *ya = acts.ya + t0 * nsb * QK_K;
        const float *dy = acts.dy + t0 * nsb;
        for (int64_t b = 0; b < nsb; ++b) {
            const uint8_t *w = pw + b * kBlock, *yb = ya + b * QK_K;
            __m512i tot[T];
            for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
            for (int g = 0; g < 16; ++g) {
                __m512i acc[T];
                for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_si512();
                for (int s = 0; s < 4; ++s) {
                    const __m512i wq = _mm512_load_si512(w + (4 * g + s) * 64);
                    for (int t = 0; t < T; ++t)
                        acc[t] = dpbusd512(acc[t], bcast32(yb + t * nsb * QK_K + 16 * g + 4 * s), wq);
                }
                const __m512i scg = _mm512_load_si512(w + kSc + g * 64);
                for (int t = 0; t < T; ++t) tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(acc[t], scg));
            }
            const __m512i off = _mm512_load_si512(w + kOff);
            const __m512 d = _mm512_load_ps((const float *)(w + kD));
            for (int t = 0; t < T; ++t) {
                const __m512 isum = _mm512_cvtepi32_ps(_mm512_sub_epi32(tot[t], off));
                sum[t] = _mm512_add_ps(sum[t], _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(dy[t * nsb + b])), isum));
            }
        }
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * os, row_mask(nr), sum[t]);
    }
};

#endif

} // namespace
} // namespace vt::quant::x86
