#include "model/hf-gemma4.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <map>

#include "core/error.h"

namespace vt {

namespace {
using json = nlohmann::json;

uint64_t size_of(const json &cfg, const char *key, const std::string &where, bool required = true, uint64_t def = 0) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) {
        if (required) fail(VT_ERR_FORMAT, "%s: '%s' is missing", where.c_str(), key);
        return def;
    }
    if (!it->is_number_unsigned() || it->get<uint64_t>() > 1u << 20)
        fail(VT_ERR_FORMAT, "%s: '%s' is not an integer from 0 to %u", where.c_str(), key, 1u << 20);
    return it->get<uint64_t>();
}

bool flag_of(const json &cfg, const char *key, const std::string &where) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return false;
    if (!it->is_boolean()) fail(VT_ERR_FORMAT, "%s: '%s' is not true or false", where.c_str(), key);
    return it->get<bool>();
}

const json &rope_of(const json &cfg, const char *type, const std::string &where) {
    auto it = cfg.find("rope_parameters");
    if (it == cfg.end() || !it->is_object() || !it->contains(type) || !(*it)[type].is_object())
        fail(VT_ERR_FORMAT, "%s: rope_parameters has no '%s' entry", where.c_str(), type);
    return (*it)[type];
}

double number(const json &j, const char *key, double def) {
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<double>() : def;
}
} // namespace

