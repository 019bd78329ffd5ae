//! Qwen3.5 (dense; Qwen3_5ForCausalLM and the text model of Qwen3_5ForConditionalGeneration): the
//! hybrid decoder with a dense SwiGLU FFN. llama.cpp's converter tiles the K heads over the V heads (V
//! heads reordered).
//! Reference: transformers/models/qwen3_5; models/qwen-hybrid.h has the block.
#include "models/qwen-hybrid.h"

namespace vt {

std::unique_ptr<Architecture> make_qwen35_architecture() {
    return std::make_unique<QwenHybrid>(QwenHybridTraits{"qwen35", kDeltaHeadsTiled});
}

} // namespace vt
