// The orders of the F16_X16 and BF16_X16 gemms (kernels.h), in scalar code:
// their reference in tests.
#include <cmath>

#include "cpu/kernels/kernels.h"

namespace vt::quant {

namespace {
template <float (*ToF32)(uint16_t)>
float dot_pairs(int64_t k, const uint16_t *w, const uint16_t *a) {
    float even = 0.f, odd = 0.f;
    for (int64_t i = 0; i + 1 < k; i += 2) {
        even = std::fma(ToF32(w[i]), ToF32(a[i]), even);
        odd = std::fma(ToF32(w[i + 1]), ToF32(a[i + 1]), odd);
    }
    return even + odd;
}
} // namespace

float dot_f16_pairs(int64_t k, const uint16_t *w, const uint16_t *a) { return dot_pairs<fp16_to_f32>(k, w, a); }
float dot_bf16_pairs(int64_t k, const uint16_t *w, const uint16_t *a) { return dot_pairs<bf16_to_f32>(k, w, a); }

} // namespace vt::quant
