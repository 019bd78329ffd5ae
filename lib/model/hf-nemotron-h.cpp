#include "model/hf-nemotron-h.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <map>

#include "core/error.h"

namespace vt {

using json = nlohmann::json;

NemotronHMeta read_nemotron_h_config(const json &cfg, const std::string &where) {
    NemotronHMeta m;
    static const std::map<std::string, char> kinds = {
        {"mamba", 'M'}, {"linear_attention", 'M'}, {"attention", '*'}, {"full_attention", '*'},
        {"mlp", '-'},   {"moe", 'E'},
    };
    if (auto p = cfg.find("hybrid_override_pattern"); p != cfg.end() && p->is_string()) {
        for (char c : p->get<std::string>()) {
            if (c != 'M' && c != '*' && c != '-' && c != 'E')
                fail(VT_ERR_FORMAT, "%s: hybrid_override_pattern has '%c' (M, *, - or E)", where.c_str(), c);
            m.kinds.push_back(c);
        }
    } else if (auto l = cfg.find("layers_block_type"); l != cfg.end() && l->is_array()) {
        for (const json &t : *l) {
            auto it = t.is_string() ? kinds.find(t.get<std::string>()) : kinds.end();
            if (it == kinds.end())
                fail(VT_ERR_FORMAT, "%s: layers_block_type has %s (linear_attention, full_attention, mlp or moe)",
                     where.c_str(), t.dump().c_str());
            m.kinds.push_back(it->second);
        }
    } else {
        fail(VT_ERR_FORMAT, "%s: neither hybrid_override_pattern nor layers_block_type is given", where.c_str());
    }
    if (m.kinds.empty() || m.kinds.size() > 4096) fail(VT_ERR_FORMAT, "%s: the layer pattern is empty", where.c_str());
    for (char c : m.kinds) m.moe |= c == 'E';
    m.ssm = read_mamba2_config(cfg, where);
    return m;
}

json nemotron_h_config_aliases(const json &cfg, const std::string &where) {
    const NemotronHMeta m = read_nemotron_h_config(cfg, where);
    json out = cfg;
    out["num_hidden_layers"] = m.kinds.size();
    if (cfg.contains("layer_norm_epsilon")) out["rms_norm_eps"] = cfg["layer_norm_epsilon"];
    if (m.moe) {
        out["scoring_func"] = "sigmoid";
    } else {
        for (const char *k : {"n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
                              "routed_scaling_factor", "norm_topk_prob"})
            out.erase(k);
    }
    return out;
}

std::string nemotron_h_tensor_name(const std::string &hf, const std::vector<char> &kinds) {
    std::string n = hf;
    if (n.rfind("backbone.", 0) == 0) n = "model." + n.substr(std::strlen("backbone."));
    if (n == "model.embeddings.weight") return "model.embed_tokens.weight";
    if (n == "model.norm_f.weight") return "model.norm.weight";
    const std::string layers = "model.layers.";
    if (n.rfind(layers, 0) != 0) return hf;
    const size_t dot = n.find('.', layers.size());
    if (dot == std::string::npos) return hf;
    const std::string bid = n.substr(layers.size(), dot - layers.size()), rest = n.substr(dot + 1);
    if (bid.empty() || bid.size() > 5 || bid.find_first_not_of("0123456789") != std::string::npos) return hf;
    const size_t il = std::stoul(bid);
    const std::string blk = layers + bid + ".";
    if (rest == "norm.weight") return blk + "input_layernorm.weight";
    if (rest.rfind("mixer.", 0) != 0 || il >= kinds.size()) return hf;
    const std::string tail = rest.substr(std::strlen("mixer."));
    switch (kinds[il]) {
    case '*': return blk + "self_attn." + tail;
    case '-': return blk + "mlp." + tail;
    case 'E':
        if (tail.rfind("fc1_latent_proj.", 0) == 0 || tail.rfind("fc2_latent_proj.", 0) == 0) return blk + rest;
        return blk + "mlp." + tail;
    default: return blk + rest;  // Mamba: mixer.*
    }
}

std::string nemotron_h_gguf_name(const std::string &rest) {
    if (rest == "mixer.fc1_latent_proj.weight") return "ffn_latent_down.weight";
    if (rest == "mixer.fc2_latent_proj.weight") return "ffn_latent_up.weight";
    return mamba2_gguf_name(rest, "mixer.");
}

} // namespace vt
