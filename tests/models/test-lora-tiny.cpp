// LoRA adapters against PEFT, through the public C ABI only: random adapters
// of the tiny models that PEFT wrote and llama.cpp's convert_lora_to_gguf.py
// converted (tests/models/make-tiny-loras.py; the adapters and PEFT's
// float32 logits are in tests/models/tiny-lora/).
//
// Environment (meson sets it): VT_SOURCE_ROOT; VT_TINY_LORA names the
// adapter, VT_LORA_SOURCE how to load it ("peft": the folder, "gguf": the
// conversion) and VT_TINY_SOURCE the base model ("gguf" or "folder"), so
// that q and k rows are reordered between Hugging Face's and llama.cpp's
// layouts in both directions. The [mixed] case loads every llama adapter.
// VT_TEST_DEVICE, when set, the device the base model is loaded on.
//
// What must hold:
// - every logit of every prompt position within TOL_LOGIT of PEFT's, and
//   the adapter moves them by far more than that;
// - greedy tokens as PEFT's through vt_seq and through the serving engine;
//   (a GGUF LoRA carries no use_rslora: it is scaled by alpha / r, as
//   llama.cpp does, so an rsLoRA adapter's GGUF gives PEFT's model at a
//   request scale of sqrt(r));
// - scale 0 gives the base model's logits bit for bit;
// - the prefix cache never shares KV between adapters (or the base);
// - [mixed]: 16 requests over 4 adapters and none in one batch each give
//   their tokens alone.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "common/temp-file.h"
#include "common/vt-handles.h"
#include "common/vt-status.h"
#include "models/tiny-checks.h"
#include "vt/vt.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using vt::test::TIE_MARGIN;
using vt::test::TOL_LOGIT;
using vt::test::ContextPtr;
using vt::test::LoraPtr;
using vt::test::ModelPtr;
using vt::test::SeqPtr;

fs::path root_dir() {
    const char *root = std::getenv("VT_SOURCE_ROOT");
    if (!root) {
        std::fprintf(stderr, "SKIPPED: VT_SOURCE_ROOT is set by meson test\n");
        std::exit(77);
    }
    return fs::path(root) / "tests" / "models";
}

json read_json(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    return in ? json::parse(in, nullptr, /*allow_exceptions=*/false) : json();
}

bool lora_from_gguf() {
    const char *s = std::getenv("VT_LORA_SOURCE");
    return s && std::string(s) == "gguf";
}

// A base model, loaded once per name.
vt_model *base_model(const std::string &name) {
    // The device modules are loaded (vt_device_count) before the map is
    // made, so that it, and the models' device buffers, go first at exit.
    static std::map<std::string, ModelPtr> models = [] {
        (void)vt_device_count();
        return std::map<std::string, ModelPtr>();
    }();
    auto it = models.find(name);
    if (it != models.end()) return it->second.get();
    const char *source = std::getenv("VT_TINY_SOURCE");
    const bool folder = source && std::string(source) == "folder";
    const fs::path dir = root_dir() / "tiny";
    const fs::path path = folder ? dir / name : dir / (name + ".gguf");
    vt_model_params mp;
    vt_model_params_init(&mp);
    mp.device = std::getenv("VT_TEST_DEVICE");  // the adapters stay on the host, LORA on the CPU
    vt_model *m = nullptr;
    if (vt_model_load(path.string().c_str(), &mp, &m) != VT_OK) FAIL(path << ": " << vt_last_error());
    return models.emplace(name, ModelPtr(m)).first->second.get();
}

struct Adapter {
    std::string name;
    json golden;
    vt_model *model = nullptr;
    LoraPtr lora;
};

Adapter load_adapter(const std::string &name) {
    Adapter a;
    a.name = name;
    const fs::path dir = root_dir() / "tiny-lora";
    a.golden = read_json(dir / (name + ".json"));
    REQUIRE(a.golden.is_object());
    a.model = base_model(a.golden["base"].get<std::string>());
    const fs::path path = lora_from_gguf() ? dir / (name + ".gguf") : dir / name;
    vt_lora *l = nullptr;
    VT_REQUIRE_OK(vt_lora_load(a.model, path.string().c_str(), &l));
    a.lora.reset(l);
    return a;
}

Adapter &fixture() {
    static Adapter a = [] {
        const char *name = std::getenv("VT_TINY_LORA");
        if (!name || !*name) {
            std::fprintf(stderr, "SKIPPED: VT_TINY_LORA is set by meson test\n");
            std::exit(77);
        }
        return load_adapter(name);
    }();
    return a;
}

