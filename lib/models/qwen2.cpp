//! Qwen2 / Qwen2.5: the pre-norm decoder (models/decoder.h) with biases on
//! the q, k and v projections and rotary embedding on NeoX halves (the GGUF
//! converter does not permute Q/K for it).
//! Reference: transformers/models/qwen2/modeling_qwen2.py.
#include "models/decoder.h"

namespace vt {

std::unique_ptr<Architecture> make_qwen2_architecture() {
    DecoderTraits t{"qwen2", kRopeNeox};
    t.qkv_bias = true;
    return std::make_unique<PreNormDecoder>(t);
}

} // namespace vt
