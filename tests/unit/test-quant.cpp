// Quant kernels (backends/cpu/kernels): every ISA the CPU has against the scalar
// reference, the reference against double-precision math and against
// hand-built blocks whose values follow from the ggml format spec.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/quant.h"
#include "common/random-blocks.h"
#include "cpu/kernels/kernels.h"
#include "common/kernel-tables.h"

using namespace vt;
using quant::Isa;
using quant::Kernels;


using vt::test::fp16_fields;
using vt::test::put_f16;

namespace {

using Bytes = std::vector<uint8_t>;

using vt::test::all_isas;

const Kernels &scalar() { return *quant::kernels_for(Isa::scalar); }

const DType kWeightTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0,
                              DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                              DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::MXFP4,
                              DType::IQ4_NL, DType::IQ4_XS, DType::NVFP4, DType::Q1_0, DType::Q2_0,
                              DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S,
                              DType::IQ1_S, DType::IQ1_M,
                              DType::FP8_E4M3, DType::TQ1_0, DType::TQ2_0};
const DType kActTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q8_1, DType::Q8_K};

int64_t block_elems(DType t) { return dtype_info(t).block_elems; }

// Row lengths: one block, 4096, and a non-power-of-two multiple.
std::vector<int64_t> row_lengths(DType t) {
    const int64_t be = block_elems(t);
    if (be == 256) return {256, 4096, 1536};
    if (be == 32) return {32, 4096, 576};
    if (be == 64 || be == 128) return {be, 4096, 9 * be};
    return {1, 7, 32, 4096, 576}; // plain floats: also odd tails
}


// Random weights: random bytes, fp16 scales finite and moderate.
Bytes random_row(DType t, int64_t n, std::mt19937 &rng) {
    Bytes b(row_bytes(t, n));
    std::normal_distribution<float> nd(0.f, 1.f);
    if (t == DType::F32) {
        for (int64_t i = 0; i < n; ++i) {
            const float v = nd(rng);
            std::memcpy(&b[4 * i], &v, 4);
        }
        return b;
    }
    if (t == DType::F16 || t == DType::BF16) {
        for (int64_t i = 0; i < n; ++i) {
            const float v = nd(rng);
            const uint16_t h = t == DType::F16 ? f32_to_fp16(v) : f32_to_bf16(v);
            std::memcpy(&b[2 * i], &h, 2);
        }
        return b;
    }
    vt::test::randomize_blocks(t, b, rng);
    return b;
}

// Random activations; kind 0: normal, 1: heavy outliers, 2: exact ties
// (k + 0.5 with the max at 127, so 127/amax == 1), 3: a zero block.
std::vector<float> random_act(int64_t n, std::mt19937 &rng, int kind) {
    std::vector<float> x(n);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::uniform_int_distribution<int> k(-126, 125);
    for (int64_t i = 0; i < n; ++i) {
        switch (kind) {
        case 0: x[i] = nd(rng) * 0.7f; break;
        case 1: x[i] = nd(rng) * (i % 37 == 0 ? 60.f : 0.3f); break;
        case 2: x[i] = (i % 16 == 0) ? ((i / 16) % 2 ? -127.f : 127.f) : (float)k(rng) + 0.5f; break;
        default: x[i] = i < std::min<int64_t>(n, 256) ? 0.f : nd(rng); break;
        }
    }
    return x;
}

std::vector<float> dequant(const Kernels &k, DType t, const void *src, int64_t n) {
    std::vector<float> y(n, -12345.f);
    k.dequant[(int)t](src, y.data(), n);
    return y;
}