// The request scale at which the adapter reproduces PEFT's model: 1, but
// a GGUF LoRA carries no use_rslora, so llama.cpp (and vt) scale it by
// alpha / r, and an rsLoRA adapter needs sqrt(r) more (the fixture says).
float peft_request_scale(const Adapter &a) {
    return lora_from_gguf() ? a.golden["gguf"]["request_scale_for_peft_logits"].get<float>() : 1.0f;
}

ContextPtr make_context(vt_model *m, uint32_t max_num_seqs = 0) {
    vt_context_params cp;
    vt_context_params_init(&cp);
    cp.n_threads = 2;
    cp.max_num_seqs = max_num_seqs;
    cp.max_model_len = 128;
    vt_context *c = nullptr;
    VT_REQUIRE_OK(vt_context_create(m, &cp, &c));
    return ContextPtr(c);
}

std::vector<vt_token> ids_of(const json &j) { return j.get<std::vector<vt_token>>(); }

vt_token argmax(const float *l, size_t n) { return (vt_token)(std::max_element(l, l + n) - l); }

std::vector<std::vector<float>> seq_logits(vt_context *ctx, const vt_lora *lora, float scale,
                                           const std::vector<vt_token> &ids) {
    return vt::test::seq_all_logits(ctx, ids, lora, scale);
}

void check_greedy(const json &golden, const std::vector<vt_token> &got, const char *path) {
    vt::test::check_greedy(got, ids_of(golden["greedy"]), golden["greedy_margins"].get<std::vector<float>>(),
                           TIE_MARGIN, path);
}

struct Request {
    std::vector<vt_token> prompt;
    const vt_lora *lora = nullptr;
    float scale = 1.0f;
};

struct Result {
    std::vector<vt_token> tokens;
    uint32_t n_cached = 0;
};

// The requests submitted together into one context, run to the end.
std::vector<Result> run_engine(vt_context *ctx, const std::vector<Request> &reqs, uint32_t n_new) {
    std::vector<uint64_t> ids(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
        vt_request_params rp;
        vt_request_params_init(&rp);
        rp.prompt = reqs[i].prompt.data();
        rp.n_prompt = reqs[i].prompt.size();
        rp.max_tokens = n_new;
        rp.ignore_eos = true;
        rp.lora = reqs[i].lora;
        rp.lora_scale = reqs[i].scale;
        VT_REQUIRE_OK(vt_context_submit(ctx, &rp, &ids[i]));
    }
    std::vector<Result> out(reqs.size());
    size_t done = 0;
    for (int guard = 0; done < reqs.size() && guard < 10000; ++guard) {
        VT_REQUIRE_OK(vt_context_step(ctx, 0, nullptr));
        const vt_request_output *ev = nullptr;
        while (vt_context_poll(ctx, &ev) == VT_OK && ev) {
            for (size_t i = 0; i < reqs.size(); ++i)
                if (ids[i] == ev->request_id) {
                    if (ev->token >= 0) out[i].tokens.push_back(ev->token);
                    out[i].n_cached = ev->n_cached_tokens;
                }
            REQUIRE(ev->finish_reason != VT_FINISH_ERROR);
            if (ev->finish_reason != VT_FINISH_NONE) ++done;
        }
    }
    REQUIRE(done == reqs.size());
    return out;
}

} // namespace

TEST_CASE("LoRA: the adapter's info", "[lora]") {
    Adapter &a = fixture();
    vt_lora_info info{};
    info.struct_size = sizeof info;
    VT_REQUIRE_OK(vt_lora_get_info(a.lora.get(), &info));
    const json &cfg = a.golden["lora"];
    CHECK(info.rank == cfg["r"].get<uint32_t>());
    CHECK(info.alpha == Approx(cfg["alpha"].get<float>()));
    CHECK(info.scale == Approx(lora_from_gguf() ? a.golden["gguf"]["llama_cpp_scale"].get<float>()
                                                : cfg["scale"].get<float>()));
    CHECK(std::string(info.format) == (lora_from_gguf() ? "gguf" : "peft"));
    CHECK(info.n_weights == cfg["targets"].size() * 2);  // every target of both layers
    CHECK(info.n_params > 0);
    WARN(a.name << ": targets " << info.targets);
}

