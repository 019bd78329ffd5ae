// Every CPU kernel table this build and this CPU have (scalar first), for
// tests that hold each ISA's kernels to the same numbers; and what the
// weight-type tests that decode a format from its definition share.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/quant.h"
#include "cpu/kernels/kernels.h"

namespace vt::test {

inline std::vector<const quant::Kernels *> all_isas() {
    std::vector<const quant::Kernels *> v;
    for (int i = 0; i < quant::kIsaCount; ++i)
        if (const quant::Kernels *k = quant::kernels_for((quant::Isa)i)) v.push_back(k);
    return v;
}

// An IEEE binary16 at p, decoded from its bits in double.
inline double f16_value(const uint8_t *p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    const int e = (h >> 10) & 31, m = h & 1023;
    const double mag = e == 0 ? std::ldexp((double)m, -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
    return (h >> 15) ? -mag : mag;
}

// x through the activation type `at` (quantized as the dots get it), and the
// dot of those activations with n weights whose element(i) the test decoded:
// exactly, in double, and the sum of the products' magnitudes (for a
// rounding bound).
struct ExactDot {
    std::vector<uint8_t> act;
    double exact = 0, magnitude = 0;
};
template <class Element>
ExactDot exact_dot(DType at, const std::vector<float> &x, Element element) {
    const int64_t n = (int64_t)x.size();
    ExactDot r;
    r.act.resize(row_bytes(at, n));
    quantize_row(at, x.data(), r.act.data(), n);
    std::vector<float> af(n);
    dequantize_row(at, r.act.data(), af.data(), n);
    for (int64_t i = 0; i < n; ++i) {
        r.exact += element(i) * af[i];
        r.magnitude += std::fabs(element(i) * af[i]);
    }
    return r;
}

// Every ISA's dot of the n weights w of type t (element(i): the test's own
// decoding) with x, as the dots get x (quantized to vec_dot_type(t)):
// within the sum of the products' magnitudes times (n / group + 4) f32
// roundings of the exact double dot (group: the elements behind each exact
// integer sum or f32 step), and, where bitwise, bit for bit with the scalar
// reference (vt's canonical orders).
template <class Element>
void check_dots(DType t, const std::vector<uint8_t> &w, const std::vector<float> &x, Element element, int64_t group,
                bool bitwise = true) {
    const int64_t n = (int64_t)x.size();
    const ExactDot d = exact_dot(vec_dot_type(t), x, element);
    const double tol = d.magnitude * (double)(n / group + 4) * 0x1p-23;
    const float ref = ref::vec_dot(t, n, w.data(), d.act.data());
    for (const quant::Kernels *k : all_isas()) {
        const float v = k->dot[(int)t](n, w.data(), d.act.data());
        INFO(dtype_name(t) << " on " << k->isa << " n=" << n << " got " << v << " exact " << d.exact);
        CHECK(std::fabs(v - d.exact) <= tol);
        if (bitwise) CHECK(std::memcmp(&v, &ref, 4) == 0);
    }
}

} // namespace vt::test
