//! Phi-3 / Phi-3.5 / Phi-4 (dense): the pre-norm decoder with a fused qkv
//! projection and a fused gate_up projection (gate first), rotary embedding
//! on NeoX halves and, for the long-context models, LongRoPE: per-pair
//! frequency factors, rope_factors_short or rope_factors_long, chosen as
//! llama.cpp does by whether the context a sequence may reach exceeds the
//! original training context, and cos/sin scaled by rope.scaling.attn_factor.
//! The fused matrices are split by rows at load (no copy unless repacked).
//! llama.cpp ignores Phi's sliding window (its converter's value is not what
//! the model was trained with, ggml-org/llama.cpp#13676); so does vt.
//! Reference: transformers/models/phi3/modeling_phi3.py.
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/layers.h"

namespace vt {
namespace {

struct Phi3Layer {
    const Tensor *attn_norm, *ffn_norm;  // (n_embd)
    AttnWeights attn;
    FfnWeights ffn;
};

class Phi3 final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    const Tensor *tok_embd_ = nullptr, *output_norm_ = nullptr, *output_ = nullptr;
    const Tensor *rope_long_ = nullptr, *rope_short_ = nullptr;  // (n_rot/2) each, or null
    std::vector<Phi3Layer> layers_;
};

void Phi3::load(Model &m) {
    read_decoder_hparams(m, kRopeNeox);
    full_attention_cache(m);
    const Hparams &hp = m.hparams;
    const int64_t E = hp.n_embd, V = hp.n_vocab, F = hp.n_ff;
    const int64_t Q = (int64_t)hp.n_head * hp.head_dim, KV = hp.n_embd_kv();
    tok_embd_ = m.matmul_weight("token_embd.weight", {E, V});
    output_norm_ = load_norm(m, "output_norm.weight", E);
    output_ = m.matmul_weight("output.weight", {E, V}, false);
    if (!output_) output_ = tok_embd_;
    rope_long_ = load_norm(m, "rope_factors_long.weight", hp.n_rot / 2, false);
    rope_short_ = load_norm(m, "rope_factors_short.weight", hp.n_rot / 2, false);
    if (!rope_long_ != !rope_short_) fail(VT_ERR_FORMAT, "phi3: rope_factors_long and _short come together");
    layers_.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        Phi3Layer &l = layers_[i];
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        if (m.gguf().find_tensor(p + "attn_qkv.weight")) {
            const std::string qkv = p + "attn_qkv.weight";
            l.attn.wq = m.matmul_weight_rows(qkv, E, Q + 2 * KV, 0, Q);
            l.attn.wk = m.matmul_weight_rows(qkv, E, Q + 2 * KV, Q, KV);
            l.attn.wv = m.matmul_weight_rows(qkv, E, Q + 2 * KV, Q + KV, KV);
            l.attn.wo = m.matmul_weight(p + "attn_output.weight", {Q, E});
        } else {
            l.attn = load_attn_weights(m, i);
        }
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        const std::string up = p + "ffn_up.weight";
        l.ffn.gate = m.matmul_weight_rows(up, E, 2 * F, 0, F);
        l.ffn.up = m.matmul_weight_rows(up, E, 2 * F, F, F);
        l.ffn.down = m.matmul_weight(p + "ffn_down.weight", {F, E});
    }
}

Tensor *Phi3::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    const RopeParams rope = b.rope();
    const Tensor *factors = a.n_ctx > (int64_t)m.hparams.rope_n_ctx_orig ? rope_long_ : rope_short_;
    const float scale = 1.0f / std::sqrt((float)m.hparams.head_dim);
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) {
        const Phi3Layer &l = layers_[il];
        x = b.add(x, b.attention(il, b.rms_norm(x, l.attn_norm), l.attn, rope, scale, factors));
        x = b.add(x, b.ffn(b.rms_norm(x, l.ffn_norm), l.ffn, Activation::silu));
    }
    return b.logits(x, output_norm_, output_);
}

} // namespace

std::unique_ptr<Architecture> make_phi3_architecture() { return std::make_unique<Phi3>(); }

} // namespace vt
