// MXFP4 (core/quant/blocks.h, mxfp4-scalar.cpp, the CPU tables) against
// its definition: OCP Microscaling Formats v1.0's e2m1 element (sign,
// 2 exponent bits of bias 1, 1 mantissa bit) times the e8m0 scale 2^(e-127),
// with ggml's choices where ggml departs from the spec (block_mxfp4 and
// ggml_e8m0_to_fp32_half): e = 255 is the finite 2^128, not NaN, and code
// 8 (-0) dequantizes to +0 (its table holds integers). Decoded here from the
// bits, in double, independently of the table under test. The quantizer's
// bytes are checked against ggml's own in test-quantize-weights (golden from
// libggml-base); here, hand cases whose bytes ggml 0.3.36 wrote on x86-64
// (ggml_quantize_chunk, checked when this test was written).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/quant.h"
#include "cpu/kernels/kernels.h"
#include "common/kernel-tables.h"

using namespace vt;
using quant::Isa;
using quant::Kernels;

namespace {

using Bytes = std::vector<uint8_t>;

using vt::test::all_isas;

// The e2m1 value of a 4-bit code, from its bits.
double e2m1(int code) {
    const int s = code >> 3, e = (code >> 1) & 3, m = code & 1;
    const double mag = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, e - 1);
    return s ? -mag : mag;
}

// Element j of a block: its code (low nibble of byte j for j < 16, high
// nibble of byte j - 16 after).
int code_of(const uint8_t *blk, int j) { return j < 16 ? blk[1 + j] & 0xF : blk[1 + j - 16] >> 4; }

double element(const uint8_t *blk, int j) { return e2m1(code_of(blk, j)) * std::ldexp(1.0, blk[0] - 127); }

bool same_float(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

} // namespace

TEST_CASE("MXFP4 dequantizes to e2m1 x 2^(e-127) for every exponent and code, on every ISA", "[mxfp4]") {
    REQUIRE(dtype_info(DType::MXFP4).block_elems == 32);
    REQUIRE(dtype_info(DType::MXFP4).block_bytes == 17);
    REQUIRE(std::string(dtype_name(DType::MXFP4)) == "MXFP4");
    REQUIRE(vec_dot_type(DType::MXFP4) == DType::Q8_0);
    // Two blocks per exponent: codes 0..15 then 15..0 in the first, the
    // reverse in the second, so every code sits in both nibbles.
    Bytes w(256 * 2 * 17);
    for (int e = 0; e < 256; ++e)
        for (int h = 0; h < 2; ++h) {
            uint8_t *b = &w[(size_t)(2 * e + h) * 17];
            b[0] = (uint8_t)e;
            for (int j = 0; j < 16; ++j) {
                const int lo = h ? 15 - j : j;
                b[1 + j] = (uint8_t)(lo | (15 - lo) << 4);
            }
        }
    const int64_t n = 256 * 2 * 32;
    std::vector<float> want((size_t)n);
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t *b = &w[(size_t)(i / 32) * 17];
        // f32 of the exact value: exact for e < 255 (2^-128 .. 1.5 * 2^(6+127)
        // with 2 significant bits), inf past FLT_MAX at e = 255; -0 is +0.
        const double v = element(b, (int)(i % 32));
        want[(size_t)i] = v == 0.0 ? 0.0f : (float)v;
    }
    std::vector<float> got((size_t)n);
    ref::dequantize_row(DType::MXFP4, w.data(), got.data(), n);
    int bad = 0;
    for (int64_t i = 0; i < n; ++i)
        if (!same_float(got[(size_t)i], want[(size_t)i]) && bad++ < 5)
            FAIL_CHECK("ref: e " << (int)w[(size_t)(i / 32) * 17] << " code " << code_of(&w[(size_t)(i / 32) * 17], (int)(i % 32))
                                 << ": " << got[(size_t)i] << ", want " << want[(size_t)i]);
    CHECK(bad == 0);
    // The corners named above, spelled out.
    CHECK(got[(size_t)(0 * 64 + 1)] == std::ldexp(0.5f, -127));      // e 0, code 1: 2^-128, subnormal
    CHECK(std::isinf(got[(size_t)(255 * 64 + 2)]));                    // e 255, code 2 (1.0): 2^128 overflows
    CHECK(got[(size_t)(255 * 64 + 1)] == std::ldexp(1.0f, 127));       // e 255, code 1 (0.5): 2^127
    CHECK(!std::signbit(got[(size_t)(200 * 64 + 8)]));                 // code 8: +0
    for (const Kernels *k : all_isas()) {
        INFO(k->isa);
        std::vector<float> y((size_t)n, -1.f);
        k->dequant[(int)DType::MXFP4](w.data(), y.data(), n);
        CHECK(std::memcmp(y.data(), got.data(), (size_t)n * 4) == 0);
    }
}

