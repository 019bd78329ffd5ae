// Every CPU kernel table this build and this CPU have (scalar first), for
// tests that hold each ISA's kernels to the same numbers; and what the
// weight-type tests that decode a format from its definition share.
#pragma once

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

} // namespace vt::test
