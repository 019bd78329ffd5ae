//! Qwen3-MoE: Qwen3's attention (per-head q/k RMSNorm, NeoX rope, no
//! biases) with a mixture-of-experts FFN in every layer: softmax router,
//! top-k, the chosen weights renormalized (norm_topk_prob, which every
//! Qwen3-MoE release sets; a file may say otherwise). Reference:
//! transformers/models/qwen3_moe/modeling_qwen3_moe.py.
#include "models/decoder.h"

namespace vt {

std::unique_ptr<Architecture> make_qwen3moe_architecture() {
    DecoderTraits t{"qwen3moe", kRopeNeox};
    t.qk_norm = true;
    t.moe = {kMoeSoftmax, true};
    return std::make_unique<PreNormDecoder>(t);
}

} // namespace vt
