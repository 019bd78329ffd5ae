#include "model/hf-kimi.h"

#include <nlohmann/json.hpp>

#include <map>

#include "core/error.h"

namespace vt {

using json = nlohmann::json;

namespace {
// A size of cfg (or of cfg[section]) with transformers' default when absent.
uint64_t size_or(const json &cfg, const char *key, uint64_t def, const std::string &where) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return def;
    if (!it->is_number_unsigned() || it->get<uint64_t>() == 0 || it->get<uint64_t>() > 65536)
        fail(VT_ERR_FORMAT, "%s: '%s' is not an integer from 1 to 65536", where.c_str(), key);
    return it->get<uint64_t>();
}

// Layer numbers of linear_attn_config (1-based in the checkpoint) as kinds.
void mark_layers(const json &lac, const char *key, int32_t kv_heads, std::vector<int32_t> &out,
                 const std::string &where) {
    const json &list = lac[key];
    if (!list.is_array()) fail(VT_ERR_FORMAT, "%s: linear_attn_config.%s is not a list", where.c_str(), key);
    for (const json &x : list) {
        if (!x.is_number_unsigned() || x.get<uint64_t>() == 0 || x.get<uint64_t>() > out.size())
            fail(VT_ERR_FORMAT, "%s: linear_attn_config.%s names a layer outside 1..%zu", where.c_str(), key,
                 out.size());
        out[x.get<uint64_t>() - 1] = kv_heads;
    }
}
} // namespace

json kimi_config_aliases(const json &cfg, const std::string &where) {
    json out = cfg;
    // KimiLinearConfig.attribute_map: the generic name -> Kimi's.
    static const std::pair<const char *, const char *> kAliases[] = {
        {"max_position_embeddings", "model_max_length"}, {"norm_topk_prob", "moe_renormalize"},
        {"n_group", "num_expert_group"},                  {"num_local_experts", "num_experts"},
        {"num_experts_per_tok", "num_experts_per_token"}, {"n_shared_experts", "num_shared_experts"},
    };
    for (const auto &[generic, own] : kAliases)
        if (!out.contains(generic) && out.contains(own)) out[generic] = out[own];
    // transformers' router is always sigmoid (the checkpoint's
    // moe_router_activation_func names it) and always group-limited.
    if (auto act = cfg.find("moe_router_activation_func");
        act != cfg.end() && !act->is_null() && *act != "sigmoid")
        fail(VT_ERR_UNSUPPORTED, "%s: moe_router_activation_func %s is not supported (sigmoid)", where.c_str(),
             act->dump().c_str());
    out["scoring_func"] = "sigmoid";
    out["topk_method"] = "noaux_tc";
    if (!out.contains("n_group") || out["n_group"].is_null()) out["n_group"] = 1;
    if (!out.contains("topk_group") || out["topk_group"].is_null()) out["topk_group"] = 1;
    // Dense layers: mlp_layer_types when given (transformers reads only it),
    // else first_k_dense_replace (default 1).
    if (auto types = cfg.find("mlp_layer_types"); types != cfg.end() && types->is_array()) {
        uint64_t dense = 0;
        while (dense < types->size() && (*types)[dense] == "dense") ++dense;
        for (size_t i = dense; i < types->size(); ++i)
            if ((*types)[i] != "sparse")
                fail(VT_ERR_UNSUPPORTED, "%s: mlp_layer_types: only leading dense layers are supported, layer %zu is %s",
                     where.c_str(), i, (*types)[i].dump().c_str());
        out["first_k_dense_replace"] = dense;
    } else if (!out.contains("first_k_dense_replace")) {
        out["first_k_dense_replace"] = 1;
    }
    return out;
}

KimiMeta read_kimi_config(const json &cfg, uint64_t n_layer, uint64_t n_head, const std::string &where) {
    static const json kEmpty = json::object();
    const json &lac = cfg.contains("linear_attn_config") && cfg["linear_attn_config"].is_object()
                          ? cfg["linear_attn_config"]
                          : kEmpty;
    // linear_attn_config overrides the linear_* keys, as in transformers.
    KimiMeta m;
    m.head_dim = size_or(lac, "head_dim", size_or(cfg, "linear_head_dim", 128, where), where);
    m.kernel = size_or(lac, "short_conv_kernel_size", size_or(cfg, "linear_conv_kernel_dim", 4, where), where);
    const uint64_t heads = size_or(lac, "num_heads", size_or(cfg, "linear_num_heads", 32, where), where);
    if (heads != n_head)
        fail(VT_ERR_UNSUPPORTED, "%s: %llu KDA heads and %llu attention heads: llama.cpp's format has one count for "
             "both", where.c_str(), (unsigned long long)heads, (unsigned long long)n_head);
    if (m.kernel < 2) fail(VT_ERR_FORMAT, "%s: a conv kernel of %llu", where.c_str(), (unsigned long long)m.kernel);

    constexpr int32_t kKda = 0, kMla = 1;
    m.kv_heads.assign(n_layer, -1);
    if (auto lt = cfg.find("layer_types"); lt != cfg.end() && lt->is_array()) {
        if (lt->size() != n_layer) fail(VT_ERR_FORMAT, "%s: layer_types does not list every layer", where.c_str());
        for (size_t i = 0; i < n_layer; ++i) {
            const json &t = (*lt)[i];
            if (t != "linear_attention" && t != "full_attention")
                fail(VT_ERR_FORMAT, "%s: layer_types[%zu] is %s", where.c_str(), i, t.dump().c_str());
            m.kv_heads[i] = t == "linear_attention" ? kKda : kMla;
        }
    } else if (lac.contains("kda_layers") && lac.contains("full_attn_layers")) {
        mark_layers(lac, "full_attn_layers", kMla, m.kv_heads, where);
        mark_layers(lac, "kda_layers", kKda, m.kv_heads, where);
        for (size_t i = 0; i < n_layer; ++i)
            if (m.kv_heads[i] < 0)
                fail(VT_ERR_FORMAT, "%s: linear_attn_config names no kind for layer %zu", where.c_str(), i + 1);
    } else {
        // transformers' default: full attention at layers 4, 8, ... (0-based).
        for (size_t i = 0; i < n_layer; ++i) m.kv_heads[i] = i && i % 4 == 0 ? kMla : kKda;
    }
    return m;
}

std::string kimi_gguf_name(const std::string &rest) {
    static const std::map<std::string, std::string> names = {
        {"self_attn.q_conv1d.weight", "ssm_conv1d_q.weight"},
        {"self_attn.k_conv1d.weight", "ssm_conv1d_k.weight"},
        {"self_attn.v_conv1d.weight", "ssm_conv1d_v.weight"},
        {"self_attn.f_a_proj.weight", "ssm_f_a.weight"},
        {"self_attn.f_b_proj.weight", "ssm_f_b.weight"},
        {"self_attn.dt_bias", "ssm_dt.bias"},
        {"self_attn.A_log", "ssm_a"},
        {"self_attn.b_proj.weight", "ssm_beta.weight"},
        {"self_attn.g_a_proj.weight", "ssm_g_a.weight"},
        {"self_attn.g_b_proj.weight", "ssm_g_b.weight"},
        {"self_attn.o_norm.weight", "ssm_norm.weight"},
        // The checkpoint's MoE block (transformers renames it mlp. in memory).
        {"block_sparse_moe.gate.e_score_correction_bias", "exp_probs_b.bias"},
        {"block_sparse_moe.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
        {"block_sparse_moe.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
        {"block_sparse_moe.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
    };
    auto it = names.find(rest);
    return it == names.end() ? "" : it->second;
}

} // namespace vt
