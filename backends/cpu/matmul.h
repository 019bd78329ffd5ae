// The pieces of a weight x activations product that MUL_MAT and MUL_MAT_ID
// share (ops-matmul.cpp): activation rows converted to what the weight's
// kernels read, and a range of weight rows dotted with m such rows. Keeping
// one implementation is what makes an expert's product (MUL_MAT_ID) give
// the same bits as the dense product of the same rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.h"

namespace vt::cpu::matmul {

// Whether the kernels read w as it is laid out (for a 3-D w, each of its
// matrices along ne[2]: MUL_MAT_ID's experts).
bool weight_ok(const Tensor &w);

// Whether the activation rows must be converted before the kernels read
// them (else they read the f32 input rows as they are).
bool converts_acts(const Tensor &w);
// Bytes of one converted activation row of k values for weight w.
size_t act_row_bytes(const Tensor &w, int64_t k);
// Whether w and w2 read the same converted rows (same type and form).
bool same_acts(const Tensor &w, const Tensor &w2);
// x (k f32 values) converted for w's kernels into out (act_row_bytes).
void convert_act_row(const Tensor &w, const float *x, uint8_t *out, int64_t k);

// The weight rows [b, e) of n_rows that thread ith of nth takes: _X16
// weights split in whole groups of 16.
void split_rows(const Tensor &w, int64_t n_rows, int ith, int nth, int64_t &b, int64_t &e);

// out[t * ldo + r] = row r of the matrix at wbase (w's type, layout and row
// stride) . activation row t, for r in [b, e) and t < m. act holds m rows
// act_stride bytes apart, converted (or f32 when !converts_acts(w)). Every
// output is bit-identical whatever m is: a token's result does not depend
// on which other tokens share the product.
void dot_rows(const Tensor &w, const uint8_t *wbase, const uint8_t *act, size_t act_stride, int64_t m, float *out,
              size_t ldo, int64_t b, int64_t e);

} // namespace vt::cpu::matmul