Bytes quantize(const Kernels &k, DType t, const std::vector<float> &x) {
    Bytes b(row_bytes(t, (int64_t)x.size()), 0xAB);
    k.quant[(int)t](x.data(), b.data(), (int64_t)x.size());
    return b;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// Magnitude scale of a dot: sum |a_i| * (|scale part_i| + |min part_i|) of
// the weights, so cancellation between d*q and the min does not shrink the
// tolerance below what f32 rounding of either part can cause.
// Also returns in *min_mag the same sum over the min parts alone.
double dot_magnitude(DType t, const Bytes &w, const std::vector<float> &a, double *min_mag) {
    const int64_t n = (int64_t)a.size();
    const vt::test::Fields f = fp16_fields(t);
    std::vector<float> p1, p2;
    if (f.mins.empty()) {
        p1 = dequant(scalar(), t, w.data(), n);
        p2.assign(n, 0.f);
    } else {
        Bytes nomin = w, nod = w;
        const size_t bb = dtype_info(t).block_bytes;
        for (size_t off = 0; off < w.size(); off += bb) {
            for (int o : f.mins) put_f16(&nomin[off + o], 0.f);
            for (int o : f.scales) put_f16(&nod[off + o], 0.f);
        }
        p1 = dequant(scalar(), t, nomin.data(), n);
        p2 = dequant(scalar(), t, nod.data(), n);
    }
    double m = 0, mm = 0;
    for (int64_t i = 0; i < n; ++i) {
        m += std::fabs((double)a[i]) * (std::fabs(p1[i]) + std::fabs(p2[i]));
        mm += std::fabs((double)a[i]) * std::fabs(p2[i]);
    }
    *min_mag = mm;
    return m;
}

// Tolerance of an f32 dot against another evaluation order or exact math.
// Every implementation forms per-block (or per-lane) terms with a few f32
// roundings and adds them in sequences of at most n/8 + 16 additions, so each
// differs from the exact value by at most (n/8 + 64) * 2^-24 * M (first-order
// bound gamma_k with k = additions + roundings per term, M = dot_magnitude);
// two of them differ by at most twice that.
double dot_tolerance(int64_t n, double magnitude) {
    return 2.0 * (double)(n / 8 + 64) * 0x1p-24 * magnitude + 1e-30;
}

std::string label(const Kernels *k, DType t, int64_t n) {
    return std::string(k->isa) + " " + dtype_name(t) + " n=" + std::to_string(n);
}

} // namespace

TEST_CASE("fp16 and bf16 conversions are exact", "[quant]") {
    // Every binary16 value round-trips (NaNs keep their payload, quieted).
    for (uint32_t h = 0; h < 65536; ++h) {
        const float f = fp16_to_f32((uint16_t)h);
        if (std::isnan(f)) {
            REQUIRE((f32_to_fp16(f) & 0x7fff) == ((h | 0x200) & 0x7fff));
            continue;
        }
        REQUIRE(f32_to_fp16(f) == h);
    }
    CHECK(f32_to_fp16(1.0f) == 0x3c00);
    CHECK(f32_to_fp16(-2.0f) == 0xc000);
    CHECK(f32_to_fp16(65504.f) == 0x7bff);
    CHECK(f32_to_fp16(65519.99f) == 0x7bff);
    CHECK(f32_to_fp16(65520.f) == 0x7c00); // halfway to 2^16 rounds up to inf
    CHECK(f32_to_fp16(INFINITY) == 0x7c00);
    CHECK(f32_to_fp16(0x1p-24f) == 0x0001);
    CHECK(f32_to_fp16(0x1p-25f) == 0x0000);        // tie -> even (0)
    CHECK(f32_to_fp16(0x1.8p-24f) == 0x0002);      // 1.5 ulp -> tie -> even (2)
    CHECK(f32_to_fp16(0x1.000002p-25f) == 0x0001); // just above the tie
    CHECK(f32_to_fp16(0x1p-14f) == 0x0400);
    CHECK(f32_to_fp16(1.0f + 0x1p-11f) == 0x3c00);        // tie -> even
    CHECK(f32_to_fp16(1.0f + 3 * 0x1p-11f) == 0x3c02);    // tie -> even (up)
    CHECK(f32_to_fp16(-0.0f) == 0x8000);
    CHECK(fp16_to_f32(0x0001) == 0x1p-24f);
    CHECK(fp16_to_f32(0x3555) == 0x1.554p-2f);
    CHECK(std::isinf(fp16_to_f32(0xfc00)));

    CHECK(f32_to_bf16(1.0f) == 0x3f80);
    CHECK(f32_to_bf16(std::bit_cast<float>(0x3f808000u)) == 0x3f80); // tie -> even
    CHECK(f32_to_bf16(std::bit_cast<float>(0x3f818000u)) == 0x3f82); // tie -> even (up)
    CHECK(f32_to_bf16(std::bit_cast<float>(0x3f808001u)) == 0x3f81);
    CHECK(f32_to_bf16(std::bit_cast<float>(0x7f800001u)) == 0x7fc0); // NaN forced quiet
    CHECK(bf16_to_f32(0xc040) == -3.0f);
}

