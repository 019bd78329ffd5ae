// The linear-attention layers of a Hugging Face folder (Qwen3-Next, Qwen3.5 /
// Qwen3.6: Gated DeltaNet) as llama.cpp's converter writes them: config keys
// to "<arch>.ssm.*" and attention.recurrent_layers, tensor names to
// blk.<i>.{attn_qkv, attn_gate, ssm_*}, A_log to ssm_a = -exp(A_log), the
// conv weight (C, 1, K) squeezed to (C, K), Qwen3-Next's fused in_proj_qkvz
// (per K head [q | k | v | z]) split into attn_qkv ([all q | all k | all v])
// and attn_gate (copies). V heads stay in transformers' order (the
// architecture reads them so); the norms are zero-centred (x * (1 + w)) except
// the delta net's gated norm.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/gguf.h"
#include "model/safetensors.h"

namespace vt {

struct GdnConfig {
    uint64_t nk = 0, nv = 0, dk = 0, dv = 0, kernel = 0;
};

// The linear-attention keys of cfg (nothing when it has no linear_* keys),
// as (key suffix, value) for "<arch>.<suffix>"; recurrent layers from
// layer_types ("linear_attention") or full_attention_interval. Throws
// VT_ERR_FORMAT on missing or inconsistent values.
struct GdnMeta {
    bool present = false;
    GdnConfig shape;
    std::vector<bool> recurrent;  // per layer
    uint64_t rope_dims = 0;       // head_dim * partial_rotary_factor (0: all)
    uint64_t shared_ff = 0;       // shared_expert_intermediate_size (0: none)
};
GdnMeta read_gdn_config(const nlohmann::json &cfg, uint64_t n_layer, uint64_t head_dim, const std::string &where);

// The GGUF name of a linear-attention tensor (rest: the name after
// "model.layers.<i>."), "" when rest is not one.
std::string gdn_gguf_name(const std::string &rest);

// Qwen3-Next's in_proj_qkvz (nk (2 dk + 2 r dv), n_embd), r = nv / nk, as
// attn_qkv and attn_gate copies (kept in store), appended to out.
void split_qkvz(const SafetensorsTensor &t, const GdnConfig &s, const std::string &blk,
                std::deque<std::vector<uint8_t>> &store, std::vector<GgufTensorInfo> &out);

} // namespace vt
