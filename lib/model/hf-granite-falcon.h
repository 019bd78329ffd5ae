// The Mamba-2 hybrids with muP multipliers in a Hugging Face folder, mapped to
// the GGUF layout llama.cpp's converter writes (conversion/granite.py,
// GraniteHybridModel; conversion/falcon_h1.py):
// - Granite 4.0-H (GraniteMoeHybridForCausalLM -> "granitehybrid"): Mamba-2
//   or attention per layer_types ("mamba" / "attention" in the real configs,
//   "linear_attention" / "full_attention" as transformers 5 writes them) as
//   a per-layer attention.head_count_kv (0: Mamba), the multipliers as the
//   converter's keys (embedding_scale, attention.scale, residual_scale,
//   logit_scale), rope only for position_embedding_type "rope"
//   (rope.scaling.finetuned). The experts' fused input_linear (n_expert,
//   2 n_ff, n_embd) and output_linear are transformers' gate_up_proj and
//   down_proj (model/hf-experts.h stacks them); the shared MLP's fused
//   input_linear (2 n_ff_shexp, n_embd) becomes ffn_gate_shexp and
//   ffn_up_shexp, views of its two halves.
// - Falcon-H1 (FalconH1ForCausalLM -> "falcon-h1"): the converter folds
//   every muP multiplier into the weights; a folder keeps its weights as
//   stored (mapped, not copied), so the multipliers stay numbers the graph
//   applies: "falcon-h1.<name>_multiplier" keys (vt's own; absent in a
//   converted GGUF, where they are 1) and, per Mamba layer, an F32 tensor
//   blk.<i>.ssm_in_scale (in_rows): ssm_in_multiplier times the per-segment
//   ssm_multipliers over in_proj's [z | x | B | C | dt] rows (transformers'
//   compute_mup_vector).
// The Mamba-2 mixer's own names and shape: model/hf-mamba2.h.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/gguf.h"
#include "model/hf-mamba2.h"
#include "model/safetensors.h"

namespace vt {

struct MupHybridMeta {
    Mamba2Config ssm;
    std::vector<int32_t> kv_heads;                       // Granite: per layer, 0 for Mamba; empty for Falcon-H1
    std::vector<std::pair<std::string, double>> f32s;    // "<arch>.<suffix>" keys
    std::vector<std::pair<std::string, uint64_t>> u32s;
    std::vector<std::pair<std::string, bool>> bools;
    std::vector<float> in_scale;                         // Falcon-H1: blk.<i>.ssm_in_scale; empty for Granite
};

// The keys of a Granite 4.0-H (falcon false) or Falcon-H1 config. n_kv:
// num_key_value_heads. Throws VT_ERR_FORMAT naming a missing or inconsistent
// key, VT_ERR_UNSUPPORTED for what vt does not run (Falcon-H1's norm before
// the gate, a rope type other than plain rope).
MupHybridMeta read_mup_hybrid_config(const nlohmann::json &cfg, bool falcon, uint64_t n_layer, uint64_t n_kv,
                                     const std::string &where);

// The GGUF name (after "blk.<i>.") of a layer tensor of either family: rest
// is the name after "model.layers.<i>."; "" when rest is not one of theirs.
// experts: whether the Granite model has experts (else its shared MLP is the
// dense FFN, as the converter writes it).
std::string mup_hybrid_gguf_name(const std::string &rest, bool falcon, bool experts);

// Granite's fused expert names as transformers' ("block_sparse_moe.
// input_linear.weight" -> "block_sparse_moe.experts.gate_up_proj", output_linear
// -> down_proj), which model/hf-experts.h takes; other names unchanged.
std::string granite_expert_alias(const std::string &hf_name);

// Granite's shared_mlp.input_linear.weight (n_embd, 2 F) as blk.<i>.
// ffn_gate_shexp and ffn_up_shexp (n_embd, F) (ffn_gate and ffn_up without
// experts): views of its halves, appended to out. Throws VT_ERR_FORMAT when
// it is not 2-D with an even row count.
void split_granite_shared(const SafetensorsTensor &t, const std::string &blk, bool experts,
                          std::vector<GgufTensorInfo> &out);

} // namespace vt