TEST_CASE("F16 and BF16 conversions: every ISA matches the portable code bit for bit", "[quant]") {
    // All 65536 halves through each ISA's F16 dequantizer (F16C vcvtph2ps).
    std::vector<uint16_t> all(65536);
    for (uint32_t h = 0; h < 65536; ++h) all[h] = (uint16_t)h;
    const auto ref = dequant(scalar(), DType::F16, all.data(), 65536);
    for (const Kernels *k : all_isas()) {
        INFO(k->isa);
        CHECK(same_bits(dequant(*k, DType::F16, all.data(), 65536), ref));
    }
    // Floats around every rounding boundary, subnormals, huge values, NaNs.
    std::vector<float> x;
    std::mt19937 rng(7);
    for (uint32_t h = 0; h < 65536; h += 3) {
        const uint32_t b = std::bit_cast<uint32_t>(fp16_to_f32((uint16_t)h));
        for (uint32_t d : {0u, 1u, 0xfffu, 0x1000u, 0x1001u, 0x1fffu}) x.push_back(std::bit_cast<float>(b + d));
    }
    std::uniform_int_distribution<uint32_t> u32;
    for (int i = 0; i < 200000; ++i) x.push_back(std::bit_cast<float>(u32(rng)));
    for (DType t : {DType::F16, DType::BF16}) {
        const Bytes ref_q = quantize(scalar(), t, x);
        const auto ref_round = dequant(scalar(), t, ref_q.data(), (int64_t)x.size());
        for (const Kernels *k : all_isas()) {
            INFO(k->isa << " " << dtype_name(t));
            CHECK(quantize(*k, t, x) == ref_q);
            // The one-pass round trip the f32-activation gemms' inputs take.
            REQUIRE(k->round[(int)t]);
            std::vector<float> y(x.size(), -12345.f);
            k->round[(int)t](x.data(), y.data(), (int64_t)x.size());
            CHECK(same_bits(y, ref_round));
        }
    }
}

TEST_CASE("dequantize: every ISA equals the scalar reference exactly", "[quant]") {
    std::mt19937 rng(1);
    for (DType t : kWeightTypes) {
        for (int64_t n : row_lengths(t)) {
            const Bytes w = random_row(t, n, rng);
            const auto ref = dequant(scalar(), t, w.data(), n);
            for (float v : ref) REQUIRE(std::isfinite(v));
            for (const Kernels *k : all_isas()) {
                INFO(label(k, t, n));
                CHECK(same_bits(dequant(*k, t, w.data(), n), ref));
            }
        }
    }
}

