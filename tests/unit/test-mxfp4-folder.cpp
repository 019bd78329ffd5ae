// MXFP4 from Hugging Face folders (lib/model/safetensors.h: pair_mxfp4,
// materialize_mxfp4; hf-folder.cpp): transformers' `<name>_blocks` /
// `<name>_scales` halves read as one MXFP4 tensor `<name>`.
//  - tests/unit/goldens/mxfp4-pair.safetensors (make-mxfp4-fixture.py):
//    the pair's values, every row and the interleaved rows gpt-oss's gate_up
//    splits into, bit for bit against transformers' own dequantization;
//  - the tiny Qwen2 folder with layer 0's down_proj stored as such a pair
//    (vt's MXFP4 quantizer, written in transformers' nibble order here):
//    it loads as blk.0.ffn_down.weight in ggml's bytes; the errors of halves
//    without their partner, of shapes that disagree, of U8 halves without
//    quantization_config.quant_method "mxfp4".
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/quant.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "common/folder-scratch.h"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace vt;

namespace {

using vt::test::load_status;
using vt::test::source_root;
using vt::test::StFile;

bool same_bits(const float *a, const float *b, size_t n) { return std::memcmp(a, b, n * 4) == 0; }

// A copy of the tiny Qwen2 folder, removed at scope exit.
struct Scratch : vt::test::Scratch {
    Scratch() : vt::test::Scratch("qwen2") {}
    void quant_method(const char *m) {
        json c = config();
        c["quantization_config"] = {{"quant_method", m}};
        set_config(c);
    }
};

// ggml's blocks (e, then byte j = element j | element j + 16 << 4) in
// transformers' halves: blocks with element 2i in the low nibble of byte i,
// scales apart.
void to_hf_halves(const std::vector<uint8_t> &ggml, size_t n_blocks, std::string &blocks, std::string &scales) {
    blocks.assign(n_blocks * 16, '\0');
    scales.assign(n_blocks, '\0');
    for (size_t b = 0; b < n_blocks; ++b) {
        const uint8_t *g = &ggml[b * 17];
        scales[b] = (char)g[0];
        auto code = [&](int i) { return i < 16 ? g[1 + i] & 0xF : g[1 + i - 16] >> 4; };
        for (int i = 0; i < 16; ++i) blocks[b * 16 + (size_t)i] = (char)(code(2 * i) | code(2 * i + 1) << 4);
    }
}

} // namespace

TEST_CASE("an MXFP4 pair reads as transformers dequantizes it, all rows and every other row", "[mxfp4]") {
    const fs::path p = source_root() / "tests" / "unit" / "goldens" / "mxfp4-pair.safetensors";
    REQUIRE(fs::exists(p));
    auto st = SafetensorsFile::open(p.string());
    REQUIRE(st->mxfp4_parts().size() == 2);
    const SafetensorsTensor *expected = nullptr;
    for (const SafetensorsTensor &t : st->tensors())
        if (t.name == "expected.gate_up_proj") expected = &t;
    REQUIRE(expected);
    REQUIRE(expected->type == DType::F32);
    const float *want = static_cast<const float *>(expected->data);
    std::vector<const SafetensorsTensor *> parts;
    for (const SafetensorsTensor &t : st->mxfp4_parts()) parts.push_back(&t);
    const std::vector<SafetensorsTensor> paired = pair_mxfp4(parts, "fixture");
    REQUIRE(paired.size() == 1);
    const SafetensorsTensor &t = paired[0];
    CHECK(t.name == "model.layers.0.mlp.experts.gate_up_proj");
    CHECK(t.type == DType::MXFP4);
    CHECK(t.n_dims == 3);
    CHECK((t.ne[0] == 96 && t.ne[1] == 6 && t.ne[2] == 2 && t.ne[3] == 1));
    CHECK(t.data == nullptr);
    std::deque<std::vector<uint8_t>> store;
    for (int64_t first : {0, 1})
        for (int64_t step : {1, 2}) {
            if (first >= step) continue;
            INFO("rows " << first << " + k * " << step);
            const SafetensorsTensor m = materialize_mxfp4(t, first, step, store);
            REQUIRE(m.ne[1] == 6 / step);
            REQUIRE(m.nbytes == (size_t)(2 * m.ne[1] * 3 * 17));
            const size_t rb = row_bytes(DType::MXFP4, 96);
            int bad = 0;
            for (int64_t e = 0; e < 2; ++e)
                for (int64_t r = 0; r < m.ne[1]; ++r) {
                    std::vector<float> got(96);
                    ref::dequantize_row(DType::MXFP4, static_cast<const uint8_t *>(m.data) + (size_t)(e * m.ne[1] + r) * rb,
                                        got.data(), 96);
                    const float *w = want + (e * 6 + first + r * step) * 96;
                    // Bits, but for code 8: transformers' table has -0 there,
                    // ggml's (an integer table) +0.
                    for (int i = 0; i < 96; ++i) {
                        const float g = got[(size_t)i];
                        const bool ok = w[i] == 0.f ? g == 0.f && !std::signbit(g) : same_bits(&g, &w[i], 1);
                        if (!ok && bad++ < 3)
                            UNSCOPED_INFO("expert " << e << " row " << r << " element " << i << ": " << g << ", want " << w[i]);
                    }
                }
            CHECK(bad == 0);
        }
}

