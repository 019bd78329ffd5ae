// TQ1_0 and TQ2_0 (ggml types 34, 35: core/quant/blocks.h, ternary-scalar.cpp,
// the CPU tables' ternary-avx2.cpp) against ggml's definitions
// (ggml-common.h block_tq1_0 / block_tq2_0, ggml-quants.c's dequantize_row_*),
// decoded here in double, independently of the code under test: TQ2_0's
// 2-bit codes q give (q - 1) d; TQ1_0's bytes are base-3 fractions b / 256
// whose n-th trit is floor(3 frac(b 3^n / 256)), and (trit - 1) d is the
// weight, in the element order of ggml's dequantizer (32 bytes x 5 trits,
// 16 bytes x 5, 4 bytes x 4). The dots take Q8_K activations and are checked
// against the exact sum, and bit for bit with the scalar on every ISA.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/kernel-tables.h"
#include "common/random-blocks.h"
#include "core/quant.h"
#include "cpu/kernels/kernels.h"

using namespace vt;
using quant::Kernels;
using vt::test::all_isas;
using vt::test::f16_value;

namespace {

using Bytes = std::vector<uint8_t>;

int trit(uint8_t b, int n) {
    const double f = std::ldexp((double)b, -8) * std::pow(3.0, n);
    return (int)std::floor(3.0 * (f - std::floor(f)));
}

double element(DType t, const Bytes &w, int64_t i) {
    const DTypeInfo &info = dtype_info(t);
    const uint8_t *blk = w.data() + (size_t)(i / 256) * info.block_bytes;
    const int e = (int)(i % 256);
    if (t == DType::TQ2_0) return (((blk[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) - 1) * f16_value(blk + 64);
    int code;
    if (e < 160) code = trit(blk[e % 32], e / 32);
    else if (e < 240) code = trit(blk[32 + (e - 160) % 16], (e - 160) / 16);
    else code = trit(blk[48 + (e - 240) % 4], (e - 240) / 4);
    return (code - 1) * f16_value(blk + 52);
}

} // namespace

TEST_CASE("TQ1_0, TQ2_0: types and sizes as ggml's", "[ternary]") {
    CHECK((uint32_t)DType::TQ1_0 == 34);
    CHECK((uint32_t)DType::TQ2_0 == 35);
    CHECK(dtype_info(DType::TQ1_0).block_bytes == 54);
    CHECK(dtype_info(DType::TQ2_0).block_bytes == 66);
    for (DType t : {DType::TQ1_0, DType::TQ2_0}) {
        CHECK(dtype_info(t).block_elems == 256);
        CHECK(vec_dot_type(t) == DType::Q8_K);
    }
    // ggml's quantizer writes ceil(243 q / 256)-style fractions: 0, 1, 2 as
    // the first trit of bytes 0, 86, 171.
    CHECK((trit(0, 0) == 0 && trit(86, 0) == 1 && trit(171, 0) == 2));
}

TEST_CASE("TQ1_0, TQ2_0 dequantize as ggml defines them, every byte, on every ISA", "[ternary]") {
    std::mt19937 rng(34);
    for (DType t : {DType::TQ1_0, DType::TQ2_0}) {
        const int64_t n = 256 * 24;
        Bytes w(row_bytes(t, n));
        vt::test::randomize_blocks(t, w, rng);
        if (t == DType::TQ1_0)  // blocks 0-5: every byte value among the 5-trit bytes
            for (int v = 0; v < 256; ++v) w[54 * (v / 48) + v % 48] = (uint8_t)v;
        for (const Kernels *k : all_isas()) {
            std::vector<float> y(n, -1.f);
            k->dequant[(int)t](w.data(), y.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                INFO(dtype_name(t) << " on " << k->isa << ", element " << i);
                REQUIRE((double)y[i] == element(t, w, i));  // (code - 1) * d is exact
            }
        }
    }
}

TEST_CASE("TQ1_0, TQ2_0 dots against the double decoding, and bit for bit with the scalar", "[ternary]") {
    std::mt19937 rng(35);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (DType t : {DType::TQ1_0, DType::TQ2_0}) {
        for (int64_t n : {256, 2048, 2304, 4096 + 7 * 256}) {
            for (int rep = 0; rep < 5; ++rep) {
                Bytes w(row_bytes(t, n));
                vt::test::randomize_blocks(t, w, rng);
                std::vector<float> x(n);
                for (auto &v : x) v = nd(rng) * (rep == 3 ? 30.f : 1.f);
                if (rep == 4) {
                    // The extremes the AVX2 dots' int16 sums are sized for:
                    // every TQ2_0 code 3 (TQ1_0: every trit 2) against Q8_K
                    // bytes of -127 (all inputs -1).
                    const size_t bb = dtype_info(t).block_bytes;
                    for (size_t b = 0; b < w.size(); b += bb)
                        std::memset(&w[b], 0xFF, bb - 2);
                    for (auto &v : x) v = -1.f;
                }
                vt::test::check_dots(t, w, x, [&](int64_t i) { return element(t, w, i); }, 256);
            }
        }
    }
}
