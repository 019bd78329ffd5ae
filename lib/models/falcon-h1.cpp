//! Falcon-H1 (FalconH1ForCausalLM; GGUF `falcon-h1`): every block runs
//! attention and a Mamba-2 mixer (models/mamba2.h) side by side on the same
//! normed input and adds both to the residual, then a SwiGLU FFN.
//!
//! Caches: a block holds attention KV and a Mamba state slot at once, and a
//! cache layer has one kind, so each block's Mamba state is a cache layer of
//! its own past the blocks' (Model::extra_cache_owner: n_layer + il, on block
//! il's device); attention reads cache layer il.
//!
//! muP multipliers (transformers' FalconH1Model, its Attention, Mixer and
//! MLP): the embeddings times embedding_multiplier; attention on the input
//! times attention_in_multiplier with K times key_multiplier, its output times
//! attention_out_multiplier; in_proj's output times ssm_in_multiplier and
//! the per-segment ssm_multipliers over [z | x | B | C | dt], the mixer's
//! output times ssm_out_multiplier; the FFN's gate projection times
//! mlp_multipliers[0] before the SiLU and its output times [1]; the logits
//! times lm_head_multiplier. llama.cpp's converter folds all of them into
//! the weights, so a GGUF has none of the keys below and every multiplier is
//! 1. A folder keeps its weights mapped as stored: model/hf-granite-falcon.h
//! writes them as "falcon-h1.<name>_multiplier" keys and the in_proj factors
//! as blk.<i>.ssm_in_scale, and the graph applies them: K's multiplier as
//! part of the attention scale (q . (m k) = m (q . k)), the others as SCALE
//! nodes (the in_proj factors as a MUL inside the mixer).
//! The mixer's gated norm is optional (mamba_rms_norm; the released models
//! have none: y * silu(z)).
//! Reference: transformers/models/falcon_h1/modeling_falcon_h1.py.
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/mamba2.h"

namespace vt {

namespace {
class FalconH1 final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    struct Layer {
        const Tensor *attn_norm = nullptr, *ffn_norm = nullptr;  // (n_embd)
        AttnWeights attn;
        Mamba2Weights ssm;
        FfnWeights ffn;
    };
    struct Multipliers {
        float embedding = 1, lm_head = 1, attention_in = 1, key = 1, attention_out = 1, ssm_out = 1;
        float mlp_gate = 1, mlp_down = 1;
    };
    Tensor *ffn(LayerBuilder &b, Tensor *h, const FfnWeights &w) const;

    Mamba2Shape ssm_;
    Multipliers mul_;
    const Tensor *tok_embd_ = nullptr;     // (n_embd, n_vocab)
    const Tensor *output_norm_ = nullptr;  // (n_embd)
    const Tensor *output_ = nullptr;       // (n_embd, n_vocab); tok_embd_ when tied
    std::vector<Layer> layers_;
};

float multiplier(const Model &m, const char *key) {
    const float v = m.arch_f32(key, 1.0f);
    if (!std::isfinite(v)) fail(VT_ERR_FORMAT, "%s: %s is not a number", m.arch_name().c_str(), key);
    return v;
}

void FalconH1::load(Model &m) {
    read_decoder_hparams(m, kRopeNeox);
    ssm_ = read_mamba2_shape(m);
    Hparams &hp = m.hparams;
    mul_.embedding = multiplier(m, "embedding_multiplier");
    mul_.lm_head = multiplier(m, "lm_head_multiplier");
    mul_.attention_in = multiplier(m, "attention_in_multiplier");
    mul_.key = multiplier(m, "key_multiplier");
    mul_.attention_out = multiplier(m, "attention_out_multiplier");
    mul_.ssm_out = multiplier(m, "ssm_out_multiplier");
    mul_.mlp_gate = multiplier(m, "mlp_gate_multiplier");
    mul_.mlp_down = multiplier(m, "mlp_down_multiplier");
    const int64_t E = hp.n_embd;
    // Cache layers 0..n_layer-1: attention; n_layer + il: block il's Mamba state.
    m.cache_layers.assign(hp.n_layer, LayerCacheSpec{CacheKind::full_attention, 0, hp.n_embd_kv()});
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        m.cache_layers.push_back(mamba2_cache_spec(ssm_));
        m.extra_cache_owner.push_back(il);
    }
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    layers_.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer &l = layers_[il];
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        // The converter names it blk.<i>.ffn_norm, without .weight (as llama.cpp reads it).
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E, false);
        if (!l.ffn_norm) l.ffn_norm = load_norm(m, p + "ffn_norm", E);
        l.attn = load_attn_weights(m, il);
        Mamba2LoadOptions o;
        o.norm = false;  // mamba_rms_norm: optional
        l.ssm = load_mamba2_weights(m, il, ssm_, o);
        l.ssm.in_scale = load_norm(m, p + "ssm_in_scale", ssm_.in_rows(), false);
        l.ffn = load_ffn_weights(m, il);
    }
}

Tensor *FalconH1::ffn(LayerBuilder &b, Tensor *h, const FfnWeights &w) const {
    if (mul_.mlp_gate == 1.0f && mul_.mlp_down == 1.0f) return b.ffn(h, w, Activation::silu);
    // FalconH1MLP: down(up(x) * silu(gate(x) * m0)) * m1.
    Tensor *gate = b.scale(b.linear(w.gate, h), mul_.mlp_gate);
    Tensor *up = b.linear(w.up, h);
    Tensor *a = b.graph().op<Op::SWIGLU>(DType::F32, {gate->ne[0], b.n_tokens()}, {gate, up});
    return b.scale(b.linear(w.down, a), mul_.mlp_down);
}

Tensor *FalconH1::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    const uint32_t L = m.hparams.n_layer;
    const float attn_scale = mul_.key / std::sqrt((float)m.hparams.head_dim);
    Tensor *x = b.embed(tok_embd_);
    if (mul_.embedding != 1.0f) x = b.scale(x, mul_.embedding);
    for (uint32_t il = 0; il < L; ++il) {
        const Layer &l = layers_[il];
        Tensor *h = b.rms_norm(x, l.attn_norm);
        Tensor *ha = mul_.attention_in != 1.0f ? b.scale(h, mul_.attention_in) : h;
        Tensor *att = b.attention(il, ha, l.attn, b.rope(), attn_scale);
        if (mul_.attention_out != 1.0f) att = b.scale(att, mul_.attention_out);
        Tensor *ssm = mamba2_mixer(b, L + il, h, l.ssm, ssm_);
        if (mul_.ssm_out != 1.0f) ssm = b.scale(ssm, mul_.ssm_out);
        x = b.add(x, b.add(att, ssm));
        x = b.add(x, ffn(b, b.rms_norm(x, l.ffn_norm), l.ffn));
    }
    return b.logits(x, output_norm_, output_, mul_.lm_head);
}
} // namespace

std::unique_ptr<Architecture> make_falcon_h1_architecture() { return std::make_unique<FalconH1>(); }

} // namespace vt
