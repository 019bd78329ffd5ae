// Every CPU kernel table this build and this CPU have (scalar first), for
// tests that hold each ISA's kernels to the same numbers.
#pragma once

#include <vector>

#include "cpu/kernels/kernels.h"

namespace vt::test {

inline std::vector<const quant::Kernels *> all_isas() {
    std::vector<const quant::Kernels *> v;
    for (int i = 0; i < quant::kIsaCount; ++i)
        if (const quant::Kernels *k = quant::kernels_for((quant::Isa)i)) v.push_back(k);
    return v;
}

} // namespace vt::test
