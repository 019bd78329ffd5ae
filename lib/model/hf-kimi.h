// A Kimi-Linear folder (KimiLinearForCausalLM) as llama.cpp's converter
// writes it (GGUF `kimi-linear`): KimiLinearConfig's own key names turned
// back into the ones the generic reader knows (its attribute_map), its
// routing stated as DeepSeek-V3's, the KDA shape and layer kinds as
// ssm.conv_kernel, kda.head_dim and a per-layer attention.head_count_kv (0 for
// a KDA layer, 1 for MLA), and the checkpoint's tensor names as the GGUF's.
// The conv weights stay separate per q, k and v, A_log becomes ssm_a =
// -exp(A_log) (hf-folder.cpp), kv_b_proj is split as DeepSeek's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace vt {

// cfg with the generic names added where only Kimi's are present
// (model_max_length -> max_position_embeddings, num_experts_per_token ->
// num_experts_per_tok, num_shared_experts -> n_shared_experts,
// moe_renormalize -> norm_topk_prob, num_expert_group -> n_group), the
// router as scoring_func sigmoid and topk_method noaux_tc (transformers
// always limits to topk_group of n_group groups), and first_k_dense_replace
// from mlp_layer_types. Throws VT_ERR_UNSUPPORTED for a router activation
// other than sigmoid or dense layers after sparse ones.
nlohmann::json kimi_config_aliases(const nlohmann::json &cfg, const std::string &where);

struct KimiMeta {
    uint64_t head_dim = 0;          // kda.head_dim
    uint64_t kernel = 0;            // ssm.conv_kernel
    std::vector<int32_t> kv_heads;  // attention.head_count_kv per layer: 0 KDA, 1 MLA
};
// The KDA keys of cfg (linear_attn_config, else transformers' linear_*
// keys); layer kinds from layer_types, else linear_attn_config's 1-based
// kda_layers / full_attn_layers, else transformers' default. Throws
// VT_ERR_FORMAT on inconsistent values, VT_ERR_UNSUPPORTED where the KDA
// head count differs from num_attention_heads (the GGUF has no key for it).
KimiMeta read_kimi_config(const nlohmann::json &cfg, uint64_t n_layer, uint64_t n_head, const std::string &where);

// The GGUF name of a Kimi-specific tensor (rest: the name after
// "model.layers.<i>."), "" when rest is not one.
std::string kimi_gguf_name(const std::string &rest);

} // namespace vt