TEST_CASE("a folder with a weight stored as an MXFP4 pair loads it as that MXFP4 tensor", "[mxfp4]") {
    Scratch s;
    StFile f(s.dir / "model.safetensors");
    const std::string name = "model.layers.0.mlp.down_proj.weight";
    REQUIRE(f.t.count(name));
    REQUIRE(f.t[name].dtype == "F32");
    REQUIRE(f.t[name].shape == std::vector<uint64_t>{64, 128});
    std::vector<float> w(64 * 128);
    std::memcpy(w.data(), f.t[name].bytes.data(), w.size() * 4);
    std::vector<uint8_t> ggml(row_bytes(DType::MXFP4, 128) * 64);
    quantize_weights(DType::MXFP4, w.data(), ggml.data(), (int64_t)w.size());
    std::string blocks, scales;
    to_hf_halves(ggml, 64 * 4, blocks, scales);
    f.t.erase(name);
    f.t[name + "_blocks"] = {"U8", {64, 4, 16}, blocks};
    f.t[name + "_scales"] = {"U8", {64, 4}, scales};
    f.save(s.dir / "model.safetensors");

    SECTION("with quant_method mxfp4") {
        s.quant_method("mxfp4");
        auto m = Model::load(s.dir.string(), true, nullptr);
        const GgufTensorInfo *t = m->gguf().find_tensor("blk.0.ffn_down.weight");
        REQUIRE(t);
        CHECK(t->type == DType::MXFP4);
        CHECK((t->ne[0] == 128 && t->ne[1] == 64));
        REQUIRE(t->nbytes == ggml.size());
        CHECK(std::memcmp(t->data, ggml.data(), ggml.size()) == 0);
    }
    SECTION("without quantization_config: unsupported, naming the tensor") {
        auto [st, msg] = load_status(s.dir);
        CHECK(st == VT_ERR_UNSUPPORTED);
        CHECK(msg.find("_blocks") != std::string::npos);
        CHECK(msg.find("quant_method") != std::string::npos);
    }
    SECTION("a half without the other") {
        s.quant_method("mxfp4");
        f.t.erase(name + "_scales");
        f.save(s.dir / "model.safetensors");
        auto [st, msg] = load_status(s.dir);
        CHECK(st == VT_ERR_FORMAT);
        CHECK(msg.find("down_proj.weight") != std::string::npos);
        CHECK(msg.find("no _scales") != std::string::npos);
    }
    SECTION("halves whose shapes disagree") {
        s.quant_method("mxfp4");
        f.t[name + "_scales"] = {"U8", {64, 3}, scales.substr(0, 64 * 3)};
        f.save(s.dir / "model.safetensors");
        auto [st, msg] = load_status(s.dir);
        CHECK(st == VT_ERR_FORMAT);
        CHECK(msg.find("down_proj.weight") != std::string::npos);
    }
    SECTION("blocks whose last dimension is not 16 bytes") {
        s.quant_method("mxfp4");
        f.t[name + "_blocks"] = {"U8", {64, 8, 8}, blocks};
        f.t[name + "_scales"] = {"U8", {64, 8}, scales + scales};
        f.save(s.dir / "model.safetensors");
        auto [st, msg] = load_status(s.dir);
        CHECK(st == VT_ERR_FORMAT);
    }
    SECTION("a U8 tensor of another name stays unsupported") {
        s.quant_method("mxfp4");
        f.t["model.layers.0.mlp.extra"] = {"U8", {4}, std::string(4, '\0')};
        f.save(s.dir / "model.safetensors");
        auto [st, msg] = load_status(s.dir);
        CHECK(st == VT_ERR_UNSUPPORTED);
        CHECK(msg.find("U8") != std::string::npos);
    }
}
