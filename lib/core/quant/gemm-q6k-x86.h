// Multi-token tiles for Q6_K (mirrors dot_q6_k in kquants-avx2.cpp) with one
// weight row per 32-bit lane. Include after gemm-x86.h.
//
// dot_q6_k reduces each super-block to one exact integer before its only
// f32 step (sum += d * dy * isum), so a tile may form that integer any
// exact way. Here a 512-bit register holds 16 rows x 4 consecutive weights
// (rows interleaved 4 bytes at a time when the weights are packed), and
// each vpdpbusd multiplies them by 4 activation bytes broadcast to every
// lane: 64 multiply-adds per instruction with no per-pair reduction, where
// the vec_dot's form (weights along the lanes) spends a vpmaddubsw, a
// vpmaddwd and a horizontal sum per (row, token) pair. This is the layout
// llama.cpp's repacked x86 kernels use.
//
// The operands are swapped against the vec_dot so the offsets cost nothing
// per token: activations become unsigned (y + 128, packed once per call),
// weights signed (q - 32), and
//   sum_g sc_g sum_i (q_i - 32) y_i
//     = sum_g sc_g sum_i (q_i - 32)(y_i + 128) - 128 sum_g sc_g sum_i (q_i - 32),
// where the last term depends on the row only and is packed with it.
// Bounds: |(q - 32)(y + 128)| <= 32 * 255, so vpmaddubsw (the fallback
// without VNNI) cannot saturate, and every sum fits in int32.
#pragma once

#include "core/quant/gemm-x86.h"

namespace vt::quant::x86 {
namespace {

constexpr int kQ6Rows = 16; // rows per tile: the 32-bit lanes of a zmm
constexpr int kQ6Tokens = 8;

// Packed weights of 16 rows per super-block: for step s (elements 4s..4s+3),
// row r the 4 values q - 32 (4096 bytes); for group g (16 elements), row r
// the scale as int32 (1024); row r's offset term 128 * sum_g sc_g sum(q - 32)
// (64); row r's d as f32 (64). Rows past the matrix are zero.
constexpr size_t kQ6Sc = 4096, kQ6Off = kQ6Sc + 1024, kQ6D = kQ6Off + 64, kQ6Block = kQ6D + 64;

static inline __m512i dpbusd512(__m512i acc, __m512i u, __m512i s) {
#if defined(VT_QUANT_VNNI)
    return _mm512_dpbusd_epi32(acc, u, s);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
#endif
}

// One row's super-block as 256 values q - 32 in element order.
static inline void unpack_q6k(const BlockQ6_K &x, int8_t *q) {
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
        for (int g = 0; g < 4; ++g)
            _mm256_storeu_si256((__m256i *)(q + 128 * h + 32 * g), _mm256_sub_epi8(v[g], off));
    }
}

static void pack_weights_q6k_rows(const uint8_t *w, size_t ws, int64_t nr, int64_t nsb, uint8_t *dst) {
    alignas(32) int8_t q[QK_K];
    for (int64_t r0 = 0; r0 < nr; r0 += kQ6Rows)
        for (int64_t b = 0; b < nsb; ++b) {
            uint8_t *p = dst + ((r0 / kQ6Rows) * nsb + b) * kQ6Block;
            int32_t *sc = (int32_t *)(p + kQ6Sc), *off = (int32_t *)(p + kQ6Off);
            float *d = (float *)(p + kQ6D);
            for (int r = 0; r < kQ6Rows; ++r) {
                if (r0 + r >= nr) {
                    for (int s = 0; s < QK_K / 4; ++s) std::memset(p + s * 64 + r * 4, 0, 4);
                    for (int g = 0; g < 16; ++g) sc[g * kQ6Rows + r] = 0;
                    off[r] = 0;
                    d[r] = 0.f;
                    continue;
                }
                const BlockQ6_K &x = ((const BlockQ6_K *)(w + (r0 + r) * ws))[b];
                unpack_q6k(x, q);
                for (int s = 0; s < QK_K / 4; ++s) std::memcpy(p + s * 64 + r * 4, q + 4 * s, 4);
                int32_t o = 0;
                for (int g = 0; g < 16; ++g) {
                    int32_t qs = 0;
                    for (int i = 0; i < 16; ++i) qs += q[16 * g + i];
                    sc[g * kQ6Rows + r] = x.scales[g];
                    o += x.scales[g] * qs;
                }
                off[r] = 128 * o;
                d[r] = f16_at(&x.d);
            }
        }
}

// Activations: per token, its super-blocks' 256 bytes y + 128 (ya) and d (dy).
static void pack_acts_q6k(const uint8_t *a, size_t as, int64_t nt, int64_t nsb, uint8_t *ya, float *dy) {
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

// 16 rows x T tokens over all super-blocks; out rows masked to nr.
template <int T>
static void q6k_rows_tile(int64_t nsb, const uint8_t *pw, const uint8_t *ya, const float *dy, int nr, float *out,
                          size_t os) {
    __m512 sum[T];
    for (int t = 0; t < T; ++t) sum[t] = _mm512_setzero_ps();
    const size_t tstride = (size_t)nsb * QK_K; // bytes between tokens in ya
    for (int64_t b = 0; b < nsb; ++b) {
        const uint8_t *w = pw + b * kQ6Block, *yb = ya + b * QK_K;
        __m512i tot[T];
        for (int t = 0; t < T; ++t) tot[t] = _mm512_setzero_si512();
        for (int g = 0; g < 16; ++g) {
            __m512i acc[T];
            for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_si512();
            for (int s = 0; s < 4; ++s) {
                const __m512i wq = _mm512_load_si512(w + (4 * g + s) * 64);
                for (int t = 0; t < T; ++t) {
                    int32_t y4;
                    std::memcpy(&y4, yb + t * tstride + 16 * g + 4 * s, 4);
                    acc[t] = dpbusd512(acc[t], _mm512_set1_epi32(y4), wq);
                }
            }
            const __m512i scg = _mm512_load_si512(w + kQ6Sc + g * 64);
            for (int t = 0; t < T; ++t) tot[t] = _mm512_add_epi32(tot[t], _mm512_mullo_epi32(acc[t], scg));
        }
        const __m512i off = _mm512_load_si512(w + kQ6Off);
        const __m512 d = _mm512_load_ps((const float *)(w + kQ6D));
        for (int t = 0; t < T; ++t) {
            const __m512 isum = _mm512_cvtepi32_ps(_mm512_sub_epi32(tot[t], off));
            sum[t] = _mm512_add_ps(sum[t], _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(dy[t * nsb + b])), isum));
        }
    }
    const __mmask16 m = nr >= kQ6Rows ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * os, m, sum[t]);
}

