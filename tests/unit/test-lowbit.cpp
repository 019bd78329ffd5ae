// NVFP4, Q1_0 and Q2_0 (ggml types 40-42; core/quant/blocks.h,
// lowbit-scalar.cpp, the CPU tables) against ggml's definitions
// (ggml-common.h block_nvfp4 / block_q1_0 / block_q2_0, ggml-quants.c's
// dequantize_row_*, ggml-impl.h ggml_ue4m3_to_fp32), decoded here from the
// bits in double, independently of the tables under test: NVFP4 is e2m1
// codes (sign, 2 exponent bits of bias 1, 1 mantissa bit) times a UE4M3
// scale per 16 (4 exponent bits of bias 7, 3 mantissa bits; ggml reads 0 and
// 0x7F as 0 and ignores bit 7), Q1_0 is +-d by bit, Q2_0 (q - 1) * d. The
// dots: every ISA against that decoding, and bit for bit with the scalar
// reference (the same f32 steps). llama.cpp's numbers on a whole model are
// the tiny-model gate (tests/models/make-gguf-type-fixtures.py, llama_lowbit).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/quant.h"
#include "cpu/kernels/kernels.h"
#include "common/kernel-tables.h"
#include "common/random-blocks.h"

using namespace vt;
using quant::Kernels;
using vt::test::all_isas;
using vt::test::f16_value;
using vt::test::put_f16;

namespace {

using Bytes = std::vector<uint8_t>;

double e2m1(int code) {
    const int s = code >> 3, e = (code >> 1) & 3, m = code & 1;
    const double mag = e == 0 ? 0.5 * m : std::ldexp(1.0 + 0.5 * m, e - 1);
    return s ? -mag : mag;
}

double ue4m3(uint8_t x) {
    if (x == 0 || x == 0x7F) return 0.0;
    const int e = (x >> 3) & 0xF, m = x & 7;
    return e == 0 ? std::ldexp((double)m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
}

// Element e of a row of type t.
double element(DType t, const Bytes &w, int64_t e) {
    const DTypeInfo &info = dtype_info(t);
    const uint8_t *blk = w.data() + (size_t)(e / info.block_elems) * info.block_bytes;
    const int j = (int)(e % info.block_elems);
    if (t == DType::NVFP4) {  // d[4], then qs: sub-block s's 8 bytes, low nibbles then high
        const int s = j / 16, i = j % 16;
        const uint8_t q = blk[4 + 8 * s + i % 8];
        return e2m1(i < 8 ? q & 0xF : q >> 4) * ue4m3(blk[s]);
    }
    if (t == DType::Q1_0) return ((blk[2 + j / 8] >> (j % 8)) & 1 ? 1.0 : -1.0) * f16_value(blk);
    return (((blk[2 + j / 4] >> 2 * (j % 4)) & 3) - 1) * f16_value(blk);  // Q2_0
}

// Random blocks: any code bits; moderate f16 d (Q1_0, Q2_0); NVFP4's scale
// bytes over every value in the first block run, random after.
Bytes random_blocks(DType t, int64_t n, std::mt19937 &rng) {
    const DTypeInfo &info = dtype_info(t);
    Bytes b(row_bytes(t, n));
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto &x : b) x = (uint8_t)byte(rng);
    std::uniform_real_distribution<float> mag(0.001f, 0.05f);
    for (size_t off = 0; off < b.size(); off += info.block_bytes)
        if (t != DType::NVFP4) put_f16(&b[off], byte(rng) % 2 ? mag(rng) : -mag(rng));
    return b;
}

} // namespace

TEST_CASE("NVFP4, Q1_0, Q2_0: types and sizes as ggml's", "[lowbit]") {
    CHECK((uint32_t)DType::NVFP4 == 40);
    CHECK((uint32_t)DType::Q1_0 == 41);
    CHECK((uint32_t)DType::Q2_0 == 42);
    CHECK(dtype_info(DType::NVFP4).block_elems == 64);
    CHECK(dtype_info(DType::NVFP4).block_bytes == 36);
    CHECK(dtype_info(DType::Q1_0).block_elems == 128);
    CHECK(dtype_info(DType::Q1_0).block_bytes == 18);
    CHECK(dtype_info(DType::Q2_0).block_elems == 64);
    CHECK(dtype_info(DType::Q2_0).block_bytes == 18);
    for (DType t : {DType::NVFP4, DType::Q1_0, DType::Q2_0}) CHECK(vec_dot_type(t) == DType::Q8_0);
}

TEST_CASE("NVFP4, Q1_0, Q2_0 dequantize as ggml defines them, every scale byte and code, on every ISA", "[lowbit]") {
    std::mt19937 rng(40);
    for (DType t : {DType::NVFP4, DType::Q1_0, DType::Q2_0}) {
        const int64_t n = 256 * 64;  // NVFP4: 1024 sub-blocks, the first 256 with scale bytes 0..255
        Bytes w = random_blocks(t, n, rng);
        if (t == DType::NVFP4)
            for (int s = 0; s < 256; ++s) w[36 * (s / 4) + s % 4] = (uint8_t)s;
        for (const Kernels *k : all_isas()) {
            std::vector<float> y(n, -1.f);
            k->dequant[(int)t](w.data(), y.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                INFO(dtype_name(t) << " on " << k->isa << ", element " << i);
                REQUIRE((double)y[i] == element(t, w, i));  // every product is exact in f32
            }
        }
    }
}

TEST_CASE("NVFP4, Q1_0, Q2_0 dots against the double decoding, and bit for bit with the scalar", "[lowbit]") {
    std::mt19937 rng(41);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (DType t : {DType::NVFP4, DType::Q1_0, DType::Q2_0}) {
        for (int64_t n : {128, 2048, 4736, 4800}) {  // with tails of 4 groups (Q1_0, Q2_0) and 4 sub-blocks (NVFP4)
            if (n % dtype_info(t).block_elems) continue;
            for (int rep = 0; rep < 4; ++rep) {
                const Bytes w = random_blocks(t, n, rng);
                std::vector<float> x(n);
                for (auto &v : x) v = nd(rng) * (rep == 3 ? 30.f : 1.f);
                vt::test::check_dots(t, w, x, [&](int64_t i) { return element(t, w, i); }, 16);
            }
        }
    }
}
