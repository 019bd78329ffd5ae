// Elementwise tolerance checks shared by the op tests of every backend
// (tests/unit/ops-harness.h for the CPU, test-vulkan-harness.h for Vulkan).
// Test-only; needs Catch2. VT_TEST_OPS_VERBOSE=1 prints each check's worst
// error/tolerance ratio.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace vt::test {

// Checks |got - ref| <= tol elementwise (a non-finite error always fails);
// reports the worst element.
inline void check_close(const std::vector<float> &got, const std::vector<double> &ref, const std::vector<double> &tol,
                        const std::string &what) {
    REQUIRE(got.size() == ref.size());
    REQUIRE(tol.size() == ref.size());
    size_t worst = 0, bad = 0;
    double worst_ratio = -1;
    for (size_t i = 0; i < got.size(); ++i) {
        const double err = std::fabs((double)got[i] - ref[i]);
        const double ratio = !std::isfinite(err) ? INFINITY : err == 0 ? 0.0 : err / tol[i];
        if (!(ratio <= 1.0)) ++bad;
        if (!(ratio <= worst_ratio)) {
            worst_ratio = ratio;
            worst = i;
        }
    }
    if (std::getenv("VT_TEST_OPS_VERBOSE"))
        std::printf("%-40s worst err/tol %.3g (n=%zu)\n", what.c_str(), worst_ratio, got.size());
    INFO(what << ": " << bad << " of " << got.size() << " elements out of tolerance; worst at " << worst
              << ": got " << got[worst] << ", expected " << ref[worst] << ", tol " << tol[worst]
              << " (err/tol " << worst_ratio << ")");
    CHECK(bad == 0);
}

} // namespace vt::test
