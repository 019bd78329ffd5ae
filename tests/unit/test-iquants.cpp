// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M (core/quant/blocks.h,
// iquants-scalar.cpp, the CPU tables) against ggml's definition
// (ggml-common.h block_iq*, ksigns_iq2xs, IQ1S_DELTA; ggml-quants.c
// dequantize_row_iq*), decoded here from the bytes at their offsets in
// double, so a wrong index bit, sign, scale or delta fails independently of
// the code under test. The lattices are format data: this file reads them
// from iq-grids.h, whose generator (lib/core/quant/gen-iq-grids.py) checks
// the same decoding against the gguf package's own dequantization; the sign
// table is recomputed here from its rule. Dequantization is exact (every
// value fits f32), so every ISA must give the double decoding exactly; the
// dots: every ISA against that decoding in double, and bit for bit against
// the scalar reference (iquants-scalar.cpp's canonical order).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/quant.h"
#include "core/quant/iq-grids.h"
#include "cpu/kernels/kernels.h"
#include "common/kernel-tables.h"
#include "common/random-blocks.h"

using namespace vt;
using quant::Kernels;

namespace {

using Bytes = std::vector<uint8_t>;
using vt::test::all_isas;
using vt::test::f16_value;

const DType kTypes[] = {DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS,
                        DType::IQ3_S,   DType::IQ1_S,  DType::IQ1_M};

unsigned u16(const uint8_t *p) { return p[0] | p[1] << 8; }
uint32_t u32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

// ggml's ksigns_iq2xs[i]: i plus bit 7 set when i has an odd number of set bits.
unsigned signs7(unsigned i) {
    unsigned c = 0;
    for (int b = 0; b < 7; ++b) c += (i >> b) & 1;
    return i | (c & 1) << 7;
}
double sgn(unsigned byte, int j) { return (byte >> j) & 1 ? -1.0 : 1.0; }
int byte_of(uint64_t v, int j) { return (int)(v >> 8 * j & 255); }
int sbyte_of(uint64_t v, int j) { return (int)(int8_t)(v >> 8 * j & 255); }

// Element e (0..255) of one block; s the sub-block of 32, l the group of 8
// in it, j the element in the group.
double element_of(DType t, const uint8_t *b, int e) {
    const int s = e / 32, l = e % 32 / 8, j = e % 8;
    switch (t) {
    case DType::IQ2_XXS: {  // d, then per s: 4 index bytes, u32 of 4 x 7 sign bits and ls
        const uint32_t w = u32(b + 2 + 8 * s + 4);
        const int g = byte_of(quant::kIq2xxsGrid[b[2 + 8 * s + l]], j);
        return f16_value(b) * (2 * (w >> 28) + 1) / 8 * g * sgn(signs7(w >> 7 * l & 127), j);
    }
    case DType::IQ2_XS: {  // d, u16 qs[32] (9-bit index, 7-bit sign index), scales[8]
        const unsigned q = u16(b + 2 + 2 * (4 * s + l));
        const int ls = b[66 + s] >> 4 * (l / 2) & 15;
        return f16_value(b) * (2 * ls + 1) / 8 * byte_of(quant::kIq2xsGrid[q & 511], j) * sgn(signs7(q >> 9), j);
    }
    case DType::IQ2_S: {  // d, qs[32] index, signs[32], qh[8], scales[8]
        const int idx = b[2 + 4 * s + l] | (b[66 + s] >> 2 * l & 3) << 8;
        const int ls = b[74 + s] >> 4 * (l / 2) & 15;
        return f16_value(b) * (2 * ls + 1) / 8 * byte_of(quant::kIq2sGrid[idx], j) * sgn(b[34 + 4 * s + l], j);
    }
    case DType::IQ3_XXS: {  // d, qs[64] (two 4-wide indices per group), u32[8] signs + ls
        const uint32_t w = u32(b + 66 + 4 * s);
        const int g = byte_of(quant::kIq3xxsGrid[b[2 + 8 * s + 2 * l + j / 4]], j % 4);
        return f16_value(b) * (2 * (w >> 28) + 1) / 4 * g * sgn(signs7(w >> 7 * l & 127), j);
    }
    case DType::IQ3_S: {  // d, qs[64], qh[8], signs[32], scales[4]
        const int k = 2 * l + j / 4;
        const int idx = b[2 + 8 * s + k] | (b[66 + s] >> k & 1) << 8;
        const int ls = b[106 + s / 2] >> 4 * (s % 2) & 15;
        return f16_value(b) * (2 * ls + 1) * byte_of(quant::kIq3sGrid[idx], j % 4) * sgn(b[74 + 4 * s + l], j);
    }
    case DType::IQ1_S: {  // d, qs[32], u16 qh[8]: 3 index bits per group, ls, delta sign
        const unsigned h = u16(b + 34 + 2 * s);
        const int g = sbyte_of(quant::kIq1sGrid[b[2 + 4 * s + l] | (h >> 3 * l & 7) << 8], j);
        return f16_value(b) * (2 * (h >> 12 & 7) + 1) * (g + (h & 0x8000 ? -0.125 : 0.125));
    }
    case DType::IQ1_M: {  // qs[32], qh[16] (a nibble per group), u16 scales[4] (+ d's nibbles)
        const unsigned h = b[32 + 2 * s + l / 2] >> 4 * (l % 2) & 15;
        const int g = sbyte_of(quant::kIq1sGrid[b[4 * s + l] | (h & 7) << 8], j);
        unsigned dh = 0;
        for (int k = 0; k < 4; ++k) dh |= (u16(b + 48 + 2 * k) >> 12) << 4 * k;
        const uint8_t d16[2] = {(uint8_t)dh, (uint8_t)(dh >> 8)};
        const int ls = u16(b + 48 + 2 * (s / 2)) >> (6 * (s % 2) + 3 * (l / 2)) & 7;
        return f16_value(d16) * (2 * ls + 1) * (g + (h & 8 ? -0.125 : 0.125));
    }
    default: return NAN;
    }
}

double element(DType t, const Bytes &w, int64_t i) {
    return element_of(t, w.data() + (size_t)(i / 256) * dtype_info(t).block_bytes, (int)(i % 256));
}

Bytes random_blocks(DType t, int64_t n, std::mt19937 &rng) {
    Bytes b(row_bytes(t, n));
    vt::test::randomize_blocks(t, b, rng);
    return b;
}

} // namespace

