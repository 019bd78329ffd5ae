// Multi-token tiles with one weight row per 32-bit lane, for the K-quant
// types whose vec_dot reduces each block or super-block to exact integers
// before its f32 steps (gemm-q4k-x86.h, gemm-q6k-x86.h,
// gemm-legacy-lanes-x86.h). Include after gemm-x86.h.
//
// Since the integers are exact, a tile may form them any exact way. Here a
// 512-bit register holds 16 rows x 4 consecutive weights (rows interleaved 4
// bytes at a time when the weights are packed), and each vpdpbusd multiplies
// them by 4 activation bytes broadcast to every lane: 64 multiply-adds per
// instruction and no per-pair reduction, where the vec_dot's form (weights
// along the lanes) spends a vpmaddubsw, a vpmaddwd and a horizontal sum per
// (row, token) pair. This is the layout llama.cpp's repacked x86 kernels use.
// The f32 steps per super-block then run for 16 rows at once, lane = row,
// with the vec_dot's operations in its order.
#pragma once

#include "core/quant/gemm-x86.h"

namespace vt::quant::x86 {
namespace {

// acc + sum of 4 u8 * s8 products per 32-bit lane. Without VNNI the
// vpmaddubsw pairs must not saturate: callers keep |u * s| <= 8160.
static inline __m512i dpbusd512(__m512i acc, __m512i u, __m512i s) {
#if defined(VT_QUANT_VNNI)
    return _mm512_dpbusd_epi32(acc, u, s);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
#endif
}

// acc + the products of int16 pairs per 32-bit lane.
static inline __m512i dpwssd512(__m512i acc, __m512i a, __m512i b) {
#if defined(VT_QUANT_VNNI)
    return _mm512_dpwssd_epi32(acc, a, b);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

static inline __m512i bcast32(const void *p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
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

static inline __mmask16 row_mask(int nr) {
    return nr >= kLaneRows ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
}

} // namespace
} // namespace vt::quant::x86
