// Hugging Face folders and safetensors files that are wrong in one way each:
// every one must fail to load with the status and a message that names the
// problem, never crash. The good folder is the tiny Qwen2 fixture
// (tests/models/tiny/qwen2, tests/models/make-tiny-models.py), copied to a
// scratch folder and spoiled there (the Kimi-Linear cases: its tiny fixture).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/model.h"
#include "model/safetensors.h"

namespace fs = std::filesystem;
using namespace vt;

namespace {

fs::path fixture(const char *name = "qwen2") {
    const char *root = std::getenv("VT_SOURCE_ROOT");
    return fs::path(root ? root : ".") / "tests" / "models" / "tiny" / name;
}

std::string read(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write(const fs::path &p, const std::string &s) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << s;
}

// A copy of the fixture, removed at scope exit.
struct Scratch {
    fs::path dir;
    explicit Scratch(const char *name = "qwen2") {
        static int n = 0;
        dir = fs::temp_directory_path() / ("vt-hf-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
        fs::remove_all(dir);
        fs::copy(fixture(name), dir, fs::copy_options::recursive);
    }
    ~Scratch() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    void replace_in(const char *file, const std::string &from, const std::string &to) {
        std::string s = read(dir / file);
        const size_t at = s.find(from);
        REQUIRE(at != std::string::npos);
        s.replace(at, from.size(), to);
        write(dir / file, s);
    }
};

// Loads dir and returns the error (VT_OK if it loaded).
std::pair<vt_status, std::string> load(const fs::path &dir) {
    try {
        Model::load(dir.string(), true, nullptr);
        return {VT_OK, ""};
    } catch (const Error &e) {
        return {e.status(), e.what()};
    }
}

} // namespace

TEST_CASE("a Hugging Face folder loads") {
    REQUIRE(fs::exists(fixture() / "config.json"));
    auto m = Model::load(fixture().string(), true, nullptr);
    CHECK(m->arch_name() == "qwen2");
    CHECK(m->from_folder());
    CHECK(m->hparams.rope_mode == kRopeNeox);
    CHECK(m->hparams.n_layer == 2);
}

TEST_CASE("a folder whose architecture vt does not know says which it knows") {
    Scratch s;
    s.replace_in("config.json", "Qwen2ForCausalLM", "FooForCausalLM");
    auto [st, msg] = load(s.dir);
    CHECK(st == VT_ERR_UNSUPPORTED);
    CHECK_THAT(msg, Catch::Contains("FooForCausalLM") && Catch::Contains("LlamaForCausalLM"));
}

TEST_CASE("a folder without config.json or weights") {
    Scratch s;
    fs::remove(s.dir / "model.safetensors");
    auto [st, msg] = load(s.dir);
    CHECK(st == VT_ERR_IO);
    CHECK_THAT(msg, Catch::Contains("model.safetensors"));
    fs::remove(s.dir / "config.json");
    auto [st2, msg2] = load(s.dir);
    CHECK(st2 == VT_ERR_IO);
    CHECK_THAT(msg2, Catch::Contains("config.json"));
}

TEST_CASE("a sharded folder whose index names a missing shard") {
    Scratch s;
    fs::rename(s.dir / "model.safetensors", s.dir / "model-00001-of-00002.safetensors");
    write(s.dir / "model.safetensors.index.json",
          R"({"weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                             "lm_head.weight": "model-00002-of-00002.safetensors"}})");
    auto [st, msg] = load(s.dir);
    CHECK(st == VT_ERR_IO);
    CHECK_THAT(msg, Catch::Contains("model-00002-of-00002.safetensors"));
    // A shard name that leaves the folder is refused before any file is opened.
    write(s.dir / "model.safetensors.index.json", R"({"weight_map": {"x": "../../etc/passwd"}})");
    auto [st2, msg2] = load(s.dir);
    CHECK(st2 == VT_ERR_FORMAT);
}

TEST_CASE("a tensor of the wrong shape is named") {
    Scratch s;
    s.replace_in("config.json", "\"intermediate_size\": 128", "\"intermediate_size\": 96");
    auto [st, msg] = load(s.dir);
    CHECK(st == VT_ERR_FORMAT);
    CHECK_THAT(msg, Catch::Contains("ffn_gate.weight"));
}

