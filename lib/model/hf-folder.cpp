#include "model/hf-folder.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "core/quant.h"
#include "model/hf-experts.h"
#include "model/hf-gemma4.h"
#include "model/hf-granite-falcon.h"
#include "model/hf-quantized.h"
#include "model/hf-gpt-oss.h"
#include "model/hf-kimi.h"
#include "model/hf-laguna.h"
#include "model/hf-lfm2.h"
#include "model/hf-nemotron-h.h"
#include "model/hf-linear-attention.h"
#include "model/hf-muse-glimmer.h"
#include "model/json-file.h"
#include "model/safetensors.h"

namespace vt {

bool split_hf_layer_name(const std::string &name, std::string &bid, std::string &rest) {
    const std::string layers = "model.layers.";
    if (name.rfind(layers, 0) != 0) return false;
    const size_t dot = name.find('.', layers.size());
    if (dot == std::string::npos) return false;
    bid = name.substr(layers.size(), dot - layers.size());
    rest = name.substr(dot + 1);
    return !bid.empty() && bid.size() < 10 && bid.find_first_not_of("0123456789") == std::string::npos;
}

namespace fs = std::filesystem;
namespace {
using json = nlohmann::json;

// The metadata being assembled, with storage for its strings.
class Meta {
public:
    explicit Meta(std::string arch) : arch_(std::move(arch)) { str("general.architecture", arch_); }
    void u32(const std::string &k, uint64_t v) {
        GgufValue val;
        val.type = GgufType::UINT32;
        val.u = v;
        val.i = (int64_t)v;
        val.f = (double)v;
        put(arch_ + "." + k, std::move(val));
    }
    void f32(const std::string &k, double v) {
        GgufValue val;
        val.type = GgufType::FLOAT32;
        val.f = v;
        put(arch_ + "." + k, std::move(val));
    }
    void str(const std::string &key, const std::string &v) {
        GgufValue val;
        val.type = GgufType::STRING;
        val.str = keep(v);
        put(key, std::move(val));
    }
    void boolean(const std::string &k, bool v) {
        GgufValue val;
        val.type = GgufType::BOOL;
        val.u = v;
        val.i = v;
        val.f = v;
        put(arch_ + "." + k, std::move(val));
    }
    void i32s(const std::string &k, const std::vector<int32_t> &v) {
        auto *bytes = &bytes_.emplace_back(v.size() * sizeof(int32_t));
        std::memcpy(bytes->data(), v.data(), bytes->size());
        GgufValue val;
        val.type = GgufType::ARRAY;
        val.arr_type = GgufType::INT32;
        val.arr_n = v.size();
        val.raw = bytes->data();
        put(arch_ + "." + k, std::move(val));
    }
    void bools(const std::string &k, const std::vector<bool> &v) {
        auto *bytes = &bytes_.emplace_back(v.begin(), v.end());
        GgufValue val;
        val.type = GgufType::ARRAY;
        val.arr_type = GgufType::BOOL;
        val.arr_n = v.size();
        val.raw = bytes->data();
        put(arch_ + "." + k, std::move(val));
    }
    std::vector<GgufKV> kvs;
    std::shared_ptr<const void> storage() {
        auto s = std::make_shared<std::pair<std::deque<std::string>, std::deque<std::vector<uint8_t>>>>(
            std::move(strings_), std::move(bytes_));
        return s;
    }

private:
    std::string_view keep(const std::string &s) { return strings_.emplace_back(s); }
    void put(std::string key, GgufValue v) { kvs.push_back(GgufKV{std::move(key), std::move(v)}); }
    std::string arch_;
    // deques: moving them into storage() keeps every element where it is.
    std::deque<std::string> strings_;
    std::deque<std::vector<uint8_t>> bytes_;
};

// Llama-style tensor names -> GGUF names ("" for tensors vt does not read).
// The text model's name of a tensor: multimodal checkpoints nest it.
std::string text_model_name(const std::string &hf) {
    for (const char *prefix : {"model.language_model.", "language_model.model.", "language_model."})
        if (hf.rfind(prefix, 0) == 0) return "model." + hf.substr(std::strlen(prefix));
    return hf;
}

std::string gguf_name(const std::string &hf, HfNorms norms) {
    const std::string n = text_model_name(hf);
    if (n == "model.embed_tokens.weight") return "token_embd.weight";
    if (n == "model.norm.weight") return "output_norm.weight";
    if (n == "model.final_layernorm.weight") return "output_norm.weight";  // Falcon-H1
    if (n == "lm_head.weight") return "output.weight";
    if (norms == HfNorms::lfm2 && n == "model.embedding_norm.weight") return "token_embd_norm.weight";  // the final norm
    if (norms == HfNorms::gemma4 && n.rfind("model.", 0) == 0)
        if (std::string g = gemma4_gguf_name(n.substr(6), false); !g.empty()) return g;
    std::string bid, rest;
    if (!split_hf_layer_name(n, bid, rest)) return "";
    if (norms == HfNorms::gemma4)
        if (std::string g = gemma4_gguf_name(rest, true); !g.empty()) return "blk." + bid + "." + g;
    static const std::map<std::string, std::string> common = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},   {"self_attn.q_proj.bias", "attn_q.bias"},
        {"self_attn.k_proj.weight", "attn_k.weight"},   {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.weight", "attn_v.weight"},   {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.qkv_proj.weight", "attn_qkv.weight"},  {"mlp.gate_up_proj.weight", "ffn_up.weight"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"}, {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        // DeepSeek's latent attention (kv_b_proj: split_kv_b).
        {"self_attn.q_a_proj.weight", "attn_q_a.weight"}, {"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"},
        {"self_attn.q_b_proj.weight", "attn_q_b.weight"},
        {"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"},
        {"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},    {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
        // Mixture of experts: the router, DeepSeek-V3's selection bias and
        // the shared experts (the experts themselves: hf-experts.h).
        {"mlp.gate.weight", "ffn_gate_inp.weight"}, {"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"},
        {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias"},
        {"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
        {"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
        {"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
    };
    static const std::map<std::string, std::string> plain = {
        {"post_attention_layernorm.weight", "ffn_norm.weight"},
    };
    static const std::map<std::string, std::string> gemma = {
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
        {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    };
    if (norms == HfNorms::zero_centred)
        if (std::string g = gdn_gguf_name(rest); !g.empty()) return "blk." + bid + "." + g;
    if (norms == HfNorms::kimi)
        if (std::string k = kimi_gguf_name(rest); !k.empty()) return "blk." + bid + "." + k;
    if (norms == HfNorms::lfm2)
        if (std::string k = lfm2_gguf_name(rest); !k.empty()) return "blk." + bid + "." + k;
    if (norms == HfNorms::nemotron_h)
        if (std::string k = nemotron_h_gguf_name(rest); !k.empty()) return "blk." + bid + "." + k;
    if (norms == HfNorms::gpt_oss)
        if (std::string k = gpt_oss_gguf_name(rest); !k.empty()) return "blk." + bid + "." + k;
    if (norms == HfNorms::granite_hybrid || norms == HfNorms::falcon_h1)
        if (std::string k = mup_hybrid_gguf_name(rest, norms == HfNorms::falcon_h1, true); !k.empty())
            return "blk." + bid + "." + k;
    if (norms == HfNorms::laguna)
        if (std::string k = laguna_gguf_name(rest); !k.empty()) return "blk." + bid + "." + k;
    if (norms == HfNorms::muse_glimmer)
        if (std::string k = muse_glimmer_gguf_name(rest); !k.empty()) return "blk." + bid + "." + k;
    const auto &own = norms == HfNorms::gemma || norms == HfNorms::muse_glimmer ? gemma : plain;
    for (const auto *table : {&common, &own}) {
        auto it = table->find(rest);
        if (it != table->end()) return "blk." + bid + "." + it->second;
    }
    return "";
}

// config.json's quantization_config.quant_method (top level, or a
// multimodal checkpoint's text_config), "" when absent.
std::string mxfp4_quant_method(const json &top) {
    for (const json *c : {&top, top.contains("text_config") ? &top["text_config"] : nullptr}) {
        if (!c || !c->is_object() || !c->contains("quantization_config")) continue;
        const json &q = (*c)["quantization_config"];
        if (q.is_object() && q.contains("quant_method") && q["quant_method"].is_string())
            return q["quant_method"].get<std::string>();
    }
    return "";
}

double num(const json &cfg, const char *key, double def) {
    auto it = cfg.find(key);
    return it != cfg.end() && it->is_number() ? it->get<double>() : def;
}

// A string or bool of the config, its default when absent or null; a value
// of another type is the config's error (json::value would throw a
// nlohmann type_error, which is no vt::Error).
std::string text(const json &cfg, const char *key, const char *def) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return def;
    if (!it->is_string()) fail(VT_ERR_FORMAT, "config.json: '%s' is not a string", key);
    return it->get<std::string>();
}
bool flag(const json &cfg, const char *key, bool def) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return def;
    if (!it->is_boolean()) fail(VT_ERR_FORMAT, "config.json: '%s' is not true or false", key);
    return it->get<bool>();
}

// A count or position of the config (a double, as num() reads it) as the
// uint32 GGUF key it becomes; outside that range, or not whole, it is the
// config's error (a cast would be undefined behaviour).
uint64_t whole_u32(double v, const char *what) {
    if (!(v >= 0 && v <= (double)UINT32_MAX) || v != std::floor(v))
        fail(VT_ERR_FORMAT, "config.json: %s %g is not an integer from 0 to %u", what, v, UINT32_MAX);
    return (uint64_t)v;
}

// The rope parameters of one layer type: transformers 5's rope_parameters
// (flat, or one dict per layer type), else 4's rope_theta + rope_scaling.
json rope_params(const json &cfg, const char *layer_type) {
    if (auto it = cfg.find("rope_parameters"); it != cfg.end() && it->is_object()) {
        if (auto lt = it->find(layer_type); lt != it->end() && lt->is_object()) return *lt;
        return *it;
    }
    json r = json::object();
    if (auto s = cfg.find("rope_scaling"); s != cfg.end() && s->is_object()) r = *s;
    if (cfg.contains("rope_theta")) r["rope_theta"] = cfg["rope_theta"];
    if (std::string(layer_type) == "sliding_attention" && cfg.contains("rope_local_base_freq"))
        r = json{{"rope_theta", cfg["rope_local_base_freq"]}};
    return r;
}

// Llama 3's frequency factors, computed as convert_hf_to_gguf.py does.
std::vector<float> llama3_rope_factors(const json &rope, double base, int64_t dim) {
    const double factor = num(rope, "factor", 8.0), lo = num(rope, "low_freq_factor", 1.0),
                 hi = num(rope, "high_freq_factor", 4.0), old_len = num(rope, "original_max_position_embeddings", 8192);
    const double lo_wave = old_len / lo, hi_wave = old_len / hi;
    std::vector<float> out;
    for (int64_t i = 0; i < dim; i += 2) {
        const float freq = 1.0f / std::pow((float)base, (float)i / (float)dim);  // torch computes it in float32
        const double wave = 2 * M_PI / (double)freq;
        if (wave < hi_wave) out.push_back(1.0f);
        else if (wave > lo_wave) out.push_back((float)factor);
        else {
            const double smooth = (old_len / wave - lo) / (hi - lo);
            out.push_back((float)(1.0 / ((1 - smooth) / factor + smooth)));
        }
    }
    return out;
}

std::string rope_type(const json &rope) {
    return text(rope, "rope_type", text(rope, "type", "default").c_str());
}

void add_rope(Meta &meta, const json &rope, const json &cfg, const std::string &arch) {
    const std::string type = rope_type(rope);
    if (type == "default" || type == "llama3") return;  // llama3: rope_freqs, below
    if (type == "longrope" || type == "su") {
        // Phi-3's factors become tensors (below); the magnitude term as the
        // converter computes it when the config gives none.
        const double orig =
            num(rope, "original_max_position_embeddings", num(cfg, "original_max_position_embeddings", 0));
        const double max_pos = num(cfg, "max_position_embeddings", orig);
        if (!(orig > 0)) fail(VT_ERR_FORMAT, "longrope without original_max_position_embeddings");
        const double scale = max_pos / orig;
        const double attn = rope.contains("attention_factor") && rope["attention_factor"].is_number()
                                ? rope["attention_factor"].get<double>()
                                : scale > 1.0 ? std::sqrt(1 + std::log(scale) / std::log(orig)) : 1.0;
        meta.u32("rope.scaling.original_context_length", whole_u32(orig, "original_max_position_embeddings"));
        meta.f32("rope.scaling.attn_factor", attn);
        return;
    }
    const double factor = num(rope, "factor", 1.0);
    if (type == "linear") {
        meta.str(arch + ".rope.scaling.type", "linear");
        meta.f32("rope.scaling.factor", factor);
    } else if (type == "yarn") {
        meta.str(arch + ".rope.scaling.type", "yarn");
        meta.f32("rope.scaling.factor", factor);
        if (rope.contains("original_max_position_embeddings"))
            meta.u32("rope.scaling.original_context_length",
                     whole_u32(num(rope, "original_max_position_embeddings", 0), "original_max_position_embeddings"));
        meta.f32("rope.scaling.yarn_beta_fast", num(rope, "beta_fast", 32.0));
        meta.f32("rope.scaling.yarn_beta_slow", num(rope, "beta_slow", 1.0));
        // truncate false (gpt-oss): the correction dims stay fractional.
        if (!flag(rope, "truncate", true)) meta.boolean("rope.scaling.yarn_truncate", false);
        if (rope.contains("attention_factor")) meta.f32("rope.scaling.attn_factor", num(rope, "attention_factor", 1.0));
    } else {
        fail(VT_ERR_UNSUPPORTED, "rope_type '%s' is not supported (default, linear, yarn, llama3, longrope)",
             type.c_str());
    }
}

// An integer of the config that becomes a uint32 GGUF key; sizes (positive)
// must not be 0: they divide, and size tensors.
// Far above any real model's (64 to 512); bounds what a config can make us compute.
constexpr uint64_t kMaxHeadDim = 1 << 16;

uint64_t need_u(const json &cfg, const char *key, const fs::path &p, bool positive = false) {
    auto it = cfg.find(key);
    if (it == cfg.end() || !it->is_number_unsigned())
        fail(VT_ERR_FORMAT, "%s: '%s' is missing or not a non-negative integer", p.c_str(), key);
    const uint64_t v = it->get<uint64_t>();
    if (v > UINT32_MAX) fail(VT_ERR_FORMAT, "%s: '%s' %llu is too large", p.c_str(), key, (unsigned long long)v);
    if (positive && v == 0) fail(VT_ERR_FORMAT, "%s: '%s' must not be 0", p.c_str(), key);
    return v;
}
uint64_t need_size(const json &cfg, const char *key, const fs::path &p) { return need_u(cfg, key, p, true); }

// DeepSeek's latent attention (kv_lora_rank in the config).
struct MlaShape {
    uint64_t n_head, kv_lora, q_lora, nope, rope, v;
};
std::optional<MlaShape> mla_shape(const json &cfg, uint64_t n_head, const fs::path &p) {
    if (!cfg.contains("kv_lora_rank") || cfg["kv_lora_rank"].is_null()) return std::nullopt;
    MlaShape s;
    s.n_head = n_head;
    s.kv_lora = need_size(cfg, "kv_lora_rank", p);
    s.q_lora = cfg.contains("q_lora_rank") && !cfg["q_lora_rank"].is_null() ? need_u(cfg, "q_lora_rank", p) : 0;
    s.nope = need_size(cfg, "qk_nope_head_dim", p);
    s.rope = need_size(cfg, "qk_rope_head_dim", p);
    s.v = need_size(cfg, "v_head_dim", p);
    return s;
}

// The keys llama.cpp's converter writes for MLA: the cached row (kv_lora +
// rope) as the one KV head, the query and value heads as *_mla; YaRN's
// softmax factor as yarn_log_multiplier (0.1 mscale_all_dim).
void add_mla(Meta &meta, const MlaShape &s, const json &cfg, const fs::path &p) {
    meta.u32("attention.head_count_kv", 1);
    meta.u32("attention.kv_lora_rank", s.kv_lora);
    if (s.q_lora) meta.u32("attention.q_lora_rank", s.q_lora);
    meta.u32("attention.key_length", s.kv_lora + s.rope);
    meta.u32("attention.value_length", s.kv_lora);
    meta.u32("attention.key_length_mla", s.nope + s.rope);
    meta.u32("attention.value_length_mla", s.v);
    meta.u32("rope.dimension_count", s.rope);
    const json rope = rope_params(cfg, "full_attention");
    if (rope.contains("mscale_all_dim") && num(rope, "mscale_all_dim", 0) != 0) {
        // cos and sin keep transformers' mscale / mscale_all_dim factor only
        // where it is 1 (every release): the architecture leaves them unscaled.
        if (num(rope, "mscale", 1.0) != num(rope, "mscale_all_dim", 0))
            fail(VT_ERR_UNSUPPORTED, "%s: rope mscale different from mscale_all_dim is not supported", p.c_str());
        meta.f32("rope.scaling.yarn_log_multiplier", 0.1 * num(rope, "mscale_all_dim", 0));
    }
    const std::string method = text(cfg, "topk_method", "greedy");
    if (method == "noaux_tc") {
        meta.u32("expert_group_count", need_u(cfg, "n_group", p));
        meta.u32("expert_group_used_count", need_u(cfg, "topk_group", p));
    } else if (method != "greedy") {
        fail(VT_ERR_UNSUPPORTED, "%s: topk_method '%s' is not supported (greedy, noaux_tc)", p.c_str(), method.c_str());
    }
}

// kv_b_proj (n_head * (nope + v), kv_lora) as llama.cpp's attn_k_b (nope,
// kv_lora, n_head), each head's W_UK transposed, and attn_v_b (kv_lora, v,
// n_head): copies, kept in `store`.
void split_kv_b(const SafetensorsTensor &t0, const MlaShape &s, const std::string &blk,
                std::deque<std::vector<uint8_t>> &store, std::vector<GgufTensorInfo> &out) {
    // A quantized checkpoint's kv_b (FP8, NVFP4: model/hf-quantized.h) is
    // dequantized to F32 first, its product scale folded in: k_b is stored
    // transposed, which no block layout survives (llama.cpp's converter
    // dequantizes it too).
    SafetensorsTensor t = t0;
    if (dtype_info(t0.type).block_elems != 1 && t0.n_dims == 2) {
        const int64_t count = t0.ne[0] * t0.ne[1];
        std::vector<uint8_t> &f = store.emplace_back((size_t)count * sizeof(float));
        float *v = reinterpret_cast<float *>(f.data());
        ref::dequantize_row(t0.type, t0.data, v, count);
        for (int64_t i = 0; i < count; ++i) v[i] *= t0.product_scale;
        t.type = DType::F32;
        t.data = f.data();
        t.nbytes = f.size();
        t.product_scale = 1.0f;
    }
    const DTypeInfo &di = dtype_info(t.type);
    // Every size is below 2^32 (need_u): n_head * (nope + v) fits in 64 bits,
    // and a product that matches ne[1] is bounded by the tensor's bytes.
    if (di.block_elems != 1 || t.n_dims != 2 || t.ne[0] != (int64_t)s.kv_lora ||
        t.ne[1] != (int64_t)(s.n_head * (s.nope + s.v)))
        fail(VT_ERR_FORMAT, "%s: kv_b_proj is not (%llu, %llu) of a float type", t.name.c_str(),
             (unsigned long long)(s.n_head * (s.nope + s.v)), (unsigned long long)s.kv_lora);
    const size_t es = di.block_bytes, L = s.kv_lora;
    const uint8_t *src = static_cast<const uint8_t *>(t.data);
    std::vector<uint8_t> &k = store.emplace_back(s.n_head * s.nope * L * es);
    std::vector<uint8_t> &v = store.emplace_back(s.n_head * s.v * L * es);
    for (uint64_t h = 0; h < s.n_head; ++h) {
        const uint8_t *head = src + h * (s.nope + s.v) * L * es;
        for (uint64_t i = 0; i < s.nope; ++i)
            for (uint64_t j = 0; j < L; ++j)
                std::memcpy(&k[((h * L + j) * s.nope + i) * es], head + (i * L + j) * es, es);
        std::memcpy(&v[h * s.v * L * es], head + s.nope * L * es, s.v * L * es);
    }
    auto add = [&](const char *name, std::vector<uint8_t> &b, int64_t ne0, int64_t ne1) {
        GgufTensorInfo ti;
        ti.name = blk + name;
        ti.n_dims = 3;
        ti.ne[0] = ne0;
        ti.ne[1] = ne1;
        ti.ne[2] = (int64_t)s.n_head;
        ti.type = t.type;
        ti.data = b.data();
        ti.nbytes = b.size();
        ti.copied = true;
        out.push_back(std::move(ti));
    };
    add("attn_k_b.weight", k, (int64_t)s.nope, (int64_t)L);
    add("attn_v_b.weight", v, (int64_t)L, (int64_t)s.v);
}

// The expert keys of a mixture-of-experts config, under llama.cpp's names
// (read_moe_hparams); nothing for a dense model.
void add_experts(Meta &meta, const json &cfg, const fs::path &p) {
    const char *count_key = nullptr;
    for (const char *k : {"num_experts", "num_local_experts", "n_routed_experts"})
        if (cfg.contains(k) && !cfg[k].is_null()) count_key = k;
    if (!count_key) return;
    meta.u32("expert_count", need_u(cfg, count_key, p));
    meta.u32("expert_used_count", need_u(cfg, "num_experts_per_tok", p));
    if (cfg.contains("moe_intermediate_size")) meta.u32("expert_feed_forward_length", need_u(cfg, "moe_intermediate_size", p));
    if (cfg.contains("norm_topk_prob") && cfg["norm_topk_prob"].is_boolean())
        meta.boolean("expert_weights_norm", cfg["norm_topk_prob"].get<bool>());
    if (cfg.contains("n_shared_experts") && cfg["n_shared_experts"].is_number_unsigned())
        meta.u32("expert_shared_count", cfg["n_shared_experts"].get<uint64_t>());
    if (cfg.contains("routed_scaling_factor")) meta.f32("expert_weights_scale", num(cfg, "routed_scaling_factor", 1.0));
    if (cfg.contains("first_k_dense_replace"))
        meta.u32("leading_dense_block_count", need_u(cfg, "first_k_dense_replace", p));
    if (text(cfg, "scoring_func", "softmax") == "sigmoid") meta.u32("expert_gating_func", 2);
    // Qwen3-MoE's dense layers between sparse ones: llama.cpp reads none either.
    if (num(cfg, "decoder_sparse_step", 1) != 1 ||
        (cfg.contains("mlp_only_layers") && cfg["mlp_only_layers"].is_array() && !cfg["mlp_only_layers"].empty()))
        fail(VT_ERR_UNSUPPORTED, "%s: dense layers among sparse ones (mlp_only_layers, decoder_sparse_step) are not supported",
             p.c_str());
}
} // namespace

std::string hf_tensor_gguf_name(const std::string &hf, HfNorms norms) { return gguf_name(hf, norms); }

HfFolder open_hf_folder(const std::string &dir_s, bool use_mmap) {
    const fs::path dir(dir_s), cfg_path = dir / "config.json";
    if (!fs::exists(cfg_path)) fail(VT_ERR_IO, "%s: a model folder needs config.json", dir.c_str());
    const json top = read_json_file(cfg_path);
    const json &text_cfg = top.contains("text_config") && top["text_config"].is_object() ? top["text_config"] : top;
    std::string hf_arch;
    if (top.contains("architectures") && top["architectures"].is_array() && !top["architectures"].empty() &&
        top["architectures"][0].is_string())
        hf_arch = top["architectures"][0].get<std::string>();
    const HfArchitecture *arch = find_hf_architecture(hf_arch);
    if (!arch)
        fail(VT_ERR_UNSUPPORTED, "%s: architecture '%s' is not supported (supported: %s)", cfg_path.c_str(),
             hf_arch.c_str(), hf_architecture_names().c_str());
    const std::string a = arch->gguf_arch;
    const bool kimi = arch->norms == HfNorms::kimi, lfm2 = arch->norms == HfNorms::lfm2;
    const bool nemotron = arch->norms == HfNorms::nemotron_h;
    const json cfg = kimi       ? kimi_config_aliases(text_cfg, cfg_path.string())
                     : lfm2     ? lfm2_config_aliases(text_cfg, a == "lfm2", cfg_path.string())
                     : nemotron ? nemotron_h_config_aliases(text_cfg, cfg_path.string())
                                : text_cfg;
    Meta meta(a);
    const uint64_t n_embd = need_size(cfg, "hidden_size", cfg_path);
    const uint64_t n_head = need_size(cfg, "num_attention_heads", cfg_path);
    const uint64_t n_layer = need_size(cfg, "num_hidden_layers", cfg_path);
    meta.u32("context_length",
             cfg.contains("max_position_embeddings") ? need_u(cfg, "max_position_embeddings", cfg_path) : 4096);
    meta.u32("embedding_length", n_embd);
    meta.u32("block_count", n_layer);
    // Absent where every layer has experts (Qwen3.5-MoE).
    if (cfg.contains("intermediate_size")) meta.u32("feed_forward_length", need_u(cfg, "intermediate_size", cfg_path));
    meta.u32("attention.head_count", n_head);
    const std::optional<MlaShape> mla = mla_shape(cfg, n_head, cfg_path);
    if (!mla)  // MLA has one (latent) KV head: add_mla
        meta.u32("attention.head_count_kv",
                 cfg.contains("num_key_value_heads") ? need_size(cfg, "num_key_value_heads", cfg_path) : n_head);
    const uint64_t head_dim =
        cfg.contains("head_dim") && !cfg["head_dim"].is_null() ? need_size(cfg, "head_dim", cfg_path) : n_embd / n_head;
    // Llama 3's rope factors are computed from it before any tensor is
    // checked: a hostile head_dim must not size them.
    if (head_dim == 0 || head_dim > kMaxHeadDim)
        fail(VT_ERR_FORMAT, "%s: head_dim %llu is not from 1 to %llu", cfg_path.c_str(), (unsigned long long)head_dim,
             (unsigned long long)kMaxHeadDim);
    if (mla) {
        add_mla(meta, *mla, cfg, cfg_path);
    } else {
        meta.u32("attention.key_length", head_dim);
        meta.u32("attention.value_length", head_dim);
    }
    meta.f32("attention.layer_norm_rms_epsilon", num(cfg, "rms_norm_eps", 1e-6));
    const bool gemma4 = arch->norms == HfNorms::gemma4;
    if (!gemma4) add_experts(meta, cfg, cfg_path);  // Gemma 4's: read_gemma4_config

    const json global = rope_params(cfg, "full_attention");
    const double base = num(global, "rope_theta", 10000.0);
    meta.f32("rope.freq_base", base);
    if (!gemma4) add_rope(meta, global, cfg, a);  // Gemma 4's proportional rope: rope_freqs, below
    // Gemma 4: per-layer head sizes and KV heads, KV sharing, per-layer
    // embeddings and experts, as the converter's keys (model/hf-gemma4.h).
    Gemma4Meta g4;
    if (gemma4) {
        g4 = read_gemma4_config(cfg, n_layer, cfg_path.string());
        std::erase_if(meta.kvs, [&](const GgufKV &kv) {
            return kv.key == a + ".attention.head_count_kv" || kv.key == a + ".feed_forward_length" ||
                   kv.key == a + ".attention.key_length" || kv.key == a + ".attention.value_length";
        });
        meta.i32s("attention.head_count_kv", g4.kv_heads);
        meta.i32s("feed_forward_length", g4.n_ff);
        for (const auto &[k, v] : g4.u32s) meta.u32(k, v);
        for (const auto &[k, v] : g4.f32s) meta.f32(k, v);
    }

    // Linear attention (Qwen3-Next, Qwen3.5): its shape, which layers are
    // recurrent, the partial rope of the attention layers.
    const GdnMeta gdn = read_gdn_config(cfg, n_layer, head_dim, cfg_path.string());
    if (gdn.present) {
        meta.u32("ssm.conv_kernel", gdn.shape.kernel);
        meta.u32("ssm.state_size", gdn.shape.dk);
        meta.u32("ssm.group_count", gdn.shape.nk);
        meta.u32("ssm.time_step_rank", gdn.shape.nv);
        meta.u32("ssm.inner_size", gdn.shape.nv * gdn.shape.dv);
        meta.bools("attention.recurrent_layers", gdn.recurrent);
        meta.u32("rope.dimension_count", gdn.rope_dims);
        if (gdn.shared_ff) meta.u32("expert_shared_feed_forward_length", gdn.shared_ff);
    }
    // Kimi-Linear's KDA layers: which they are (a per-layer KV head count,
    // 0 for KDA, over add_mla's 1), their head size and conv kernel.
    if (kimi) {
        const KimiMeta km = read_kimi_config(cfg, n_layer, n_head, cfg_path.string());
        // Over add_mla's one latent head: a duplicate key is the folder's error.
        std::erase_if(meta.kvs, [&](const GgufKV &kv) { return kv.key == a + ".attention.head_count_kv"; });
        meta.i32s("attention.head_count_kv", km.kv_heads);
        meta.u32("kda.head_dim", km.head_dim);
        meta.u32("ssm.conv_kernel", km.kernel);
    }
    // LFM2's short-conv layers: which they are (a per-layer KV head count,
    // 0 for a conv layer) and the conv width.
    if (lfm2) {
        const uint64_t n_kv = cfg.contains("num_key_value_heads") ? need_size(cfg, "num_key_value_heads", cfg_path) : n_head;
        const Lfm2Meta lm = read_lfm2_config(cfg, n_layer, n_kv, cfg_path.string());
        std::erase_if(meta.kvs, [&](const GgufKV &kv) { return kv.key == a + ".attention.head_count_kv"; });
        meta.i32s("attention.head_count_kv", lm.kv_heads);
        meta.u32("shortconv.l_cache", lm.l_cache);
    }
    // NemotronH's blocks: which mixer each layer has, as the converter's
    // per-layer KV head counts and FFN widths; the Mamba-2 shape; the
    // experts' latent size and group-limited routing.
    std::vector<char> nemotron_kinds;
    if (nemotron) {
        const NemotronHMeta nm = read_nemotron_h_config(cfg, cfg_path.string());
        nemotron_kinds = nm.kinds;
        const uint64_t kv = cfg.contains("num_key_value_heads") ? need_size(cfg, "num_key_value_heads", cfg_path) : n_head;
        const uint64_t ff = nm.moe ? need_size(cfg, "moe_intermediate_size", cfg_path)
                                   : (std::count(nm.kinds.begin(), nm.kinds.end(), '-')
                                          ? need_size(cfg, "intermediate_size", cfg_path) : 0);
        std::vector<int32_t> kv_heads, widths;
        for (char c : nm.kinds) {
            kv_heads.push_back(c == '*' ? (int32_t)kv : 0);
            widths.push_back(c == '-' || c == 'E' ? (int32_t)ff : 0);
        }
        std::erase_if(meta.kvs, [&](const GgufKV &k) {
            return k.key == a + ".attention.head_count_kv" || k.key == a + ".feed_forward_length";
        });
        meta.i32s("attention.head_count_kv", kv_heads);
        meta.i32s("feed_forward_length", widths);
        meta.f32("attention.layer_norm_epsilon", num(cfg, "layer_norm_epsilon", 1e-5));
        meta.u32("ssm.conv_kernel", nm.ssm.kernel);
        meta.u32("ssm.state_size", nm.ssm.n_state);
        meta.u32("ssm.group_count", nm.ssm.n_group);
        meta.u32("ssm.time_step_rank", nm.ssm.n_head);
        meta.u32("ssm.inner_size", nm.ssm.inner());
        if (nm.moe) {
            meta.u32("expert_shared_feed_forward_length", need_size(cfg, "moe_shared_expert_intermediate_size", cfg_path));
            if (cfg.contains("moe_latent_size") && !cfg["moe_latent_size"].is_null())
                meta.u32("moe_latent_size", need_size(cfg, "moe_latent_size", cfg_path));
            if (cfg.contains("n_group") && !cfg["n_group"].is_null()) {
                meta.u32("expert_group_count", need_size(cfg, "n_group", cfg_path));
                meta.u32("expert_group_used_count", need_size(cfg, "topk_group", cfg_path));
            }
        }
    }
    // Granite 4.0-H and Falcon-H1: the Mamba-2 shape, Granite's layer kinds
    // (a per-layer KV head count, 0 for Mamba) and multipliers
    // (model/hf-granite-falcon.h).
    const bool mup_hybrid = arch->norms == HfNorms::granite_hybrid || arch->norms == HfNorms::falcon_h1;
    const bool granite_experts = num(cfg, "num_local_experts", 0) > 0;
    MupHybridMeta mh;
    if (mup_hybrid) {
        const uint64_t n_kv =
            cfg.contains("num_key_value_heads") ? need_size(cfg, "num_key_value_heads", cfg_path) : n_head;
        mh = read_mup_hybrid_config(cfg, arch->norms == HfNorms::falcon_h1, n_layer, n_kv, cfg_path.string());
        meta.u32("ssm.conv_kernel", mh.ssm.kernel);
        meta.u32("ssm.state_size", mh.ssm.n_state);
        meta.u32("ssm.group_count", mh.ssm.n_group);
        meta.u32("ssm.time_step_rank", mh.ssm.n_head);
        meta.u32("ssm.inner_size", mh.ssm.inner());
        if (!mh.kv_heads.empty()) {
            std::erase_if(meta.kvs, [&](const GgufKV &kv) { return kv.key == a + ".attention.head_count_kv"; });
            meta.i32s("attention.head_count_kv", mh.kv_heads);
        }
        for (const auto &[k, v] : mh.f32s) meta.f32(k, v);
        for (const auto &[k, v] : mh.u32s) meta.u32(k, v);
        for (const auto &[k, v] : mh.bools) meta.boolean(k, v);
    }
    // Laguna: per-layer head counts, partial rope per layer type, gate kind,
    // experts' routing (model/hf-laguna.h).
    if (arch->norms == HfNorms::laguna) {
        const LagunaMeta lm = read_laguna_config(cfg, n_layer, n_head, head_dim, cfg_path.string());
        std::erase_if(meta.kvs, [&](const GgufKV &kv) { return kv.key == a + ".attention.head_count"; });
        meta.i32s("attention.head_count", lm.heads);
        for (const auto &[k, v] : lm.f32s) meta.f32(k, v);
        for (const auto &[k, v] : lm.u32s) meta.u32(k, v);
        for (const auto &[k, v] : lm.bools) meta.boolean(k, v);
    }
    // Muse Glimmer: logit multiplier, post-norm epsilon, q/k norm scale
    // (model/hf-muse-glimmer.h); its sliding layers below.
    MuseGlimmerMeta muse;
    if (arch->norms == HfNorms::muse_glimmer) {
        muse = read_muse_glimmer_config(cfg, n_layer, cfg_path.string());
        for (const auto &[k, v] : muse.f32s) meta.f32(k, v);
    }
    // Sliding windows: Gemma's per layer type, Mistral's for every layer.
    if (!gdn.present && !kimi && !lfm2 && !mup_hybrid && cfg.contains("layer_types") && cfg["layer_types"].is_array()) {
        std::vector<bool> sliding;
        for (const json &t : cfg["layer_types"]) sliding.push_back(t == "sliding_attention");
        if (sliding.size() != n_layer)
            fail(VT_ERR_FORMAT, "%s: layer_types does not list every layer", cfg_path.c_str());
        meta.bools("attention.sliding_window_pattern", sliding);
        meta.f32("rope.freq_base_swa", num(rope_params(cfg, "sliding_attention"), "rope_theta", 10000.0));
    }
    if (cfg.contains("sliding_window") && cfg["sliding_window"].is_number_unsigned()) {
        if (a == "qwen2" || a == "qwen3" || a == "qwen3moe") {
            if (flag(cfg, "use_sliding_window", false))
                fail(VT_ERR_UNSUPPORTED, "%s: use_sliding_window is not supported for %s", cfg_path.c_str(), a.c_str());
        } else {
            meta.u32("attention.sliding_window", cfg["sliding_window"].get<uint64_t>());
        }
    }
    // gpt-oss's clamped SwiGLU: llama.cpp hard-codes 1.702 and 7 and its
    // converter writes no key; vt's keys carry a config's own values.
    if (arch->norms == HfNorms::gpt_oss) {
        meta.f32("expert_swiglu_alpha", num(cfg, "swiglu_alpha", 1.702));
        meta.f32("expert_swiglu_limit", num(cfg, "swiglu_limit", 7.0));
    }
    if (cfg.contains("final_logit_softcapping") && cfg["final_logit_softcapping"].is_number())
        meta.f32("final_logit_softcapping", cfg["final_logit_softcapping"].get<double>());

    // The chat template: tokenizer_config.json's, or chat_template.jinja.
    if (fs::exists(dir / "chat_template.jinja")) {
        std::ifstream in(dir / "chat_template.jinja", std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        meta.str("tokenizer.chat_template", ss.str());
    } else if (fs::exists(dir / "tokenizer_config.json")) {
        const json tc = read_json_file(dir / "tokenizer_config.json");
        if (tc.contains("chat_template") && tc["chat_template"].is_string())
            meta.str("tokenizer.chat_template", tc["chat_template"].get<std::string>());
    }

    // Weights: one file, or the shards the index names.
    std::vector<fs::path> files;
    if (fs::exists(dir / "model.safetensors.index.json")) {
        const json idx = read_json_file(dir / "model.safetensors.index.json");
        if (!idx.contains("weight_map") || !idx["weight_map"].is_object())
            fail(VT_ERR_FORMAT, "%s: model.safetensors.index.json has no weight_map", dir.c_str());
        std::set<std::string> shards;
        for (const auto &[name, file] : idx["weight_map"].items())
            if (file.is_string()) shards.insert(file.get<std::string>());
        for (const std::string &s : shards) {
            if (s.find('/') != std::string::npos || s.find("..") != std::string::npos)
                fail(VT_ERR_FORMAT, "%s: shard name '%s' leaves the folder", dir.c_str(), s.c_str());
            if (!fs::exists(dir / s)) fail(VT_ERR_IO, "%s: shard %s is missing", dir.c_str(), s.c_str());
            files.push_back(dir / s);
        }
    } else if (fs::exists(dir / "model.safetensors")) {
        files.push_back(dir / "model.safetensors");
    } else {
        fail(VT_ERR_IO, "%s: no model.safetensors or model.safetensors.index.json", dir.c_str());
    }

    std::vector<std::shared_ptr<const void>> keep;
    std::vector<GgufTensorInfo> tensors;
    auto copies = std::make_shared<std::deque<std::vector<float>>>();
    auto add_f32 = [&](const std::string &name, std::vector<float> v) {
        std::vector<float> &owned = copies->emplace_back(std::move(v));
        GgufTensorInfo ti;
        ti.name = name;
        ti.n_dims = 1;
        ti.ne[0] = (int64_t)owned.size();
        ti.type = DType::F32;
        ti.data = owned.data();
        ti.nbytes = owned.size() * sizeof(float);
        ti.copied = true;
        tensors.push_back(std::move(ti));
    };
    size_t skipped = 0, vision = 0, mtp = 0;
    HfExperts experts;
    // Byte copies: MLA's split kv_b, the linear attention's split qkvz, MXFP4 pairs, FP8 rows.
    auto mla_copies = std::make_shared<std::deque<std::vector<uint8_t>>>();
    keep.push_back(mla_copies);
    // Every file's tensors, then the MXFP4 pairs (safetensors.h: pair_mxfp4),
    // whose halves may lie in different shards.
    std::vector<const SafetensorsTensor *> all, mx_parts, fp8_parts, u8_parts;
    for (const fs::path &f : files) {
        std::shared_ptr<SafetensorsFile> st = SafetensorsFile::open(f.string(), use_mmap);
        keep.push_back(st);
        for (const SafetensorsTensor &t : st->tensors()) all.push_back(&t);
        for (const SafetensorsTensor &t : st->mxfp4_parts()) mx_parts.push_back(&t);
        for (const SafetensorsTensor &t : st->fp8_parts()) fp8_parts.push_back(&t);
        for (const SafetensorsTensor &t : st->u8_parts()) u8_parts.push_back(&t);
    }
    auto mx_pending = std::make_shared<std::vector<SafetensorsTensor>>();
    keep.push_back(mx_pending);
    if (!mx_parts.empty()) {
        const std::string method = mxfp4_quant_method(top);
        if (method != "mxfp4")
            fail(VT_ERR_UNSUPPORTED,
                 "%s: tensor '%s' is U8 (an MXFP4 half) but config.json's quantization_config.quant_method is '%s', "
                 "not mxfp4",
                 dir.c_str(), mx_parts[0]->name.c_str(), method.c_str());
        *mx_pending = pair_mxfp4(mx_parts, dir.string());
        for (const SafetensorsTensor &t : *mx_pending) all.push_back(&t);
    }
    // Multi-token-prediction layers, read as llama.cpp's converter writes
    // them: blocks after the layers with their nextn.* tensors, so that a
    // folder and its GGUF are one model (Architecture::build_mtp). Qwen3.5 /
    // Qwen3-Next keep them under mtp.* (their configs do not count them),
    // DeepSeek-V3 as model.layers.<n_layer + i>.* (num_nextn_predict_layers).
    uint64_t n_mtp = 0;
    const bool deepseek_mtp = mla && !kimi;
    for (const SafetensorsTensor *t : all) {
        unsigned i = 0;
        if (arch->norms == HfNorms::zero_centred && std::sscanf(t->name.c_str(), "mtp.layers.%u.", &i) == 1)
            n_mtp = std::max<uint64_t>(n_mtp, i + 1ull);
        if (deepseek_mtp && std::sscanf(t->name.c_str(), "model.layers.%u.", &i) == 1 && i >= n_layer)
            n_mtp = std::max<uint64_t>(n_mtp, i - n_layer + 1ull);
    }
    if (n_mtp) {
        std::erase_if(meta.kvs, [&](const GgufKV &kv) { return kv.key == a + ".block_count"; });
        meta.u32("block_count", n_layer + n_mtp);
        meta.u32("nextn_predict_layers", n_mtp);
    }
    // An MTP layer's own tensor as the converter names it, or "" for
    // another tensor (its decoder block's are named as any layer's).
    auto mtp_name = [&](const std::string &hf) -> std::string {
        if (!n_mtp) return "";
        unsigned i = 0;
        int used = 0;
        if (deepseek_mtp) {
            if (std::sscanf(hf.c_str(), "model.layers.%u.%n", &i, &used) != 1 || used == 0 || i < n_layer) return "";
            static const std::pair<const char *, const char *> kNames[] = {
                {"enorm.weight", "enorm.weight"},         {"hnorm.weight", "hnorm.weight"},
                {"eh_proj.weight", "eh_proj.weight"},     {"shared_head.norm.weight", "shared_head_norm.weight"},
                {"shared_head.head.weight", "shared_head_head.weight"}, {"embed_tokens.weight", "embed_tokens.weight"}};
            const std::string rest = hf.substr((size_t)used);
            for (const auto &[from, to] : kNames)
                if (rest == from) return "blk." + std::to_string(i) + ".nextn." + to;
            return "";
        }
        if (hf.rfind("mtp.", 0) != 0) return "";
        const std::string rest = hf.substr(4), blk = "blk." + std::to_string(n_layer) + ".nextn.";
        if (rest == "fc.weight") return blk + "eh_proj.weight";
        if (rest == "pre_fc_norm_embedding.weight") return blk + "enorm.weight";
        if (rest == "pre_fc_norm_hidden.weight") return blk + "hnorm.weight";
        if (rest == "norm.weight") return blk + "shared_head_norm.weight";
        return "";
    };
    // A Qwen MTP layer's decoder block (mtp.layers.<i>.*) under the name of
    // the layer after the trunk's, model.layers.<n_layer + i>.*, so that its
    // experts and projections are read as any layer's; "" for another name.
    auto mtp_block_name = [&](const std::string &hf) -> std::string {
        unsigned i = 0;
        int used = 0;
        if (!n_mtp || deepseek_mtp || std::sscanf(hf.c_str(), "mtp.layers.%u.%n", &i, &used) != 1 || used == 0)
            return "";
        return "model.layers." + std::to_string(n_layer + i) + "." + hf.substr((size_t)used);
    };
    // FP8 and NVFP4 weights with their scales (model/hf-quantized.h), read
    // as stored; read_quant_scheme refuses by name any quantization_config
    // vt cannot honour.
    const QuantScheme scheme = read_quant_scheme(top, dir.string());
    auto quant_pending = std::make_shared<std::deque<SafetensorsTensor>>();
    keep.push_back(quant_pending);
    auto take_used = [&](const std::vector<const SafetensorsTensor *> &used) {
        for (auto *list : {&all, &fp8_parts, &u8_parts})
            std::erase_if(*list, [&](const SafetensorsTensor *t) {
                return std::find(used.begin(), used.end(), t) != used.end();
            });
    };
    size_t n_nvfp4 = 0, n_fp8 = 0;
    if (!u8_parts.empty() && scheme.nvfp4) {
        std::vector<const SafetensorsTensor *> used;
        for (SafetensorsTensor &t : pair_nvfp4(u8_parts, fp8_parts, all, *mla_copies, used, dir.string()))
            all.push_back(&quant_pending->emplace_back(std::move(t))), ++n_nvfp4;
        take_used(used);
    }
    if (!u8_parts.empty())
        fail(VT_ERR_UNSUPPORTED, "%s: tensor '%s' is U8, which vt reads as NVFP4 codes only (with a compressed-tensors "
             "nvfp4-pack-quantized or ModelOpt NVFP4 quantization_config; this folder's quant_method is '%s')",
             dir.c_str(), u8_parts[0]->name.c_str(), scheme.method.c_str());
    if (!fp8_parts.empty()) {
        if (scheme.method.empty())
            fail(VT_ERR_FORMAT, "%s: tensor '%s' is F8_E4M3 but config.json has no quantization_config", dir.c_str(),
                 fp8_parts[0]->name.c_str());
        if (!scheme.fp8)
            fail(VT_ERR_UNSUPPORTED, "%s: tensor '%s' is F8_E4M3, which quant_method '%s' does not define here",
                 dir.c_str(), fp8_parts[0]->name.c_str(), scheme.method.c_str());
        std::vector<const SafetensorsTensor *> used;
        for (SafetensorsTensor &t : pair_fp8(fp8_parts, all, scheme, *mla_copies, used, dir.string()))
            all.push_back(&quant_pending->emplace_back(std::move(t))), ++n_fp8;
        take_used(used);
    }
    if (n_fp8 || n_nvfp4)
        VT_LOG_INFO("%s: %zu FP8 and %zu NVFP4 weights (%s) are read as stored, with the checkpoint's scales%s%s%s",
                    dir.c_str(), n_fp8, n_nvfp4, scheme.method.c_str(),
                    scheme.activations.empty() ? "" : "; activations are not quantized (the checkpoint's ",
                    scheme.activations.c_str(),
                    scheme.activations.empty() ? "" : " activation scheme feeds FP8/FP4 matrix hardware)");
    {
        for (const SafetensorsTensor *tp : all) {
            // gpt-oss's experts (model/hf-gpt-oss.h), MXFP4 pairs among
            // them: gate_up's interleaved rows picked apart as they are
            // materialized.
            if (std::string bid, rest; arch->norms == HfNorms::gpt_oss &&
                                       split_hf_layer_name(text_model_name(tp->name), bid, rest) &&
                                       take_gpt_oss_experts(*tp, rest, "blk." + bid + ".", *mla_copies, tensors))
                continue;
            // Any other pending MXFP4 pair takes ggml's block layout here, every row.
            SafetensorsTensor mx_rows;
            if (tp->mx_blocks) mx_rows = materialize_mxfp4(*tp, 0, 1, *mla_copies);
            const SafetensorsTensor &t0 = tp->mx_blocks ? mx_rows : *tp;
            SafetensorsTensor renamed;
            // Gemma 4's multimodal checkpoints nest the text model: its experts too.
            const std::string mtp_block = mtp_block_name(t0.name);
            const bool rename = nemotron || arch->norms == HfNorms::granite_hybrid || gemma4 || !mtp_block.empty();
            if (rename) {
                renamed = t0;
                renamed.name = !mtp_block.empty() ? mtp_block
                               : nemotron         ? nemotron_h_tensor_name(t0.name, nemotron_kinds)
                               : gemma4           ? text_model_name(t0.name)
                                                  : granite_expert_alias(t0.name);
            }
            const SafetensorsTensor &t = rename ? renamed : t0;
            if (experts.take(t)) continue;
            // The parts of a split weight keep its NVFP4 product scale, one `.scale` each.
            auto scale_parts = [&](size_t first) {
                if (t.product_scale == 1.0f) return;
                const size_t last = tensors.size();
                for (size_t i = first; i < last; ++i)
                    if (const std::string &n = tensors[i].name; n.size() > 7 && n.compare(n.size() - 7, 7, ".weight") == 0)
                        add_f32(n.substr(0, n.size() - 7) + ".scale", {t.product_scale});
            };
            if (std::string bid, rest; arch->norms == HfNorms::granite_hybrid &&
                                       split_hf_layer_name(text_model_name(t.name), bid, rest) &&
                                       rest == "shared_mlp.input_linear.weight") {
                const size_t first = tensors.size();
                split_granite_shared(t, "blk." + bid + ".", granite_experts, tensors);
                scale_parts(first);
                continue;
            }
            if (std::string bid, rest; arch->norms == HfNorms::granite_hybrid && !granite_experts &&
                                       split_hf_layer_name(text_model_name(t.name), bid, rest) &&
                                       rest == "shared_mlp.output_linear.weight") {
                GgufTensorInfo ti;  // a dense Granite: the shared MLP is the FFN
                ti.name = "blk." + bid + ".ffn_down.weight";
                ti.n_dims = 2;
                ti.ne[0] = t.ne[0];
                ti.ne[1] = t.ne[1];
                ti.type = t.type;
                ti.data = t.data;
                ti.nbytes = t.nbytes;
                tensors.push_back(std::move(ti));
                scale_parts(tensors.size() - 1);
                continue;
            }
            if (std::string bid, rest; mla && split_hf_layer_name(text_model_name(t.name), bid, rest) &&
                                       rest == "self_attn.kv_b_proj.weight") {
                split_kv_b(t, *mla, "blk." + bid + ".", *mla_copies, tensors);
                continue;
            }
            if (std::string bid, rest; gdn.present && split_hf_layer_name(text_model_name(t.name), bid, rest) &&
                                       rest == "linear_attn.in_proj_qkvz.weight") {
                const size_t first = tensors.size();
                split_qkvz(t, gdn.shape, "blk." + bid + ".", *mla_copies, tensors);
                scale_parts(first);
                continue;
            }
            std::string name = mtp_name(t.name);
            if (name.empty()) name = gguf_name(t.name, arch->norms);
            if (name.empty()) {
                ++skipped;
                vision += t.name.find("visual.") != std::string::npos || t.name.find("vision_tower.") != std::string::npos ||
                          t.name.find("audio_tower.") != std::string::npos || t.name.find("embed_vision.") != std::string::npos ||
                          t.name.find("embed_audio.") != std::string::npos ||
                          t.name.find(".vision_") != std::string::npos;
                mtp += t.name.rfind("mtp.", 0) == 0;
                continue;
            }
            // A_log: Qwen's (n_v_heads), Kimi's (1, 1, H, 1) as ne (1, H, 1, 1).
            const bool ssm_a = name.size() > 6 && name.compare(name.size() - 6, 6, ".ssm_a") == 0;
            // LFM2's conv (C, 1, K) (K, C) as the converter squeezes it, and
            // F32 as the graph reads it (checkpoints are BF16): a small copy.
            const bool short_conv = lfm2 && name.find("shortconv.conv.weight") != std::string::npos;
            if (short_conv && (t.n_dims != 3 || t.ne[1] != 1))
                fail(VT_ERR_FORMAT, "%s: %s is not (channels, 1, L_cache)", dir.c_str(), t.name.c_str());
            if (t.n_dims == 1 || ssm_a || short_conv) {
                // Norms and biases: small, read as F32 by the graph; Gemma's norms are 1 + w.
                const int64_t count = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
                std::vector<float> v((size_t)count);
                ref::dequantize_row(t.type, t.data, v.data(), count);
                if (arch->norms == HfNorms::gemma && name.find("norm.weight") != std::string::npos)
                    for (float &x : v) x += 1.0f;
                if (arch->norms == HfNorms::muse_glimmer && name.find("norm.weight") != std::string::npos &&
                    name != "output_norm.weight")  // centred block norms; the final one is plain
                    for (float &x : v) x += 1.0f;
                if (arch->norms == HfNorms::zero_centred && name.find("norm.weight") != std::string::npos &&
                    name.find("ssm_norm") == std::string::npos)
                    for (float &x : v) x += 1.0f;
                if (ssm_a)
                    for (float &x : v) x = -std::exp(x);  // A_log, as the converter stores it
                add_f32(name, std::move(v));
                tensors.back().n_dims = (uint32_t)t.n_dims;  // its shape, as the converter keeps it
                for (int d = 0; d < 4; ++d) tensors.back().ne[d] = t.ne[d];
                if (short_conv) {
                    tensors.back().n_dims = 2;
                    tensors.back().ne[1] = t.ne[2];
                    tensors.back().ne[2] = 1;
                }
                continue;
            }
            GgufTensorInfo ti;
            ti.name = name;
            ti.n_dims = (uint32_t)t.n_dims;
            for (int d = 0; d < 4; ++d) ti.ne[d] = t.ne[d];
            if (!kimi && t.n_dims == 3 && t.ne[1] == 1 && name.find("ssm_conv1d") != std::string::npos) {
                // (C, 1, K) in the checkpoint, (K, C) in GGUF: the same bytes
                // (Kimi's converter keeps (K, 1, C)).
                ti.n_dims = 2;
                ti.ne[1] = t.ne[2];
                ti.ne[2] = 1;
            }
            ti.type = t.type;
            ti.data = t.data;
            ti.nbytes = t.nbytes;
            tensors.push_back(std::move(ti));
            // An NVFP4 weight's per-tensor factor, as llama.cpp's converter
            // writes it (Model::output_scale).
            if (t.product_scale != 1.0f && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0)
                add_f32(name.substr(0, name.size() - 7) + ".scale", {t.product_scale});
        }
    }
    experts.finish(tensors, dir.string());
    // Muse Glimmer's weightless q/k norm, q times qk_scale_factor: the
    // converter's synthesized weights.
    if (arch->norms == HfNorms::muse_glimmer)
        for (uint64_t il = 0; il < n_layer; ++il) {
            const std::string blk = "blk." + std::to_string(il) + ".";
            add_f32(blk + "attn_q_norm.weight", std::vector<float>(head_dim, muse.qk_scale));
            add_f32(blk + "attn_k_norm.weight", std::vector<float>(head_dim, 1.0f));
        }
    // Falcon-H1's in_proj multipliers, one copy per Mamba layer (every layer).
    if (!mh.in_scale.empty())
        for (uint64_t il = 0; il < n_layer; ++il) add_f32("blk." + std::to_string(il) + ".ssm_in_scale", mh.in_scale);
    keep.push_back(experts.storage());
    if (experts.copied_bytes())
        VT_LOG_INFO("%s: the experts, %.1f MiB, are stacked into copies (the checkpoint keeps one matrix per expert)",
                    dir.c_str(), (double)experts.copied_bytes() / (1 << 20));
    if (skipped) VT_LOG_DEBUG("%s: %zu tensors that vt does not read were left out", dir.c_str(), skipped);
    if (vision)
        VT_LOG_INFO("%s: the vision (and audio) towers (%zu tensors) are not read: vt runs the text model", dir.c_str(),
                    vision);
    if (mtp) VT_LOG_INFO("%s: the multi-token-prediction layer (%zu tensors) is not used", dir.c_str(), mtp);
    if (gemma4) add_f32("rope_freqs.weight", g4.rope_freqs);
    const std::string rtype = rope_type(global);
    if (rtype == "llama3") add_f32("rope_freqs.weight", llama3_rope_factors(global, base, (int64_t)head_dim));
    if (rtype == "longrope" || rtype == "su") {
        for (const char *which : {"long", "short"}) {
            const std::string key = std::string(which) + "_factor";
            if (!global.contains(key) || !global[key].is_array() || global[key].size() != head_dim / 2)
                fail(VT_ERR_FORMAT, "%s: rope %s must list %llu numbers", cfg_path.c_str(), key.c_str(),
                     (unsigned long long)(head_dim / 2));
            std::vector<float> f;
            for (const json &x : global[key]) f.push_back(x.is_number() ? x.get<float>() : 0.0f);
            add_f32(std::string("rope_factors_") + which + ".weight", std::move(f));
        }
    }
    keep.push_back(copies);
    keep.push_back(meta.storage());

    HfFolder out;
    // generation_config.json: the ids that end generation (one or a list).
    if (fs::exists(dir / "generation_config.json")) {
        const json gc = read_json_file(dir / "generation_config.json");
        if (auto e = gc.find("eos_token_id"); e != gc.end()) {
            if (e->is_number_integer()) out.eos_ids.push_back(e->get<int32_t>());
            else if (e->is_array())
                for (const json &x : *e)
                    if (x.is_number_integer()) out.eos_ids.push_back(x.get<int32_t>());
        }
    }
    out.gguf = GgufFile::assemble(dir.string(), std::move(meta.kvs), std::move(tensors), std::move(keep));
    return out;
}

} // namespace vt
