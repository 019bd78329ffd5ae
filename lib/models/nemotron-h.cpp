//! NemotronH (NemotronHForCausalLM; GGUF `nemotron_h`, and `nemotron_h_moe` with experts): a stack of
//! blocks of one mixer each, x + mixer(rmsnorm(x)): Mamba-2 (M, models/mamba2.h), attention without any
//! position encoding (*), a relu2 MLP (-: down(relu(up x)^2)) or relu2 experts (E). The experts follow
//! DeepSeek-V3's router (sigmoid scores chosen by score + exp_probs_b within the best groups, weighed by
//! the unbiased scores renormalised, times expert_weights_scale); with moe_latent_size they run in a
//! latent space (ffn_latent_down before, ffn_latent_up after, the routing on the block's input); a
//! shared relu2 expert on the block's input is added.
//!
//! Which block a layer is: llama.cpp's rule on the per-layer lists the converter writes: Mamba where
//! attention.head_count_kv and feed_forward_length are both 0, attention where only the KV head count
//! is set, an MLP (or experts, in nemotron_h_moe) where feed_forward_length is. The norms' epsilon is
//! attention.layer_norm_epsilon (the config's layer_norm_epsilon, for every norm).
//! Reference: transformers/models/nemotron_h/modeling_nemotron_h.py; the GGUF layout is llama.cpp's
//! conversion/nemotron.py.
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/mamba2.h"

namespace vt {

namespace {

enum class Block { mamba, attention, mlp, moe };

struct LatentMoe {
    MoeWeights moe;                        // router, probs_bias, up (L, F, X), down (F, L, X), shared up/down
    const Tensor *latent_down = nullptr;   // (n_embd, L) or null (L = n_embd)
    const Tensor *latent_up = nullptr;     // (L, n_embd) or null
};

class NemotronH final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    struct Layer {
        Block kind = Block::mamba;
        const Tensor *norm = nullptr;  // (n_embd)
        Mamba2Weights mamba;
        AttnWeights attn;
        FfnWeights mlp;  // up, down (no gate)
        LatentMoe moe;
    };
    Tensor *attention(LayerBuilder &b, uint32_t il, Tensor *h, const AttnWeights &w) const;
    Tensor *relu2_mlp(LayerBuilder &b, Tensor *h, const FfnWeights &w) const;
    Tensor *experts(LayerBuilder &b, Tensor *h, const LatentMoe &w) const;

