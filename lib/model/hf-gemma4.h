// A Gemma 4 folder (Gemma4ForCausalLM, or the text model of
// Gemma4ForConditionalGeneration: its vision and audio towers are not read)
// as llama.cpp's converter writes it (GGUF `gemma4`, conversion/gemma.py):
// the global layers' head size and KV heads (global_head_dim /
// num_global_key_value_heads, or transformers 5.25's per_layer_config) as
// key_length and a per-layer head_count_kv beside the sliding layers'
// key_length_swa; the "proportional" rope of the global layers as
// rope_freqs factors (1 for a rotated pair, 1e30 for one left in place);
// KV sharing, per-layer embeddings, double-wide MLPs and the parallel
// expert block as the converter's keys; the checkpoint's tensor names as
// the GGUF's (norms are plain w: no 1 + w as Gemma 3's).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace vt {

struct Gemma4Meta {
    std::vector<std::pair<std::string, uint64_t>> u32s;  // "<arch>." keys
    std::vector<std::pair<std::string, double>> f32s;
    std::vector<int32_t> kv_heads;  // attention.head_count_kv per layer
    std::vector<int32_t> n_ff;      // feed_forward_length per layer
    std::vector<float> rope_freqs;  // rope_freqs.weight (global head size / 2)
};
// Reads cfg (the text config). Throws VT_ERR_FORMAT on missing or malformed
// values, VT_ERR_UNSUPPORTED on what vt does not run (bidirectional
// attention, attention biases, another activation or rope type).
Gemma4Meta read_gemma4_config(const nlohmann::json &cfg, uint64_t n_layer, const std::string &where);

// The GGUF name of a Gemma 4 tensor: rest is the name after
// "model.layers.<i>." (layer = true) or after "model." (layer = false);
// "" when it is none of Gemma 4's own (the common names are hf-folder's).
std::string gemma4_gguf_name(const std::string &rest, bool layer);

} // namespace vt