TEST_CASE("quantize activations: SIMD bytes equal scalar, round trip bounded", "[quant]") {
    std::mt19937 rng(2);
    for (DType t : kActTypes) {
        for (int64_t n : row_lengths(t == DType::Q8_K ? DType::Q4_K : t == DType::Q8_1 ? DType::Q8_0 : t)) {
            for (int kind = 0; kind < 4; ++kind) {
                const auto x = random_act(n, rng, kind);
                const Bytes ref = quantize(scalar(), t, x);
                for (const Kernels *k : all_isas()) {
                    INFO(label(k, t, n) << " kind=" << kind);
                    CHECK(quantize(*k, t, x) == ref);
                }
                // Round trip: per block, |x - deq| <= d/2 plus the fp16
                // rounding of d (rel 2^-11) times |q| <= 127 for Q8_0/Q8_1; d/2
                // (f32 d) for Q8_K; half an ulp for F16 (2^-11 rel, or 2^-25
                // absolute for subnormals), BF16 (2^-8 rel); exact for F32.
                const auto y = dequant(scalar(), t, ref.data(), n);
                const int64_t be = t == DType::Q8_K ? 256 : 32;
                for (int64_t b0 = 0; b0 < n; b0 += be) {
                    float amax = 0;
                    for (int64_t i = b0; i < std::min(n, b0 + be); ++i) amax = std::max(amax, std::fabs(x[i]));
                    for (int64_t i = b0; i < std::min(n, b0 + be); ++i) {
                        double bound;
                        switch (t) {
                        case DType::F32: bound = 0; break;
                        case DType::F16: bound = std::fabs(x[i]) * 0x1p-11 + 0x1p-25; break;
                        case DType::BF16: bound = std::fabs(x[i]) * 0x1p-8; break;
                        case DType::Q8_K: bound = amax / 127.0 * (0.5 + 1e-5); break;
                        default: bound = amax / 127.0 * (0.5 + 127 * 0x1p-11 + 1e-5); break;
                        }
                        INFO(dtype_name(t) << " i=" << i << " x=" << x[i] << " y=" << y[i]);
                        REQUIRE(std::fabs((double)x[i] - y[i]) <= bound);
                    }
                }
            }
        }
    }
}

TEST_CASE("vec_dot: every ISA against scalar, scalar against double math", "[quant]") {
    std::mt19937 rng(3);
    for (DType t : kWeightTypes) {
        const DType at = vec_dot_type(t);
        for (int64_t n : row_lengths(t)) {
            for (int rep = 0; rep < 4; ++rep) {
                const Bytes w = random_row(t, n, rng);
                const auto x = random_act(n, rng, rep % 2);
                const Bytes a = quantize(scalar(), at, x);
                const auto wf = dequant(scalar(), t, w.data(), n);
                const auto af = dequant(scalar(), at, a.data(), n);
                double exact = 0;
                for (int64_t i = 0; i < n; ++i) exact += (double)wf[i] * af[i];
                double min_mag = 0;
                const double tol = dot_tolerance(n, dot_magnitude(t, w, af, &min_mag));
                // Q8_1's s = fp16(d * sum q) uses the f32 d and is rounded to
                // fp16: |s - d16 * sum q| <= 2^-10 (1 + 2^-10) sum |a_i| per
                // block, multiplied by the weight's min m (this is the format,
                // llama.cpp has the same term).
                const double tol_exact = tol + (at == DType::Q8_1 ? 1.1 * 0x1p-10 * min_mag : 0.0);
                const float r = ref::vec_dot(t, n, w.data(), a.data());
                INFO(dtype_name(t) << " n=" << n << " ref=" << r << " exact=" << exact << " tol=" << tol);
                CHECK(std::fabs(r - exact) <= tol_exact);
                for (const Kernels *k : all_isas()) {
                    const float v = k->dot[(int)t](n, w.data(), a.data());
                    INFO(label(k, t, n) << " got=" << v);
                    CHECK(std::fabs((double)v - r) <= tol);
                }
            }
        }
    }
}

