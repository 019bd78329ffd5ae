// The _X16 layouts (x16-layout.h): repacking from the GGUF
// row layout and back. Scalar and exact: unpack(repack(x)) == x bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cpu/kernels/x16-layout.h"

namespace vt::quant {

// The elements of one block of an _X16 layout: the base type's block, or 32
// for F16 and BF16 (whose rows must then be multiples of 32 long).
int64_t x16_block_elems(DType base);

// Whether n_rows rows of k elements of type base fill whole _X16 groups (16
// rows) of whole blocks: the shape every _X16 reader assumes.
inline bool x16_fits(DType base, int64_t k, int64_t n_rows) {
    return n_rows % 16 == 0 && k % x16_block_elems(base) == 0;
}

// n_rows (a multiple of 16) rows of type base, k elements, src_stride bytes
// apart, into base's _X16 layout at dst (n_rows * row bytes, contiguous).
void repack_x16(DType base, const void *src, size_t src_stride, void *dst, int64_t k, int64_t n_rows);

// Blocks [b0, b0 + n) of row r (0..15) of the _X16 group at src (rows of k
// elements), as n contiguous blocks of the base type at dst.
void unpack_row_x16(DType base, const void *src, int64_t k, int r, int64_t b0, int64_t n, void *dst);

} // namespace vt::quant