TEST_CASE("LoRA: float32 logits match PEFT's", "[lora]") {
    Adapter &a = fixture();
    ContextPtr ctx = make_context(a.model);
    const json base_golden = read_json(root_dir() / "tiny" / (a.golden["base"].get<std::string>() + ".json"));
    float worst = 0, moved = 0;
    for (size_t p = 0; p < a.golden["prompts"].size(); ++p) {
        const json &prompt = a.golden["prompts"][p];
        const std::vector<vt_token> ids = ids_of(prompt["ids"]);
        const auto got = seq_logits(ctx.get(), a.lora.get(), peft_request_scale(a), ids);
        for (size_t t = 0; t < ids.size(); ++t) {
            const std::vector<float> want = prompt["logits"][t].get<std::vector<float>>();
            const std::vector<float> base = base_golden["prompts"][p]["logits"][t].get<std::vector<float>>();
            REQUIRE(got[t].size() == want.size());
            for (size_t j = 0; j < want.size(); ++j) {
                const float d = std::fabs(got[t][j] - want[j]);
                worst = std::max(worst, std::isnan(d) ? INFINITY : d);
                moved = std::max(moved, std::fabs(got[t][j] - base[j]));
            }
        }
    }
    CHECK(worst <= TOL_LOGIT);
    CHECK(moved >= 20 * TOL_LOGIT);  // the adapter does change the model
    WARN(a.name << ": max |vt - PEFT| " << worst << "; the adapter moves logits by up to " << moved);
}

TEST_CASE("LoRA: scale 0 is the base model, bit for bit; scale 1 after 0 is the adapter again", "[lora]") {
    Adapter &a = fixture();
    ContextPtr ctx = make_context(a.model);
    const std::vector<vt_token> ids = ids_of(a.golden["prompts"][0]["ids"]);
    const auto base = seq_logits(ctx.get(), nullptr, 1.0f, ids);
    CHECK(seq_logits(ctx.get(), a.lora.get(), 0.0f, ids) == base);
    const auto half = seq_logits(ctx.get(), a.lora.get(), 0.5f, ids);
    const auto full = seq_logits(ctx.get(), a.lora.get(), 1.0f, ids);
    CHECK(half != base);
    CHECK(half != full);
    CHECK(seq_logits(ctx.get(), a.lora.get(), 1.0f, ids) == full);
}

TEST_CASE("LoRA: greedy tokens match PEFT's through vt_seq and the serving engine", "[lora]") {
    Adapter &a = fixture();
    ContextPtr ctx = make_context(a.model);
    const std::vector<vt_token> prompt = ids_of(a.golden["prompts"].back()["ids"]);
    const size_t n_new = a.golden["greedy"].size();
    {
        vt_seq_params sp;
        vt_seq_params_init(&sp);
        sp.n_ctx = (uint32_t)(prompt.size() + n_new + 8);
        vt_seq *s = nullptr;
        VT_REQUIRE_OK(vt_seq_create(ctx.get(), &sp, &s));
        SeqPtr seq(s);
        VT_REQUIRE_OK(vt_seq_set_lora(s, a.lora.get(), peft_request_scale(a)));
        VT_REQUIRE_OK(vt_seq_feed(s, prompt.data(), prompt.size()));
        VT_REQUIRE_OK(vt_seq_step(s));
        std::vector<vt_token> got;
        for (size_t i = 0; i < n_new; ++i) {
            const float *l = nullptr;
            size_t n = 0;
            VT_REQUIRE_OK(vt_seq_logits(s, -1, &l, &n));
            got.push_back(argmax(l, n));
            VT_REQUIRE_OK(vt_seq_feed(s, &got.back(), 1));
            VT_REQUIRE_OK(vt_seq_step(s));
        }
        check_greedy(a.golden, got, "vt_seq");
    }
    const auto res = run_engine(ctx.get(), {{prompt, a.lora.get(), peft_request_scale(a)}}, (uint32_t)n_new);
    check_greedy(a.golden, res[0].tokens, "engine");
}

TEST_CASE("LoRA: the prefix cache shares KV only between requests of one adapter and scale", "[lora]") {
    Adapter &a = fixture();
    ContextPtr ctx = make_context(a.model);
    const std::vector<vt_token> prompt = ids_of(a.golden["prompts"].back()["ids"]);
    REQUIRE(prompt.size() > 16);  // at least one full block to share
    auto cached = [&](const vt_lora *l, float s) { return run_engine(ctx.get(), {{prompt, l, s}}, 2)[0].n_cached; };
    CHECK(cached(nullptr, 1.0f) == 0);
    CHECK(cached(a.lora.get(), 1.0f) == 0);    // the base's blocks are not the adapter's
    CHECK(cached(a.lora.get(), 1.0f) > 0);     // its own are
    CHECK(cached(a.lora.get(), 0.5f) == 0);    // another scale is another model
    CHECK(cached(nullptr, 1.0f) > 0);          // the base's are still there
    CHECK(cached(a.lora.get(), 0.0f) > 0);     // scale 0 is the base
}

