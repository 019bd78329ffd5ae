// The multi-token-prediction (MTP / next-n) head that Qwen3.5's `mtp.*` and
// DeepSeek-V3's next-n layers share (llama.cpp's converter writes both as
// blk.<n_layer>.nextn.*): the next token's normed embedding and the trunk's
// final hidden state at the position before, each normed, concatenated and
// projected back to n_embd (eh_proj); then one decoder block of the model's
// own kind (the architecture builds it), a norm (shared_head_norm) and the
// model's output. The embedding and output are the model's unless the layer
// carries its own copies (DeepSeek-V3's checkpoints do).
// Reference: transformers/modeling_layers.py (MtpLayer, MtpModel);
// vLLM's deepseek_mtp.py and qwen3_next_mtp.py.
#pragma once

#include <cstdint>

#include "models/layers.h"

namespace vt {

struct MtpHead {
    const Tensor *eh_proj = nullptr;                // (2 n_embd, n_embd): [embedding | hidden]
    const Tensor *enorm = nullptr, *hnorm = nullptr;  // (n_embd)
    const Tensor *head_norm = nullptr;              // (n_embd): shared_head_norm, else the model's final norm
    const Tensor *embd = nullptr, *head = nullptr;  // its own embedding and output, else the model's
};

// blk.<il>.nextn.{eh_proj, enorm, hnorm} and, where the file has them,
// shared_head_norm, embed_tokens and shared_head_head (else the model's
// output_norm, tok_embd and output).
MtpHead load_mtp_head(Model &m, uint32_t il, const Tensor *tok_embd, const Tensor *output,
                      const Tensor *output_norm);

// The block's input (n_embd, n): eh_proj([enorm(embed(tokens)); hnorm(hidden_in)]).
Tensor *mtp_block_input(LayerBuilder &b, const MtpHead &h);

// The logits of the block's output x.
inline Tensor *mtp_logits(LayerBuilder &b, const MtpHead &h, Tensor *x) {
    return b.logits(x, h.head_norm, h.head);
}

} // namespace vt
