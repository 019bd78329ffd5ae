// The pre-norm decoder that Llama made common: x += attn(rms_norm(x)),
// x += ffn(rms_norm(x)), then rms_norm and the output projection (tied to
// the token embedding when the file has no output.weight). Architectures that
// differ from it only in what their attention block carries (q/k/v biases,
// per-head q/k norms, rope layout and frequency factors, fused projections)
// are a file each that states those differences (llama.cpp, qwen2.cpp,
// qwen3.cpp, phi3.cpp). A file with experts (expert_count > 0) has a
// mixture-of-experts FFN in its layers instead (Mixtral as `llama`,
// qwen3moe.cpp, olmoe.cpp).
#pragma once

#include <memory>
#include <vector>

#include "models/layers.h"

namespace vt {

struct DecoderTraits {
    const char *name;        // for messages
    int32_t rope_mode;       // how the converter laid out Q and K
    bool qkv_bias = false;   // attn_{q,k,v}.bias required
    bool qk_norm = false;    // attn_{q,k}_norm.weight required
    bool rope_freqs = false; // rope_freqs.weight (Llama 3.1+) used when present
    // LongRoPE (Phi-3): rope_factors_short/_long, the long ones when the
    // context a sequence may reach exceeds the original one (llama.cpp's rule).
    bool long_rope = false;
    bool sliding_window = true;  // attention.sliding_window applies to every layer
    // attn_{q,k}_norm over the whole projection (OLMoE), not per head.
    bool qk_norm_full = false;
    MoeDefaults moe{};           // routing defaults where the file has experts
};

class PreNormDecoder final : public Architecture {
public:
    explicit PreNormDecoder(const DecoderTraits &traits) : traits_(traits) {}
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    struct Layer {
        const Tensor *attn_norm, *ffn_norm;  // (n_embd)
        AttnWeights attn;
        FfnWeights ffn;   // dense layers
        MoeWeights moe;   // mixture-of-experts layers (router set)
    };
    DecoderTraits traits_;
    const Tensor *tok_embd_ = nullptr;     // (n_embd, n_vocab)
    const Tensor *output_norm_ = nullptr;  // (n_embd)
    const Tensor *output_ = nullptr;       // (n_embd, n_vocab); tok_embd_ when tied
    const Tensor *rope_freqs_ = nullptr;   // (n_rot/2) or null
    const Tensor *rope_long_ = nullptr;    // (n_rot/2) or null: long_rope only
    std::vector<Layer> layers_;
};

} // namespace vt
