//! Llama family (Llama 1-3.x, SmolLM, Mistral as llama.cpp converts it, ...).
//! Pre-norm decoder: RMSNorm -> attention with RoPE and grouped-query heads
//! -> residual -> RMSNorm -> SwiGLU MLP -> residual; output tied to the token
//! embedding when the file has no output.weight. Llama 3.1+ rope scaling
//! comes as per-pair frequency factors (rope_freqs.weight, which
//! convert_hf_to_gguf.py computes from rope_scaling's llama3 terms).
//! Paper: https://arxiv.org/abs/2302.13971; reference implementation:
//! transformers/models/llama/modeling_llama.py; GGUF tensor names as written
//! by llama.cpp's convert_hf_to_gguf.py (Q/K rows permuted for adjacent-pair
//! RoPE, hence kRopeAdjacent).
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/layers.h"

namespace vt {
namespace {

struct LlamaLayer {
    const Tensor *attn_norm;  // (n_embd)
    AttnWeights attn;
    const Tensor *ffn_norm;   // (n_embd)
    FfnWeights ffn;
};

class Llama final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    const Tensor *tok_embd_ = nullptr;     // (n_embd, n_vocab)
    const Tensor *output_norm_ = nullptr;  // (n_embd)
    const Tensor *output_ = nullptr;       // (n_embd, n_vocab); tok_embd_ when tied
    const Tensor *rope_freqs_ = nullptr;   // (n_rot/2) or null
    std::vector<LlamaLayer> layers_;
};

void Llama::load(Model &m) {
    read_decoder_hparams(m, kRopeAdjacent);
    full_attention_cache(m);
    const Hparams &hp = m.hparams;
    const int64_t E = hp.n_embd, V = hp.n_vocab;
    tok_embd_ = m.matmul_weight("token_embd.weight", {E, V});
    output_norm_ = load_norm(m, "output_norm.weight", E);
    output_ = m.matmul_weight("output.weight", {E, V}, false);
    if (!output_) output_ = tok_embd_;
    rope_freqs_ = load_norm(m, "rope_freqs.weight", hp.n_rot / 2, false);
    layers_.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        LlamaLayer &l = layers_[i];
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        l.attn = load_attn_weights(m, i);
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        l.ffn = load_ffn_weights(m, i);
    }
}

Tensor *Llama::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    const RopeParams rope = b.rope();
    const float scale = 1.0f / std::sqrt((float)m.hparams.head_dim);
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) {
        const LlamaLayer &l = layers_[il];
        x = b.add(x, b.attention(il, b.rms_norm(x, l.attn_norm), l.attn, rope, scale, rope_freqs_));
        x = b.add(x, b.ffn(b.rms_norm(x, l.ffn_norm), l.ffn, Activation::silu));
    }
    return b.logits(x, output_norm_, output_);
}

} // namespace

std::unique_ptr<Architecture> make_llama_architecture() { return std::make_unique<Llama>(); }

} // namespace vt
