// An LFM2 or LFM2-MoE folder (Lfm2ForCausalLM, Lfm2MoeForCausalLM) as
// llama.cpp's converter writes it (GGUF `lfm2`, `lfm2moe`): the config's own
// key names turned into the ones the generic reader knows, LFM2's
// auto-adjusted FFN width computed as transformers does, the layer kinds as
// a per-layer attention.head_count_kv (0 for a short-conv layer), the conv
// width as shortconv.l_cache, the router as sigmoid with leading dense
// layers; the checkpoint's tensor names as the GGUF's (its conv weight
// (C, 1, K) becomes an F32 (K, C) copy in hf-folder.cpp, its final
// embedding_norm token_embd_norm).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace vt {

// cfg with the generic names added: norm_eps -> rms_norm_eps, block_ff_dim
// -> intermediate_size, num_dense_layers -> first_k_dense_replace, the
// router as scoring_func sigmoid, rope_theta 1e6 (LFM2's default) where the
// config has none. adjust_ff (dense LFM2): intermediate_size becomes the
// FFN width transformers' Lfm2MLP computes (block_auto_adjust_ff_dim,
// block_ffn_dim_multiplier, block_multiple_of with their defaults); LFM2-MoE's
// dense layers use intermediate_size as it is. Throws VT_ERR_FORMAT on
// values of the wrong type or range.
nlohmann::json lfm2_config_aliases(const nlohmann::json &cfg, bool adjust_ff, const std::string &where);

struct Lfm2Meta {
    uint64_t l_cache = 0;            // shortconv.l_cache
    std::vector<int32_t> kv_heads;   // attention.head_count_kv per layer: 0 for a conv layer
};
// The conv width and layer kinds of cfg (layer_types "conv" / "full_attention",
// else full_attn_idxs, else every layer attention as transformers'
// default). Throws VT_ERR_FORMAT.
Lfm2Meta read_lfm2_config(const nlohmann::json &cfg, uint64_t n_layer, uint64_t n_head_kv, const std::string &where);

// The GGUF name of an LFM2 tensor (rest: the name after "model.layers.<i>."),
// "" when rest is not one.
std::string lfm2_gguf_name(const std::string &rest);

} // namespace vt