TEST_CASE("LoRA: 16 requests over 4 adapters and none in one batch each give their tokens alone", "[mixed]") {
    std::vector<Adapter> adapters;
    for (const char *n : {"llama_r4", "llama_r16_rslora", "llama_r8_a", "llama_r8_b"}) adapters.push_back(load_adapter(n));
    vt_model *m = adapters[0].model;
    const std::vector<vt_token> longest = ids_of(adapters[0].golden["prompts"].back()["ids"]);
    REQUIRE(longest.size() >= 24);
    std::vector<Request> reqs;
    for (size_t i = 0; i < 16; ++i) {
        const size_t start = (i * 7) % (longest.size() - 23), len = 8 + i;
        Request r;
        r.prompt.assign(longest.begin() + (ptrdiff_t)start, longest.begin() + (ptrdiff_t)(start + len));
        r.lora = i % 5 == 4 ? nullptr : adapters[i % 5].lora.get();
        r.scale = i % 3 == 2 ? 0.5f : 1.0f;
        reqs.push_back(r);
    }
    // Two requests with one prompt and different adapters: the same tokens
    // in, different tokens out.
    reqs[1].prompt = reqs[0].prompt;
    const uint32_t n_new = 16;
    ContextPtr ctx = make_context(m, 16);
    const auto together = run_engine(ctx.get(), reqs, n_new);
    for (size_t i = 0; i < reqs.size(); ++i) {
        ContextPtr alone_ctx = make_context(m, 1);
        const auto alone = run_engine(alone_ctx.get(), {reqs[i]}, n_new);
        INFO("request " << i);
        CHECK(together[i].tokens == alone[0].tokens);
    }
    CHECK(together[0].tokens != together[1].tokens);
}

TEST_CASE("LoRA: adapters that do not fit the model or the format are refused with a clear error", "[mixed]") {
    vt_model *llama = base_model("llama");
    const fs::path dir = root_dir() / "tiny-lora";
    vt_lora *l = nullptr;
    // Another architecture's adapter: the GGUF names its architecture.
    CHECK(vt_lora_load(llama, (dir / "qwen2_r8.gguf").string().c_str(), &l) == VT_ERR_INVALID_ARGUMENT);
    CHECK(l == nullptr);
    CHECK(std::strstr(vt_last_error(), "architecture") != nullptr);
    CHECK(vt_lora_load(llama, (dir / "no-such-adapter").string().c_str(), &l) == VT_ERR_IO);
    CHECK(vt_lora_load(nullptr, "x", &l) == VT_ERR_INVALID_ARGUMENT);
    // A folder with a config vt cannot honour, and a truncated safetensors.
    vt::test::TempDir tmp;
    fs::copy(dir / "llama_r4", tmp.path() / "dora");
    json cfg = read_json(tmp.path() / "dora" / "adapter_config.json");
    cfg["use_dora"] = true;
    std::ofstream(tmp.path() / "dora" / "adapter_config.json") << cfg.dump();
    CHECK(vt_lora_load(llama, (tmp.path() / "dora").string().c_str(), &l) == VT_ERR_UNSUPPORTED);
    CHECK(std::strstr(vt_last_error(), "use_dora") != nullptr);
    fs::copy(dir / "llama_r4", tmp.path() / "cut");
    fs::resize_file(tmp.path() / "cut" / "adapter_model.safetensors", 1000);
    CHECK(vt_lora_load(llama, (tmp.path() / "cut").string().c_str(), &l) == VT_ERR_FORMAT);
    // A request with an adapter of another model is refused at submit.
    Adapter q = load_adapter("qwen2_r8");
    ContextPtr ctx = make_context(llama);
    const vt_token tok = 1;
    vt_request_params rp;
    vt_request_params_init(&rp);
    CHECK(rp.lora_scale == 1.0f);
    rp.prompt = &tok;
    rp.n_prompt = 1;
    rp.lora = q.lora.get();
    uint64_t id = 0;
    CHECK(vt_context_submit(ctx.get(), &rp, &id) == VT_ERR_INVALID_ARGUMENT);
    rp.lora = nullptr;
    rp.lora_scale = NAN;
    CHECK(vt_context_submit(ctx.get(), &rp, &id) == VT_OK);  // no adapter: the scale is not read
}
