#include "model/hf-granite-falcon.h"

#include <nlohmann/json.hpp>

#include <map>

#include "core/error.h"

namespace vt {

using json = nlohmann::json;

namespace {
double number(const json &cfg, const char *key, double def, const std::string &where) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return def;
    if (!it->is_number()) fail(VT_ERR_FORMAT, "%s: '%s' is not a number", where.c_str(), key);
    return it->get<double>();
}

// Granite's layer kinds: true for Mamba. transformers 5 writes
// linear_attention / full_attention, the released configs mamba / attention.
std::vector<bool> granite_mamba_layers(const json &cfg, uint64_t n_layer, const std::string &where) {
    const json *types = nullptr;
    for (const char *k : {"layer_types", "layers_block_type"})
        if (cfg.contains(k) && cfg[k].is_array()) types = &cfg[k];
    if (!types) fail(VT_ERR_FORMAT, "%s: 'layer_types' is missing", where.c_str());
    if (types->size() != n_layer)
        fail(VT_ERR_FORMAT, "%s: layer_types lists %zu layers for %llu", where.c_str(), types->size(),
             (unsigned long long)n_layer);
    std::vector<bool> mamba;
    for (const json &t : *types) {
        const std::string s = t.is_string() ? t.get<std::string>() : "";
        if (s == "mamba" || s == "linear_attention") mamba.push_back(true);
        else if (s == "attention" || s == "full_attention") mamba.push_back(false);
        else fail(VT_ERR_FORMAT, "%s: layer type '%s' is neither mamba nor attention", where.c_str(), s.c_str());
    }
    return mamba;
}
} // namespace

MupHybridMeta read_mup_hybrid_config(const json &cfg, bool falcon, uint64_t n_layer, uint64_t n_kv,
                                     const std::string &where) {
    MupHybridMeta m;
    m.ssm = read_mamba2_config(cfg, where);
    if (!falcon) {
        for (bool mamba : granite_mamba_layers(cfg, n_layer, where)) m.kv_heads.push_back(mamba ? 0 : (int32_t)n_kv);
        m.f32s = {{"embedding_scale", number(cfg, "embedding_multiplier", 1.0, where)},
                  {"attention.scale", number(cfg, "attention_multiplier", 1.0, where)},
                  {"residual_scale", number(cfg, "residual_multiplier", 1.0, where)},
                  {"logit_scale", number(cfg, "logits_scaling", 1.0, where)}};
        if (number(cfg, "num_local_experts", 0, where) > 0)
            m.u32s.push_back({"expert_shared_feed_forward_length",
                              (uint64_t)number(cfg, "shared_intermediate_size", 0, where)});
        // transformers builds rope only for "rope" (the released 4.0-H: "nope").
        const json &pe = cfg.contains("position_embedding_type") ? cfg["position_embedding_type"] : json();
        const std::string type = pe.is_string() ? pe.get<std::string>() : "nope";
        m.bools.push_back({"rope.scaling.finetuned", type == "rope"});
        return m;
    }
    if (cfg.contains("mamba_d_ssm") && !cfg["mamba_d_ssm"].is_null() &&
        number(cfg, "mamba_d_ssm", 0, where) != (double)m.ssm.inner())
        fail(VT_ERR_FORMAT, "%s: mamba_d_ssm is not mamba_n_heads * mamba_d_head (%llu)", where.c_str(),
             (unsigned long long)m.ssm.inner());
    auto flag = [&](const char *k, bool def) {
        return cfg.contains(k) && cfg[k].is_boolean() ? cfg[k].get<bool>() : def;
    };
    // The mixer's gated norm is Mamba's (gate first); norm-then-gate is another.
    if (flag("mamba_rms_norm", false) && flag("mamba_norm_before_gate", true))
        fail(VT_ERR_UNSUPPORTED, "%s: mamba_rms_norm with mamba_norm_before_gate (norm, then the gate) is not "
             "supported (the converted GGUF gates first too)", where.c_str());
    for (const char *k : {"embedding_multiplier", "lm_head_multiplier", "attention_in_multiplier", "key_multiplier",
                          "attention_out_multiplier", "ssm_out_multiplier"})
        m.f32s.push_back({k, number(cfg, k, 1.0, where)});
    double mlp[2] = {1.0, 1.0}, ssm[5] = {1.0, 1.0, 1.0, 1.0, 1.0};
    auto list = [&](const char *k, double *out, size_t n) {
        auto it = cfg.find(k);
        if (it == cfg.end() || it->is_null()) return;
        if (!it->is_array() || it->size() != n)
            fail(VT_ERR_FORMAT, "%s: '%s' is not a list of %zu numbers", where.c_str(), k, n);
        for (size_t i = 0; i < n; ++i) {
            if (!(*it)[i].is_number()) fail(VT_ERR_FORMAT, "%s: '%s' is not a list of numbers", where.c_str(), k);
            out[i] = (*it)[i].get<double>();
        }
    };
    list("mlp_multipliers", mlp, 2);
    list("ssm_multipliers", ssm, 5);
    m.f32s.push_back({"mlp_gate_multiplier", mlp[0]});
    m.f32s.push_back({"mlp_down_multiplier", mlp[1]});
    // transformers' compute_mup_vector over [z | x | B | C | dt], times ssm_in.
    const double in = number(cfg, "ssm_in_multiplier", 1.0, where);
    const uint64_t di = m.ssm.inner(), gn = m.ssm.n_group * m.ssm.n_state;
    const uint64_t widths[5] = {di, di, gn, gn, m.ssm.n_head};
    for (int s = 0; s < 5; ++s) m.in_scale.insert(m.in_scale.end(), widths[s], (float)(in * ssm[s]));
    return m;
}

