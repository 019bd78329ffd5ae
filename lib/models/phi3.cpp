//! Phi-3 / Phi-3.5 / Phi-4 (dense): the pre-norm decoder (models/decoder.h)
//! with a fused qkv projection and a fused gate_up projection (gate first;
//! layers.h splits both by rows at load), rotary embedding on NeoX halves
//! and, for the long-context models, LongRoPE: frequency factors
//! rope_factors_short or _long, picked as llama.cpp does by whether the
//! context a sequence may reach exceeds the original training context, and
//! cos/sin scaled by rope.scaling.attn_factor (read for every model).
//! llama.cpp ignores Phi's sliding window (its converter's value is not what
//! the model was trained with, ggml-org/llama.cpp#13676); so does vt.
//! Reference: transformers/models/phi3/modeling_phi3.py.
#include "models/decoder.h"

namespace vt {

std::unique_ptr<Architecture> make_phi3_architecture() {
    DecoderTraits t{"phi3", kRopeNeox};
    t.long_rope = true;
    t.sliding_window = false;
    return std::make_unique<PreNormDecoder>(t);
}

} // namespace vt