TEST_CASE("malformed config.json") {
    Scratch s;
    write(s.dir / "config.json", "{\"architectures\": [\"Qwen2ForCausalLM\"], ");
    auto [st, msg] = load(s.dir);
    CHECK(st == VT_ERR_FORMAT);
    CHECK_THAT(msg, Catch::Contains("config.json"));
}

TEST_CASE("a truncated safetensors file") {
    Scratch s;
    const std::string bytes = read(s.dir / "model.safetensors");
    for (size_t keep : {(size_t)0, (size_t)7, (size_t)100, bytes.size() / 2, bytes.size() - 1}) {
        INFO("first " << keep << " of " << bytes.size() << " bytes");
        write(s.dir / "model.safetensors", bytes.substr(0, keep));
        auto [st, msg] = load(s.dir);
        CHECK(st != VT_OK);
        CHECK((st == VT_ERR_FORMAT || st == VT_ERR_IO));
    }
}

TEST_CASE("safetensors headers that lie") {
    auto parse = [](const std::string &header, size_t data_bytes) {
        std::string file(8, '\0');
        uint64_t n = header.size();
        for (int i = 0; i < 8; ++i) file[(size_t)i] = (char)((n >> (8 * i)) & 0xff);
        file += header;
        file += std::string(data_bytes, '\0');
        try {
            auto st = SafetensorsFile::parse(reinterpret_cast<const uint8_t *>(file.data()), file.size());
            return std::make_pair(VT_OK, st->tensors().size());
        } catch (const Error &e) {
            return std::make_pair(e.status(), (size_t)0);
        }
    };
    const std::string good = R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}})";
    CHECK(parse(good, 24) == std::make_pair(VT_OK, (size_t)1));
    CHECK(parse(good, 23).first == VT_ERR_FORMAT);  // data past the end
    CHECK(parse(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})", 24).first == VT_ERR_FORMAT);
    CHECK(parse(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [8, 4]}})", 24).first == VT_ERR_FORMAT);
    CHECK(parse(R"({"w": {"dtype": "I8", "shape": [4], "data_offsets": [0, 4]}})", 4).first == VT_ERR_UNSUPPORTED);
    CHECK(parse(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4).first == VT_ERR_FORMAT);
    CHECK(parse(R"({"w": {"dtype": "F32", "shape": [1,1,1,1,1], "data_offsets": [0, 4]}})", 4).first ==
          VT_ERR_UNSUPPORTED);
    CHECK(parse(R"({"w": {"dtype": "F32"}})", 0).first == VT_ERR_FORMAT);
    CHECK(parse(R"([1, 2])", 0).first == VT_ERR_FORMAT);
    CHECK(parse("{not json", 0).first == VT_ERR_FORMAT);
    CHECK(parse(R"({"__metadata__": {"format": "pt"}})", 0) == std::make_pair(VT_OK, (size_t)0));
}

// What fuzz-config-json looks for (tests/fuzz): a value of the wrong type,
// a zero size (a divisor) or a number outside uint32 in config.json is the
// config's error, VT_ERR_FORMAT naming the key; it once was a nlohmann
// type_error (no vt::Error: VT_ERR_INTERNAL through the ABI), a division by
// zero, or an out-of-range float-to-integer cast.
TEST_CASE("config.json values of the wrong type, zero or out of range") {
    struct Case {
        const char *from, *to, *names;
    };
    const Case cases[] = {
        {"\"num_attention_heads\": 4", "\"num_attention_heads\": 0", "num_attention_heads"},
        {"\"num_key_value_heads\": 2", "\"num_key_value_heads\": 0", "num_key_value_heads"},
        {"\"hidden_size\": 64", "\"hidden_size\": 2", "head_dim"},  // 2 / 4 heads = 0
        {"\"num_hidden_layers\": 2", "\"num_hidden_layers\": 4294967298", "num_hidden_layers"},
        {"\"sliding_window\": null", "\"sliding_window\": 4", ""},  // then use_sliding_window: "no"
        {"\"rope_type\": \"default\"", "\"rope_type\": 5", "rope_type"},
        {"\"rope_type\": \"default\"", "\"rope_type\": \"yarn\", \"original_max_position_embeddings\": -5",
         "original_max_position_embeddings"},
        {"\"rope_type\": \"default\"", "\"rope_type\": \"yarn\", \"original_max_position_embeddings\": 1e300",
         "original_max_position_embeddings"},
        {"\"rope_type\": \"default\"", "\"rope_type\": \"longrope\", \"original_max_position_embeddings\": 1e30",
         "original_max_position_embeddings"},
        {"\"num_attention_heads\": 4", "\"num_attention_heads\": 4, \"head_dim\": 4294967295", "head_dim"},
    };
    for (const Case &c : cases) {
        INFO(c.to);
        Scratch s;
        s.replace_in("config.json", c.from, c.to);
        if (std::string(c.to).find("sliding_window") != std::string::npos)
            s.replace_in("config.json", "\"use_sliding_window\": false", "\"use_sliding_window\": \"no\"");
        auto [st, msg] = load(s.dir);
        CHECK(st == VT_ERR_FORMAT);
        CHECK_THAT(msg, Catch::Contains(std::string(*c.names ? c.names : "use_sliding_window")));
    }
}

