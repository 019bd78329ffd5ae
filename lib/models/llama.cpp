//! Llama family (Llama 1-3.x, SmolLM, Mistral as llama.cpp converts it, ...):
//! the plain pre-norm decoder (models/decoder.h) with RoPE on adjacent pairs
//! (convert_hf_to_gguf.py permutes the Q/K rows for it). Llama 3.1+ rope
//! scaling comes as per-pair frequency factors, rope_freqs.weight, which the
//! converter computes from rope_scaling's llama3 terms. Mixtral is this
//! architecture with experts (softmax router, the chosen two renormalized).
//! Paper: https://arxiv.org/abs/2302.13971; reference implementation:
//! transformers/models/llama/modeling_llama.py.
#include "models/decoder.h"

namespace vt {

std::unique_ptr<Architecture> make_llama_architecture() {
    DecoderTraits t{"llama", kRopeAdjacent};
    t.rope_freqs = true;
    return std::make_unique<PreNormDecoder>(t);
}

} // namespace vt
