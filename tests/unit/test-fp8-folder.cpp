// FP8 checkpoint folders (lib/model/hf-quantized.h: read_quant_scheme, pair_fp8;
// hf-folder.cpp): F8_E4M3 weights with their scale tensors read as vt's
// FP8_E4M3 rows.
//  - pair_fp8 on synthetic tensors: every element's scale is the one of its
//    checkpoint block (128 x 128 with partial edge blocks, per channel, per
//    tensor, per expert matrix), the bytes moved as stored;
//  - the tiny Llama in DeepSeek's fine-grained format, blocks of 32 x 64
//    (tests/models/tiny/llama_fp8_block, make-fp8-fixtures.py) loads every
//    projection as FP8_E4M3 whose values are e4m3 x scale_inv decoded here
//    in double; and the errors: no quantization_config, a quant_method or
//    compressed-tensors scheme vt cannot honour (named), a weight without a
//    scale, a scale of no scheme's shape, F8_E5M2.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "common/folder-scratch.h"
#include "core/quant.h"
#include "model/hf-quantized.h"
#include "model/model.h"
#include "model/safetensors.h"

using json = nlohmann::json;
using namespace vt;
using vt::test::load_status;
using vt::test::Scratch;
using vt::test::StFile;

namespace {

double e4m3(uint8_t x) {
    const int s = x >> 7, e = (x >> 3) & 0xF, m = x & 7;
    const double mag = e == 0 ? std::ldexp((double)m, -9) : std::ldexp(1.0 + m / 8.0, e - 7);
    return s ? -mag : mag;
}

SafetensorsTensor tensor(const std::string &name, DType t, std::vector<int64_t> ne, const void *data) {
    SafetensorsTensor st;
    st.name = name;
    st.type = t;
    st.n_dims = (int)ne.size();
    for (size_t d = 0; d < ne.size(); ++d) st.ne[d] = ne[d];
    st.data = data;
    return st;
}

} // namespace

TEST_CASE("pair_fp8 gives each 64 of a row the scale of its checkpoint block", "[fp8]") {
    std::mt19937 rng(8);
    std::uniform_int_distribution<int> byte(0, 0x7E);
    struct Case {
        const char *what;
        int64_t mats, rows, cols, s_rows, s_cols, s_mats;
    };
    for (const Case c : {Case{"128 x 128 blocks, partial at the edges", 1, 300, 320, 3, 3, 1},
                         Case{"per channel", 1, 70, 192, 70, 1, 1}, Case{"per tensor", 1, 40, 128, 1, 1, 1},
                         Case{"blocks per expert matrix", 3, 130, 256, 2, 2, 3}}) {
        INFO(c.what);
        std::vector<uint8_t> w((size_t)(c.mats * c.rows * c.cols));
        for (auto &b : w) b = (uint8_t)(byte(rng) | (rng() & 0x80));
        std::vector<float> s((size_t)(c.s_mats * c.s_rows * c.s_cols));
        for (size_t i = 0; i < s.size(); ++i) s[i] = 0.001f * (float)(i + 1);
        std::vector<int64_t> wne = {c.cols, c.rows}, sne = {c.s_cols, c.s_rows};
        if (c.mats > 1) wne.push_back(c.mats);
        if (c.s_mats > 1) sne.push_back(c.s_mats);
        const SafetensorsTensor wt = tensor("m.weight", DType::F32, wne, w.data());
        const SafetensorsTensor st = tensor("m.weight_scale_inv", DType::F32, sne, s.data());
        QuantScheme scheme;
        scheme.method = "fp8";
        scheme.block_rows = scheme.block_cols = 128;
        std::deque<std::vector<uint8_t>> store;
        std::vector<const SafetensorsTensor *> used;
        const auto out = pair_fp8({&wt}, {&st}, scheme, store, used, "test");
        REQUIRE(out.size() == 1);
        REQUIRE(used == std::vector<const SafetensorsTensor *>{&st});
        CHECK(out[0].type == DType::FP8_E4M3);
        REQUIRE(out[0].nbytes == (size_t)(c.mats * c.rows * c.cols / 64 * 68));
        std::vector<float> got((size_t)c.cols);
        int bad = 0;
        for (int64_t m = 0; m < c.mats; ++m)
            for (int64_t r = 0; r < c.rows; ++r) {
                const int64_t row = m * c.rows + r;
                ref::dequantize_row(DType::FP8_E4M3, static_cast<const uint8_t *>(out[0].data) + row * (c.cols / 64) * 68,
                                    got.data(), c.cols);
                for (int64_t col = 0; col < c.cols; ++col) {
                    const int64_t sr = c.s_rows == 1 ? 0 : c.s_rows == c.rows ? r : r / 128;
                    const int64_t sc = c.s_cols == 1 ? 0 : col / 128;
                    const float scale = s[(size_t)((c.s_mats == 1 ? 0 : m) * c.s_rows * c.s_cols + sr * c.s_cols + sc)];
                    const float want = (float)(e4m3(w[(size_t)(row * c.cols + col)]) * (double)scale);
                    if (got[(size_t)col] != want && bad++ < 3)
                        UNSCOPED_INFO("matrix " << m << " row " << r << " column " << col << ": " << got[(size_t)col]
                                                << ", want " << want);
                }
            }
        CHECK(bad == 0);
    }
}

