// Multi-token tiles with one weight row per 32-bit lane, for the K-quant
// types whose vec_dot reduces each block or super-block to exact integers
// before its f32 steps (gemm-q4k-x86.h, gemm-q6k-x86.h,
// gemm-legacy-lanes-x86.h).
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

#include "cpu/kernels/gemm-lanes-x86.h"

namespace vt::quant::x86 {
namespace {

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

static inline __mmask16 row_mask(int nr) {
    return nr >= kLaneRows ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
}

} // namespace
} // namespace vt::quant::x86
