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

// One row's super-block as 256 values q - 32 in element order, and the sum
// of q - 32 over each 16-element group.
static inline void unpack_q6k(const BlockQ6_K &x, int8_t *q, int32_t gsum[16]) {
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
        const __m512i ab_lo = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x44), ab_hi = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xEE);
        const __m512i cd_lo = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x44),
                      cd_hi = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xEE);
        t[j] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0x88);
        t[4 + j] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0xDD);
        t[8 + j] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0x88);
        t[12 + j] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0xDD);
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
}

static void pack_weights_q6k_rows(const uint8_t *w, size_t ws, int64_t nr, int64_t nsb, uint8_t *dst) {
    alignas(64) int8_t q[kQ6Rows][QK_K];
    for (int64_t r0 = 0; r0 < nr; r0 += kQ6Rows)
        for (int64_t b = 0; b < nsb; ++b) {
            uint8_t *p = dst + ((r0 / kQ6Rows) * nsb + b) * kQ6Block;
            int32_t *sc = (int32_t *)(p + kQ6Sc), *off = (int32_t *)(p + kQ6Off);
            float *d = (float *)(p + kQ6D);
            for (int r = 0; r < kQ6Rows; ++r) {
                if (r0 + r >= nr) {
                    std::memset(q[r], 0, QK_K);
                    for (int g = 0; g < 16; ++g) sc[g * kQ6Rows + r] = 0;
                    off[r] = 0;
                    d[r] = 0.f;
                    continue;
                }
                const BlockQ6_K &x = ((const BlockQ6_K *)(w + (r0 + r) * ws))[b];
                int32_t gsum[16];
                unpack_q6k(x, q[r], gsum);
                int32_t o = 0;
                for (int g = 0; g < 16; ++g) {
                    sc[g * kQ6Rows + r] = x.scales[g];
                    o += x.scales[g] * gsum[g];
                }
                off[r] = 128 * o;
                d[r] = f16_at(&x.d);
            }
            // Interleave: 16 x 16 dword transposes, 64 elements at a time.
            for (int c = 0; c < QK_K / 64; ++c) {
                __m512i v[16];
                for (int r = 0; r < kQ6Rows; ++r) v[r] = _mm512_load_si512(q[r] + 64 * c);
                transpose16x16_epi32(v);
                for (int s = 0; s < 16; ++s) _mm512_store_si512(p + (16 * c + s) * 64, v[s]);
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
    // about a quarter of L2 and stay there while every token tile reads
    // them. The weights are packed once per call: the activations (256
    // bytes per token and super-block) stream from L3 instead, at about 4
    // bytes per cycle, which a tile's work hides (with token chunks sized
    // for L2, the repacking of every chunk cost a third of the time).
    const size_t group_bytes = (size_t)nsb * kQ6Block;
    int64_t groups = (int64_t)((256 * 1024) / group_bytes);
    if (groups < 1) groups = 1;
    const int64_t rows_per_block = groups * kQ6Rows;
    uint8_t *pw = scratch(w_buf, (size_t)groups * group_bytes);
    for (int64_t r0 = 0; r0 < nr; r0 += rows_per_block) {
        const int64_t rn = nr - r0 < rows_per_block ? nr - r0 : rows_per_block;
        pack_weights_q6k_rows((const uint8_t *)w + r0 * ws, ws, rn, nsb, pw);
        for (int64_t g = 0; g * kQ6Rows < rn; ++g) {
            const int rows = (int)(rn - g * kQ6Rows < kQ6Rows ? rn - g * kQ6Rows : kQ6Rows);
            for (int64_t t = 0; t < nt; t += kQ6Tokens)
                q6k_rows_tiles<kQ6Tokens>(nsb, pw + g * group_bytes, ya + t * nsb * QK_K, dy + t * nsb, rows,
                                          out + t * os + r0 + g * kQ6Rows, os, (int)(nt - t));
        }
    }
}

} // namespace
} // namespace vt::quant::x86
