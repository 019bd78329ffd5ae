#include "model/hf-laguna.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace vt {

using json = nlohmann::json;

namespace {
// rope_parameters[layer_type]'s partial_rotary_factor (1 when absent) times
// head_dim, as the converter computes the rotated dims.
uint64_t rope_dims(const json &cfg, const char *layer_type, uint64_t head_dim, const std::string &where) {
    double partial = 1.0;
    if (auto rp = cfg.find("rope_parameters"); rp != cfg.end() && rp->is_object())
        if (auto lt = rp->find(layer_type); lt != rp->end() && lt->is_object())
            if (auto f = lt->find("partial_rotary_factor"); f != lt->end() && !f->is_null()) {
                if (!f->is_number()) fail(VT_ERR_FORMAT, "%s: %s partial_rotary_factor is not a number", where.c_str(), layer_type);
                partial = f->get<double>();
            }
    const uint64_t dims = (uint64_t)(head_dim * partial);
    if (!(partial > 0.0 && partial <= 1.0) || dims == 0 || dims % 2 != 0)
        fail(VT_ERR_FORMAT, "%s: %s partial_rotary_factor %g gives %llu rotated dims of %llu", where.c_str(), layer_type,
             partial, (unsigned long long)dims, (unsigned long long)head_dim);
    return dims;
}

double number(const json &cfg, const char *key, double def, const std::string &where) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return def;
    if (!it->is_number()) fail(VT_ERR_FORMAT, "%s: '%s' is not a number", where.c_str(), key);
    return it->get<double>();
}

// A per-layer list of the config: n_layer entries or the config's error.
const json *per_layer(const json &cfg, const char *key, uint64_t n_layer, const std::string &where) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return nullptr;
    if (!it->is_array() || it->size() != n_layer)
        fail(VT_ERR_FORMAT, "%s: %s must list one value per layer (%llu), not %s", where.c_str(), key,
             (unsigned long long)n_layer, it->is_array() ? std::to_string(it->size()).c_str() : it->type_name());
    return &*it;
}
} // namespace

LagunaMeta read_laguna_config(const json &cfg, uint64_t n_layer, uint64_t n_head, uint64_t head_dim,
                              const std::string &where) {
    LagunaMeta out;
    if (const json *heads = per_layer(cfg, "num_attention_heads_per_layer", n_layer, where)) {
        for (size_t i = 0; i < heads->size(); ++i) {
            const json &h = (*heads)[i];
            if (!h.is_number_unsigned() || h.get<uint64_t>() == 0 || h.get<uint64_t>() > 4096)
                fail(VT_ERR_FORMAT, "%s: num_attention_heads_per_layer[%zu] is not a head count from 1 to 4096",
                     where.c_str(), i);
            out.heads.push_back((int32_t)h.get<uint64_t>());
        }
    } else {
        out.heads.assign(n_layer, (int32_t)n_head);
    }
    // gating: true or "per-head" one gate per head, "per-element" one per channel.
    bool per_head = true;
    if (auto g = cfg.find("gating"); g != cfg.end() && !g->is_null()) {
        if (g->is_boolean() && g->get<bool>()) per_head = true;
        else if (g->is_string() && (*g == "per-head" || *g == "per_head")) per_head = true;
        else if (g->is_string() && (*g == "per-element" || *g == "per_element")) per_head = false;
        else fail(VT_ERR_FORMAT, "%s: gating %s is not true, \"per-head\" or \"per-element\"", where.c_str(), g->dump().c_str());
    }
    out.bools.emplace_back("attention.gate_per_head", per_head);
    out.u32s.emplace_back("rope.dimension_count", rope_dims(cfg, "full_attention", head_dim, where));
    out.u32s.emplace_back("rope.dimension_count_swa", rope_dims(cfg, "sliding_attention", head_dim, where));

    // The mixture: the converter's keys.
    if (auto w = cfg.find("moe_apply_router_weight_on_input"); w != cfg.end() && w->is_boolean() && w->get<bool>())
        fail(VT_ERR_UNSUPPORTED, "%s: moe_apply_router_weight_on_input is not supported", where.c_str());
    uint64_t dense_lead = 1;  // transformers' default: the first layer dense, the rest sparse
    if (const json *types = per_layer(cfg, "mlp_layer_types", n_layer, where)) {
        dense_lead = 0;
        bool sparse_seen = false;
        for (const json &t : *types) {
            if (t != "dense" && t != "sparse")
                fail(VT_ERR_FORMAT, "%s: mlp_layer_types has %s (dense or sparse)", where.c_str(), t.dump().c_str());
            if (t == "sparse") sparse_seen = true;
            else if (sparse_seen)
                fail(VT_ERR_UNSUPPORTED, "%s: a dense layer after a sparse one in mlp_layer_types is not supported "
                     "(GGUF and llama.cpp have leading dense layers only)", where.c_str());
            else ++dense_lead;
        }
    }
    out.u32s.emplace_back("leading_dense_block_count", std::min<uint64_t>(dense_lead, n_layer));
    out.u32s.emplace_back("expert_gating_func", 2);  // sigmoid
    out.bools.emplace_back("expert_weights_norm", true);
    out.f32s.emplace_back("expert_weights_scale", number(cfg, "moe_routed_scaling_factor", 1.0, where));
    const double shared = number(cfg, "shared_expert_intermediate_size", 0.0, where);
    if (shared < 0 || shared != std::floor(shared) || shared > 1e9)
        fail(VT_ERR_FORMAT, "%s: shared_expert_intermediate_size %g", where.c_str(), shared);
    if (shared > 0) out.u32s.emplace_back("expert_shared_feed_forward_length", (uint64_t)shared);
    const double cap = number(cfg, "moe_router_logit_softcapping", 0.0, where);
    if (!(cap >= 0.0) || !std::isfinite(cap))
        fail(VT_ERR_FORMAT, "%s: moe_router_logit_softcapping %g", where.c_str(), cap);
    if (cap > 0.0) out.f32s.emplace_back("router_logit_softcapping", cap);
    return out;
}

std::string laguna_gguf_name(const std::string &rest) {
    if (rest == "self_attn.g_proj.weight") return "attn_gate.weight";
    if (rest == "mlp.experts.e_score_correction_bias") return "exp_probs_b.bias";
    if (rest == "mlp.shared_expert.gate_proj.weight") return "ffn_gate_shexp.weight";
    if (rest == "mlp.shared_expert.up_proj.weight") return "ffn_up_shexp.weight";
    if (rest == "mlp.shared_expert.down_proj.weight") return "ffn_down_shexp.weight";
    return "";
}

} // namespace vt