// Kimi-Linear's config.json (tests/models/tiny/kimi_linear): read as the
// GGUF the converter wrote from it, whichever way it states the layer kinds.
TEST_CASE("a Kimi-Linear folder reads as its GGUF conversion") {
    const fs::path tiny = fixture("kimi_linear");
    REQUIRE(fs::exists(tiny / "config.json"));
    auto gguf = Model::load(tiny.string() + ".gguf", true, nullptr);
    auto check_like_gguf = [&](const fs::path &dir) {
        auto m = Model::load(dir.string(), true, nullptr);
        CHECK(m->arch_name() == "kimi-linear");
        const Hparams &a = m->hparams, &b = gguf->hparams;
        CHECK(a.n_ctx_train == b.n_ctx_train);
        CHECK((a.n_head == b.n_head && a.n_head_kv == b.n_head_kv && a.head_dim == b.head_dim && a.n_rot == b.n_rot));
        CHECK((a.n_expert == b.n_expert && a.n_expert_used == b.n_expert_used && a.n_ff_exp == b.n_ff_exp &&
               a.n_ff_shexp == b.n_ff_shexp && a.n_layer_dense_lead == b.n_layer_dense_lead));
        CHECK((a.expert_gating == kMoeSigmoid && b.expert_gating == kMoeSigmoid));
        CHECK((a.expert_weights_norm && b.expert_weights_norm && a.expert_weights_scale == b.expert_weights_scale));
        REQUIRE(m->cache_layers.size() == gguf->cache_layers.size());
        for (size_t l = 0; l < m->cache_layers.size(); ++l) {
            INFO("layer " << l);
            const LayerCacheSpec &x = m->cache_layers[l], &y = gguf->cache_layers[l];
            CHECK((x.kind == y.kind && x.kv_row == y.kv_row && x.conv_floats == y.conv_floats &&
                   x.state_floats == y.state_floats));
        }
    };
    check_like_gguf(tiny);
    CHECK(gguf->cache_layers[0].kind == CacheKind::recurrent);
    CHECK(gguf->cache_layers[3].kind == CacheKind::latent);
    SECTION("layer kinds from linear_attn_config's 1-based lists") {
        Scratch s("kimi_linear");
        s.replace_in("config.json", "\"layer_types\"", "\"unused_layer_types\"");
        check_like_gguf(s.dir);
    }
}

