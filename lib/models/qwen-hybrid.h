// The hybrid decoder of Qwen3-Next and Qwen3.5 / Qwen3.6 (dense and MoE):
// pre-norm blocks whose mixer is a Gated DeltaNet (models/gated-deltanet.h)
// in most layers and, every few layers, gated full attention: q_proj emits
// [q | gate] per head, per-head q/k RMSNorms, rope on the first
// rope.dimension_count dims of each head (NeoX halves; Qwen3.5's M-RoPE
// sections reduce to it for text, all three positions being the token's),
// the output times sigmoid(gate). Norm weights are zero-centred in the
// checkpoints (x * (1 + w)); GGUF files hold 1 + w, and so does a folder once
// read (model/hf-folder.cpp), except the delta net's gated norm. The FFN is
// dense (Qwen3.5) or experts with a sigmoid-gated shared expert (Qwen3-Next,
// Qwen3.5-MoE). The files qwen35.cpp, qwen35moe.cpp and qwen3next.cpp state
// their differences. Reference: transformers' models/qwen3_next and
// models/qwen3_5{,_moe}/modeling_*.py.
#pragma once

#include <optional>
#include <vector>

#include "models/gated-deltanet.h"
#include "models/mtp-head.h"

namespace vt {

struct QwenHybridTraits {
    const char *name;
    // Which K head a V head reads in a GGUF file: llama.cpp's converter
    // reorders Qwen3.5's V heads to tile the K heads (kDeltaHeadsTiled),
    // Qwen3-Next's it keeps in transformers' order. A folder is always in
    // transformers' order (kDeltaHeadsInterleaved).
    int32_t gguf_k_heads;
};

class QwenHybrid final : public Architecture {
public:
    explicit QwenHybrid(const QwenHybridTraits &t) : traits_(t) {}
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;
    bool has_mtp() const override { return mtp_.has_value(); }
    Tensor *build_mtp(const Model &m, const ForwardArgs &a) const override;

private:
    struct Layer {
        bool recurrent = false;
        const Tensor *attn_norm = nullptr, *post_norm = nullptr;  // (n_embd), 1 + w
        GdnWeights gdn;   // recurrent layers
        AttnWeights attn; // the others: wq (n_embd, 2 n_head head_dim), [q | gate] per head
        FfnWeights ffn;
        MoeWeights moe;
    };
    // The multi-token-prediction layer (models/mtp-head.h; Qwen3.5's mtp.*,
    // the nextn block llama.cpp's converter keeps after the layers): one
    // full-attention block of the model's kind, norms 1 + w. Its cache is
    // layer n_layer (Model::mtp_cache).
    struct Mtp {
        MtpHead head;
        Layer layer;
    };
    void load_layer(Model &m, uint32_t il, bool recurrent, Layer &l);
    Tensor *block(LayerBuilder &b, uint32_t il, Tensor *x, const Layer &l) const;
    Tensor *gated_attention(LayerBuilder &b, uint32_t il, Tensor *h, const AttnWeights &w) const;

    QwenHybridTraits traits_;
    GdnShape gdn_;
    int32_t k_heads_ = kDeltaHeadsInterleaved;
    const Tensor *tok_embd_ = nullptr;     // (n_embd, n_vocab)
    const Tensor *output_norm_ = nullptr;  // (n_embd)
    const Tensor *output_ = nullptr;       // (n_embd, n_vocab); tok_embd_ when tied
    std::vector<Layer> layers_;
    std::optional<Mtp> mtp_;
};

} // namespace vt
