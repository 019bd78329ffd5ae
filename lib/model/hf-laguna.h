// A Laguna folder (LagunaForCausalLM -> "laguna") as llama.cpp's converter
// writes it (conversion/laguna.py), with what that converter leaves out:
// - num_attention_heads_per_layer as a per-layer attention.head_count;
// - the partial rope of each layer type (rope_parameters["full_attention"]
//   and ["sliding_attention"] partial_rotary_factor) as rope.dimension_count
//   and rope.dimension_count_swa;
// - the experts' routing: sigmoid, renormalized, moe_routed_scaling_factor
//   as expert_weights_scale, shared_expert_intermediate_size, the leading
//   dense layers of mlp_layer_types, moe_router_logit_softcapping as
//   router_logit_softcapping (llama.cpp's key; its converter drops it);
// - gating as attention.gate_per_head (vt's key: a GGUF has none, and the
//   gate's width tells), so that a g_proj of the other width is an error.
// Tensor names: g_proj -> attn_gate, mlp.experts.e_score_correction_bias ->
// exp_probs_b.bias, mlp.shared_expert.* -> ffn_*_shexp.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace vt {

struct LagunaMeta {
    std::vector<int32_t> heads;                          // per layer (attention.head_count)
    std::vector<std::pair<std::string, double>> f32s;    // "<arch>.<suffix>" keys
    std::vector<std::pair<std::string, uint64_t>> u32s;
    std::vector<std::pair<std::string, bool>> bools;
};

// The keys of a Laguna text config. Throws VT_ERR_FORMAT naming a key that is
// missing or inconsistent (a per-layer list of the wrong length, a gating
// that is neither), VT_ERR_UNSUPPORTED for what vt does not run (dense
// layers after sparse ones, moe_apply_router_weight_on_input).
LagunaMeta read_laguna_config(const nlohmann::json &cfg, uint64_t n_layer, uint64_t n_head, uint64_t head_dim,
                              const std::string &where);

// The GGUF name (after "blk.<i>.") of a Laguna layer tensor that the common
// table does not map; "" otherwise.
std::string laguna_gguf_name(const std::string &rest);

} // namespace vt
