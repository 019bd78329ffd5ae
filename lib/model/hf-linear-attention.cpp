#include "model/hf-linear-attention.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <map>

#include "core/error.h"
#include "core/quant.h"

namespace vt {

using json = nlohmann::json;

namespace {
uint64_t size_of(const json &cfg, const char *key, const std::string &where) {
    auto it = cfg.find(key);
    if (it == cfg.end() || !it->is_number_unsigned() || it->get<uint64_t>() == 0 || it->get<uint64_t>() > 65536)
        fail(VT_ERR_FORMAT, "%s: '%s' is missing or not an integer from 1 to 65536", where.c_str(), key);
    return it->get<uint64_t>();
}
} // namespace

GdnMeta read_gdn_config(const json &cfg, uint64_t n_layer, uint64_t head_dim, const std::string &where) {
    GdnMeta m;
    if (!cfg.contains("linear_num_value_heads")) return m;
    m.present = true;
    GdnConfig &s = m.shape;
    s.nk = size_of(cfg, "linear_num_key_heads", where);
    s.nv = size_of(cfg, "linear_num_value_heads", where);
    s.dk = size_of(cfg, "linear_key_head_dim", where);
    s.dv = size_of(cfg, "linear_value_head_dim", where);
    s.kernel = size_of(cfg, "linear_conv_kernel_dim", where);
    if (s.nv % s.nk != 0)
        fail(VT_ERR_FORMAT, "%s: %llu value heads are no multiple of %llu key heads", where.c_str(),
             (unsigned long long)s.nv, (unsigned long long)s.nk);
    m.recurrent.assign(n_layer, false);
    if (auto lt = cfg.find("layer_types"); lt != cfg.end() && lt->is_array()) {
        if (lt->size() != n_layer) fail(VT_ERR_FORMAT, "%s: layer_types does not list every layer", where.c_str());
        for (size_t i = 0; i < n_layer; ++i) m.recurrent[i] = (*lt)[i] == "linear_attention";
    } else {
        const uint64_t every = cfg.contains("full_attention_interval") ? size_of(cfg, "full_attention_interval", where) : 4;
        for (size_t i = 0; i < n_layer; ++i) m.recurrent[i] = (i + 1) % every != 0;
    }
    // partial_rotary_factor: in rope_parameters (transformers 5) or beside it.
    double partial = 1.0;
    for (const json *j : {&cfg, cfg.contains("rope_parameters") ? &cfg["rope_parameters"] : nullptr})
        if (j && j->is_object() && j->contains("partial_rotary_factor") && (*j)["partial_rotary_factor"].is_number())
            partial = (*j)["partial_rotary_factor"].get<double>();
    if (!(partial > 0.0 && partial <= 1.0)) fail(VT_ERR_FORMAT, "%s: partial_rotary_factor %g", where.c_str(), partial);
    m.rope_dims = (uint64_t)((double)head_dim * partial);
    if (cfg.contains("shared_expert_intermediate_size"))
        m.shared_ff = size_of(cfg, "shared_expert_intermediate_size", where);
    return m;
}

std::string gdn_gguf_name(const std::string &rest) {
    static const std::map<std::string, std::string> names = {
        {"linear_attn.in_proj_qkv.weight", "attn_qkv.weight"}, {"linear_attn.in_proj_z.weight", "attn_gate.weight"},
        {"linear_attn.in_proj_b.weight", "ssm_beta.weight"},   {"linear_attn.in_proj_a.weight", "ssm_alpha.weight"},
        {"linear_attn.in_proj_ba.weight", "ssm_ba.weight"},    {"linear_attn.A_log", "ssm_a"},
        {"linear_attn.dt_bias", "ssm_dt.bias"},                {"linear_attn.conv1d.weight", "ssm_conv1d.weight"},
        {"linear_attn.norm.weight", "ssm_norm.weight"},        {"linear_attn.out_proj.weight", "ssm_out.weight"},
        {"post_attention_layernorm.weight", "post_attention_norm.weight"},
        {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
        {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
        {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
        {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
    };
    auto it = names.find(rest);
    return it == names.end() ? "" : it->second;
}

void split_qkvz(const SafetensorsTensor &t, const GdnConfig &s, const std::string &blk,
                std::deque<std::vector<uint8_t>> &store, std::vector<GgufTensorInfo> &out) {
    const DTypeInfo &di = dtype_info(t.type);
    const uint64_t r = s.nv / s.nk, per_head = 2 * s.dk + 2 * r * s.dv;
    if (t.n_dims != 2 || t.ne[1] != (int64_t)(s.nk * per_head) || t.ne[0] % di.block_elems != 0)
        fail(VT_ERR_FORMAT, "%s: in_proj_qkvz is not (%llu, n_embd)", t.name.c_str(),
             (unsigned long long)(s.nk * per_head));
    const size_t row = row_bytes(t.type, t.ne[0]);  // whole rows move: any row type (FP8, NVFP4 checkpoints)
    const uint8_t *src = static_cast<const uint8_t *>(t.data);
    const uint64_t qk = s.nk * s.dk, v = s.nv * s.dv;
    std::vector<uint8_t> &qkv = store.emplace_back((2 * qk + v) * row);
    std::vector<uint8_t> &z = store.emplace_back(v * row);
    for (uint64_t g = 0; g < s.nk; ++g) {
        const uint8_t *head = src + g * per_head * row;
        // Per K head g: [q_g | k_g | v_g (r heads) | z_g (r heads)].
        std::memcpy(&qkv[g * s.dk * row], head, s.dk * row);
        std::memcpy(&qkv[(qk + g * s.dk) * row], head + s.dk * row, s.dk * row);
        std::memcpy(&qkv[(2 * qk + g * r * s.dv) * row], head + 2 * s.dk * row, r * s.dv * row);
        std::memcpy(&z[g * r * s.dv * row], head + (2 * s.dk + r * s.dv) * row, r * s.dv * row);
    }
    auto add = [&](const char *name, std::vector<uint8_t> &b, uint64_t rows) {
        GgufTensorInfo ti;
        ti.name = blk + name;
        ti.n_dims = 2;
        ti.ne[0] = t.ne[0];
        ti.ne[1] = (int64_t)rows;
        ti.type = t.type;
        ti.data = b.data();
        ti.nbytes = b.size();
        ti.copied = true;
        out.push_back(std::move(ti));
    };
    add("attn_qkv.weight", qkv, 2 * qk + v);
    add("attn_gate.weight", z, v);
}

} // namespace vt
