// Load-time weight layouts (dtype.h's Q4_0_X4): repacking from the GGUF
// row layout and back. Scalar and exact: unpack(repack(x)) == x bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vt::quant {

// n_rows (a multiple of 4) Q4_0 rows of k elements, src_stride bytes apart,
// into Q4_0_X4 at dst (n_rows * row bytes, contiguous).
void repack_q4_0_x4(const void *src, size_t src_stride, void *dst, int64_t k, int64_t n_rows);

// The inverse for n_rows (a multiple of 4) rows starting at a group
// boundary: Q4_0 rows written dst_stride bytes apart.
void unpack_q4_0_x4(const void *src, void *dst, size_t dst_stride, int64_t k, int64_t n_rows);

// Blocks [b0, b0 + n) of row r (0..3) of the Q4_0_X4 group at src, as n
// contiguous Q4_0 blocks at dst.
void unpack_row_q4_0_x4(const void *src, int r, int64_t b0, int64_t n, void *dst);

} // namespace vt::quant
