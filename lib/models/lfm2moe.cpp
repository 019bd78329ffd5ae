//! LFM2-MoE (Lfm2MoeForCausalLM, GGUF `lfm2moe`): LFM2's blocks with experts
//! after the first leading_dense_block_count layers. Routing (transformers'
//! Lfm2MoeTopKRouter): sigmoid scores, the top k chosen by score +
//! exp_probs_b (the checkpoint's expert_bias; without it, by score),
//! weighted by the chosen unbiased scores renormalised (expert_weights_norm,
//! on unless the file says otherwise, as llama.cpp always does) times
//! expert_weights_scale. transformers divides by sum + 1e-6, vt by the sum:
//! a relative 1e-6 at sums near 1.
//! Reference: transformers/models/lfm2_moe/modeling_lfm2_moe.py; models/lfm2.h has the block.
#include "models/lfm2.h"

namespace vt {

std::unique_ptr<Architecture> make_lfm2moe_architecture() {
    return std::make_unique<Lfm2>(Lfm2Traits{"lfm2moe", true});
}

} // namespace vt
