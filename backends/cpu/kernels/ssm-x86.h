// The recurrent Mamba-2 scan's rows (kernels.h SsmRows) for x86, one
// template over simd-x86.h's vector traits. Four state rows go through a
// token together: B_t and C_t are loaded once for the four, and their dots'
// reductions meet in one transpose-add (delta-x86.h's sum4). A row is read
// and written once per token: r = r a + xd B, then r.C from the new values.
// The chunked form (ssm_chunk) is tiled matrix products.
#pragma once

#include "cpu/kernels/delta-x86.h"
#include "cpu/kernels/exp-x86.h"
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


// ---- the chunked form (kernels.h SsmChunk) ----------------------------------------------

// out[i * ldo + j] = sum over k of a[i][k] * b[k][j] for i < ni, j < nj, k <
// nk, in tiles of 4 rows of a by 2 vectors of j, accumulating in k order.
// Rows of b (and of out) are readable (writable) up to jpad >= nj, so whole
// vectors may run past nj. tri 1: row tile [i0, i0 + 4) needs only the
// columns j < i0 + 4 (C B^T's lower triangle); tri 2: only k < i0 + 4 (a is
// lower triangular: M). A tile of fewer rows repeats its last row.
template <class V, int U>
inline void tile4(const float *const *a, const float *const *b, int64_t nk, int64_t j, int r, float *out, int64_t ldo) {
    using F = typename V::F;
    F acc[4][U];
    for (int i = 0; i < 4; ++i)
        for (int v = 0; v < U; ++v) acc[i][v] = V::zero();
    const float *ar[4];
    for (int i = 0; i < 4; ++i) ar[i] = a[i < r ? i : r - 1];
    for (int64_t k = 0; k < nk; ++k) {
        F bv[U];
        for (int v = 0; v < U; ++v) bv[v] = V::load(b[k] + j + v * V::W);
        for (int i = 0; i < 4; ++i) {
            const F av = V::set1(ar[i][k]);
            for (int v = 0; v < U; ++v) acc[i][v] = V::fma(av, bv[v], acc[i][v]);
        }
    }
    for (int i = 0; i < r; ++i)
        for (int v = 0; v < U; ++v) V::store(out + i * ldo + j + v * V::W, acc[i][v]);
}

template <class V>
void gemm_ab(int64_t ni, int64_t nj, int64_t jpad, int64_t nk, const float *const *a, const float *const *b,
             float *out, int64_t ldo, int tri) {
    constexpr int64_t W = V::W;
    for (int64_t i0 = 0; i0 < ni; i0 += 4) {
        const int r = (int)(ni - i0 < 4 ? ni - i0 : 4);
        const int64_t jn = tri == 1 && i0 + r < nj ? i0 + r : nj;
        const int64_t kn = tri == 2 && i0 + r < nk ? i0 + r : nk;
        float *o = out + i0 * ldo;
        int64_t j = 0;
        for (; j < jn && j + 2 * W <= jpad; j += 2 * W) tile4<V, 2>(a + i0, b, kn, j, r, o, ldo);
        for (; j < jn && j + W <= jpad; j += W) tile4<V, 1>(a + i0, b, kn, j, r, o, ldo);
        for (; j < jn; ++j)
            for (int i = 0; i < r; ++i) {
                float acc = 0.0f;
                for (int64_t k = 0; k < kn; ++k) acc += a[i0 + i][k] * b[k][j];
                o[i * ldo + j] = acc;
            }
    }
}

// src (rows x cols, stride ls) to dst (cols x rows, stride ld).
inline void transpose(const float *const *src, int64_t rows, int64_t cols, float *dst, int64_t ld) {
    for (int64_t r0 = 0; r0 < rows; r0 += 8)
        for (int64_t c = 0; c < cols; ++c)
            for (int64_t r = r0; r < rows && r < r0 + 8; ++r) dst[c * ld + r] = src[r][c];
}

template <class V, class VE>
void ssm_chunk(float *S, const SsmChunk &c) {
    using F = typename V::F;
    constexpr int64_t W = V::W;
    const int64_t n = c.n, N = c.N, P = c.P;
    auto r16 = [](int64_t v) { return (v + 15) & ~(int64_t)15; };
    const int64_t ln = r16(n), lp = r16(P), m = n > N ? (n > P ? n : P) : (N > P ? N : P);
    float *BT = c.scratch, *S0T = BT + r16(N) * ln, *M = S0T + r16(N) * lp, *QS = M + ln * ln, *Z = QS + ln * lp,
          *XW = Z + ln * lp;
    const float **pa = reinterpret_cast<const float **>(XW + lp * ln), **pb = pa + r16(m);
    // C B^T's lower triangle (B^T: N rows of n), then the decays: M[t][u] =
    // exp(g_t - g_u) (C_t.B_u) for u <= t, zero above the diagonal.
    transpose(c.B, n, N, BT, ln);
    for (int64_t k = 0; k < N; ++k) pb[k] = BT + k * ln;
    gemm_ab<V>(n, n, ln, N, c.C, pb, M, ln, 1);
    for (int64_t t = 0; t < n; ++t) {
        float *mr = M + t * ln;
        const F gt = V::set1(c.g[t]);
        for (int64_t u = 0; u < ln; u += W) {
            if (u > t) {
                V::store(mr + u, V::zero());
                continue;
            }
            const F dec = VE::exp(V::sub(gt, V::load(c.g + u)));
            V::store(mr + u, V::keep_first(V::mul(dec, V::load(mr + u)), (int)(t + 1 - u)));
        }
    }
    // QS = C S0^T (S0^T: N rows of P).
    for (int64_t p = 0; p < P; ++p) pa[p] = S + p * N;
    transpose(pa, P, N, S0T, lp);
    for (int64_t k = 0; k < N; ++k) pb[k] = S0T + k * lp;
    gemm_ab<V>(n, P, lp, N, c.C, pb, QS, lp, 0);
    // Z = M xd (M lower triangular), y_t = e_t QS_t + Z_t.
    for (int64_t t = 0; t < n; ++t) {
        pa[t] = M + t * ln;
        pb[t] = c.xd + t * P;
    }
    gemm_ab<V>(n, P, P, n, pa, pb, Z, lp, 2);
    for (int64_t t = 0; t < n; ++t)
        for (int64_t p = 0; p < P; ++p) c.y[t][p] = c.e[t] * QS[t * lp + p] + Z[t * lp + p];
    // S <- e_last S0 + XW B with XW[p][u] = w_u xd_u[p] (the sum into S0T's
    // room, P rows of N).
    for (int64_t p = 0; p < P; ++p)
        for (int64_t u = 0; u < n; ++u) XW[p * ln + u] = c.w[u] * c.xd[u * P + p];
    for (int64_t p = 0; p < P; ++p) pa[p] = XW + p * ln;
    gemm_ab<V>(P, N, N, n, pa, c.B, S0T, N, 0);
    const float el = c.e[n - 1];
    for (int64_t i = 0; i < P * N; ++i) S[i] = el * S[i] + S0T[i];
}

} // namespace
} // namespace vt::quant::x86
