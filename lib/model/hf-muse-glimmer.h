// A Muse Glimmer folder (MuseGlimmerForConditionalGeneration -> "muse-glimmer":
// its text model; the vision tower, adapter and projection are not read) as
// llama.cpp's converter writes it (conversion/muse_glimmer.py):
// - the four block norms (centred: x / rms * (1 + w)) as 1 + w under Gemma's
//   names, the final norm as stored (the loader adds the 1);
// - output_multiplier as logit_scale, post_norm_eps as
//   attention.post_norm_rms_epsilon (vt's key: the converter writes none and
//   llama.cpp assumes 1e-8, the default);
// - the weightless q/k norm with qk_scale_factor as attn_q_norm weights of
//   qk_scale_factor and attn_k_norm weights of ones, the converter's tensors;
// - self_attn.gate_proj as attn_gate.
// Which layers have no rope: layer_rope_theta's zeros, which must be the
// full-attention layers (llama.cpp's graph ropes exactly the sliding ones;
// a GGUF has no other way to say it). A non-zero per-layer theta is read as
// transformers reads it: not at all (every rope layer uses rope_theta).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace vt {

struct MuseGlimmerMeta {
    std::vector<std::pair<std::string, double>> f32s;  // "<arch>.<suffix>" keys
    float qk_scale = 1.0f;                             // attn_q_norm's value
};

// The keys of a Muse Glimmer text config. Throws VT_ERR_FORMAT naming a key
// that is missing or of the wrong kind (layer_rope_theta not one number per
// layer), VT_ERR_UNSUPPORTED for rope on a full-attention layer or none on a
// sliding one.
MuseGlimmerMeta read_muse_glimmer_config(const nlohmann::json &cfg, uint64_t n_layer, const std::string &where);

// The GGUF name (after "blk.<i>.") of a Muse Glimmer layer tensor that the
// common and Gemma tables do not map; "" otherwise.
std::string muse_glimmer_gguf_name(const std::string &rest);

} // namespace vt
