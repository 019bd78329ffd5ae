// exp(x) in f32 from operations IEEE 754 defines exactly (multiply, fma,
// round to nearest even, exponent bits), so the scalar reference here and
// every vector width (exp-x86.h) compute the same bits: the softmax of the
// sequence attention and SwiGLU are then the same on every kernel table, as
// their matmuls are. Not glibc's expf, which may differ in the last bit.
//
// exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 (ln 2 in two
// parts, the first exact in a few bits), |r| <= ln(2) / 2, exp(r) by its
// Taylor series to r^7 (truncation below 6e-9 relative) in Horner form.
// Within 2 ulp of exp over [-87, 88] (tested); x < -87 gives 0 (e^-87 is
// 1.6e-38, about FLT_MIN), x > 88 gives +inf, NaN stays NaN, exp(0) is 1.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace vt::quant::expf_poly {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;     // 355 / 512: n * kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440e-4f;  // ln 2 - kLn2Hi
constexpr float kLo = -87.0f, kHi = 88.0f;  // keep 2^n * exp(r) a normal float
// 1 / i!, highest first.
constexpr float kTaylor[8] = {1.f / 5040, 1.f / 720, 1.f / 120, 1.f / 24, 1.f / 6, 0.5f, 1.f, 1.f};

static inline float exp_ref(float x) {
    if (std::isnan(x)) return x;
    if (x < kLo) return 0.f;
    if (x > kHi) return std::numeric_limits<float>::infinity();
    const float n = std::nearbyint(x * kLog2e);
    float r = std::fma(-n, kLn2Hi, x);
    r = std::fma(-n, kLn2Lo, r);
    float p = kTaylor[0];
    for (int i = 1; i < 8; ++i) p = std::fma(p, r, kTaylor[i]);
    uint32_t bits;
    std::memcpy(&bits, &p, 4);
    bits += (uint32_t)(int32_t)n << 23;  // p in [0.7, 1.42]: n in [-126, 127] keeps it normal
    std::memcpy(&p, &bits, 4);
    return p;
}

// The order of the softmax sum (kernels.h): 16 double accumulators, element
// j into j % 16, then folded in halves (i += i + 8, i += i + 4, ...).
static inline double fold16(double acc[16]) {
    for (int h = 8; h >= 1; h /= 2)
        for (int i = 0; i < h; ++i) acc[i] += acc[i + h];
    return acc[0];
}

} // namespace vt::quant::expf_poly