    Mamba2Shape ssm_;
    const Tensor *tok_embd_ = nullptr;     // (n_embd, n_vocab)
    const Tensor *output_norm_ = nullptr;  // (n_embd)
    const Tensor *output_ = nullptr;       // (n_embd, n_vocab); tok_embd_ when tied
    std::vector<Layer> layers_;
};

// A per-layer u32 list of the file (or one value for every layer).
std::vector<uint32_t> per_layer(const Model &m, const char *suffix) {
    const uint32_t n = m.hparams.n_layer;
    const std::string key = m.arch_name() + "." + suffix;
    const GgufKV *kv = m.gguf().find(key);
    if (!kv) fail(VT_ERR_FORMAT, "%s: model lacks the required key %s", m.arch_name().c_str(), key.c_str());
    if (kv->value.type != GgufType::ARRAY) return std::vector<uint32_t>(n, m.arch_u32(suffix));
    if (!m.per_layer_list_ok(kv->value.arr_n))
        fail(VT_ERR_FORMAT, "%s: %s lists %llu values for %u layers", m.arch_name().c_str(), key.c_str(),
             (unsigned long long)kv->value.arr_n, n);
    std::vector<uint32_t> out(n);
    for (uint32_t i = 0; i < n; ++i) {
        const uint64_t v = kv->value.uint_at(i);
        if (v > (1u << 24)) fail(VT_ERR_FORMAT, "%s: %s[%u] is %llu", m.arch_name().c_str(), key.c_str(), i,
                                 (unsigned long long)v);
        out[i] = (uint32_t)v;
    }
    return out;
}

void NemotronH::load(Model &m) {
    read_decoder_hparams(m, kRopeNeox);  // no rope: the mode is never used
    Hparams &hp = m.hparams;
    hp.norm_eps = m.arch_f32("attention.layer_norm_epsilon", hp.norm_eps);
    read_moe_hparams(m, {kMoeSigmoid, true});
    ssm_ = read_mamba2_shape(m);
    const char *arch = m.arch_name().c_str();
    const std::vector<uint32_t> kv_heads = read_head_count_kv(m), ff = per_layer(m, "feed_forward_length");
    const int64_t E = hp.n_embd, hd = hp.head_dim, Q = (int64_t)hp.n_head * hd,
                  KV = hp.n_embd_kv();
    const int64_t L = m.arch_u32("moe_latent_size", 0);
    m.cache_layers.assign(hp.n_layer, LayerCacheSpec{CacheKind::full_attention, 0, hp.n_embd_kv()});
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    layers_.resize(hp.n_layer);
    bool any_attention = false;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        Layer &l = layers_[il];
        l.norm = load_norm(m, p + "attn_norm.weight", E);
        if (kv_heads[il] != 0 && ff[il] != 0)
            fail(VT_ERR_FORMAT, "%s: layer %u has both KV heads and a feed-forward width: which block is it?", arch,
                 il);
        if (kv_heads[il] == 0 && ff[il] == 0) {
            l.kind = Block::mamba;
            m.cache_layers[il] = mamba2_cache_spec(ssm_);
            l.mamba = load_mamba2_weights(m, il, ssm_);
        } else if (kv_heads[il] != 0) {
            l.kind = Block::attention;
            any_attention = true;
            l.attn.wq = m.matmul_weight(p + "attn_q.weight", {E, Q});
            l.attn.wk = m.matmul_weight(p + "attn_k.weight", {E, KV});
            l.attn.wv = m.matmul_weight(p + "attn_v.weight", {E, KV});
            l.attn.wo = m.matmul_weight(p + "attn_output.weight", {Q, E});
        } else if (hp.n_expert == 0) {
            l.kind = Block::mlp;
            l.mlp.up = m.matmul_weight(p + "ffn_up.weight", {E, ff[il]});
            l.mlp.down = m.matmul_weight(p + "ffn_down.weight", {ff[il], E});
        } else {
            l.kind = Block::moe;
            LatentMoe &x = l.moe;
            const int64_t in = L > 0 ? L : E, F = hp.n_ff_exp, X = hp.n_expert;
            x.moe.router = m.weight(p + "ffn_gate_inp.weight", {E, X});
            x.moe.probs_bias = load_norm(m, p + "exp_probs_b.bias", X);
            x.moe.up = m.expert_weight(p + "ffn_up_exps.weight", {in, F, X});
            x.moe.down = m.expert_weight(p + "ffn_down_exps.weight", {F, in, X});
            if (L > 0) {
                x.latent_down = m.matmul_weight(p + "ffn_latent_down.weight", {E, L});
                x.latent_up = m.matmul_weight(p + "ffn_latent_up.weight", {L, E});
            }
            if (hp.n_ff_shexp == 0) fail(VT_ERR_FORMAT, "%s: expert_shared_feed_forward_length is 0", arch);
            x.moe.shared.up = m.matmul_weight(p + "ffn_up_shexp.weight", {E, hp.n_ff_shexp});
            x.moe.shared.down = m.matmul_weight(p + "ffn_down_shexp.weight", {hp.n_ff_shexp, E});
        }
    }
    if (!any_attention) fail(VT_ERR_FORMAT, "%s: no attention layer", arch);
}

