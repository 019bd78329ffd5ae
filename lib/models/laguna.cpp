//! Laguna (poolside): a pre-norm decoder whose layers may have different
//! query head counts (attention.head_count is a list; the KV heads are the
//! same in every layer). Each attention has per-head q/k RMSNorm and a
//! softplus output gate from its own projection of the layer input
//! (attn_gate, g_proj): one value per head broadcast over head_dim, or one
//! per channel, told apart by the gate's width. Full layers rotate the first
//! rope.dimension_count dims of a head (NeoX halves) at the file's base and
//! scaling; sliding ones (window attention.sliding_window) rope.dimension_
//! count_swa dims at rope.freq_base_swa, unscaled. Which layers slide: the
//! file's attention.sliding_window_pattern, else llama.cpp's period 4 with
//! the full layer first (il % 4 == 0). After leading_dense_block_count dense
//! SwiGLU layers, a mixture of experts: sigmoid of the router logits,
//! soft-capped first where router_logit_softcapping says so, chosen by score
//! + exp_probs_b, renormalized, times expert_weights_scale, plus an
//! always-on shared expert.
//! Reference: transformers/models/laguna/modeling_laguna.py; llama.cpp's
//! laguna graph (which has no router soft-cap: its converter drops
//! moe_router_logit_softcapping).
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/layers.h"

namespace vt {
namespace {

struct LagunaLayer {
    const Tensor *attn_norm = nullptr, *ffn_norm = nullptr;  // (n_embd)
    AttnWeights attn;                                        // with per-head q/k norms
    const Tensor *gate = nullptr;                            // (n_embd, n_head) or (n_embd, n_head * head_dim)
    uint32_t n_head = 0;
    bool gate_per_head = true;
    FfnWeights ffn;  // dense layers
    MoeWeights moe;  // the others
};

class Laguna final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    const Tensor *tok_embd_ = nullptr, *output_ = nullptr, *output_norm_ = nullptr;
    uint32_t n_rot_swa_ = 0;
    float freq_base_swa_ = 0.0f;
    std::vector<LagunaLayer> layers_;
};

void Laguna::load(Model &m) {
    read_decoder_hparams(m, kRopeNeox);
    read_moe_hparams(m, MoeDefaults{kMoeSigmoid, true});
    const Hparams &hp = m.hparams;
    const std::vector<uint32_t> heads = read_head_counts(m);
    for (uint32_t il = 0; il < hp.n_layer; ++il)
        if (heads[il] % hp.n_head_kv != 0)
            fail(VT_ERR_FORMAT, "laguna: layer %u has %u heads, not a multiple of %u KV heads", il, heads[il],
                 hp.n_head_kv);
    const uint32_t window = m.arch_u32("attention.sliding_window", 0);
    const std::vector<bool> slides = sliding_layers(m, hp.n_layer, 4, /*full_first=*/true);
    m.cache_layers.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const bool sliding = window > 0 && slides[il];
        m.cache_layers[il] = {sliding ? CacheKind::sliding_window : CacheKind::full_attention, sliding ? window : 0,
                              hp.n_embd_kv()};
    }
    n_rot_swa_ = m.arch_u32("rope.dimension_count_swa", hp.head_dim);
    if (n_rot_swa_ == 0 || n_rot_swa_ > hp.head_dim || n_rot_swa_ % 2 != 0)
        fail(VT_ERR_FORMAT, "laguna: invalid rope.dimension_count_swa %u for heads of %u", n_rot_swa_, hp.head_dim);
    freq_base_swa_ = m.arch_f32("rope.freq_base_swa", hp.rope_freq_base);
    if (!(freq_base_swa_ > 0.0f)) fail(VT_ERR_FORMAT, "laguna: invalid rope.freq_base_swa %g", (double)freq_base_swa_);
    const float router_softcap = m.arch_f32("router_logit_softcapping", 0.0f);
    if (router_softcap < 0.0f || !std::isfinite(router_softcap))
        fail(VT_ERR_FORMAT, "laguna: invalid router_logit_softcapping %g", (double)router_softcap);

    std::optional<bool> declared_per_head;
    if (m.gguf().find(m.arch_name() + ".attention.gate_per_head"))
        declared_per_head = m.arch_bool("attention.gate_per_head", true);

