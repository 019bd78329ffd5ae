// Row primitives of the portable recurrences (GATED_DELTA_RULE, SSM_SCAN):
// a dot product with kRowLanes partial sums folded in a fixed tree (so a
// row's bits do not depend on the vectorization the compiler picks), axpy,
// and a typed pointer to row (i1, i2) of a strided tensor.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace vt::cpu {

constexpr int kRowLanes = 8;  // partial sums of a dot: lanes the compiler keeps in vector registers

inline float fold_lanes(const float *acc) {
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

inline float row_dot(const float *__restrict a, const float *__restrict b, int64_t n) {
    float acc[kRowLanes] = {};
    int64_t i = 0;
    for (; i + kRowLanes <= n; i += kRowLanes)
        for (int l = 0; l < kRowLanes; ++l) acc[l] += a[i + l] * b[i + l];
    for (int l = 0; i < n; ++i, ++l) acc[l] += a[i] * b[i];
    return fold_lanes(acc);
}

inline void row_axpy(float *__restrict y, float a, const float *__restrict x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

template <typename T> const T *row_at(const Tensor *t, int64_t i1, int64_t i2) {
    return reinterpret_cast<const T *>(static_cast<const uint8_t *>(t->data) + (size_t)i1 * t->nb[1] +
                                       (size_t)i2 * t->nb[2]);
}

} // namespace vt::cpu