TEST_CASE("i-quants: ids, sizes and activation types as ggml's", "[iquants]") {
    struct Want { DType t; const char *name; uint32_t id; size_t bytes; };
    for (const Want &w : {Want{DType::IQ2_XXS, "IQ2_XXS", 16, 66}, Want{DType::IQ2_XS, "IQ2_XS", 17, 74},
                          Want{DType::IQ3_XXS, "IQ3_XXS", 18, 98}, Want{DType::IQ1_S, "IQ1_S", 19, 50},
                          Want{DType::IQ3_S, "IQ3_S", 21, 110}, Want{DType::IQ2_S, "IQ2_S", 22, 82},
                          Want{DType::IQ1_M, "IQ1_M", 29, 56}}) {
        INFO(w.name);
        CHECK((uint32_t)w.t == w.id);
        CHECK(std::string(dtype_name(w.t)) == w.name);
        CHECK(dtype_info(w.t).block_elems == 256);
        CHECK(dtype_info(w.t).block_bytes == w.bytes);
        CHECK(vec_dot_type(w.t) == DType::Q8_K);
    }
}

TEST_CASE("i-quants dequantize exactly as ggml defines them, on every ISA", "[iquants]") {
    std::mt19937 rng(16);
    for (DType t : kTypes) {
        const int64_t n = 96 * 256;  // 3072 groups: most of even IQ1_S's 2048 grid entries
        Bytes w = random_blocks(t, n, rng);
        for (const Kernels *k : all_isas()) {
            std::vector<float> y(n, -1.f);
            k->dequant[(int)t](w.data(), y.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                INFO(dtype_name(t) << " on " << k->isa << ", element " << i);
                REQUIRE((double)y[i] == element(t, w, i));
            }
        }
    }
}

TEST_CASE("i-quant dots against the double decoding and bit for bit with the scalar, on every ISA", "[iquants]") {
    std::mt19937 rng(17);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (DType t : kTypes) {
        for (int64_t n : {256, 2048, 4864}) {
            for (int rep = 0; rep < 5; ++rep) {
                Bytes w = random_blocks(t, n, rng);
                std::vector<float> x(n);
                for (auto &v : x) v = nd(rng) * (rep == 3 ? 30.f : 1.f);
                if (rep == 4) {  // the largest integers: every code bit set, activations all +-127
                    const size_t bb = dtype_info(t).block_bytes;
                    Bytes keep = w;
                    std::fill(w.begin(), w.end(), 0xFF);
                    for (size_t off = 0; off < w.size(); off += bb) {
                        if (t == DType::IQ1_M) {  // d's nibbles from the random block
                            for (int k = 0; k < 4; ++k) w[off + 49 + 2 * k] = (uint8_t)(keep[off + 49 + 2 * k] | 0x0F);
                        } else {
                            w[off] = keep[off], w[off + 1] = keep[off + 1];
                        }
                    }
                    for (int64_t i = 0; i < n; ++i) x[i] = (i / 256) % 2 ? -1.f : 1.f;
                }
                const vt::test::ExactDot d = vt::test::exact_dot(DType::Q8_K, x, [&](int64_t i) { return element(t, w, i); });
                // One exact integer per super-block, then four f32 roundings.
                const double tol = d.magnitude * (double)(n / 256 + 4) * 0x1p-23;
                const float ref = ref::vec_dot(t, n, w.data(), d.act.data());
                for (const Kernels *k : all_isas()) {
                    const float v = k->dot[(int)t](n, w.data(), d.act.data());
                    INFO(dtype_name(t) << " on " << k->isa << " n=" << n << " rep " << rep << " got " << v << " exact "
                                       << d.exact << " scalar " << ref);
                    CHECK(std::fabs(v - d.exact) <= tol);
                    CHECK(std::memcmp(&v, &ref, 4) == 0);
                }
            }
        }
    }
}
