// The recurrent Mamba-2 scan's rows (kernels.h SsmRows) for x86, one
// template over simd-x86.h's vector traits. Four state rows go through a
// token together: B_t and C_t are loaded once for the four, and their dots'
// reductions meet in one transpose-add (delta-x86.h's sum4). A row is read
// and written once per token: r = r a + xd B, then r.C from the new values.
#pragma once

#include "cpu/kernels/delta-x86.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant::x86 {
namespace {

// Rows p0 .. p0 + R - 1 (R = 4, or 1 for the last rows) through the block.
template <class V, int R>
inline void ssm_rows_r(float *S, int64_t p0, const SsmRows &b) {
    using F = typename V::F;
    const int64_t N = b.N, nv = N / V::W * V::W;
    float *row[R];
    for (int r = 0; r < R; ++r) row[r] = S + (p0 + r) * N;
    for (int64_t t = 0; t < b.n; ++t) {
        const float *B = b.B[t], *C = b.C[t];
        const float a1 = b.a[t];
        const F a = V::set1(a1);
        float u1[R];
        F u[R], acc[R];
        for (int r = 0; r < R; ++r) {
            u1[r] = b.xd[t * b.P + p0 + r];
            u[r] = V::set1(u1[r]);
            acc[r] = V::zero();
        }
        for (int64_t i = 0; i < nv; i += V::W) {
            const F bv = V::load(B + i), cv = V::load(C + i);
            for (int r = 0; r < R; ++r) {
                const F x = V::fma(u[r], bv, V::mul(V::load(row[r] + i), a));
                V::store(row[r] + i, x);
                acc[r] = V::fma(x, cv, acc[r]);
            }
        }
        float y[R];
        if constexpr (R == 4) _mm_storeu_ps(y, sum4(acc[0], acc[1], acc[2], acc[3]));
        else y[0] = V::hsum(acc[0]);
        for (int r = 0; r < R; ++r) {
            for (int64_t i = nv; i < N; ++i) {
                row[r][i] = row[r][i] * a1 + u1[r] * B[i];
                y[r] += row[r][i] * C[i];
            }
            b.y[t][p0 + r] = y[r];
        }
    }
}

template <class V>
void ssm_rows(float *S, int64_t p0, int64_t p1, const SsmRows &b) {
    int64_t p = p0;
    for (; p + 4 <= p1; p += 4) ssm_rows_r<V, 4>(S, p, b);
    for (; p < p1; ++p) ssm_rows_r<V, 1>(S, p, b);
}

} // namespace
} // namespace vt::quant::x86
