//! Gemma 4 (text): Gemma 3's pre- and post-norm block (four norms, GELU-tanh
//! gated FFN, per-head q/k norms, sliding layers beside global ones) with
//! what Gemma 4 adds:
//! - Global layers have their own head size (key_length; the sliding ones
//!   key_length_swa) and may have their own KV head count (a per-layer
//!   head_count_kv). Their rope is "proportional": NeoX over the whole head
//!   with the first pairs rotated and the others left in place, which the
//!   rope_freqs factors express (1e30 for an unrotated pair, as llama.cpp's
//!   converter writes them); sliding layers rotate rope.dimension_count_swa
//!   dims at rope.freq_base_swa.
//! - Values get an unweighted RMS norm; queries are not scaled (1.0). A
//!   global layer without attn_v (attention_k_eq_v) uses its key projection
//!   as values (before the k norm and rope).
//! - KV sharing (attention.shared_kv_layers): the last layers compute no keys
//!   or values and attend to those the last earlier layer of their type
//!   wrote: its cache (LayerCacheSpec::shared_from), read in place.
//! - Per-layer embeddings (embedding_length_per_layer_input P > 0, E2B/E4B):
//!   a second table gives each token P values per layer (times sqrt(P)); a
//!   projection of the scaled embedding (times n_embd^-1/2, RMS-normed per
//!   layer) is added and the sum scaled by 2^-1/2. After its FFN each layer
//!   adds post_norm(proj(gelu(inp_gate x) * its slice)).
//! - The 26B-A4B block (experts): the dense MLP and the experts run in
//!   parallel on the attention output, each with its own norms (ffn_norm /
//!   post_ffw_norm_1 and pre_ffw_norm_2 / post_ffw_norm_2), summed before
//!   post_ffw_norm. The router reads the unweighted-RMS-normed attention
//!   output times ffn_gate_inp.scale and n_embd^-1/2; softmax over all
//!   experts, top k renormalized, each chosen weight times its expert's
//!   ffn_down_exps.scale (transformers' per_expert_scale). Both scales are
//!   applied in the graph as transformers applies them (a fold into the
//!   weights would round differently, and could not touch quantized ones).
//! - layer_output_scale multiplies each layer's output; final logits are
//!   soft-capped (final_logit_softcapping).
//! Reference: transformers/models/gemma4/modeling_gemma4.py (5.25);
//! llama.cpp's gemma4 graph and its converter (conversion/gemma.py), whose
//! GGUF names and keys a folder is mapped to (model/hf-gemma4.h).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/layers.h"

namespace vt {
namespace {

struct Gemma4Layer {
    bool sliding = false;  // a sliding-type layer (its head size and rope; its window: the cache spec's)
    uint32_t head_dim = 0, n_head_kv = 0;
    const Tensor *attn_norm, *attn_post_norm, *ffn_norm, *ffn_post_norm;
    AttnWeights attn;  // wk null: KV-shared; wv null: values are the keys' projection
    FfnWeights ffn;
    const Tensor *out_scale = nullptr;  // (1) or null
    // Per-layer embeddings.
    const Tensor *ple_gate = nullptr, *ple_proj = nullptr, *ple_norm = nullptr;
    // The parallel expert branch.
    const Tensor *router = nullptr, *router_scale = nullptr, *expert_scale = nullptr;
    const Tensor *pre_norm_2 = nullptr, *post_norm_1 = nullptr, *post_norm_2 = nullptr;
    const Tensor *gate_up_exps = nullptr, *gate_exps = nullptr, *up_exps = nullptr, *down_exps = nullptr;
};

class Gemma4 final : public Architecture {
public:
    void load(Model &m) override;
    Tensor *build(const Model &m, const ForwardArgs &a) const override;

private:
    Tensor *experts(LayerBuilder &b, const Gemma4Layer &l, Tensor *x) const;

