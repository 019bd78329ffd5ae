//! Qwen3.5 / Qwen3.6 MoE (Qwen3.6-35B-A3B's shape): the hybrid decoder with experts (softmax router,
//! top-k renormalised) and a sigmoid-gated shared expert in every layer. V heads reordered by
//! llama.cpp's converter, as Qwen3.5's.
//! Reference: transformers/models/qwen3_5_moe; models/qwen-hybrid.h has the block.
#include "models/qwen-hybrid.h"

namespace vt {

std::unique_ptr<Architecture> make_qwen35moe_architecture() {
    return std::make_unique<QwenHybrid>(QwenHybridTraits{"qwen35moe", kDeltaHeadsTiled});
}

} // namespace vt