    const int64_t E = hp.n_embd, V = hp.n_vocab, hd = hp.head_dim;
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    layers_.resize(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        const std::string p = "blk." + std::to_string(i) + ".";
        LagunaLayer &l = layers_[i];
        l.n_head = heads[i];
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        l.attn = load_attn_weights(m, i, false, l.n_head);
        if (!l.attn.q_norm) fail(VT_ERR_FORMAT, "laguna: %sattn_q_norm.weight is missing", p.c_str());
        // The gate's width says its kind, and must be one of the two.
        const std::string gate = p + "attn_gate.weight";
        const GgufTensorInfo *gi = m.gguf().find_tensor(gate);
        if (!gi) fail(VT_ERR_FORMAT, "laguna: %s is missing", gate.c_str());
        const int64_t per_head = l.n_head, per_elem = (int64_t)l.n_head * hd;
        if (gi->n_dims != 2 || (gi->ne[1] != per_head && gi->ne[1] != per_elem))
            fail(VT_ERR_FORMAT, "laguna: %s has %lld outputs for %u heads of %lld: %lld (one per head) or %lld (one per channel)",
                 gate.c_str(), (long long)gi->ne[1], l.n_head, (long long)hd, (long long)per_head, (long long)per_elem);
        l.gate_per_head = gi->ne[1] == per_head && per_head != per_elem;
        // A folder says which (gating); a GGUF has only the width.
        if (declared_per_head && *declared_per_head != (gi->ne[1] == per_head))
            fail(VT_ERR_FORMAT, "laguna: %s has %lld outputs, but the config's gating is %s (%lld)", gate.c_str(),
                 (long long)gi->ne[1], *declared_per_head ? "per head" : "per element",
                 (long long)(*declared_per_head ? per_head : per_elem));
        l.gate = m.matmul_weight(gate, {E, l.gate_per_head ? per_head : per_elem});
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        if (is_moe_layer(m, i)) {
            l.moe = load_moe_weights(m, i);
            l.moe.router_softcap = router_softcap;
        } else {
            l.ffn = load_ffn_weights(m, i);
        }
    }
}

Tensor *Laguna::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    Graph &g = b.graph();
    const Hparams &hp = m.hparams;
    const int64_t n = b.n_tokens(), hd = hp.head_dim, HK = hp.n_head_kv;
    const RopeParams full = b.rope();
    RopeParams sliding = full;  // plain rope: no YaRN on the sliding layers
    sliding.n_rot = (int32_t)n_rot_swa_;
    sliding.freq_base = freq_base_swa_;
    sliding.freq_scale = 1.0f;
    sliding.ext_factor = 0.0f;
    sliding.attn_factor = 1.0f;
    const float scale = 1.0f / std::sqrt((float)hd);
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const LagunaLayer &l = layers_[il];
        const int64_t H = l.n_head;
        const bool slides = m.cache_layers[il].kind == CacheKind::sliding_window;
        Tensor *h = b.rms_norm(x, l.attn_norm);
        Tensor *q = g.reshape(b.linear(l.attn.wq, h), {hd, H, n});
        Tensor *k = g.reshape(b.linear(l.attn.wk, h), {hd, HK, n});
        Tensor *v = g.reshape(b.linear(l.attn.wv, h), {hd, HK, n});
        Tensor *att = b.attend(il, q, k, v, l.attn, slides ? sliding : full, scale);  // (hd * H, n)
        // softplus in float, as transformers computes it (g_proj(.).float()).
        Tensor *gl = b.linear(l.gate, h);
        Tensor *gate = g.op<Op::UNARY>(DType::F32, {gl->ne[0], n}, {gl}, UnaryParams{kUnarySoftplus, 0.0f});
        if (l.gate_per_head) {
            Tensor *a3 = g.reshape(att, {hd, H, n});
            att = g.reshape(g.op<Op::MUL>(DType::F32, {hd, H, n}, {a3, g.reshape(gate, {1, H, n})}), {hd * H, n});
        } else {
            att = g.op<Op::MUL>(DType::F32, {hd * H, n}, {att, gate});
        }
        x = b.add(x, b.linear(l.attn.wo, att));
        x = b.add(x, b.ffn_or_moe(b.rms_norm(x, l.ffn_norm), l.ffn, l.moe, Activation::silu));
    }
    return b.logits(x, output_norm_, output_);
}

} // namespace

std::unique_ptr<Architecture> make_laguna_architecture() { return std::make_unique<Laguna>(); }

} // namespace vt
