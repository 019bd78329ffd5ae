// vt's exp (expf-poly.h) against the double-precision exp, and the kernels
// built on it (Kernels::softmax, Kernels::swiglu): every table's bits equal
// the scalar reference's, and the results equal the exact formulas to
// within the error of the exp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/quant/expf-poly.h"
#include "cpu/kernels/kernels.h"

using namespace vt;
using quant::Isa;
using quant::Kernels;

namespace {

// Distance in units in the last place of want (a double) at float precision.
double ulps(float got, double want) {
    const double ulp = std::ldexp(1.0, std::ilogb((float)want) - 23);
    return std::fabs((double)got - want) / ulp;
}

} // namespace

TEST_CASE("exp_ref is within 2 ulp of exp over its range, with exact edges", "[exp]") {
    using quant::expf_poly::exp_ref;
    double worst = 0;
    float worst_x = 0;
    // Every 61st float from -87 to 88 (about 17 million).
    uint32_t lo, hi, zero = 0;
    const float flo = -87.f, fhi = 88.f;
    std::memcpy(&lo, &flo, 4);
    std::memcpy(&hi, &fhi, 4);
    auto check = [&](float x) {
        const double u = ulps(exp_ref(x), std::exp((double)x));
        if (u > worst) worst = u, worst_x = x;
    };
    for (uint32_t b = lo; b > 0x80000000u; b -= 61) { // negative floats, down to -0
        float x;
        std::memcpy(&x, &b, 4);
        check(x);
    }
    for (uint32_t b = zero; b <= hi; b += 61) {
        float x;
        std::memcpy(&x, &b, 4);
        check(x);
    }
    INFO("worst at x = " << worst_x << ": " << worst << " ulp");
    CHECK(worst <= 2.0);
    CHECK(exp_ref(0.f) == 1.f);
    CHECK(exp_ref(-0.f) == 1.f);
    CHECK(exp_ref(-87.5f) == 0.f);
    CHECK(exp_ref(-INFINITY) == 0.f);
    CHECK(exp_ref(89.f) == INFINITY);
    CHECK(exp_ref(INFINITY) == INFINITY);
    CHECK(std::isnan(exp_ref(std::numeric_limits<float>::quiet_NaN())));
}

TEST_CASE("softmax and SwiGLU kernels: every table equals the scalar reference bit for bit", "[exp]") {
    const Kernels *ref = quant::kernels_for(Isa::scalar);
    REQUIRE(ref);
    REQUIRE(ref->softmax);
    REQUIRE(ref->swiglu);
    std::mt19937 rng(17);
    std::normal_distribution<float> nd(0.f, 4.f);
    int checked = 0;
    // Every tail of the 8/16-lane loops, and long rows.
    for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1027}) {
        std::vector<float> x((size_t)n), g((size_t)n), u((size_t)n);
        for (int64_t j = 0; j < n; ++j) {
            x[j] = nd(rng) * (j % 11 == 3 ? 30.f : 1.f); // some keys far below the max: exp underflows to 0
            g[j] = nd(rng) * (j % 13 == 5 ? 40.f : 1.f); // and gates whose exp(-g) overflows
            u[j] = nd(rng);
        }
        const float scale = 0.125f;
        std::vector<float> want_p = x, want_d((size_t)n);
        const double want_sum = ref->softmax(want_p.data(), n, scale);
        ref->swiglu(g.data(), u.data(), want_d.data(), n);

        // Against the formulas in double.
        double mx = -INFINITY, sum = 0;
        for (float v : x) mx = std::fmax(mx, (double)(v * scale));
        for (int64_t j = 0; j < n; ++j) {
            const double arg = (double)(x[j] * scale) - mx, e = std::exp(arg);
            sum += e;
            INFO("n=" << n << " j=" << j);
            // 2 ulp of the exp, and the f32 rounding of its argument (half
            // an ulp of |arg|, which exp turns into a relative error).
            CHECK(std::fabs(want_p[j] - e) <= e * (2.4e-7 + std::fabs(arg) * 6e-8) + 1e-37);
            const double d = (double)g[j] / (1.0 + std::exp(-(double)g[j])) * u[j];
            // (exp(-g) is +inf past g < -88, as f32 exp is past -88.7: the result is -0, within 1e-35 of the truth)
            CHECK(std::fabs(want_d[j] - d) <= 1e-6 * std::fabs(d) + 1e-35);
        }
        CHECK(std::fabs(want_sum - sum) <= 3e-7 * sum);

        for (int i = 1; i < quant::kIsaCount; ++i) {
            const Kernels *k = quant::kernels_for((Isa)i);
            if (!k) continue;
            INFO(std::string(k->isa) + " n=" + std::to_string(n));
            std::vector<float> p = x, d((size_t)n);
            const double s = k->softmax(p.data(), n, scale);
            k->swiglu(g.data(), u.data(), d.data(), n);
            CHECK(std::memcmp(&s, &want_sum, sizeof s) == 0);
            CHECK(std::memcmp(p.data(), want_p.data(), 4 * (size_t)n) == 0);
            CHECK(std::memcmp(d.data(), want_d.data(), 4 * (size_t)n) == 0);
            ++checked;
        }
    }
    if (checked == 0) WARN("this CPU has no SIMD table; only the scalar kernels ran");
}