TEST_CASE("MXFP4 dot with Q8_0: the reference against double math, every ISA against it, every finite-range exponent",
          "[mxfp4]") {
    std::mt19937 rng(39);
    std::uniform_int_distribution<int> byte(0, 255);
    std::normal_distribution<float> nd(0.f, 1.f);
    const int64_t nb = 19, n = nb * 32;  // 2 groups of 8 blocks and a tail of 3
    // Exponents 0..230: subnormal scales and their products with the f16
    // activation scales up to products near 2^(230-128) * 2 * 12 * 127 * 32,
    // far from f32's overflow (e = 255 overflows in the dequantizer already).
    for (int e0 = 0; e0 <= 230; e0 += 2) {
        Bytes w((size_t)nb * 17);
        for (int64_t b = 0; b < nb; ++b) {
            w[(size_t)b * 17] = (uint8_t)std::min(230, e0 + (int)(b % 3));
            for (int j = 1; j < 17; ++j) w[(size_t)b * 17 + j] = (uint8_t)byte(rng);
        }
        std::vector<float> x((size_t)n);
        for (auto &v : x) v = nd(rng);
        Bytes a(row_bytes(DType::Q8_0, n));
        ref::quantize_row(DType::Q8_0, x.data(), a.data(), n);
        std::vector<float> af((size_t)n);
        ref::dequantize_row(DType::Q8_0, a.data(), af.data(), n);
        double exact = 0, mag = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double wi = element(&w[(size_t)(i / 32) * 17], (int)(i % 32));
            exact += wi * af[(size_t)i];
            mag += std::fabs(wi * af[(size_t)i]);
        }
        // Per block: an exact int32, one rounding of the scale product (or
        // its underflow: at most 2^-150 absolute, times |isum| <= 32*12*127),
        // one of the product with the sum; then nb additions. Two
        // evaluation orders differ by at most twice the bound on each.
        const double tol = 2.0 * (double)(nb + 4) * 0x1p-24 * mag + (double)nb * 48768.0 * 0x1p-150;
        const float r = ref::vec_dot(DType::MXFP4, n, w.data(), a.data());
        INFO("e0 " << e0 << " ref " << r << " exact " << exact << " tol " << tol);
        CHECK(std::fabs(r - exact) <= tol);
        for (const Kernels *k : all_isas()) {
            const float v = k->dot[(int)DType::MXFP4](n, w.data(), a.data());
            INFO(k->isa << " got " << v);
            CHECK(std::fabs((double)v - r) <= tol);
            if (k->gemm[(int)DType::MXFP4]) {  // one row, one token: the tile's edge
                float g = -1.f;
                k->gemm[(int)DType::MXFP4](n, w.data(), w.size(), 1, a.data(), a.size(), 1, &g, 1);
                CHECK(same_float(g, v));
            }
        }
    }
}

TEST_CASE("MXFP4 quantizer: hand cases with ggml's bytes", "[mxfp4]") {
    auto quant = [](std::vector<float> x) {
        x.resize(32, 0.f);
        Bytes b(17);
        quantize_weights(DType::MXFP4, x.data(), b.data(), 32);
        return b;
    };
    SECTION("all zeros: e 0, codes 0") { CHECK(quant({}) == Bytes(17, 0)); }
    SECTION("ties go to the lower code; +-0 is code 0") {
        // amax 6: e = floor(log2 6) - 2 + 127 = 127, unit 2^-1 for the doubled
        // values: 5 lies between 4 (code 6) and 6 (code 7), 2.5 between 2
        // (code 4) and 3 (code 5), 0.25 and -0.25 between 0 and +-0.5.
        const Bytes b = quant({5, -5, 2.5f, 0.25f, -0.25f, 6, -6, 0});
        const Bytes want = {127, 6, 14, 4, 0, 0, 7, 15, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        CHECK(b == want);
    }
    SECTION("every code round-trips at its own scale") {
        for (int e : {1, 60, 127, 200}) {
            // amax 6 units puts e at the block's exponent: x = e2m1(code) * 2^(e-127).
            std::vector<float> x(32);
            for (int j = 0; j < 32; ++j) x[(size_t)j] = (float)(e2m1(j % 16) * std::ldexp(1.0, e - 127));
            x[31] = (float)(6.0 * std::ldexp(1.0, e - 127));
            const Bytes b = quant(x);
            CHECK((int)b[0] == e);
            for (int j = 0; j < 32; ++j) {
                const int c = code_of(b.data(), j);
                CHECK(e2m1(c) == e2m1(j == 31 ? 7 : j % 16));  // code 8 (-0) comes back as 0
            }
        }
    }
    SECTION("tiny and huge blocks: the exponent wraps modulo 256 as ggml's float -> uint8_t on x86") {
        auto block = [&](float amax) {
            std::vector<float> x(32, 0.f);
            x[3] = amax;
            x[20] = -amax / 3;
            return quant(x);
        };
        CHECK(block(std::ldexp(1.f, -126))[0] == 255);  // floor(log2) - 2 + 127 = -1
        CHECK(block(std::ldexp(1.f, -130))[0] == 251);
        CHECK(block(1e-45f)[0] == 232);                   // the smallest subnormal: 2^-149
        const Bytes small = block(std::ldexp(1.f, -125));
        CHECK(small == Bytes{0, 0, 0, 0, 6, 176, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
        CHECK(block(std::ldexp(1.f, 127)) == Bytes{252, 0, 0, 0, 6, 176, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
        CHECK(block(3e38f) == Bytes{252, 0, 0, 0, 7, 192, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    }
}