// The orders of F16_X16 and BF16_X16 (kernels.h: dot_f16_pairs,
// dot_bf16_pairs, dot_bf16_chain) are chains over element pairs, not the
// block sums dot_tolerance assumes: a chain of n/2 steps with at most 2
// roundings each (the f16 and bf16 products are exact in f32) errs by at
// most (n + 2) * 2^-24 * M to first order.
TEST_CASE("the F16_X16 and BF16_X16 dot orders against double math", "[quant]") {
    std::mt19937 rng(11);
    bool bf16_chain = false; // vdpbf16ps: only where a table has BF16_X16's gemm
    for (const Kernels *k : all_isas()) bf16_chain = bf16_chain || k->bf16_chain;
    int checked = 0;
    for (DType t : {DType::F16, DType::BF16}) {
        for (int64_t n : {32, 96, 608, 2048, 8192}) {
            for (int rep = 0; rep < 4; ++rep) {
                const Bytes w = random_row(t, n, rng);
                const Bytes a = quantize(scalar(), t, random_act(n, rng, rep % 2));
                const auto wf = dequant(scalar(), t, w.data(), n), af = dequant(scalar(), t, a.data(), n);
                double exact = 0, mag = 0;
                for (int64_t i = 0; i < n; ++i) {
                    exact += (double)wf[i] * af[i];
                    mag += std::fabs((double)wf[i] * af[i]);
                }
                const double tol = (double)(n + 2) * 0x1p-24 * mag + 1e-30;
                const uint16_t *wp = (const uint16_t *)w.data(), *ap = (const uint16_t *)a.data();
                INFO(dtype_name(t) << " n=" << n << " exact=" << exact << " tol=" << tol);
                if (t == DType::F16) {
                    CHECK(std::fabs(quant::dot_f16_pairs(n, wp, ap) - exact) <= tol);
                    ++checked;
                }
                if (t == DType::BF16) {
                    CHECK(std::fabs(quant::dot_bf16_pairs(n, wp, ap) - exact) <= tol);
                    ++checked;
                }
#if defined(__x86_64__)
                if (t == DType::BF16 && bf16_chain) {
                    CHECK(std::fabs(quant::dot_bf16_chain(n, wp, ap) - exact) <= tol);
                    ++checked;
                }
#endif
            }
        }
    }
    REQUIRE(checked > 0);
    if (!bf16_chain) WARN("no table of this CPU has vdpbf16ps: BF16_X16's order not checked");
}

TEST_CASE("public API: dispatch, vec_dot_type, ref namespace", "[quant]") {
    CHECK(vec_dot_type(DType::Q4_1) == DType::Q8_1);
    CHECK(vec_dot_type(DType::Q5_0) == DType::Q8_0);
    CHECK(vec_dot_type(DType::Q6_K) == DType::Q8_K);
    CHECK(vec_dot_type(DType::F16) == DType::F16);
    CHECK(vec_dot_fn(DType::Q8_1) == nullptr);
    CHECK(vec_dot_fn(DType::Q8_K) == nullptr);
    for (DType t : kWeightTypes) CHECK(vec_dot_fn(t) != nullptr);
    const std::string isa = cpu_kernel_isa();
    CHECK((isa == "scalar" || isa == "avx2" || isa == "avx512" || isa == "avx512vnni"));
    WARN("dispatch picked " << isa);
    std::vector<float> x(64, 1.5f), y(64);
    std::vector<uint8_t> q(row_bytes(DType::Q8_0, 64));
    quantize_row(DType::Q8_0, x.data(), q.data(), 64);
    dequantize_row(DType::Q8_0, q.data(), y.data(), 64);
    CHECK(y[5] == Approx(1.5f).epsilon(1e-3));
    CHECK_THROWS(quantize_row(DType::Q4_0, x.data(), q.data(), 32)); // weights are not quantized here
}

// ---- hand-built blocks: values follow from the ggml format description -----

namespace {

// Dequantizes one block with every ISA, checks all agree, returns scalar's.
std::vector<float> deq_all(DType t, const void *blk) {
    const int64_t n = block_elems(t);
    const auto ref = dequant(scalar(), t, blk, n);
    for (const Kernels *k : all_isas()) {
        INFO(k->isa);
        CHECK(same_bits(dequant(*k, t, blk, n), ref));
    }
    return ref;
}

void set16(uint8_t *blk, int off, float v) { put_f16(blk + off, v); }

} // namespace