    const Tensor *tok_embd_ = nullptr, *output_ = nullptr, *output_norm_ = nullptr;
    const Tensor *rope_freqs_ = nullptr;  // (head_dim / 2) of the global layers, or null
    const Tensor *ple_embd_ = nullptr;    // (n_layer * P, n_vocab)
    const Tensor *ple_model_proj_ = nullptr, *ple_proj_norm_ = nullptr;
    uint32_t ple_ = 0;  // P: per-layer embedding width, 0 for none
    uint32_t n_rot_swa_ = 0;
    float rope_base_swa_ = 10000.0f, softcap_ = 0.0f;
    std::vector<Gemma4Layer> layers_;
};

void Gemma4::load(Model &m) {
    read_decoder_hparams(m, kRopeNeox, /*uniform_kv_heads=*/false);
    Hparams &hp = m.hparams;
    const char *arch = m.arch_name().c_str();
    const uint32_t L = hp.n_layer;
    const std::vector<uint32_t> kv_heads = read_head_count_kv(m);
    const uint32_t hd_full = hp.head_dim;
    const uint32_t hd_swa = m.arch_u32("attention.key_length_swa", hd_full);
    if (m.arch_u32("attention.value_length_swa", hd_swa) != hd_swa)
        fail(VT_ERR_UNSUPPORTED, "%s: sliding layers' key and value head sizes differ", arch);
    if (hd_swa == 0 || hd_swa > 1024 || hd_swa % 2 != 0)
        fail(VT_ERR_FORMAT, "%s: invalid sliding head size %u", arch, hd_swa);
    n_rot_swa_ = m.arch_u32("rope.dimension_count_swa", hd_swa);
    if (n_rot_swa_ == 0 || n_rot_swa_ > hd_swa || n_rot_swa_ % 2 != 0)
        fail(VT_ERR_FORMAT, "%s: invalid sliding rope dimension %u", arch, n_rot_swa_);
    rope_base_swa_ = m.arch_f32("rope.freq_base_swa", 10000.0f);
    softcap_ = m.arch_f32("final_logit_softcapping", 0.0f);
    if (softcap_ < 0.0f) fail(VT_ERR_FORMAT, "%s: final_logit_softcapping %g is negative", arch, (double)softcap_);
    const uint32_t window = m.arch_u32("attention.sliding_window", 0);
    const std::vector<bool> slides = sliding_layers(m, L, 6);

    // FFN widths: one, or one per layer (double-wide MLPs in shared layers).
    std::vector<uint32_t> n_ff(L, hp.n_ff);
    if (const GgufKV *ff = m.gguf().find(m.arch_name() + ".feed_forward_length");
        ff && ff->value.type == GgufType::ARRAY) {
        if (!m.per_layer_list_ok(ff->value.arr_n)) fail(VT_ERR_FORMAT, "%s: feed_forward_length lists %llu widths for %u layers", arch,
                                       (unsigned long long)ff->value.arr_n, L);
        for (uint32_t il = 0; il < L; ++il) n_ff[il] = (uint32_t)std::min<uint64_t>(ff->value.uint_at(il), UINT32_MAX);
    }

    // KV sharing: layer il >= L - n_shared reads the cache of the last layer
    // before L - n_shared of its own type (transformers' kv_sharing_modes).
    const uint32_t n_shared = m.arch_u32("attention.shared_kv_layers", 0);
    if (n_shared >= L)
        fail(VT_ERR_FORMAT, "%s: attention.shared_kv_layers %u leaves no layer that writes a cache (%u layers)", arch,
             n_shared, L);
    const uint32_t first_shared = L - n_shared;

    ple_ = m.arch_u32("embedding_length_per_layer_input", 0);
    read_moe_hparams(m, MoeDefaults{kMoeSoftmax, true});

    m.cache_layers.resize(L);
    layers_.resize(L);
    for (uint32_t il = 0; il < L; ++il) {
        Gemma4Layer &l = layers_[il];
        l.sliding = slides[il];
        l.head_dim = slides[il] ? hd_swa : hd_full;
        l.n_head_kv = kv_heads[il];
        if (l.n_head_kv == 0) fail(VT_ERR_FORMAT, "%s: layer %u has no KV heads", arch, il);
        const bool windowed = window > 0 && l.sliding;
        LayerCacheSpec spec{windowed ? CacheKind::sliding_window : CacheKind::full_attention, windowed ? window : 0,
                            l.head_dim * l.n_head_kv};
        if (il >= first_shared) {
            uint32_t owner = kOwnCache;
            for (uint32_t j = first_shared; j-- > 0;)
                if (slides[j] == slides[il]) {
                    owner = j;
                    break;
                }
            if (owner == kOwnCache)
                fail(VT_ERR_FORMAT, "%s: layer %u shares the KV cache of a %s layer, but none of the first %u layers is one",
                     arch, il, slides[il] ? "sliding" : "global", first_shared);
            if (kv_heads[owner] != l.n_head_kv)
                fail(VT_ERR_FORMAT, "%s: layer %u has %u KV heads, the layer whose cache it shares (%u) %u", arch, il,
                     l.n_head_kv, owner, kv_heads[owner]);
            spec.shared_from = owner;
        }
        m.cache_layers[il] = spec;
    }

    const int64_t E = hp.n_embd, V = hp.n_vocab, H = hp.n_head;
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    rope_freqs_ = load_norm(m, "rope_freqs.weight", hd_full / 2, false);
    if (ple_) {
        const int64_t LP = (int64_t)L * ple_;
        if (!m.gguf().find_tensor("per_layer_token_embd.weight"))
            fail(VT_ERR_FORMAT, "%s: embedding_length_per_layer_input is %u but the per-layer embedding table "
                 "per_layer_token_embd.weight (embed_tokens_per_layer) is missing", arch, ple_);
        ple_embd_ = m.embedding_weight("per_layer_token_embd.weight", {LP, V});
        ple_model_proj_ = m.matmul_weight("per_layer_model_proj.weight", {E, LP});
        ple_proj_norm_ = load_norm(m, "per_layer_proj_norm.weight", ple_);
    }
    for (uint32_t il = 0; il < L; ++il) {
        Gemma4Layer &l = layers_[il];
        const std::string p = "blk." + std::to_string(il) + ".";
        const int64_t hd = l.head_dim, Q = H * hd, KV = (int64_t)l.n_head_kv * hd, F = n_ff[il];
        if (H % l.n_head_kv != 0)
            fail(VT_ERR_FORMAT, "%s: layer %u has %u KV heads for %lld heads", arch, il, l.n_head_kv, (long long)H);
        l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
        l.attn_post_norm = load_norm(m, p + "post_attention_norm.weight", E);
        l.ffn_norm = load_norm(m, p + "ffn_norm.weight", E);
        l.ffn_post_norm = load_norm(m, p + "post_ffw_norm.weight", E);
        l.attn.wq = m.matmul_weight(p + "attn_q.weight", {E, Q});
        l.attn.wo = m.matmul_weight(p + "attn_output.weight", {Q, E});
        l.attn.q_norm = load_norm(m, p + "attn_q_norm.weight", hd);
        if (!is_shared(m.cache_layers[il])) {  // a shared layer's k/v weights, if any, are never read
            l.attn.wk = m.matmul_weight(p + "attn_k.weight", {E, KV});
            l.attn.wv = m.matmul_weight(p + "attn_v.weight", {E, KV}, false);
            l.attn.k_norm = load_norm(m, p + "attn_k_norm.weight", hd);
        }
        if (F == 0) fail(VT_ERR_FORMAT, "%s: layer %u has no feed_forward_length", arch, il);
        l.ffn.gate = m.matmul_weight(p + "ffn_gate.weight", {E, F});
        l.ffn.up = m.matmul_weight(p + "ffn_up.weight", {E, F});
        l.ffn.down = m.matmul_weight(p + "ffn_down.weight", {F, E});
        l.out_scale = load_norm(m, p + "layer_output_scale.weight", 1, false);
        if (ple_) {
            l.ple_gate = m.matmul_weight(p + "inp_gate.weight", {E, ple_});
            l.ple_proj = m.matmul_weight(p + "proj.weight", {ple_, E});
            l.ple_norm = load_norm(m, p + "post_norm.weight", E);
        }
        if (hp.n_expert > 0) {
            const int64_t X = hp.n_expert, FE = hp.n_ff_exp;
            l.router = m.weight(p + "ffn_gate_inp.weight", {E, X});
            l.router_scale = load_norm(m, p + "ffn_gate_inp.scale", E);
            l.expert_scale = load_norm(m, p + "ffn_down_exps.scale", X, false);
            l.pre_norm_2 = load_norm(m, p + "pre_ffw_norm_2.weight", E);
            l.post_norm_1 = load_norm(m, p + "post_ffw_norm_1.weight", E);
            l.post_norm_2 = load_norm(m, p + "post_ffw_norm_2.weight", E);
            // llama.cpp's converter keeps gate and up fused (gate rows
            // first); a folder's are split at load (model/hf-experts.h).
            if (m.gguf().find_tensor(p + "ffn_gate_up_exps.weight")) {
                l.gate_up_exps = m.expert_weight(p + "ffn_gate_up_exps.weight", {E, 2 * FE, X});
            } else {
                l.gate_exps = m.expert_weight(p + "ffn_gate_exps.weight", {E, FE, X});
                l.up_exps = m.expert_weight(p + "ffn_up_exps.weight", {E, FE, X});
            }
            l.down_exps = m.expert_weight(p + "ffn_down_exps.weight", {FE, E, X});
        }
    }
}

// The expert branch of layer l on the attention output x (n_embd, n).
Tensor *Gemma4::experts(LayerBuilder &b, const Gemma4Layer &l, Tensor *x) const {
    Graph &g = b.graph();
    const Hparams &hp = b.model().hparams;
    const int64_t n = b.n_tokens(), E = hp.n_embd, k = hp.n_expert_used, F = hp.n_ff_exp, X = hp.n_expert;
    auto w = [](const Tensor *t) { return const_cast<Tensor *>(t); };
    // Router: norm(x) * scale * n_embd^-1/2, in transformers' order.
    Tensor *r = b.scale(b.rms_norm(x, l.router_scale), 1.0f / std::sqrt((float)E));
    Tensor *logits = b.linear(l.router, r);
    MoeRouteParams route{};
    route.k = (int32_t)k;
    route.gating = kMoeSoftmax;
    route.norm = 1;
    route.scale = 1.0f;
    Tensor *ids = g.op<Op::MOE_TOPK>(DType::I32, {k, n}, {logits, nullptr}, route);
    Tensor *weights = g.op<Op::MOE_WEIGHTS>(DType::F32, {k, n}, {logits, ids}, route);
    if (l.expert_scale) {
        Tensor *s = g.op<Op::GET_ROWS>(DType::F32, {1, k * n}, {g.reshape(w(l.expert_scale), {1, X}),
                                                                 g.reshape(ids, {k * n})});
        weights = g.op<Op::MUL>(DType::F32, {k, n}, {weights, g.reshape(s, {k, n})});
    }
    Tensor *h = g.reshape(b.rms_norm(x, l.pre_norm_2), {E, 1, n});  // every slot reads the token's row
    Tensor *gate, *up;
    if (l.gate_up_exps) {
        Tensor *gu = b.experts(l.gate_up_exps, h, ids);
        const size_t row = (size_t)(2 * F) * sizeof(float);
        gate = g.op<Op::CPY>(DType::F32, {F, k, n}, {g.view(gu, {F, k, n}, {row, row * (size_t)k})});
        up = g.op<Op::CPY>(DType::F32, {F, k, n}, {g.view(gu, {F, k, n}, {row, row * (size_t)k}, F * sizeof(float))});
    } else {
        gate = b.experts(l.gate_exps, h, ids);
        up = b.experts(l.up_exps, h, ids);
    }
    Tensor *act = g.op<Op::GEGLU>(DType::F32, {F, k, n}, {gate, up});
    // Not experts(): ffn_down_exps.scale is transformers' per_expert_scale,
    // applied to the routing weights above (the same product, once).
    Tensor *down = g.op<Op::MUL_MAT_ID>(DType::F32, {E, k, n}, {w(l.down_exps), act, ids});
    return g.op<Op::MOE_SUM>(DType::F32, {E, n}, {down, weights});
}

Tensor *Gemma4::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    Graph &g = b.graph();
    const Hparams &hp = m.hparams;
    const int64_t n = b.n_tokens(), E = hp.n_embd, H = hp.n_head, L = hp.n_layer, P = ple_;
    auto w = [](const Tensor *t) { return const_cast<Tensor *>(t); };
    RopeParams global = b.rope();
    global.freq_scale = 1.0f;
    global.ext_factor = 0.0f;
    RopeParams sliding = global;
    sliding.freq_base = rope_base_swa_;
    sliding.n_rot = (int32_t)n_rot_swa_;

