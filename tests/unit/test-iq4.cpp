// IQ4_NL and IQ4_XS (core/quant/blocks.h, iq4-scalar.cpp, the CPU tables)
// against ggml's definition (ggml-common.h block_iq4_nl / block_iq4_xs and
// kvalues_iq4nl; ggml-quants.c dequantize_row_iq4_nl / _xs), decoded here
// from the bytes in double with the level table written out again, so a
// wrong level, nibble order or scale bit fails independently of the code
// under test. The dots: every ISA against that decoding in double, and the
// tables' IQ4_XS dot bit for bit against the scalar reference (the same f32
// steps); llama.cpp's own numbers on a whole model are the tiny-model gate
// (tests/models/make-gguf-type-fixtures.py, llama_iq4).
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
using quant::Isa;
using quant::Kernels;

namespace {

using Bytes = std::vector<uint8_t>;

using vt::test::all_isas;
using vt::test::f16_value;
using vt::test::put_f16;

// ggml's kvalues_iq4nl.
constexpr int kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Element j (0..31) of a group of 16 code bytes: low nibble of byte j, then
// high nibbles of bytes 0..15.
int level(const uint8_t *qs, int j) { return kLevels[j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4]; }

// IQ4_NL: d (f16) then 16 code bytes.
double nl_element(const uint8_t *blk, int j) { return f16_value(blk) * level(blk + 2, j); }

// IQ4_XS: d, scales_h (u16), scales_l[4], qs[128]; sub-block s's scale is
// (low nibble s % 2 of scales_l[s / 2]) | (bits 2s, 2s+1 of scales_h) << 4, minus 32.
double xs_element(const uint8_t *blk, int e) {
    const int s = e / 32;
    const unsigned sh = blk[2] | blk[3] << 8;
    const int ls = ((blk[4 + s / 2] >> 4 * (s % 2)) & 0xF) | ((sh >> 2 * s) & 3) << 4;
    return f16_value(blk) * (ls - 32) * level(blk + 8 + 16 * s, e % 32);
}

// Random blocks with a moderate f16 d (the codes and IQ4_XS's scales: any bits).
Bytes random_blocks(DType t, int64_t n, std::mt19937 &rng) {
    const DTypeInfo &info = dtype_info(t);
    Bytes b(row_bytes(t, n));
    std::uniform_int_distribution<int> byte(0, 255);
    for (auto &x : b) x = (uint8_t)byte(rng);
    std::uniform_real_distribution<float> mag(0.0005f, 0.01f);
    for (size_t off = 0; off < b.size(); off += info.block_bytes) put_f16(&b[off], byte(rng) % 2 ? mag(rng) : -mag(rng));
    return b;
}

double element(DType t, const Bytes &w, int64_t i) {
    const DTypeInfo &info = dtype_info(t);
    const uint8_t *blk = w.data() + (size_t)(i / info.block_elems) * info.block_bytes;
    return t == DType::IQ4_NL ? nl_element(blk, (int)(i % 32)) : xs_element(blk, (int)(i % 256));
}

} // namespace

TEST_CASE("IQ4_NL and IQ4_XS: types, sizes and activation types as ggml's", "[iq4]") {
    REQUIRE(dtype_info(DType::IQ4_NL).block_elems == 32);
    REQUIRE(dtype_info(DType::IQ4_NL).block_bytes == 18);
    REQUIRE(dtype_info(DType::IQ4_XS).block_elems == 256);
    REQUIRE(dtype_info(DType::IQ4_XS).block_bytes == 136);
    CHECK(std::string(dtype_name(DType::IQ4_NL)) == "IQ4_NL");
    CHECK(std::string(dtype_name(DType::IQ4_XS)) == "IQ4_XS");
    CHECK((uint32_t)DType::IQ4_NL == 20);
    CHECK((uint32_t)DType::IQ4_XS == 23);
    CHECK(vec_dot_type(DType::IQ4_NL) == DType::Q8_0);
    CHECK(vec_dot_type(DType::IQ4_XS) == DType::Q8_K);
}

TEST_CASE("IQ4_NL and IQ4_XS dequantize as ggml defines them, on every ISA", "[iq4]") {
    std::mt19937 rng(20);
    for (DType t : {DType::IQ4_NL, DType::IQ4_XS}) {
        const int64_t n = 4 * 256;
        Bytes w = random_blocks(t, n, rng);
        if (t == DType::IQ4_NL) {  // every code in both nibbles of the first two blocks
            for (int j = 0; j < 16; ++j) w[2 + j] = (uint8_t)(j | (15 - j) << 4), w[18 + 2 + j] = (uint8_t)((15 - j) | j << 4);
        } else {  // every 6-bit scale across the first blocks' sub-blocks
            for (int b = 0; b < 4; ++b) {
                uint8_t *blk = w.data() + 136 * b;
                unsigned sh = 0;
                for (int s = 0; s < 8; ++s) {
                    const int ls = (8 * b + s) * 2 + (b % 2);  // 0..63 over the 4 blocks
                    blk[4 + s / 2] = (uint8_t)((blk[4 + s / 2] & (0xF0 >> 4 * (s % 2))) | (ls & 0xF) << 4 * (s % 2));
                    sh |= (unsigned)(ls >> 4) << 2 * s;
                }
                blk[2] = (uint8_t)sh, blk[3] = (uint8_t)(sh >> 8);
            }
        }
        for (const Kernels *k : all_isas()) {
            std::vector<float> y(n, -1.f);
            k->dequant[(int)t](w.data(), y.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                INFO(dtype_name(t) << " on " << k->isa << ", element " << i);
                // d * level (IQ4_XS: (d * scale) * level) is one or two f32
                // roundings of the exact product.
                REQUIRE(std::fabs(y[i] - element(t, w, i)) <= std::fabs(element(t, w, i)) * 0x1p-23);
            }
        }
    }
}

TEST_CASE("IQ4_NL and IQ4_XS dots against the double decoding; IQ4_XS bit for bit with the scalar", "[iq4]") {
    std::mt19937 rng(21);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (DType t : {DType::IQ4_NL, DType::IQ4_XS}) {
        for (int64_t n : {256, 2048, 4864}) {
            for (int rep = 0; rep < 4; ++rep) {
                const Bytes w = random_blocks(t, n, rng);
                std::vector<float> x(n);
                for (auto &v : x) v = nd(rng) * (rep == 3 ? 30.f : 1.f);
                // Exact integers per block, then f32 per block; IQ4_XS's dots
                // keep its canonical order on every ISA.
                vt::test::check_dots(t, w, x, [&](int64_t i) { return element(t, w, i); }, 32, t == DType::IQ4_XS);
            }
        }
    }
}
