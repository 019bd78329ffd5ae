// A NemotronH folder (NemotronHForCausalLM) as llama.cpp's converter writes
// it (GGUF nemotron_h; vt reads nemotron_h_moe files with the same
// architecture): the layer kinds (hybrid_override_pattern "M-*E..." or
// transformers 5's layers_block_type list) as per-layer
// attention.head_count_kv (0 but for attention) and feed_forward_length (0
// but for MLP and MoE blocks); the Mamba-2 keys (model/hf-mamba2.h); the
// checkpoint's names (backbone.layers.<i>.mixer.*, backbone.embeddings,
// backbone.norm_f; or model.* as transformers may save them) as the generic
// table's (mixer.q_proj -> self_attn.q_proj, mixer.experts -> mlp.experts...)
// so that the shared mapping and the expert stacking apply.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/hf-mamba2.h"

namespace vt {

struct NemotronHMeta {
    std::vector<char> kinds;     // per layer: 'M', '*', '-', 'E'
    Mamba2Config ssm;
    bool moe = false;            // some layer is 'E'
};
// Throws VT_ERR_FORMAT naming a missing or unknown pattern entry.
NemotronHMeta read_nemotron_h_config(const nlohmann::json &cfg, const std::string &where);

// cfg with the generic names added: num_hidden_layers from the pattern,
// rms_norm_eps = layer_norm_epsilon, DeepSeek-V3's scoring_func sigmoid; the
// MoE keys dropped when no layer has experts (transformers saves their
// defaults).
nlohmann::json nemotron_h_config_aliases(const nlohmann::json &cfg, const std::string &where);

// The checkpoint's tensor name as the generic one ("backbone.layers.3.mixer.
// q_proj.weight" -> "model.layers.3.self_attn.q_proj.weight"); kinds says
// which mixer a layer has. Names it does not know come back unchanged.
std::string nemotron_h_tensor_name(const std::string &hf, const std::vector<char> &kinds);

// The GGUF name of a NemotronH-only tensor (rest: the name after
// "model.layers.<i>." once renamed): the Mamba-2 mixer's and the latent
// projections; "" when rest is not one.
std::string nemotron_h_gguf_name(const std::string &rest);

} // namespace vt