Tensor *NemotronH::attention(LayerBuilder &b, uint32_t il, Tensor *h, const AttnWeights &w) const {
    Graph &g = b.graph();
    const ForwardArgs &a = b.args();
    const Hparams &hp = b.model().hparams;
    const int64_t n = b.n_tokens(), hd = hp.head_dim, H = hp.n_head, HK = hp.n_head_kv;
    Tensor *q = g.reshape(b.linear(w.wq, h), {hd, H, n});
    Tensor *k = g.reshape(b.linear(w.wk, h), {hd, HK, n});
    Tensor *v = g.reshape(b.linear(w.wv, h), {hd, HK, n});
    // No rope: the Mamba layers carry the order.
    Tensor *att = g.op<Op::ATTN_PAGED>(DType::F32, {hd, H, n}, {q, k, v, &(*a.k_cache)[il], &(*a.v_cache)[il],
                                                                a.kv_index[il], nullptr},
                                       {1.0f / std::sqrt((float)hd), attention_window(b.model().cache_layers[il]),
                                        (int32_t)a.n_ctx});
    return b.linear(w.wo, g.reshape(att, {hd * H, n}));
}

Tensor *NemotronH::relu2_mlp(LayerBuilder &b, Tensor *h, const FfnWeights &w) const {
    Tensor *up = b.linear(w.up, h);
    up = b.graph().op<Op::UNARY>(DType::F32, {up->ne[0], up->ne[1]}, {up}, UnaryParams{kUnaryReluSqr, 0.0f});
    return b.linear(w.down, up);
}

Tensor *NemotronH::experts(LayerBuilder &b, Tensor *h, const LatentMoe &w) const {
    Graph &g = b.graph();
    const Hparams &hp = b.model().hparams;
    const int64_t n = b.n_tokens(), k = hp.n_expert_used, F = hp.n_ff_exp;
    auto cw = [](const Tensor *t) { return const_cast<Tensor *>(t); };
    MoeRouteParams route{};
    route.k = (int32_t)k;
    route.gating = hp.expert_gating;
    route.n_group = (int32_t)hp.expert_groups;
    route.topk_group = (int32_t)hp.expert_groups_used;
    route.norm = hp.expert_weights_norm;
    route.scale = hp.expert_weights_scale;
    Tensor *logits = b.linear(w.moe.router, h);  // (n_expert, n)
    Tensor *ids = g.op<Op::MOE_TOPK>(DType::I32, {k, n}, {logits, cw(w.moe.probs_bias)}, route);
    Tensor *weights = g.op<Op::MOE_WEIGHTS>(DType::F32, {k, n}, {logits, ids}, route);
    // The experts read the latent projection of the block's input (or the input).
    Tensor *x = w.latent_down ? b.linear(w.latent_down, h) : h;
    const int64_t L = x->ne[0];
    Tensor *up = b.experts(w.moe.up, g.reshape(x, {L, 1, n}), ids);
    up = g.op<Op::UNARY>(DType::F32, {F, k, n}, {up}, UnaryParams{kUnaryReluSqr, 0.0f});
    Tensor *down = b.experts(w.moe.down, up, ids);
    Tensor *out = g.op<Op::MOE_SUM>(DType::F32, {L, n}, {down, weights});
    if (w.latent_up) out = b.linear(w.latent_up, out);
    return b.add(out, relu2_mlp(b, h, w.moe.shared));
}

Tensor *NemotronH::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) {
        const Layer &l = layers_[il];
        Tensor *h = b.rms_norm(x, l.norm);
        switch (l.kind) {
        case Block::mamba: h = mamba2_mixer(b, il, h, l.mamba, ssm_); break;
        case Block::attention: h = attention(b, il, h, l.attn); break;
        case Block::mlp: h = relu2_mlp(b, h, l.mlp); break;
        case Block::moe: h = experts(b, h, l.moe); break;
        }
        x = b.add(x, h);
    }
    return b.logits(x, output_norm_, output_);
}

} // namespace

std::unique_ptr<Architecture> make_nemotron_h_architecture() { return std::make_unique<NemotronH>(); }

} // namespace vt
