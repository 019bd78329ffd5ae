// Weight quantizers (core/quant.h: quantize_weights) against ggml itself:
// tests/unit/goldens/quantize-weights.bin holds fixed-seed f32 rows and the
// bytes ggml_quantize_chunk wrote for them (tests/unit/make-quant-goldens.py,
// which documents the format). vt must write the same bytes, every one.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/quant.h"

using namespace vt;

namespace {

struct Golden {
    uint32_t n_rows = 0, n_per_row = 0;
    std::vector<float> rows;  // (n_rows, n_per_row)
    struct Type {
        DType t;
        std::vector<uint8_t> bytes;  // n_rows rows of row_bytes(t, n_per_row)
    };
    std::vector<Type> types;
};

std::filesystem::path golden_path() {
    const char *root = std::getenv("VT_SOURCE_ROOT");
    return std::filesystem::path(root ? root : ".") / "tests" / "unit" / "goldens" / "quantize-weights.bin";
}

uint32_t u32_at(const std::vector<uint8_t> &b, size_t &at) {
    if (at + 4 > b.size()) throw std::runtime_error("golden truncated");
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    at += 4;
    return v;
}

Golden load_golden() {
    std::ifstream in(golden_path(), std::ios::binary);
    // No silent pass: the golden is committed, its absence is a failure.
    if (!in) FAIL("missing " << golden_path() << " (run tests/unit/make-quant-goldens.py; set VT_SOURCE_ROOT)");
    const std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (b.size() < 4 || std::memcmp(b.data(), "VTQG", 4) != 0) FAIL("not a VTQG golden");
    size_t at = 4;
    Golden g;
    REQUIRE(u32_at(b, at) == 1);
    g.n_rows = u32_at(b, at);
    g.n_per_row = u32_at(b, at);
    const uint32_t n_types = u32_at(b, at);
    const size_t n = (size_t)g.n_rows * g.n_per_row;
    REQUIRE(at + n * 4 <= b.size());
    g.rows.resize(n);
    std::memcpy(g.rows.data(), b.data() + at, n * 4);
    at += n * 4;
    for (uint32_t i = 0; i < n_types; ++i) {
        Golden::Type t{(DType)u32_at(b, at), {}};
        const uint32_t nb = u32_at(b, at);
        REQUIRE(at + nb <= b.size());
        t.bytes.assign(b.begin() + (long)at, b.begin() + (long)(at + nb));
        at += nb;
        g.types.push_back(std::move(t));
    }
    REQUIRE(at == b.size());
    return g;
}

} // namespace

TEST_CASE("weight quantizers write ggml's bytes", "[quantize-weights]") {
    const Golden g = load_golden();
    REQUIRE(g.types.size() >= 8);  // Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q6_K, MXFP4
    for (const Golden::Type &gt : g.types) {
        const char *name = dtype_name(gt.t);
        INFO("type " << name);
        REQUIRE(can_quantize_weights(gt.t));
        const size_t rb = row_bytes(gt.t, g.n_per_row);
        REQUIRE(gt.bytes.size() == rb * g.n_rows);
        std::vector<uint8_t> got(rb);
        int bad_rows = 0;
        for (uint32_t r = 0; r < g.n_rows; ++r) {
            quantize_weights(gt.t, g.rows.data() + (size_t)r * g.n_per_row, got.data(), g.n_per_row);
            const uint8_t *want = gt.bytes.data() + r * rb;
            if (std::memcmp(got.data(), want, rb) != 0) {
                size_t first = 0;
                while (got[first] == want[first]) ++first;
                UNSCOPED_INFO(name << " row " << r << ": first differing byte " << first << " (vt " << (int)got[first]
                                   << ", ggml " << (int)want[first] << ")");
                ++bad_rows;
            }
        }
        CHECK(bad_rows == 0);
    }
}

TEST_CASE("weight quantizers refuse types and lengths they cannot write", "[quantize-weights]") {
    std::vector<float> x(256, 1.0f);
    std::vector<uint8_t> out(1024);
    CHECK_FALSE(can_quantize_weights(DType::F32));
    CHECK_FALSE(can_quantize_weights(DType::Q8_K));
    CHECK_FALSE(can_quantize_weights(DType::Q5_K));
    CHECK_THROWS_AS(quantize_weights(DType::Q2_K, x.data(), out.data(), 256), std::invalid_argument);
    CHECK_THROWS_AS(quantize_weights(DType::Q4_K, x.data(), out.data(), 128), std::invalid_argument);
    CHECK_THROWS_AS(quantize_weights(DType::Q8_0, x.data(), out.data(), 48), std::invalid_argument);
}

TEST_CASE("quantized weights dequantize close to their input", "[quantize-weights]") {
    // A sanity bound independent of the golden: the error per element stays
    // within the format's step. Q4_0/Q5_0 put the largest-magnitude element
    // on level -8/-16, so the opposite end clamps to 7/15: up to one whole
    // step d = amax/8 (amax/16) there; Q8_0 half a step of amax/127.
    std::vector<float> x(512), y(512);
    for (int i = 0; i < 512; ++i) x[i] = std::sin(0.37f * (float)i) * 0.05f;
    const struct {
        DType t;
        float rel;  // max |y - x| / max |x|
    } cases[] = {{DType::Q8_0, 0.005f}, {DType::Q6_K, 0.02f}, {DType::Q5_0, 1.0f / 16 + 0.005f},
                 {DType::Q4_K, 0.1f}, {DType::Q4_0, 1.0f / 8 + 0.005f},
                 // MXFP4: amax lies in [4, 8) units of 2^(e-127); the grid's
                 // step is 1 unit up to 4 (spacing 2 between 4 and 6) and
                 // 6 is the top, so an error of at most 2 units <= amax / 2.
                 // Elements near amax err up to 2 units: amax / 4 at worst.
                 {DType::MXFP4, 0.25f + 0.005f}};
    for (const auto &c : cases) {
        INFO(dtype_name(c.t));
        std::vector<uint8_t> q(row_bytes(c.t, 512));
        quantize_weights(c.t, x.data(), q.data(), 512);
        ref::dequantize_row(c.t, q.data(), y.data(), 512);
        float err = 0;
        for (int i = 0; i < 512; ++i) err = std::fmax(err, std::fabs(y[i] - x[i]));
        CHECK(err <= c.rel * 0.05f);
    }
}