template <int T>
static void q6k_rows_tiles(int64_t nsb, const uint8_t *pw, const uint8_t *ya, const float *dy, int nr, float *out,
                           size_t os, int nt) {
    if constexpr (T > 1)
        if (nt < T) return q6k_rows_tiles<T - 1>(nsb, pw, ya, dy, nr, out, os, nt);
    q6k_rows_tile<T>(nsb, pw, ya, dy, nr, out, os);
}

static void gemm_q6_k(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt,
                      float *out, size_t os) {
    const int64_t nsb = k / QK_K;
    thread_local std::vector<Line> act_buf, dy_buf, w_buf;
    uint8_t *ya = scratch(act_buf, (size_t)(nt * nsb) * QK_K);
    float *dy = (float *)scratch(dy_buf, (size_t)(nt * nsb) * 4);
    pack_acts_q6k((const uint8_t *)a, as, nt, nsb, ya, dy);

    // Rows per pass: their packed super-blocks (5 KiB per 16 rows) fill
    // about a quarter of L2, so they stay there while every token tile of
    // a chunk reads them; the chunk's activations (256 bytes per token and
    // super-block) take about another quarter.
    const size_t group_bytes = (size_t)nsb * kQ6Block;
    int64_t groups = (int64_t)((256 * 1024) / group_bytes);
    if (groups < 1) groups = 1;
    const int64_t rows_per_block = groups * kQ6Rows;
    uint8_t *pw = scratch(w_buf, (size_t)groups * group_bytes);
    int64_t chunk = (int64_t)((256 * 1024) / ((size_t)nsb * QK_K)) / kQ6Tokens * kQ6Tokens;
    if (chunk < kQ6Tokens) chunk = kQ6Tokens;
    for (int64_t t0 = 0; t0 < nt; t0 += chunk) {
        const int64_t t1 = t0 + chunk < nt ? t0 + chunk : nt;
        for (int64_t r0 = 0; r0 < nr; r0 += rows_per_block) {
            const int64_t rn = nr - r0 < rows_per_block ? nr - r0 : rows_per_block;
            pack_weights_q6k_rows((const uint8_t *)w + r0 * ws, ws, rn, nsb, pw);
            for (int64_t g = 0; g * kQ6Rows < rn; ++g) {
                const int rows = (int)(rn - g * kQ6Rows < kQ6Rows ? rn - g * kQ6Rows : kQ6Rows);
                for (int64_t t = t0; t < t1; t += kQ6Tokens)
                    q6k_rows_tiles<kQ6Tokens>(nsb, pw + g * group_bytes, ya + t * nsb * QK_K, dy + t * nsb, rows,
                                              out + t * os + r0 + g * kQ6Rows, os, (int)(t1 - t));
            }
        }
    }
}

} // namespace
} // namespace vt::quant::x86