    Tensor *x = b.scale(b.embed(tok_embd_), std::sqrt((float)E));
    // Per-layer inputs (P, n, L): layer il's (P, n) slice is contiguous.
    Tensor *ple = nullptr;
    if (P) {
        Tensor *tok = b.scale(g.op<Op::GET_ROWS>(DType::F32, {L * P, n}, {w(ple_embd_), a.tokens}),
                              std::sqrt((float)P));
        Tensor *proj = b.scale(b.linear(ple_model_proj_, x), 1.0f / std::sqrt((float)E));
        proj = b.rms_norm(g.reshape(proj, {P, L, n}), ple_proj_norm_);
        Tensor *sum = b.scale(b.add(proj, g.reshape(tok, {P, L, n})), 1.0f / std::sqrt(2.0f));
        const size_t row = (size_t)P * sizeof(float);
        ple = g.op<Op::CPY>(DType::F32, {P, n, L}, {g.view(sum, {P, n, L}, {row * (size_t)L, row})});
    }
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        const Gemma4Layer &l = layers_[il];
        const int64_t hd = l.head_dim, HK = l.n_head_kv;
        Tensor *h = b.rms_norm(x, l.attn_norm);
        Tensor *q = g.reshape(b.linear(l.attn.wq, h), {hd, H, n});
        Tensor *k = nullptr, *v = nullptr;
        if (l.attn.wk) {
            Tensor *kp = g.reshape(b.linear(l.attn.wk, h), {hd, HK, n});
            v = b.rms_norm(l.attn.wv ? g.reshape(b.linear(l.attn.wv, h), {hd, HK, n}) : kp, nullptr);
            k = kp;  // attend() applies the k norm and rope
        }
        Tensor *att = b.attend(il, q, k, v, l.attn, l.sliding ? sliding : global, 1.0f, l.sliding ? nullptr : rope_freqs_);
        x = b.add(x, b.rms_norm(b.linear(l.attn.wo, att), l.attn_post_norm));
        Tensor *f = b.ffn(b.rms_norm(x, l.ffn_norm), l.ffn, Activation::gelu_tanh);
        if (l.router)
            f = b.add(b.rms_norm(f, l.post_norm_1), b.rms_norm(experts(b, l, x), l.post_norm_2));
        x = b.add(x, b.rms_norm(f, l.ffn_post_norm));
        if (P) {
            Tensor *slice = g.view(ple, {P, n}, {(size_t)P * sizeof(float)}, (size_t)il * P * n * sizeof(float));
            Tensor *gated = g.op<Op::GEGLU>(DType::F32, {P, n}, {b.linear(l.ple_gate, x), slice});
            x = b.add(x, b.rms_norm(b.linear(l.ple_proj, gated), l.ple_norm));
        }
        if (l.out_scale) x = g.op<Op::MUL>(DType::F32, {E, n}, {x, w(l.out_scale)});
    }
    return b.logits(x, output_norm_, output_, 1.0f, softcap_);
}

} // namespace

std::unique_ptr<Architecture> make_gemma4_architecture() { return std::make_unique<Gemma4>(); }

} // namespace vt