Gemma4Meta read_gemma4_config(const json &cfg, uint64_t n_layer, const std::string &where) {
    Gemma4Meta out;
    const char *w = where.c_str();
    if (cfg.contains("use_bidirectional_attention") && cfg["use_bidirectional_attention"] == "all")
        fail(VT_ERR_UNSUPPORTED, "%s: use_bidirectional_attention 'all' is not supported (causal text models only)", w);
    if (flag_of(cfg, "attention_bias", where)) fail(VT_ERR_UNSUPPORTED, "%s: attention_bias is not supported", w);
    if (cfg.contains("hidden_activation") && cfg["hidden_activation"] != "gelu_pytorch_tanh")
        fail(VT_ERR_UNSUPPORTED, "%s: hidden_activation must be gelu_pytorch_tanh", w);
    if (!cfg.contains("layer_types") || !cfg["layer_types"].is_array() || cfg["layer_types"].size() != n_layer)
        fail(VT_ERR_FORMAT, "%s: layer_types must list each of the %llu layers", w, (unsigned long long)n_layer);
    std::vector<bool> full(n_layer);
    for (uint64_t i = 0; i < n_layer; ++i) {
        const json &t = cfg["layer_types"][i];
        if (t != "full_attention" && t != "sliding_attention")
            fail(VT_ERR_FORMAT, "%s: layer_types[%llu] is not full_attention or sliding_attention", w,
                 (unsigned long long)i);
        full[i] = t == "full_attention";
    }
    const uint64_t hd_swa = size_of(cfg, "head_dim", where);
    const uint64_t kv_swa = size_of(cfg, "num_key_value_heads", where);
    const bool k_eq_v = flag_of(cfg, "attention_k_eq_v", where);
    // The global layers' head size and KV heads: the checkpoints' keys, or
    // transformers 5.25's per_layer_config overrides of the full layers.
    uint64_t hd_full = size_of(cfg, "global_head_dim", where, false);
    uint64_t kv_full = k_eq_v ? size_of(cfg, "num_global_key_value_heads", where, false) : 0;
    if (auto plc = cfg.find("per_layer_config"); plc != cfg.end() && plc->is_object()) {
        for (const auto &[idx, over] : plc->items()) {
            const unsigned long i = std::strtoul(idx.c_str(), nullptr, 10);
            if (i >= n_layer || !over.is_object() || !full[i]) continue;
            if (!hd_full) hd_full = size_of(over, "head_dim", where, false);
            if (!kv_full) kv_full = size_of(over, "num_key_value_heads", where, false);
        }
    }
    if (!hd_full) hd_full = 512;  // Gemma4TextConfig's default
    if (!kv_full) kv_full = kv_swa;
    if (hd_swa == 0 || hd_full == 0 || kv_swa == 0 || hd_swa % 2 || hd_full % 2)
        fail(VT_ERR_FORMAT, "%s: invalid head sizes %llu / %llu or KV heads %llu", w, (unsigned long long)hd_swa,
             (unsigned long long)hd_full, (unsigned long long)kv_swa);
    out.u32s = {{"attention.key_length", hd_full}, {"attention.value_length", hd_full},
                {"attention.key_length_swa", hd_swa}, {"attention.value_length_swa", hd_swa},
                {"rope.dimension_count", hd_full}, {"rope.dimension_count_swa", hd_swa}};
    for (uint64_t i = 0; i < n_layer; ++i) out.kv_heads.push_back((int32_t)(full[i] ? kv_full : kv_swa));

    const json &swa_rope = rope_of(cfg, "sliding_attention", where), &full_rope = rope_of(cfg, "full_attention", where);
    if (swa_rope.value("rope_type", "default") != "default")
        fail(VT_ERR_UNSUPPORTED, "%s: the sliding layers' rope_type must be default", w);
    // (rope.freq_base_swa: hf-folder's, from layer_types and this entry.)
    // Proportional rope: NeoX over the whole head, the first
    // int(partial * head_dim / 2) pairs rotated (angles divided by factor),
    // the others in place; default: every pair.
    const std::string type = full_rope.value("rope_type", "default");
    if (type != "default" && type != "proportional")
        fail(VT_ERR_UNSUPPORTED, "%s: the global layers' rope_type '%s' is not supported (default, proportional)", w,
             type.c_str());
    const double partial = type == "proportional" ? number(full_rope, "partial_rotary_factor", 1.0) : 1.0;
    const double factor = type == "proportional" ? number(full_rope, "factor", 1.0) : 1.0;
    if (!(partial > 0.0 && partial <= 1.0) || !(factor > 0.0))
        fail(VT_ERR_FORMAT, "%s: invalid partial_rotary_factor %g or factor %g", w, partial, factor);
    const uint64_t rotated = (uint64_t)(partial * (double)hd_full / 2);
    for (uint64_t i = 0; i < hd_full / 2; ++i) out.rope_freqs.push_back(i < rotated ? (float)factor : 1e30f);

    // KV sharing and double-wide MLPs in the shared layers.
    const uint64_t n_shared = size_of(cfg, "num_kv_shared_layers", where, false);
    out.u32s.push_back({"attention.shared_kv_layers", n_shared});
    const uint64_t ff = size_of(cfg, "intermediate_size", where);
    const bool wide = flag_of(cfg, "use_double_wide_mlp", where);
    for (uint64_t i = 0; i < n_layer; ++i)
        out.n_ff.push_back((int32_t)(wide && n_shared <= n_layer && i >= n_layer - n_shared ? 2 * ff : ff));
    // Per-layer embeddings: the table must have a row per token (the
    // architecture checks it against the vocabulary).
    out.u32s.push_back({"embedding_length_per_layer_input", size_of(cfg, "hidden_size_per_layer_input", where, false)});
    if (flag_of(cfg, "enable_moe_block", where)) {
        out.u32s.push_back({"expert_count", size_of(cfg, "num_experts", where)});
        out.u32s.push_back({"expert_used_count", size_of(cfg, "top_k_experts", where)});
        out.u32s.push_back({"expert_feed_forward_length", size_of(cfg, "moe_intermediate_size", where)});
    }
    return out;
}

std::string gemma4_gguf_name(const std::string &rest, bool layer) {
    static const std::map<std::string, std::string> top = {
        {"embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
        {"per_layer_model_projection.weight", "per_layer_model_proj.weight"},
        {"per_layer_projection_norm.weight", "per_layer_proj_norm.weight"},
    };
    static const std::map<std::string, std::string> blk = {
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
        {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
        {"pre_feedforward_layernorm_2.weight", "pre_ffw_norm_2.weight"},
        {"post_feedforward_layernorm_1.weight", "post_ffw_norm_1.weight"},
        {"post_feedforward_layernorm_2.weight", "post_ffw_norm_2.weight"},
        {"router.proj.weight", "ffn_gate_inp.weight"},
        {"router.scale", "ffn_gate_inp.scale"},
        {"router.per_expert_scale", "ffn_down_exps.scale"},
        {"layer_scalar", "layer_output_scale.weight"},
        {"per_layer_input_gate.weight", "inp_gate.weight"},
        {"per_layer_projection.weight", "proj.weight"},
        {"post_per_layer_input_norm.weight", "post_norm.weight"},
    };
    const auto &table = layer ? blk : top;
    auto it = table.find(rest);
    return it == table.end() ? "" : it->second;
}

} // namespace vt
