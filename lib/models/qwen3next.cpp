//! Qwen3-Next: the hybrid decoder with experts and a sigmoid-gated shared expert; its checkpoints fuse
//! [q k v z] and [b a] per K head (the GGUF keeps b and a fused as ssm_ba) and llama.cpp's converter
//! keeps the V heads in transformers' order.
//! Reference: transformers/models/qwen3_next; models/qwen-hybrid.h has the block.
#include "models/qwen-hybrid.h"

namespace vt {

std::unique_ptr<Architecture> make_qwen3next_architecture() {
    return std::make_unique<QwenHybrid>(QwenHybridTraits{"qwen3next", kDeltaHeadsInterleaved});
}

} // namespace vt
