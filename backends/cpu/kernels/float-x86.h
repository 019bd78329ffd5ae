// The dot order of the plain float types (F32, F16, BF16) on x86, written
// once over the element traits below: quant-avx2.cpp's and
// quant-avx512.cpp's vec_dot entries, and what gemm-x86.h's FloatTile
// replays bit for bit. Include after simd-x86.h.
#pragma once

#include <cstring>

#include "core/quant/blocks.h"
#include "cpu/kernels/simd-x86.h"

namespace vt::quant::x86 {
namespace {

// Element traits over simd-x86.h's widths: E the element, elems() W of
// them as a vector, one() for the scalar tail. (Traits classes: a function
// pointer returning a vector as a template argument drops its vector
// attributes, -Wignored-attributes.)
template <class V>
struct F16Elems : V {
    using E = uint16_t;
    static inline typename V::F elems(const E *p) { return V::f16(p); }
    static inline float one(E h) { return h2f(h); }
};
template <class V>
struct Bf16Elems : V {
    using E = uint16_t;
    static inline typename V::F elems(const E *p) { return V::bf16(p); }
    static inline float one(E h) { return b2f(h); }
};
template <class V>
struct F32Elems : V {
    using E = float;
    static inline typename V::F elems(const E *p) { return V::load(p); }
    static inline float one(E v) { return v; }
};
using F16x8 = F16Elems<Ymm>;
using Bf16x8 = Bf16Elems<Ymm>;
using F32x8 = F32Elems<Ymm>;
#if defined(__AVX512F__)
using Bf16x16 = Bf16Elems<Zmm>;
using F32x16 = F32Elems<Zmm>;
#endif

// 4 accumulators over chunks of 4 W elements (accumulator j takes vector j
// of every chunk), then W-element steps into the first, one reduction
// ((a0 + a1) + (a2 + a3), then hsum), and a scalar tail.
template <class L>
float dot_float(int64_t n, const void *w, const void *a) {
    using E = typename L::E;
    using F = typename L::F;
    constexpr int W = L::W;
    const E *x = (const E *)w, *y = (const E *)a;
    F acc[4] = {L::zero(), L::zero(), L::zero(), L::zero()};
    int64_t i = 0;
    for (; i + 4 * W <= n; i += 4 * W)
        for (int k = 0; k < 4; ++k) acc[k] = L::fma(L::elems(x + i + W * k), L::elems(y + i + W * k), acc[k]);
    for (; i + W <= n; i += W) acc[0] = L::fma(L::elems(x + i), L::elems(y + i), acc[0]);
    float s = L::hsum(L::add(L::add(acc[0], acc[1]), L::add(acc[2], acc[3])));
    for (; i < n; ++i) {
        E xe, ye; // rows may start at any 2-byte offset: no aligned element reads
        std::memcpy(&xe, x + i, sizeof xe);
        std::memcpy(&ye, y + i, sizeof ye);
        s += L::one(xe) * L::one(ye);
    }
    return s;
}

} // namespace
} // namespace vt::quant::x86
