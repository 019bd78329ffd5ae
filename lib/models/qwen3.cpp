//! Qwen3 (dense): the pre-norm decoder (models/decoder.h) without biases,
//! with a per-head RMSNorm on queries and keys before rotary embedding on
//! NeoX halves. Reference: transformers/models/qwen3/modeling_qwen3.py.
#include "models/decoder.h"

namespace vt {

std::unique_ptr<Architecture> make_qwen3_architecture() {
    DecoderTraits t{"qwen3", kRopeNeox};
    t.qk_norm = true;
    return std::make_unique<PreNormDecoder>(t);
}

} // namespace vt