TEST_CASE("pair_fp8 refuses scales of no scheme's shape and rows that are no whole 64s", "[fp8]") {
    std::vector<uint8_t> w(128 * 256);
    std::vector<float> s(16, 1.f);
    QuantScheme scheme;
    scheme.method = "fp8";
    scheme.block_rows = scheme.block_cols = 128;
    std::deque<std::vector<uint8_t>> store;
    std::vector<const SafetensorsTensor *> used;
    auto status = [&](std::vector<int64_t> wne, std::vector<int64_t> sne, const char *scale_name) {
        const SafetensorsTensor wt = tensor("m.weight", DType::F32, wne, w.data());
        const SafetensorsTensor st = tensor(scale_name, DType::F32, sne, s.data());
        try {
            pair_fp8({&wt}, {&st}, scheme, store, used, "test");
            return VT_OK;
        } catch (const Error &e) {
            return e.status();
        }
    };
    CHECK(status({256, 128}, {2, 1}, "m.weight_scale_inv") == VT_OK);
    CHECK(status({256, 128}, {3, 1}, "m.weight_scale_inv") == VT_ERR_FORMAT);      // 3 column blocks of 256
    CHECK(status({256, 128}, {2, 1}, "m.other_scale") == VT_ERR_FORMAT);           // no scale beside it
    CHECK(status({256, 128}, {256, 1}, "m.weight_scale") == VT_ERR_UNSUPPORTED);   // a scale per input column
    CHECK(status({96, 128}, {1, 1}, "m.weight_scale") == VT_ERR_UNSUPPORTED);      // rows of 96
}

