#include "model/lora.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "core/quant.h"
#include "model/gguf.h"
#include "model/hf-folder.h"
#include "model/json-file.h"
#include "model/model.h"
#include "model/safetensors.h"

namespace vt {

namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::atomic<uint64_t> g_next_id{1};

// The projections an adapter may update: the ones every architecture file
// computes through LayerBuilder::linear (so a loaded pair is never silently
// left out of the graph).
bool linear_target(const std::string &kind) {
    static const std::set<std::string> kinds = {
        "attn_q",         "attn_k",       "attn_v",         "attn_output", "ffn_gate",   "ffn_up",
        "ffn_down",       "ffn_gate_inp", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp",
        "attn_q_a",       "attn_q_b",     "attn_kv_a_mqa"};
    return kinds.count(kind) != 0;
}

// "blk.3.attn_q.weight" -> "attn_q" (block and ".weight" dropped); "" for a
// name outside the blocks.
std::string weight_kind(const std::string &name, uint32_t *block = nullptr) {
    unsigned il = 0;
    int used = 0;
    if (std::sscanf(name.c_str(), "blk.%u.%n", &il, &used) != 1 || used <= 0) return "";
    std::string rest = name.substr((size_t)used);
    if (rest.size() < 8 || rest.compare(rest.size() - 7, 7, ".weight") != 0) return "";
    if (block) *block = il;
    return rest.substr(0, rest.size() - 7);
}

bool ends_with(const std::string &s, const std::string &suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Whether a config entry that vt cannot honour is set (not null, false, "none"
// or empty).
bool set_in(const json &cfg, const char *key) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return false;
    if (it->is_boolean()) return it->get<bool>();
    if (it->is_string()) return it->get<std::string>() != "none" && !it->get<std::string>().empty();
    if (it->is_array() || it->is_object()) return !it->empty();
    return true;
}
} // namespace

struct LoraAdapter::Source {
    DType type = DType::F32;
    int64_t ne0 = 0, ne1 = 0;
    int n_dims = 0;
    const void *data = nullptr;
    std::string what;  // for messages: the tensor's name in its file
};

LoraAdapter::LoraAdapter(const Model &m) : model_(m), id_(g_next_id++) {}

std::shared_ptr<const LoraAdapter> LoraAdapter::load(const Model &m, const std::string &path) {
    std::shared_ptr<LoraAdapter> a(new LoraAdapter(m));
    std::error_code ec;
    if (fs::is_directory(path, ec)) a->load_peft(path);
    else if (fs::exists(path, ec)) a->load_gguf(path);
    else fail(VT_ERR_IO, "%s: no such adapter (a PEFT folder or a GGUF LoRA file)", path.c_str());
    a->finish();
    VT_LOG_INFO("LoRA adapter %s (%s): rank %u, alpha %g, %zu weights (%s), %.2f MiB", path.c_str(), a->format_,
                a->rank_, a->alpha_, a->pairs_.size(), a->targets_.c_str(),
                (double)a->n_params_ * 4 / (1 << 20));
    return a;
}

const LoraPair *LoraAdapter::find(const char *weight_name) const {
    if (!weight_name) return nullptr;
    auto it = pairs_.find(std::string_view(weight_name));  // no string made: this runs per projection per step
    return it == pairs_.end() ? nullptr : &it->second;
}

void LoraAdapter::load_peft(const std::string &dir_s) {
    format_ = "peft";
    const fs::path dir(dir_s);
    const fs::path cfg_path = dir / "adapter_config.json";
    if (!fs::exists(cfg_path)) fail(VT_ERR_IO, "%s: a PEFT adapter folder needs adapter_config.json", dir.c_str());
    const json cfg = read_json_file(cfg_path);
    if (!cfg.is_object()) fail(VT_ERR_FORMAT, "%s: not a JSON object", cfg_path.c_str());
    if (auto t = cfg.find("peft_type"); t != cfg.end() && !(t->is_string() && t->get<std::string>() == "LORA"))
        fail(VT_ERR_UNSUPPORTED, "%s: peft_type %s: only LoRA adapters are supported", cfg_path.c_str(),
             t->dump().c_str());
    for (const char *key : {"use_dora", "modules_to_save", "rank_pattern", "alpha_pattern", "fan_in_fan_out",
                            "target_parameters", "bias"})
        if (set_in(cfg, key))
            fail(VT_ERR_UNSUPPORTED, "%s: \"%s\": %s is not supported", cfg_path.c_str(), key,
                 cfg[key].dump().c_str());
    auto r_it = cfg.find("r");
    if (r_it == cfg.end() || !r_it->is_number_integer() || r_it->get<int64_t>() <= 0 || r_it->get<int64_t>() > 65536)
        fail(VT_ERR_FORMAT, "%s: \"r\" must be a positive integer", cfg_path.c_str());
    const int64_t r = r_it->get<int64_t>();
    auto a_it = cfg.find("lora_alpha");
    if (a_it != cfg.end() && !a_it->is_number()) fail(VT_ERR_FORMAT, "%s: \"lora_alpha\" is not a number", cfg_path.c_str());
    alpha_ = a_it == cfg.end() ? 8.0f : a_it->get<float>();  // PEFT's default
    auto rs_it = cfg.find("use_rslora");  // json::value() would throw a nlohmann type_error on a non-bool
    if (rs_it != cfg.end() && !rs_it->is_null() && !rs_it->is_boolean())
        fail(VT_ERR_FORMAT, "%s: \"use_rslora\" is not true or false", cfg_path.c_str());
    const bool rslora = rs_it != cfg.end() && rs_it->is_boolean() && rs_it->get<bool>();
    scale_ = rslora ? alpha_ / std::sqrt((float)r) : alpha_ / (float)r;
    if (!std::isfinite(scale_)) fail(VT_ERR_FORMAT, "%s: lora_alpha gives a scale that is not finite", cfg_path.c_str());

    const fs::path st = dir / "adapter_model.safetensors";
    if (!fs::exists(st))
        fail(VT_ERR_IO, "%s: no adapter_model.safetensors (pickled adapter_model.bin files are not read)", dir.c_str());
    auto file = SafetensorsFile::open(st.string());
    // PEFT names: base_model.model.<module>.lora_A.weight and .lora_B.weight.
    std::map<std::string, std::pair<Source, Source>> found;
    for (const SafetensorsTensor &t : file->tensors()) {
        std::string name = t.name;
        const std::string prefix = "base_model.model.";
        if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
        const bool is_a = ends_with(name, ".lora_A.weight"), is_b = ends_with(name, ".lora_B.weight");
        if (!is_a && !is_b) {
            if (name.find("lora_embedding_") != std::string::npos)
                fail(VT_ERR_UNSUPPORTED, "%s: %s: LoRA on an embedding is not supported", st.c_str(), t.name.c_str());
            if (name.find("lora_magnitude_vector") != std::string::npos)
                fail(VT_ERR_UNSUPPORTED, "%s: %s: DoRA is not supported", st.c_str(), t.name.c_str());
            fail(VT_ERR_UNSUPPORTED, "%s: %s is not a LoRA A or B matrix vt applies", st.c_str(), t.name.c_str());
        }
        const std::string module = name.substr(0, name.size() - std::strlen(".lora_A.weight"));
        Source s{t.type, t.ne[0], t.ne[1], t.n_dims, t.data, t.name};
        (is_a ? found[module].first : found[module].second) = s;
    }
    if (found.empty()) fail(VT_ERR_FORMAT, "%s: no LoRA tensors", st.c_str());
    for (const auto &[module, ab] : found) {
        const std::string gguf = hf_tensor_gguf_name(module + ".weight", HfNorms::plain);
        if (gguf.empty() || weight_kind(gguf).empty())
            fail(VT_ERR_UNSUPPORTED, "%s: LoRA on %s is not supported (targets: the attention and MLP projections)",
                 st.c_str(), module.c_str());
        if (ab.first.ne1 != r)
            fail(VT_ERR_FORMAT, "%s: %s has rank %lld, the config says r = %lld", st.c_str(), ab.first.what.c_str(),
                 (long long)ab.first.ne1, (long long)r);
        // Hugging Face's q and k rows are in rotate-half order; llama.cpp's
        // converter permutes a Llama's (and so does vt's GGUF reading).
        add(gguf, ab.first, ab.second, 1.0f, model_.arch_name() == "llama" && !model_.from_folder());
    }
}

void LoraAdapter::load_gguf(const std::string &path) {
    format_ = "gguf";
    auto file = GgufFile::open(path);
    const auto type = file->get_string("general.type");
    if (!type || *type != "adapter")
        fail(VT_ERR_FORMAT, "%s: not an adapter (general.type is %s)", path.c_str(),
             type ? std::string(*type).c_str() : "absent");
    const auto atype = file->get_string("adapter.type");
    if (!atype || *atype != "lora")
        fail(VT_ERR_UNSUPPORTED, "%s: adapter.type %s: only LoRA adapters are supported", path.c_str(),
             atype ? std::string(*atype).c_str() : "absent");
    const auto arch = file->get_string("general.architecture");
    if (!arch || *arch != model_.arch_name())
        fail(VT_ERR_INVALID_ARGUMENT, "%s: an adapter for architecture %s, the model is %s", path.c_str(),
             arch ? std::string(*arch).c_str() : "(none)", model_.arch_name().c_str());
    alpha_ = (float)file->get_float("adapter.lora.alpha").value_or(0.0);
    if (!std::isfinite(alpha_)) fail(VT_ERR_FORMAT, "%s: adapter.lora.alpha is not finite", path.c_str());
    std::map<std::string, std::pair<Source, Source>> found;
    for (const GgufTensorInfo &t : file->tensors()) {
        const bool is_a = ends_with(t.name, ".lora_a"), is_b = ends_with(t.name, ".lora_b");
        if (!is_a && !is_b)
            fail(VT_ERR_UNSUPPORTED, "%s: tensor %s is not a LoRA A or B matrix vt applies", path.c_str(),
                 t.name.c_str());
        auto &pair = found[t.name.substr(0, t.name.size() - std::strlen(".lora_a"))];
        (is_a ? pair.first : pair.second) = Source{t.type, t.ne[0], t.ne[1], (int)t.n_dims, t.data, t.name};
    }
    if (found.empty()) fail(VT_ERR_FORMAT, "%s: no LoRA tensors", path.c_str());
    // llama.cpp: each pair is scaled by alpha / its rank (the scale alone
    // when alpha is 0). The adapter's scale is its first pair's; a pair of
    // another rank has the ratio folded into its B.
    bool first = true;
    for (const auto &[name, ab] : found) {
        const float r = (float)std::max<int64_t>(ab.first.ne1, 1);
        const float s = alpha_ != 0 ? alpha_ / r : 1.0f;
        if (first) scale_ = s, first = false;
        // The converter permutes a Llama's q and k rows as it permutes the
        // base's; a model read from a folder keeps Hugging Face's order.
        add(name, ab.first, ab.second, s / scale_, model_.arch_name() == "llama" && model_.from_folder());
    }
}

void LoraAdapter::add(const std::string &name, const Source &a, const Source &b, float factor, bool permute_qk) {
    uint32_t il = 0;
    const std::string kind = weight_kind(name, &il);
    if (!a.data) fail(VT_ERR_FORMAT, "LoRA: %s has a B matrix but no A", name.c_str());
    if (!b.data) fail(VT_ERR_FORMAT, "LoRA: %s has an A matrix but no B", name.c_str());
    if (kind.empty() || !linear_target(kind))
        fail(VT_ERR_UNSUPPORTED, "LoRA on %s is not supported (targets: the attention and MLP projections)",
             name.c_str());
    const GgufTensorInfo *w = model_.gguf().find_tensor(name);
    if (!w) {
        const std::string fused = "blk." + std::to_string(il) + ".attn_qkv.weight";
        if ((kind == "attn_q" || kind == "attn_k" || kind == "attn_v") && model_.gguf().find_tensor(fused))
            fail(VT_ERR_UNSUPPORTED, "LoRA: %s: the model's q, k and v are one fused projection", name.c_str());
        fail(VT_ERR_INVALID_ARGUMENT, "LoRA: the model has no weight %s", name.c_str());
    }
    if (kind == "ffn_up" && !model_.gguf().find_tensor("blk." + std::to_string(il) + ".ffn_gate.weight"))
        fail(VT_ERR_UNSUPPORTED, "LoRA: %s: the model's gate and up are one fused projection", name.c_str());
    if (w->n_dims != 2) fail(VT_ERR_UNSUPPORTED, "LoRA: %s is not a matrix (experts are not supported)", name.c_str());
    const int64_t in = w->ne[0], out = w->ne[1], r = a.ne1;
    if (a.n_dims != 2 || b.n_dims != 2 || a.ne0 != in || b.ne1 != out || b.ne0 != r || r <= 0)
        fail(VT_ERR_INVALID_ARGUMENT,
             "LoRA: %s: A %s is (%lld, %lld) and B %s (%lld, %lld) in ggml order; the weight is (%lld, %lld), so A "
             "must be (%lld, r) and B (r, %lld)",
             name.c_str(), a.what.c_str(), (long long)a.ne0, (long long)a.ne1, b.what.c_str(), (long long)b.ne0,
             (long long)b.ne1, (long long)in, (long long)out, (long long)in, (long long)out);
    for (const Source *s : {&a, &b})
        if (s->type != DType::F32 && s->type != DType::F16 && s->type != DType::BF16)
            fail(VT_ERR_UNSUPPORTED, "LoRA: %s is %s; F32, F16 and BF16 are read", s->what.c_str(),
                 dtype_name(s->type));

    LoraPair p;
    // A as stored where the kernels read it (F32, F16), else as f32.
    if (a.type == DType::BF16) {
        auto &buf = storage_.emplace_back((size_t)(in * r) * sizeof(float));
        ref::dequantize_row(a.type, a.data, reinterpret_cast<float *>(buf.data()), in * r);
        tensor_init(p.a, DType::F32, in, r, 1, 1, buf.data());
    } else {
        auto &buf = storage_.emplace_back(row_bytes(a.type, in) * (size_t)r);
        std::memcpy(buf.data(), a.data, buf.size());
        tensor_init(p.a, a.type, in, r, 1, 1, buf.data());
    }
    // B as f32, transposed (r rows of out: Op::LORA's layout), the pair's
    // factor folded in. Output row o is source row from[o]: for a Llama's q
    // and k, per head, rows [x0 .. x_{d/2-1}, y0 .. y_{d/2-1}] (Hugging
    // Face's rotate-half) <-> [x0 y0 x1 y1 ...] (llama.cpp's adjacent pairs).
    std::vector<float> rows((size_t)(r * out));
    ref::dequantize_row(b.type, b.data, rows.data(), r * out);
    std::vector<int64_t> from((size_t)out);
    for (int64_t o = 0; o < out; ++o) from[(size_t)o] = o;
    if (permute_qk && (kind == "attn_q" || kind == "attn_k")) {
        const int64_t heads = kind == "attn_q" ? model_.hparams.n_head : model_.hparams.n_head_kv;
        if (heads <= 0 || out % heads != 0 || (out / heads) % 2 != 0)
            fail(VT_ERR_INVALID_ARGUMENT, "LoRA: %s: %lld rows do not split into %lld heads", name.c_str(),
                 (long long)out, (long long)heads);
        const int64_t hd = out / heads;
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < hd / 2; ++i)
                for (int64_t half = 0; half < 2; ++half) {
                    const int64_t adjacent = h * hd + 2 * i + half, rotate_half = h * hd + half * (hd / 2) + i;
                    if (model_.from_folder()) from[(size_t)rotate_half] = adjacent;  // llama.cpp -> HF
                    else from[(size_t)adjacent] = rotate_half;                        // HF -> llama.cpp
                }
    }
    auto &buf = storage_.emplace_back((size_t)(r * out) * sizeof(float));
    float *bt = reinterpret_cast<float *>(buf.data());
    for (int64_t o = 0; o < out; ++o)
        for (int64_t j = 0; j < r; ++j) bt[(size_t)(j * out + o)] = factor * rows[(size_t)(from[(size_t)o] * r + j)];
    tensor_init(p.b, DType::F32, out, r, 1, 1, buf.data());
    rank_ = std::max(rank_, (uint32_t)r);
    n_params_ += (uint64_t)(a.ne0 * a.ne1 + b.ne0 * b.ne1);
    if (!pairs_.emplace(name, p).second) fail(VT_ERR_FORMAT, "LoRA: %s is given twice", name.c_str());
}

void LoraAdapter::finish() {
    std::set<std::string> kinds;
    for (const auto &[name, p] : pairs_) kinds.insert(weight_kind(name));
    for (const std::string &k : kinds) targets_ += (targets_.empty() ? "" : ",") + k;
}

} // namespace vt