TEST_CASE("spot checks: legacy blocks decode as the spec says", "[quant]") {
    SECTION("Q4_0: d=1, nibbles 0..15 -> -8..7") {
        uint8_t b[18] = {};
        set16(b, 0, 1.f);
        for (int j = 0; j < 16; ++j) b[2 + j] = (uint8_t)(j | ((15 - j) << 4));
        const auto y = deq_all(DType::Q4_0, b);
        for (int j = 0; j < 16; ++j) {
            CHECK(y[j] == (float)(j - 8));
            CHECK(y[j + 16] == (float)(7 - j));
        }
        // Dot with a Q8_0 block of ones (d=1): sum of all values = -8..7 twice = -16.
        uint8_t a[34] = {};
        set16(a, 0, 1.f);
        for (int j = 0; j < 32; ++j) a[2 + j] = 1;
        for (const Kernels *k : all_isas()) CHECK(k->dot[(int)DType::Q4_0](32, b, a) == -16.f);
    }
    SECTION("Q4_1: d=0.5, m=-1 -> 0.5*q - 1; dot uses s") {
        uint8_t b[20] = {};
        set16(b, 0, 0.5f);
        set16(b, 2, -1.f);
        for (int j = 0; j < 16; ++j) b[4 + j] = (uint8_t)(j | ((15 - j) << 4));
        const auto y = deq_all(DType::Q4_1, b);
        for (int j = 0; j < 16; ++j) {
            CHECK(y[j] == 0.5f * j - 1.f);
            CHECK(y[j + 16] == 0.5f * (15 - j) - 1.f);
        }
        // Q8_1 with d=1, qs = 2 everywhere, s = d * sum(qs) = 64.
        uint8_t a[36] = {};
        set16(a, 0, 1.f);
        set16(a, 2, 64.f);
        for (int j = 0; j < 32; ++j) a[4 + j] = 2;
        // sum(2 * (0.5 q - 1)) = sum(q) - 64, sum(q) = 2 * (0 + ... + 15) = 240.
        for (const Kernels *k : all_isas()) CHECK(k->dot[(int)DType::Q4_1](32, b, a) == 176.f);
    }
    SECTION("Q5_0 / Q5_1: bit j of qh is the fifth bit of element j") {
        uint8_t b[22] = {};
        set16(b, 0, 1.f);
        const uint32_t qh = 0xA5A5F00Fu;
        std::memcpy(b + 2, &qh, 4);
        for (int j = 0; j < 16; ++j) b[6 + j] = (uint8_t)(j | ((15 - j) << 4));
        const auto y = deq_all(DType::Q5_0, b);
        for (int j = 0; j < 32; ++j) {
            const int nib = j < 16 ? j : 31 - j;
            CHECK(y[j] == (float)(nib + 16 * (int)((qh >> j) & 1) - 16));
        }
        uint8_t c[24] = {};
        set16(c, 0, 2.f);
        set16(c, 2, 0.25f);
        std::memcpy(c + 4, &qh, 4);
        std::memcpy(c + 8, b + 6, 16);
        const auto z = deq_all(DType::Q5_1, c);
        for (int j = 0; j < 32; ++j) {
            const int nib = j < 16 ? j : 31 - j;
            CHECK(z[j] == 2.f * (float)(nib + 16 * (int)((qh >> j) & 1)) + 0.25f);
        }
    }
    SECTION("Q8_0: d=2, qs=j-16; quantize of exact multiples is exact") {
        uint8_t b[34] = {};
        set16(b, 0, 2.f);
        for (int j = 0; j < 32; ++j) b[2 + j] = (uint8_t)(int8_t)(j - 16);
        const auto y = deq_all(DType::Q8_0, b);
        for (int j = 0; j < 32; ++j) CHECK(y[j] == 2.f * (j - 16));
        // amax = 127 -> d = 1, q = x rounded to nearest-even: 2.5 -> 2, -3.5 -> -4.
        std::vector<float> x(32, 0.f);
        x[0] = 127.f, x[1] = 2.5f, x[2] = -3.5f, x[3] = -127.f, x[4] = 0.49f;
        for (const Kernels *k : all_isas()) {
            const Bytes q = quantize(*k, DType::Q8_0, x);
            uint16_t d;
            std::memcpy(&d, q.data(), 2);
            CHECK(d == 0x3c00);
            CHECK((int8_t)q[2] == 127);
            CHECK((int8_t)q[3] == 2);
            CHECK((int8_t)q[4] == -4);
            CHECK((int8_t)q[5] == -127);
            CHECK((int8_t)q[6] == 0);
            const Bytes q1 = quantize(*k, DType::Q8_1, x);
            uint16_t s;
            std::memcpy(&s, q1.data() + 2, 2);
            CHECK(fp16_to_f32(s) == 127.f + 2 - 4 - 127);
        }
    }
}

