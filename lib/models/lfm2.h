// Liquid AI's LFM2 (dense, GGUF `lfm2`) and LFM2-MoE (`lfm2moe`): pre-norm
// blocks whose mixer is a gated short conv (models/short-conv.h) in most
// layers and GQA attention in the others (per-head q/k RMSNorms, NeoX rope,
// no biases), each followed by a SwiGLU FFN: dense (LFM2, and LFM2-MoE's
// first leading_dense_block_count layers) or experts (LFM2-MoE: sigmoid
// scores chosen by score + exp_probs_b, weighted by the unbiased scores
// renormalised; no shared expert). Which layers are attention:
// attention.head_count_kv per layer, 0 for a conv layer. The final norm
// is transformers' embedding_norm, stored as token_embd_norm (it normalises
// the last hidden state, not the embeddings). The FFN width is the
// config's intermediate_size auto-adjusted (block_auto_adjust_ff_dim: 2/3,
// times block_ffn_dim_multiplier, up to a multiple of block_multiple_of),
// which the converter stores as feed_forward_length. References:
// transformers' models/lfm2/modeling_lfm2.py and
// models/lfm2_moe/modeling_lfm2_moe.py; llama.cpp's src/models/lfm2.cpp.
#pragma once

#include <vector>

#include "models/short-conv.h"

namespace vt {

struct Lfm2Traits {
    const char *name;
    bool experts;  // lfm2moe: expert_count required; lfm2: none
};

class Lfm2 final : public Architecture {
public:
    explicit Lfm2(const Lfm2Traits &t) : traits_(t) {}
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    struct Layer {
        bool conv = false;
        const Tensor *attn_norm = nullptr, *ffn_norm = nullptr;  // (n_embd): operator_norm, ffn_norm
        ShortConvWeights sc;  // conv layers
        AttnWeights attn;     // the others
        FfnWeights ffn;       // dense layers
        MoeWeights moe;       // the others
    };

    Lfm2Traits traits_;
    const Tensor *tok_embd_ = nullptr;     // (n_embd, n_vocab)
    const Tensor *output_norm_ = nullptr;  // (n_embd): token_embd_norm
    const Tensor *output_ = nullptr;       // (n_embd, n_vocab); tok_embd_ when tied
    std::vector<Layer> layers_;
};

} // namespace vt