// LFM2's and LFM2-MoE's config.json (tests/models/tiny/lfm2, lfm2_moe): read
// as the GGUF the converter wrote from it: LFM2's auto-adjusted FFN width
// (intermediate_size 100 -> 96), the layer kinds as per-layer KV heads, the
// conv tail as each conv layer's whole slot, LFM2-MoE's routing.
TEST_CASE("LFM2 and LFM2-MoE folders read as their GGUF conversions") {
    for (const char *name : {"lfm2", "lfm2_moe"}) {
        INFO(name);
        const fs::path tiny = fixture(name);
        REQUIRE(fs::exists(tiny / "config.json"));
        auto gguf = Model::load(tiny.string() + ".gguf", true, nullptr);
        auto check_like_gguf = [&](const fs::path &dir) {
            auto m = Model::load(dir.string(), true, nullptr);
            CHECK(m->arch_name() == gguf->arch_name());
            const Hparams &a = m->hparams, &b = gguf->hparams;
            CHECK((a.n_ctx_train == b.n_ctx_train && a.n_ff == b.n_ff && a.n_ff == 96));
            CHECK((a.n_head == b.n_head && a.n_head_kv == b.n_head_kv && a.head_dim == b.head_dim && a.n_rot == b.n_rot));
            CHECK((a.rope_freq_base == b.rope_freq_base && a.norm_eps == b.norm_eps));
            CHECK((a.n_expert == b.n_expert && a.n_expert_used == b.n_expert_used && a.n_ff_exp == b.n_ff_exp &&
                   a.n_layer_dense_lead == b.n_layer_dense_lead && a.expert_gating == b.expert_gating &&
                   a.expert_weights_norm == b.expert_weights_norm && a.expert_weights_scale == b.expert_weights_scale));
            REQUIRE(m->cache_layers.size() == gguf->cache_layers.size());
            for (size_t l = 0; l < m->cache_layers.size(); ++l) {
                INFO("layer " << l);
                const LayerCacheSpec &x = m->cache_layers[l], &y = gguf->cache_layers[l];
                CHECK((x.kind == y.kind && x.kv_row == y.kv_row && x.conv_floats == y.conv_floats &&
                       x.state_floats == y.state_floats));
            }
        };
        check_like_gguf(tiny);
        CHECK(gguf->cache_layers[0].kind == CacheKind::recurrent);
        CHECK(gguf->cache_layers[0].conv_floats == 2 * 64);
        CHECK(gguf->cache_layers[0].state_floats == 0);
        SECTION("layer kinds from full_attn_idxs") {
            Scratch s(name);
            const bool moe = std::string(name) == "lfm2_moe";
            s.replace_in("config.json", "\"layer_types\"",
                         moe ? "\"full_attn_idxs\": [1], \"unused_layer_types\"" : "\"unused_layer_types\"");
            if (!moe) s.replace_in("config.json", "\"full_attn_idxs\": null", "\"full_attn_idxs\": [2]");
            check_like_gguf(s.dir);
        }
    }
    SECTION("LFM2's FFN width with transformers' defaults (multiplier 1, multiple of 256)") {
        Scratch s("lfm2");
        s.replace_in("config.json", "\"block_ffn_dim_multiplier\": 1.3,", "");
        s.replace_in("config.json", "\"block_multiple_of\": 16,", "");
        s.replace_in("config.json", "\"intermediate_size\": 100", "\"intermediate_size\": 400");
        auto [st, msg] = load(s.dir);  // 400 -> int(266.7) = 266 -> 512: the weights have 96
        CHECK(st == VT_ERR_FORMAT);
        CHECK_THAT(msg, Catch::Contains("blk.0.ffn_gate.weight") && Catch::Contains("512"));
    }
    SECTION("LFM2 without the adjustment: intermediate_size as it is") {
        Scratch s("lfm2");
        s.replace_in("config.json", "\"intermediate_size\": 100", "\"intermediate_size\": 96");
        s.replace_in("config.json", "\"block_auto_adjust_ff_dim\": true", "\"block_auto_adjust_ff_dim\": false");
        CHECK(Model::load(s.dir.string(), true, nullptr)->hparams.n_ff == 96);
    }
}

TEST_CASE("Kimi-Linear configs vt cannot read say why") {
    struct Case {
        const char *from, *to, *names;
    };
    const Case cases[] = {
        // llama.cpp's format has one head count for KDA and MLA.
        {"\"num_heads\": 4", "\"num_heads\": 8", "KDA heads"},
        {"\"moe_router_activation_func\": \"sigmoid\"", "\"moe_router_activation_func\": \"softmax\"",
         "moe_router_activation_func"},
        {"\"sparse\"\n  ],", "\"dense\"\n  ],", "mlp_layer_types"},
    };
    for (const Case &c : cases) {
        INFO(c.to);
        Scratch s("kimi_linear");
        s.replace_in("config.json", c.from, c.to);
        auto [st, msg] = load(s.dir);
        CHECK(st == VT_ERR_UNSUPPORTED);
        CHECK_THAT(msg, Catch::Contains(c.names));
    }
}