TEST_CASE("a fine-grained FP8 folder loads every projection as FP8_E4M3, e4m3 times its scale", "[fp8]") {
    Scratch s("llama_fp8_block");
    StFile f(s.dir / "model.safetensors");
    const json block = s.config()["quantization_config"]["weight_block_size"];
    const int64_t br = block[0], bc = block[1];
    CHECK(br < 64);  // several row blocks in every matrix (make-fp8-fixtures.py's FINE_BLOCK)
    auto m = Model::load(s.dir.string(), true, nullptr);
    int checked = 0;
    for (const auto &[name, t] : f.t) {
        if (t.dtype != "F8_E4M3") continue;
        // model.layers.<i>.<self_attn|mlp>.<proj>.weight -> blk.<i>.<gguf name>
        const size_t l0 = std::string("model.layers.").size(), l1 = name.find('.', l0);
        static const std::map<std::string, std::string> gguf = {
            {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"}, {"self_attn.v_proj", "attn_v"},
            {"self_attn.o_proj", "attn_output"}, {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"},
            {"mlp.down_proj", "ffn_down"}};
        const std::string proj = name.substr(l1 + 1, name.size() - l1 - 1 - 7);
        REQUIRE(gguf.count(proj));
        const GgufTensorInfo *g = m->gguf().find_tensor("blk." + name.substr(l0, l1 - l0) + "." + gguf.at(proj) + ".weight");
        REQUIRE(g);
        CHECK(g->type == DType::FP8_E4M3);
        const StFile::T &sc = f.t.at(name + "_scale_inv");
        REQUIRE(sc.dtype == "F32");
        const int64_t rows = (int64_t)t.shape[0], cols = (int64_t)t.shape[1];
        const int64_t s_cols = (int64_t)sc.shape[1];
        std::vector<float> got((size_t)(rows * cols));
        ref::dequantize_row(DType::FP8_E4M3, g->data, got.data(), rows * cols);
        int bad = 0;
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < cols; ++c) {
                float scale;
                std::memcpy(&scale, sc.bytes.data() + 4 * ((r / br) * s_cols + c / bc), 4);
                const float want = (float)(e4m3((uint8_t)t.bytes[(size_t)(r * cols + c)]) * (double)scale);
                bad += got[(size_t)(r * cols + c)] != want;
            }
        CHECK(bad == 0);
        ++checked;
    }
    CHECK(checked == 14);  // 7 projections x 2 layers
}

TEST_CASE("FP8 folders vt cannot honour are refused, naming why", "[fp8]") {
    Scratch s("llama_fp8_block");
    const json base = s.config();
    auto with_config = [&](const json &q) {
        json c = base;
        if (q.is_null()) c.erase("quantization_config");
        else c["quantization_config"] = q;
        s.set_config(c);
        return load_status(s.dir);
    };
    SECTION("no quantization_config") {
        auto [st, msg] = with_config(json());
        CHECK(st == VT_ERR_FORMAT);
        CHECK(msg.find("F8_E4M3") != std::string::npos);
    }
    SECTION("another quant_method") {
        auto [st, msg] = with_config({{"quant_method", "awq"}});
        CHECK(st == VT_ERR_UNSUPPORTED);
        CHECK(msg.find("awq") != std::string::npos);
    }
    SECTION("fp8 in e5m2") {
        auto [st, msg] = with_config({{"quant_method", "fp8"}, {"fmt", "e5m2"}});
        CHECK(st == VT_ERR_UNSUPPORTED);
        CHECK(msg.find("e5m2") != std::string::npos);
    }
    SECTION("compressed-tensors int4 weights") {
        const json w = {{"num_bits", 4}, {"type", "int"}, {"strategy", "group"}, {"group_size", 128}};
        auto [st, msg] = with_config({{"quant_method", "compressed-tensors"}, {"format", "float-quantized"},
                                      {"config_groups", {{"group_0", {{"weights", w}, {"targets", {"Linear"}}}}}}});
        CHECK(st == VT_ERR_UNSUPPORTED);
        CHECK(msg.find("4-bit int") != std::string::npos);
    }
    SECTION("compressed-tensors pack-quantized") {
        auto [st, msg] = with_config({{"quant_method", "compressed-tensors"}, {"format", "pack-quantized"}});
        CHECK(st == VT_ERR_UNSUPPORTED);
        CHECK(msg.find("pack-quantized") != std::string::npos);
    }
    SECTION("a scheme that does not define F8_E4M3 weights (ModelOpt NVFP4)") {
        auto [st, msg] = with_config({{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"}});
        CHECK(st == VT_ERR_UNSUPPORTED);
        CHECK(msg.find("F8_E4M3") != std::string::npos);
        CHECK(msg.find("modelopt") != std::string::npos);
    }
    SECTION("an unknown ModelOpt algorithm") {
        auto [st, msg] = with_config({{"quant_method", "modelopt"}, {"quant_algo", "INT4_AWQ"}});
        CHECK(st == VT_ERR_UNSUPPORTED);
        CHECK(msg.find("INT4_AWQ") != std::string::npos);
    }
    SECTION("a weight without its scale") {
        StFile f(s.dir / "model.safetensors");
        REQUIRE(f.t.erase("model.layers.1.mlp.up_proj.weight_scale_inv") == 1);
        f.save(s.dir / "model.safetensors");
        auto [st, msg] = load_status(s.dir);
        CHECK(st == VT_ERR_FORMAT);
        CHECK(msg.find("model.layers.1.mlp.up_proj.weight") != std::string::npos);
    }
    SECTION("F8_E5M2 weights") {
        StFile f(s.dir / "model.safetensors");
        f.t.at("model.layers.0.mlp.up_proj.weight").dtype = "F8_E5M2";
        f.save(s.dir / "model.safetensors");
        auto [st, msg] = load_status(s.dir);
        CHECK(st == VT_ERR_UNSUPPORTED);
        CHECK(msg.find("F8_E5M2") != std::string::npos);
    }
}

TEST_CASE("quantization at load turns an FP8 folder's projections into the GGUF type", "[fp8]") {
    Scratch s("llama_fp8_block");
    auto m = Model::load(s.dir.string(), true, nullptr, DType::Q8_0);
    const QuantizeStats &q = m->quantize_stats();
    // The 14 FP8 projections (7 x 2 layers) and the F32 output projection.
    uint64_t bytes_in = 0, q8_bytes = 0;
    int n_fp8 = 0;
    for (const GgufTensorInfo &t : m->gguf().tensors())
        if (t.type == DType::FP8_E4M3 || t.name == "output.weight") {
            n_fp8 += t.type == DType::FP8_E4M3;
            bytes_in += t.nbytes;
            q8_bytes += row_bytes(DType::Q8_0, t.ne[0]) * (uint64_t)t.ne[1];
        }
    CHECK(n_fp8 == 14);
    CHECK(q.n_quantized == 15);
    CHECK(q.n_kept == 0);
    CHECK(q.bytes_in == bytes_in);
    CHECK(q.bytes_out == q8_bytes);
}
