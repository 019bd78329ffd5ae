// The exp-based kernels (kernels.h softmax and swiglu) for x86, one template
// over simd-x86.h's vector traits with exp and the double sums added,
// bit-identical to the scalar reference (exp-scalar.cpp): expf_poly's
// operations lane by lane, the softmax sum in its 16 double lanes.
#pragma once

#include <cmath>

#include "cpu/kernels/simd-x86.h"
#include "core/quant/expf-poly.h"

namespace vt::quant::x86 {
namespace {

struct YmmExp : Ymm {
    static inline F exp(F x) {
        using namespace expf_poly;
        const F xc = _mm256_min_ps(_mm256_max_ps(x, set1(kLo)), set1(kHi));
        const F n = _mm256_round_ps(_mm256_mul_ps(xc, set1(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        F r = _mm256_fnmadd_ps(n, set1(kLn2Hi), xc);
        r = _mm256_fnmadd_ps(n, set1(kLn2Lo), r);
        F p = set1(kTaylor[0]);
        for (int i = 1; i < 8; ++i) p = _mm256_fmadd_ps(p, r, set1(kTaylor[i]));
        const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
        p = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
        p = _mm256_blendv_ps(p, _mm256_setzero_ps(), _mm256_cmp_ps(x, set1(kLo), _CMP_LT_OQ));
        p = _mm256_blendv_ps(p, set1(std::numeric_limits<float>::infinity()),
                             _mm256_cmp_ps(x, set1(kHi), _CMP_GT_OQ));
        return _mm256_blendv_ps(p, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    }
    // v's 8 floats into acc[0] (lanes 0..3) and acc[1] (4..7); the caller
    // passes acc + 2 for a step's second 8 elements.
    static inline void add_doubles(__m256d acc[2], F v) {
        acc[0] = _mm256_add_pd(acc[0], _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        acc[1] = _mm256_add_pd(acc[1], _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    using D = __m256d;
    static constexpr int kDoubles = 4;  // vectors of doubles for 16 lanes
    static inline D dzero() { return _mm256_setzero_pd(); }
    static inline void dstore(double *p, D v) { _mm256_storeu_pd(p, v); }
};

#if defined(__AVX512F__)
struct ZmmExp : Zmm {
    static inline F exp(F x) {
        using namespace expf_poly;
        const F xc = _mm512_min_ps(_mm512_max_ps(x, set1(kLo)), set1(kHi));
        const F n =
            _mm512_roundscale_ps(_mm512_mul_ps(xc, set1(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        F r = _mm512_fnmadd_ps(n, set1(kLn2Hi), xc);
        r = _mm512_fnmadd_ps(n, set1(kLn2Lo), r);
        F p = set1(kTaylor[0]);
        for (int i = 1; i < 8; ++i) p = _mm512_fmadd_ps(p, r, set1(kTaylor[i]));
        const __m512i e = _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23);
        p = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), e));
        p = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, set1(kLo), _CMP_LT_OQ), p, _mm512_setzero_ps());
        p = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, set1(kHi), _CMP_GT_OQ), p,
                                 set1(std::numeric_limits<float>::infinity()));
        return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), p, x);
    }
    using D = __m512d;
    static constexpr int kDoubles = 2;
    static inline D dzero() { return _mm512_setzero_pd(); }
    static inline void dstore(double *p, D v) { _mm512_storeu_pd(p, v); }
    static inline void add_doubles(__m512d acc[2], F v) {
        acc[0] = _mm512_add_pd(acc[0], _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
        acc[1] = _mm512_add_pd(acc[1], _mm512_cvtps_pd(hi));
    }
};
#endif

// x[j] = exp(scale * x[j] - max_j scale * x[j]) for j < n; returns their
// sum in double (expf_poly::fold16's order).
template <class V>
double softmax_row(float *x, int64_t n, float scale) {
    const typename V::F s = V::set1(scale);
    float mx = -INFINITY;
    int64_t j = 0;
    if (n >= V::W) {
        typename V::F m = V::set1(-INFINITY);
        for (; j + V::W <= n; j += V::W) {
            const typename V::F v = V::mul(V::load(x + j), s);
            V::store(x + j, v);
            m = V::max(v, m); // a NaN score is skipped, as by the scalar compare
        }
        mx = V::hmax(m);
    }
    for (; j < n; ++j) {
        x[j] *= scale;
        if (x[j] > mx) mx = x[j];
    }
    // 16 elements per step whatever the width, so lane j % 16 of the
    // doubles gets element j.
    typename V::D acc[V::kDoubles];
    for (auto &a : acc) a = V::dzero();
    const typename V::F m = V::set1(mx);
    j = 0;
    for (; j + 16 <= n; j += 16) {
        for (int h = 0; h < 16 / V::W; ++h) {
            const typename V::F e = V::exp(V::sub(V::load(x + j + h * V::W), m));
            V::store(x + j + h * V::W, e);
            V::add_doubles(acc + 2 * h, e); // Ymm: h = 0, 1; Zmm: h = 0
        }
    }
    if (j < n) {
        // The last n - j (< 16) elements as one more step, through a padded
        // copy: lane l < r gets element j + l, exactly as the scalar
        // exp_ref and sums[l] += would; the padding's lanes add +0.
        const int r = (int)(n - j);
        alignas(64) float t[16];
        for (int l = 0; l < 16; ++l) t[l] = l < r ? x[j + l] : mx;
        for (int h = 0; h < 16 / V::W; ++h) {
            const typename V::F e = V::keep_first(V::exp(V::sub(V::load(t + h * V::W), m)), r - h * V::W);
            V::store(t + h * V::W, e);
            V::add_doubles(acc + 2 * h, e);
        }
        std::memcpy(x + j, t, (size_t)r * sizeof(float));
    }
    double sums[16];
    for (int i = 0; i < V::kDoubles; ++i) V::dstore(sums + i * (16 / V::kDoubles), acc[i]);
    return expf_poly::fold16(sums);
}

// d[i] = g[i] / (1 + exp(-g[i])) * u[i].
template <class V>
void swiglu_row(const float *g, const float *u, float *d, int64_t n) {
    int64_t i = 0;
    const typename V::F one = V::set1(1.f);
    for (; i + V::W <= n; i += V::W) {
        const typename V::F gv = V::load(g + i);
        const typename V::F e = V::exp(V::neg(gv));
        V::store(d + i, V::mul(V::div(gv, V::add(one, e)), V::load(u + i)));
    }
    for (; i < n; ++i) d[i] = g[i] / (1.0f + expf_poly::exp_ref(-g[i])) * u[i];
}

} // namespace
} // namespace vt::quant::x86
