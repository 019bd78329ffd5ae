#include "model/hf-lfm2.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>

#include "core/error.h"

namespace vt {

using json = nlohmann::json;

namespace {
double number_or(const json &cfg, const char *key, double def, const std::string &where) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return def;
    if (!it->is_number()) fail(VT_ERR_FORMAT, "%s: '%s' is not a number", where.c_str(), key);
    return it->get<double>();
}
} // namespace

json lfm2_config_aliases(const json &cfg, bool adjust_ff, const std::string &where) {
    json out = cfg;
    if (!out.contains("rms_norm_eps") && out.contains("norm_eps")) out["rms_norm_eps"] = out["norm_eps"];
    if (out.contains("block_ff_dim") && !out["block_ff_dim"].is_null()) out["intermediate_size"] = out["block_ff_dim"];
    if (out.contains("num_dense_layers") && !out.contains("first_k_dense_replace"))
        out["first_k_dense_replace"] = out["num_dense_layers"];
    out["scoring_func"] = "sigmoid";
    const bool has_theta = out.contains("rope_theta") ||
                           (out.contains("rope_parameters") && out["rope_parameters"].is_object() &&
                            out["rope_parameters"].contains("rope_theta"));
    if (!has_theta) out["rope_theta"] = 1000000.0;
    auto adjust = out.find("block_auto_adjust_ff_dim");
    if (adjust != out.end() && !adjust->is_null() && !adjust->is_boolean())
        fail(VT_ERR_FORMAT, "%s: 'block_auto_adjust_ff_dim' is not true or false", where.c_str());
    if (adjust_ff && (adjust == out.end() || adjust->is_null() || adjust->get<bool>())) {
        // Lfm2MLP: int(2 ff / 3), times the multiplier (when not null), then
        // up to a multiple (the converter's _add_feed_forward_length too).
        const double ff = number_or(out, "intermediate_size", 12288, where);
        const double mult = number_or(out, "block_ffn_dim_multiplier", 1.0, where);
        const double multiple = number_or(out, "block_multiple_of", 256, where);
        if (!(ff > 0 && ff < 1e9 && mult > 0 && mult < 1e3 && multiple >= 1 && multiple < 1e6))
            fail(VT_ERR_FORMAT, "%s: FFN width %g, multiplier %g, multiple of %g", where.c_str(), ff, mult, multiple);
        int64_t width = (int64_t)std::floor(2.0 * ff / 3.0);
        const bool has_mult = out.contains("block_ffn_dim_multiplier") ? !out["block_ffn_dim_multiplier"].is_null() : true;
        if (has_mult) {
            width = (int64_t)std::floor(mult * (double)width);
            const int64_t m = (int64_t)multiple;
            width = m * ((width + m - 1) / m);
        }
        out["intermediate_size"] = (uint64_t)width;
    }
    return out;
}

Lfm2Meta read_lfm2_config(const json &cfg, uint64_t n_layer, uint64_t n_head_kv, const std::string &where) {
    Lfm2Meta m;
    auto k = cfg.find("conv_L_cache");
    m.l_cache = 3;  // transformers' default
    if (k != cfg.end() && !k->is_null()) {
        if (!k->is_number_unsigned() || k->get<uint64_t>() < 2 || k->get<uint64_t>() > 64)
            fail(VT_ERR_FORMAT, "%s: 'conv_L_cache' is not an integer from 2 to 64", where.c_str());
        m.l_cache = k->get<uint64_t>();
    }
    m.kv_heads.assign(n_layer, (int32_t)n_head_kv);
    if (auto lt = cfg.find("layer_types"); lt != cfg.end() && lt->is_array()) {
        if (lt->size() != n_layer) fail(VT_ERR_FORMAT, "%s: layer_types does not list every layer", where.c_str());
        for (size_t i = 0; i < n_layer; ++i) {
            const json &t = (*lt)[i];
            if (t != "conv" && t != "full_attention")
                fail(VT_ERR_FORMAT, "%s: layer_types[%zu] is %s (conv, full_attention)", where.c_str(), i,
                     t.dump().c_str());
            if (t == "conv") m.kv_heads[i] = 0;
        }
    } else if (auto idx = cfg.find("full_attn_idxs"); idx != cfg.end() && idx->is_array()) {
        m.kv_heads.assign(n_layer, 0);
        for (const json &x : *idx) {
            if (!x.is_number_unsigned() || x.get<uint64_t>() >= n_layer)
                fail(VT_ERR_FORMAT, "%s: full_attn_idxs names a layer outside 0..%llu", where.c_str(),
                     (unsigned long long)n_layer - 1);
            m.kv_heads[x.get<uint64_t>()] = (int32_t)n_head_kv;
        }
    }
    return m;
}

std::string lfm2_gguf_name(const std::string &rest) {
    static const std::map<std::string, std::string> names = {
        {"operator_norm.weight", "attn_norm.weight"},
        {"ffn_norm.weight", "ffn_norm.weight"},
        {"conv.conv.weight", "shortconv.conv.weight"},
        {"conv.conv.bias", "shortconv.conv.bias"},
        {"conv.in_proj.weight", "shortconv.in_proj.weight"},
        {"conv.in_proj.bias", "shortconv.in_proj.bias"},
        {"conv.out_proj.weight", "shortconv.out_proj.weight"},
        {"conv.out_proj.bias", "shortconv.out_proj.bias"},
        {"self_attn.out_proj.weight", "attn_output.weight"},
        {"self_attn.q_layernorm.weight", "attn_q_norm.weight"},
        {"self_attn.k_layernorm.weight", "attn_k_norm.weight"},
        {"feed_forward.w1.weight", "ffn_gate.weight"},
        {"feed_forward.w3.weight", "ffn_up.weight"},
        {"feed_forward.w2.weight", "ffn_down.weight"},
        {"feed_forward.gate.weight", "ffn_gate_inp.weight"},
        {"feed_forward.expert_bias", "exp_probs_b.bias"},
    };
    auto it = names.find(rest);
    return it == names.end() ? "" : it->second;
}

} // namespace vt