TEST_CASE("spot checks: K-quant blocks decode as the spec says", "[quant]") {
    SECTION("Q2_K: x = d*sc*q - dmin*m, 2-bit planes at shifts 0,2,4,6") {
        uint8_t b[84] = {};
        for (int j = 0; j < 16; ++j) b[j] = (uint8_t)(j | ((15 - j) << 4)); // sc = j, m = 15 - j
        for (int l = 0; l < 64; ++l) b[16 + l] = 0xE4; // 2-bit values 0,1,2,3 at shifts 0,2,4,6
        set16(b, 80, 0.5f);
        set16(b, 82, 0.25f);
        const auto y = deq_all(DType::Q2_K, b);
        for (int e = 0; e < 256; ++e) {
            const int j = e / 16, q = (e % 128) / 32;
            CHECK(y[e] == 0.5f * j * q - 0.25f * (15 - j));
        }
    }
    SECTION("Q3_K: 6-bit scales minus 32, hmask bit set means no -4") {
        uint8_t b[110] = {};
        // hmask: bit (4h + s) of byte l; set it for even l only.
        for (int l = 0; l < 32; ++l) b[l] = (l % 2 == 0) ? 0xFF : 0x00;
        for (int l = 0; l < 64; ++l) b[32 + l] = 0xE4; // 2-bit plane s holds value s
        // raw scale r_j = j + 24 (sc = j - 8): low nibble in byte j%8 (nibble j/8),
        // top 2 bits in byte 8 + j%4 at bit 2*(j/4).
        uint8_t *sc = b + 96;
        for (int j = 0; j < 16; ++j) {
            const int r = j + 24;
            sc[j % 8] |= (uint8_t)((r & 0xF) << (4 * (j / 8)));
            sc[8 + j % 4] |= (uint8_t)((r >> 4) << (2 * (j / 4)));
        }
        set16(b, 108, 2.f);
        const auto y = deq_all(DType::Q3_K, b);
        for (int e = 0; e < 256; ++e) {
            const int j = e / 16, s = (e % 128) / 32, l = e % 32;
            const int q = s - (l % 2 == 0 ? 0 : 4);
            CHECK(y[e] == 2.f * (float)(j - 8) * (float)q);
        }
    }
    // Q4_K/Q5_K scale packing: scales/mins 0..3 in the low 6 bits of bytes
    // 0..3 / 4..7; 4..7 as nibbles of bytes 8..11 plus the top 2 bits of
    // bytes 0..3 (scales) / 4..7 (mins).
    auto pack_k4 = [](uint8_t *s, const int sc[8], const int mn[8]) {
        std::memset(s, 0, 12);
        for (int j = 0; j < 4; ++j) {
            s[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
            s[j + 4] = (uint8_t)(mn[j] | ((mn[j + 4] >> 4) << 6));
            s[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
        }
    };
    const int sc[8] = {1, 17, 33, 63, 5, 40, 62, 21}, mn[8] = {0, 63, 2, 48, 31, 16, 7, 60};
    SECTION("Q4_K: x = d*sc*q - dmin*m per 32, nibble planes per 64") {
        uint8_t b[144] = {};
        set16(b, 0, 0.5f);
        set16(b, 2, 0.125f);
        pack_k4(b + 4, sc, mn);
        for (int l = 0; l < 128; ++l) b[16 + l] = (uint8_t)((l % 16) | ((15 - l % 16) << 4));
        const auto y = deq_all(DType::Q4_K, b);
        for (int e = 0; e < 256; ++e) {
            const int j = e / 32, l = e % 32;
            const int q = (j % 2 == 0) ? l % 16 : 15 - l % 16;
            CHECK(y[e] == 0.5f * sc[j] * q - 0.125f * mn[j]);
        }
    }
    SECTION("Q5_K: Q4_K plus qh bit j/32 of byte e%32") {
        uint8_t b[176] = {};
        set16(b, 0, 0.5f);
        set16(b, 2, 0.125f);
        pack_k4(b + 4, sc, mn);
        for (int l = 0; l < 32; ++l) b[16 + l] = (uint8_t)(l * 37 + 11); // qh
        for (int l = 0; l < 128; ++l) b[48 + l] = (uint8_t)((l % 16) | ((15 - l % 16) << 4));
        const auto y = deq_all(DType::Q5_K, b);
        for (int e = 0; e < 256; ++e) {
            const int j = e / 32, l = e % 32;
            const int hb = ((uint8_t)(l * 37 + 11) >> j) & 1;
            const int q = ((j % 2 == 0) ? l % 16 : 15 - l % 16) + 16 * hb;
            CHECK(y[e] == 0.5f * sc[j] * q - 0.125f * mn[j]);
        }
    }
    SECTION("Q6_K: x = d*scale*(q-32), low nibbles + 2 high bits") {
        uint8_t b[210] = {};
        // Target q(e) = (e * 7) % 64; build ql/qh from the layout in blocks.h.
        auto qv = [](int e) { return (e * 7) % 64; };
        for (int h = 0; h < 2; ++h)
            for (int l = 0; l < 32; ++l) {
                const int e0 = 128 * h + l;
                const int q0 = qv(e0), q1 = qv(e0 + 32), q2 = qv(e0 + 64), q3 = qv(e0 + 96);
                b[64 * h + l] = (uint8_t)((q0 & 0xF) | ((q2 & 0xF) << 4));
                b[64 * h + 32 + l] = (uint8_t)((q1 & 0xF) | ((q3 & 0xF) << 4));
                b[128 + 32 * h + l] = (uint8_t)((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) | ((q3 >> 4) << 6));
            }
        for (int j = 0; j < 16; ++j) b[192 + j] = (uint8_t)(int8_t)(j * 9 - 70);
        set16(b, 208, 0.25f);
        const auto y = deq_all(DType::Q6_K, b);
        for (int e = 0; e < 256; ++e) CHECK(y[e] == 0.25f * (float)(e / 16 * 9 - 70) * (float)(qv(e) - 32));
    }
    SECTION("Q8_K: the signed max maps to -127, d = max/-127, bsums per 16") {
        std::vector<float> x(256);
        for (int e = 0; e < 256; ++e) x[e] = (float)(e % 50) - 20.f;
        x[100] = 63.5f; // the max magnitude, positive: iscale = -2
        for (const Kernels *k : all_isas()) {
            const Bytes q = quantize(*k, DType::Q8_K, x);
            float d;
            std::memcpy(&d, q.data(), 4);
            CHECK(d == -0.5f);
            for (int e = 0; e < 256; ++e) {
                const int want = e == 100 ? -127 : std::min(127, -2 * (e % 50 - 20));
                REQUIRE((int)(int8_t)q[4 + e] == want);
            }
            for (int j = 0; j < 16; ++j) {
                int s = 0;
                for (int l = 0; l < 16; ++l) s += (int8_t)q[4 + 16 * j + l];
                int16_t bs;
                std::memcpy(&bs, q.data() + 260 + 2 * j, 2);
                CHECK(bs == s);
            }
        }
    }
}