std::string mup_hybrid_gguf_name(const std::string &rest, bool falcon, bool experts) {
    if (std::string s = mamba2_gguf_name(rest, "mamba."); !s.empty()) return s;
    static const std::map<std::string, std::string> granite = {
        {"block_sparse_moe.router.layer.weight", "ffn_gate_inp.weight"},
    };
    static const std::map<std::string, std::string> falcon_h1 = {
        {"feed_forward.gate_proj.weight", "ffn_gate.weight"}, {"feed_forward.up_proj.weight", "ffn_up.weight"},
        {"feed_forward.down_proj.weight", "ffn_down.weight"}, {"feed_forward.gate_proj.bias", "ffn_gate.bias"},
        {"feed_forward.up_proj.bias", "ffn_up.bias"},         {"feed_forward.down_proj.bias", "ffn_down.bias"},
        {"pre_ff_layernorm.weight", "ffn_norm.weight"},
    };
    if (!falcon && rest == "shared_mlp.output_linear.weight") return experts ? "ffn_down_shexp.weight" : "ffn_down.weight";
    const auto &table = falcon ? falcon_h1 : granite;
    auto it = table.find(rest);
    return it == table.end() ? "" : it->second;
}

std::string granite_expert_alias(const std::string &hf_name) {
    static const std::pair<const char *, const char *> aliases[] = {
        {"block_sparse_moe.input_linear.weight", "block_sparse_moe.experts.gate_up_proj"},
        {"block_sparse_moe.output_linear.weight", "block_sparse_moe.experts.down_proj"},
    };
    for (const auto &[from, to] : aliases) {
        const std::string f = from;
        if (hf_name.size() > f.size() && hf_name.compare(hf_name.size() - f.size(), f.size(), f) == 0)
            return hf_name.substr(0, hf_name.size() - f.size()) + to;
    }
    return hf_name;
}

void split_granite_shared(const SafetensorsTensor &t, const std::string &blk, bool experts,
                          std::vector<GgufTensorInfo> &out) {
    if (t.n_dims != 2 || t.ne[1] % 2 != 0 || t.ne[1] == 0)
        fail(VT_ERR_FORMAT, "%s: shared_mlp.input_linear is not (2 n_ff, n_embd)", t.name.c_str());
    // Gate rows first (GraniteMoeHybridMLP: chunk(2) -> act(gate) * up).
    const size_t half = t.nbytes / 2;
    for (int h = 0; h < 2; ++h) {
        GgufTensorInfo ti;
        ti.name = blk + (h == 0 ? (experts ? "ffn_gate_shexp.weight" : "ffn_gate.weight")
                                : (experts ? "ffn_up_shexp.weight" : "ffn_up.weight"));
        ti.n_dims = 2;
        ti.ne[0] = t.ne[0];
        ti.ne[1] = t.ne[1] / 2;
        ti.type = t.type;
        ti.data = static_cast<const uint8_t *>(t.data) + h * half;
        ti.nbytes = half;
        out.push_back(std::move(ti));
    }
}

} // namespace vt
