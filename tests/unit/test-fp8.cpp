// FP8_E4M3 (vt's own type 43: core/quant/blocks.h BlockFP8, fp8-scalar.cpp,
// the CPU tables' fp8-x86.h) against the format's definition, decoded here
// from the bits in double, independently of the tables under test: e4m3fn
// (OCP FP8, what torch.float8_e4m3fn and the checkpoints store) is a sign,
// 4 exponent bits of bias 7 and 3 mantissa bits, subnormals m 2^-9, no
// infinities, 0x7F/0xFF NaN; a block's value is that times its f32 scale.
// The dots take bf16 activations (vec_dot_type BF16, as transformers runs
// the checkpoints) and are checked against the exact sum, and bit for bit
// with the scalar reference on every ISA but the vdpbf16ps tables, which
// have their own order (Kernels::fp8_dp; test-gemm holds the tiles to the
// dots). Whole checkpoints are the tiny-model gate
// (tests/models/make-fp8-fixtures.py).
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

namespace {

using Bytes = std::vector<uint8_t>;

double e4m3(uint8_t x) {
    const int s = x >> 7, e = (x >> 3) & 0xF, m = x & 7;
    const double mag = e == 0 ? std::ldexp((double)m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
    return s ? -mag : mag;
}

double element(const Bytes &w, int64_t i) {
    const uint8_t *blk = w.data() + (size_t)(i / 64) * 68;
    float d;
    std::memcpy(&d, blk, 4);
    return e4m3(blk[4 + i % 64]) * (double)d;
}

} // namespace

TEST_CASE("FP8_E4M3: vt's own type, 64 bytes and an f32 scale a block, bf16 activations", "[fp8]") {
    CHECK((uint32_t)DType::FP8_E4M3 >= kFirstOwnType);
    CHECK(dtype_info(DType::FP8_E4M3).block_elems == 64);
    CHECK(dtype_info(DType::FP8_E4M3).block_bytes == 68);
    CHECK(vec_dot_type(DType::FP8_E4M3) == DType::BF16);
    CHECK(e4m3(0x7E) == 448.0);  // the largest finite value, as the format defines it
    CHECK(e4m3(0x01) == std::ldexp(1.0, -9));
}

TEST_CASE("FP8_E4M3 dequantizes as the format defines it, every byte, on every ISA", "[fp8]") {
    std::mt19937 rng(43);
    const int64_t n = 64 * 40;
    Bytes w(row_bytes(DType::FP8_E4M3, n));
    vt::test::randomize_blocks(DType::FP8_E4M3, w, rng);
    for (int b = 0; b < 4; ++b)  // blocks 0-3: every byte but the two NaNs, in order
        for (int j = 0; j < 64; ++j) {
            const int v = 64 * b + j;
            w[68 * b + 4 + j] = (uint8_t)((v & 0x7F) == 0x7F ? 0 : v);
        }
    const float big = 3.0e4f;  // a scale that makes the largest values large
    std::memcpy(&w[68 * 3], &big, 4);
    for (const Kernels *k : all_isas()) {
        std::vector<float> y(n, -1.f);
        k->dequant[(int)DType::FP8_E4M3](w.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            INFO(k->isa << ", element " << i);
            REQUIRE(y[i] == (float)element(w, i));  // the exact product (28 bits: exact in double), rounded once
        }
    }
}

TEST_CASE("FP8_E4M3 dots against the exact sum, and bit for bit with the scalar but in vdpbf16ps order", "[fp8]") {
    std::mt19937 rng(44);
    std::normal_distribution<float> nd(0.f, 1.f);
    int dp_tables = 0;
    for (int64_t n : {64, 128, 576, 4096, 4160}) {
        for (int rep = 0; rep < 5; ++rep) {
            Bytes w(row_bytes(DType::FP8_E4M3, n));
            vt::test::randomize_blocks(DType::FP8_E4M3, w, rng);
            if (rep == 4)  // every byte but the NaNs, subnormals included, spread over the blocks
                for (int64_t i = 0; i < n; ++i) {
                    const uint8_t v = (uint8_t)((i * 37) % 256);
                    w[(size_t)(i / 64) * 68 + 4 + i % 64] = (v & 0x7F) == 0x7F ? (uint8_t)(v ^ 1) : v;
                }
            std::vector<uint16_t> x(n);
            for (auto &v : x) v = f32_to_bf16(nd(rng) * (rep == 3 ? 30.f : 1.f));
            double exact = 0, magnitude = 0;
            for (int64_t i = 0; i < n; ++i) {
                const double p = element(w, i) * (double)bf16_to_f32(x[i]);
                exact += p;
                magnitude += std::fabs(p);
            }
            // Two roundings per product and block, a 4-deep chain and the fold.
            const double tol = magnitude * (double)(n / 64 + 12) * 0x1p-23;
            const float ref = ref::vec_dot(DType::FP8_E4M3, n, w.data(), x.data());
            for (const Kernels *k : all_isas()) {
                const float v = k->dot[(int)DType::FP8_E4M3](n, w.data(), x.data());
                INFO(k->isa << (k->fp8_dp ? " (vdpbf16ps)" : "") << " n=" << n << " got " << v << " exact " << exact);
                CHECK(std::fabs(v - exact) <= tol);
                if (k->fp8_dp) ++dp_tables;
                else CHECK(std::memcmp(&v, &ref, 4) == 0);
            }
        }
    }
    if (dp_tables == 0) WARN("no table of this CPU has the vdpbf16ps FP8 kernels (avx512bf16 + avx512vbmi)");
}
