// A gpt-oss folder (GptOssForCausalLM) as llama.cpp's converter writes it
// (GGUF `gpt-oss`, conversion/gpt_oss.py): the sinks, the router and the
// output projection's bias under their GGUF names, and the experts, which
// transformers keeps as one fused tensor per layer in its own layout:
// gate_up_proj (n_expert, n_embd, 2 n_ff) multiplied as x @ W (transposed
// against nn.Linear), gate and up interleaved (gate columns even, up odd:
// GptOssExperts._apply_gate's [..., ::2] and [..., 1::2]), down_proj
// (n_expert, n_ff, n_embd) likewise transposed, each with a bias per expert
// (gate_up's interleaved the same way). They become copies in GGUF's
// layout: ffn_{gate,up}_exps.weight (n_embd, n_ff, n_expert),
// ffn_down_exps.weight (n_ff, n_embd, n_expert) in the stored float type,
// and their biases as F32 (n_ff or n_embd, n_expert).
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/safetensors.h"

namespace vt {

// The GGUF name of a gpt-oss tensor of its own (rest: the name after
// "model.layers.<i>."), "" when rest is not one.
std::string gpt_oss_gguf_name(const std::string &rest);

// Takes a gpt-oss expert tensor (mlp.experts.gate_up_proj, down_proj and
// their _bias) of layer blk ("blk.<i>."): its GGUF tensors, copies kept in
// store, appended to out. False when rest is not one. Throws VT_ERR_FORMAT
// on a shape that does not fit (naming the tensor), VT_ERR_UNSUPPORTED on a
// type other than F32, F16, BF16.
bool take_gpt_oss_experts(const SafetensorsTensor &t, const std::string &rest, const std::string &blk,
                          std::deque<std::vector<uint8_t>> &store, std::vector<GgufTensorInfo> &out);

} // namespace vt
