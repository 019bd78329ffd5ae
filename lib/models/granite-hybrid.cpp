//! Granite 4.0-H (transformers' granitemoehybrid, GraniteMoeHybridForCausalLM;
//! GGUF `granitehybrid`): pre-norm blocks whose mixer is Mamba-2
//! (models/mamba2.h) or, in a few layers, attention; then experts plus a
//! shared SwiGLU MLP (or the shared MLP alone in a dense model). Which layers
//! are attention: attention.head_count_kv is a list, 0 for Mamba.
//!
//! muP multipliers, as transformers applies them and the converter writes
//! them (keys, not folded): the embeddings times embedding_scale; attention
//! scores times attention.scale (attention_multiplier) instead of
//! 1/sqrt(head_dim); each branch (mixer, FFN) times residual_scale before its
//! residual add; the logits divided by logit_scale (logits_scaling).
//!
//! Router: softmax over the top-k logits (GraniteMoeHybridTopKRouter), which
//! is softmax over all experts then the chosen renormalised.
//!
//! Position: the released 4.0-H models use none ("nope"); the converter
//! writes rope.scaling.finetuned false for every hybrid Granite (llama.cpp
//! reads absent as true), and permutes Q and K as Llama's (adjacent pairs).
//! Reference: transformers/models/granitemoehybrid/modeling_granitemoehybrid.py.
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/mamba2.h"

namespace vt {

namespace {
class GraniteHybrid final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    struct Layer {
        bool mamba = false;
        const Tensor *attn_norm = nullptr, *ffn_norm = nullptr;  // (n_embd)
        Mamba2Weights ssm;  // Mamba layers
        AttnWeights attn;   // the others
        FfnWeights ffn;     // dense models: the shared MLP
        MoeWeights moe;     // with experts: they and the shared MLP (moe.shared)
    };
    Tensor *attention(LayerBuilder &b, uint32_t il, Tensor *h, const AttnWeights &w) const;

    Mamba2Shape ssm_;
    float embedding_scale_ = 1.0f, attention_scale_ = 1.0f, residual_scale_ = 1.0f, logit_scale_ = 1.0f;
    bool rope_ = false;
    const Tensor *tok_embd_ = nullptr;     // (n_embd, n_vocab)
    const Tensor *output_norm_ = nullptr;  // (n_embd)
    const Tensor *output_ = nullptr;       // (n_embd, n_vocab); tok_embd_ when tied
    std::vector<Layer> layers_;
};

// A multiplier key; the converter writes none for 0 ("none"), as llama.cpp reads it.
float multiplier(const Model &m, const char *key) {
    const float v = m.arch_f32(key, 1.0f);
    if (!std::isfinite(v)) fail(VT_ERR_FORMAT, "%s: %s is not a number", m.arch_name().c_str(), key);
    return v == 0.0f ? 1.0f : v;
}

void GraniteHybrid::load(Model &m) {
    read_decoder_hparams(m, kRopeAdjacent);
    read_moe_hparams(m, {kMoeSoftmax, true});
    ssm_ = read_mamba2_shape(m);
    Hparams &hp = m.hparams;
    const std::vector<uint32_t> kv_heads = read_head_count_kv(m);
    embedding_scale_ = multiplier(m, "embedding_scale");
    residual_scale_ = multiplier(m, "residual_scale");
    logit_scale_ = multiplier(m, "logit_scale");
    attention_scale_ = m.arch_f32("attention.scale", 0.0f);
    if (!(attention_scale_ > 0.0f) || !std::isfinite(attention_scale_))
        attention_scale_ = 1.0f / std::sqrt((float)hp.head_dim);
    rope_ = m.arch_bool("rope.scaling.finetuned", true);
    const int64_t E = hp.n_embd;
    m.cache_layers.assign(hp.n_layer, LayerCacheSpec{CacheKind::full_attention, 0, hp.n_embd_kv()});
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    layers_.resize(hp.n_layer);
    bool any_mamba = false;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer &l = layers_[il];
        l.mamba = kv_heads[il] == 0;
        any_mamba |= l.mamba;
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        if (l.mamba) {
            m.cache_layers[il] = mamba2_cache_spec(ssm_);
            l.ssm = load_mamba2_weights(m, il, ssm_);
        } else {
            l.attn = load_attn_weights(m, il);
        }
        if (is_moe_layer(m, il)) {
            l.moe = load_moe_weights(m, il);
            if (!l.moe.shared.gate)
                fail(VT_ERR_FORMAT, "%s: %sffn_{gate,up,down}_shexp (the shared MLP) are required",
                     m.arch_name().c_str(), p.c_str());
        } else {
            l.ffn = load_ffn_weights(m, il);
        }
    }
    if (!any_mamba) fail(VT_ERR_FORMAT, "%s: no Mamba layer (attention.head_count_kv has no 0)", m.arch_name().c_str());
}

Tensor *GraniteHybrid::attention(LayerBuilder &b, uint32_t il, Tensor *h, const AttnWeights &w) const {
    if (rope_) return b.attention(il, h, w, b.rope(), attention_scale_);
    // No position encoding: attend() without its rope.
    Graph &g = b.graph();
    const Hparams &hp = b.model().hparams;
    const int64_t hd = hp.head_dim, H = hp.n_head, HK = hp.n_head_kv, n = b.n_tokens();
    const ForwardArgs &a = b.args();
    Tensor *q = g.reshape(b.linear(w.wq, h, w.bq), {hd, H, n});
    Tensor *k = g.reshape(b.linear(w.wk, h, w.bk), {hd, HK, n});
    Tensor *v = g.reshape(b.linear(w.wv, h, w.bv), {hd, HK, n});
    Tensor *att = g.op<Op::ATTN_PAGED>(DType::F32, {hd, H, n},
                                       {q, k, v, &(*a.k_cache)[il], &(*a.v_cache)[il], a.kv_index[il], nullptr},
                                       {attention_scale_, attention_window(b.model().cache_layers[il]),
                                        (int32_t)a.n_ctx});
    return b.linear(w.wo, g.reshape(att, {hd * H, n}));
}

Tensor *GraniteHybrid::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    Tensor *x = b.embed(tok_embd_);
    if (embedding_scale_ != 1.0f) x = b.scale(x, embedding_scale_);
    auto residual = [&](Tensor *y) { return residual_scale_ != 1.0f ? b.scale(y, residual_scale_) : y; };
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) {
        const Layer &l = layers_[il];
        Tensor *h = b.rms_norm(x, l.attn_norm);
        x = b.add(x, residual(l.mamba ? mamba2_mixer(b, il, h, l.ssm, ssm_) : attention(b, il, h, l.attn)));
        x = b.add(x, residual(b.ffn_or_moe(b.rms_norm(x, l.ffn_norm), l.ffn, l.moe, Activation::silu)));
    }
    return b.logits(x, output_norm_, output_, 1.0f / logit_scale_);
}
} // namespace

std::unique_ptr<Architecture> make_granite_hybrid_architecture() { return std::make_unique<GraniteHybrid>(); }

} // namespace vt
