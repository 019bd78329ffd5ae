#include "models/layers.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "model/lora.h"

namespace vt {

void read_decoder_hparams(Model &m, int32_t rope_mode, bool uniform_kv_heads) {
    Hparams &hp = m.hparams;
    const char *arch = m.arch_name().c_str();
    hp.n_ctx_train = m.arch_u32("context_length");
    hp.n_embd = m.arch_u32("embedding_length");
    hp.n_layer = m.block_count();
    // None where every layer has experts (Qwen3.5-MoE); a list per layer
    // (NemotronH: 0 but for its MLP blocks) reads as its largest width.
    if (const GgufKV *ff = m.gguf().find(m.arch_name() + ".feed_forward_length");
        ff && ff->value.type == GgufType::ARRAY) {
        hp.n_ff = 0;
        for (uint64_t i = 0; i < ff->value.arr_n; ++i)
            hp.n_ff = (uint32_t)std::min<uint64_t>(std::max<uint64_t>(hp.n_ff, ff->value.uint_at(i)), UINT32_MAX);
    } else {
        hp.n_ff = m.arch_u32("feed_forward_length", 0);
    }
    // One count, or one per layer (Laguna): the largest sizes what is shared.
    hp.n_head = 0;
    for (uint32_t c : read_head_counts(m)) hp.n_head = std::max(hp.n_head, c);
    const std::vector<uint32_t> kv_heads = read_head_count_kv(m);
    // One count per layer (Kimi-Linear: 0 for a linear-attention layer):
    // the attention layers' count, the same in each.
    hp.n_head_kv = 0;
    for (uint32_t c : kv_heads) {
        if (uniform_kv_heads && c != 0 && hp.n_head_kv != 0 && c != hp.n_head_kv)
            fail(VT_ERR_UNSUPPORTED, "%s: attention layers with different KV head counts", arch);
        if (c != 0 && (uniform_kv_heads || hp.n_head_kv == 0)) hp.n_head_kv = c;
    }
    if (hp.n_head_kv == 0) hp.n_head_kv = hp.n_head;  // no attention layer
    if (hp.n_head == 0 || hp.n_head_kv == 0 || hp.n_head % hp.n_head_kv != 0 || hp.n_layer == 0 || hp.n_embd == 0)
        fail(VT_ERR_FORMAT, "%s: invalid head counts %u/%u, %u layers or width %u", arch, hp.n_head, hp.n_head_kv,
             hp.n_layer, hp.n_embd);
    // Latent attention (DeepSeek's MLA) caches one latent row per token: a
    // query head is qk_nope + rope values (key_length_mla), the cached row
    // key_length, and the value heads differ; the architecture reads those.
    const bool mla = m.arch_u32("attention.kv_lora_rank", 0) > 0;
    hp.head_dim = mla ? m.arch_u32("attention.key_length_mla") : m.arch_u32("attention.key_length", hp.n_embd / hp.n_head);
    if (!mla && m.arch_u32("attention.value_length", hp.head_dim) != hp.head_dim)
        fail(VT_ERR_UNSUPPORTED, "%s: key and value head sizes differ", arch);
    if (hp.head_dim == 0 || hp.head_dim > 1024 || hp.head_dim % 2 != 0)
        fail(VT_ERR_FORMAT, "%s: invalid head size %u", arch, hp.head_dim);
    hp.n_rot = m.arch_u32("rope.dimension_count", hp.head_dim);
    if (hp.n_rot == 0 || hp.n_rot > hp.head_dim || hp.n_rot % 2 != 0)
        fail(VT_ERR_FORMAT, "%s: invalid rope dimension %u", arch, hp.n_rot);
    // A folder keeps Hugging Face's rotate_half layout of Q and K; only the
    // GGUF converter permutes (Llama's) rows for adjacent pairs.
    hp.rope_mode = m.from_folder() ? kRopeNeox : rope_mode;
    hp.rope_freq_base = m.arch_f32("rope.freq_base", 10000.0f);
    if (!(hp.rope_freq_base > 0.0f)) fail(VT_ERR_FORMAT, "%s: invalid rope base %g", arch, (double)hp.rope_freq_base);
    hp.norm_eps = m.arch_f32("attention.layer_norm_rms_epsilon", 1e-5f);

    // Rope scaling, as llama.cpp reads it: linear divides the angles by the
    // factor; YaRN (ext_factor 1) mixes interpolated and extrapolated angles
    // over the correction dims of the original context.
    const std::string type = m.arch_str("rope.scaling.type");
    const float factor = m.arch_f32("rope.scaling.factor", 1.0f);
    if (type == "linear" || type == "yarn") {
        if (!(factor > 0.0f)) fail(VT_ERR_FORMAT, "%s: invalid rope scaling factor %g", arch, (double)factor);
        hp.rope_freq_scale = 1.0f / factor;
    } else if (!type.empty() && type != "none") {
        fail(VT_ERR_UNSUPPORTED, "%s: rope scaling '%s' is not supported (linear, yarn)", arch, type.c_str());
    }
    // llama.cpp multiplies cos and sin by rope.scaling.attn_factor whatever
    // the scaling (Phi-3's LongRoPE stores its magnitude term there).
    hp.rope_attn_factor = m.arch_f32("rope.scaling.attn_factor", 1.0f);
    if (type == "yarn") {
        hp.rope_ext_factor = 1.0f;
        hp.rope_beta_fast = m.arch_f32("rope.scaling.yarn_beta_fast", 32.0f);
        hp.rope_beta_slow = m.arch_f32("rope.scaling.yarn_beta_slow", 1.0f);
    }
    hp.rope_n_ctx_orig = m.arch_u32("rope.scaling.original_context_length", hp.n_ctx_train);
    // vt's key for transformers' rope_scaling truncate (a folder's; llama.cpp
    // writes none and rounds, as truncate true does).
    hp.rope_yarn_exact = type == "yarn" && !m.arch_bool("rope.scaling.yarn_truncate", true);

    const GgufTensorInfo *embd = m.gguf().find_tensor("token_embd.weight");
    if (!embd) fail(VT_ERR_FORMAT, "%s: model has no token_embd.weight", arch);
    hp.n_vocab = (uint32_t)embd->ne[1];
}

std::vector<uint32_t> read_head_counts(const Model &m) {
    const std::string key = m.arch_name() + ".attention.head_count";
    const uint32_t n_layer = m.block_count();
    const GgufKV *kv = m.gguf().find(key);
    if (!kv || kv->value.type != GgufType::ARRAY)
        return std::vector<uint32_t>(n_layer, m.arch_u32("attention.head_count"));
    if (!m.per_layer_list_ok(kv->value.arr_n))
        fail(VT_ERR_FORMAT, "%s: %s lists %llu values for %u layers", m.arch_name().c_str(), key.c_str(),
             (unsigned long long)kv->value.arr_n, n_layer);
    std::vector<uint32_t> out(n_layer);
    for (uint32_t i = 0; i < n_layer; ++i) {
        const uint64_t c = kv->value.uint_at(i);
        if (c == 0 || c > 4096)
            fail(VT_ERR_FORMAT, "%s: %s[%u] = %llu is not from 1 to 4096", m.arch_name().c_str(), key.c_str(), i,
                 (unsigned long long)c);
        out[i] = (uint32_t)c;
    }
    return out;
}

std::vector<uint32_t> read_head_count_kv(const Model &m) {
    const Hparams &hp = m.hparams;
    const std::string key = m.arch_name() + ".attention.head_count_kv";
    const GgufKV *kv = m.gguf().find(key);
    if (!kv) return std::vector<uint32_t>(hp.n_layer, hp.n_head);
    if (kv->value.type != GgufType::ARRAY) {
        const uint32_t c = m.arch_u32("attention.head_count_kv");
        if (c == 0) fail(VT_ERR_FORMAT, "%s: %s is 0", m.arch_name().c_str(), key.c_str());
        return std::vector<uint32_t>(hp.n_layer, c);
    }
    if (!m.per_layer_list_ok(kv->value.arr_n))
        fail(VT_ERR_FORMAT, "%s: %s lists %llu values for %u layers", m.arch_name().c_str(), key.c_str(),
             (unsigned long long)kv->value.arr_n, hp.n_layer);
    std::vector<uint32_t> out(hp.n_layer);
    for (uint32_t i = 0; i < hp.n_layer; ++i) {
        const uint64_t c = kv->value.uint_at(i);
        if (c > hp.n_head || (c != 0 && hp.n_head % c != 0))
            fail(VT_ERR_FORMAT, "%s: layer %u has %llu KV heads for %u heads", m.arch_name().c_str(), i,
                 (unsigned long long)c, hp.n_head);
        out[i] = (uint32_t)c;
    }
    return out;
}

std::vector<bool> sliding_layers(const Model &m, uint32_t n_layer, uint32_t def_period, bool full_first) {
    std::vector<bool> out(n_layer);
    const std::string key = m.arch_name() + ".attention.sliding_window_pattern";
    if (const GgufValue *arr = m.gguf().get_array(key, GgufType::BOOL)) {
        if (!m.per_layer_list_ok(arr->arr_n))
            fail(VT_ERR_FORMAT, "%s has %llu entries for %u layers", key.c_str(), (unsigned long long)arr->arr_n,
                 n_layer);
        for (uint32_t il = 0; il < n_layer; ++il) out[il] = arr->uint_at(il) != 0;
        return out;
    }
    const uint32_t n = m.arch_u32("attention.sliding_window_pattern", def_period);
    for (uint32_t il = 0; il < n_layer; ++il) out[il] = n == 0 || il % n != (full_first ? 0 : n - 1);
    return out;
}

void load_embeddings_and_output(Model &m, const Tensor *&tok_embd, const Tensor *&output, const Tensor *&output_norm,
                                const char *norm_name) {
    const int64_t E = m.hparams.n_embd, V = m.hparams.n_vocab;
    tok_embd = m.embedding_weight("token_embd.weight", {E, V});
    output = m.output_weight("token_embd.weight", {E, V});  // nullptr: tied, as stored
    if (!output) output = tok_embd;
    output_norm = load_norm(m, norm_name, E);
}

void full_attention_cache(Model &m) {
    m.cache_layers.assign(m.hparams.n_layer, LayerCacheSpec{CacheKind::full_attention, 0, m.hparams.n_embd_kv()});
}

void read_moe_hparams(Model &m, const MoeDefaults &d) {
    Hparams &hp = m.hparams;
    const char *arch = m.arch_name().c_str();
    hp.n_expert = m.arch_u32("expert_count", 0);
    if (hp.n_expert == 0) return;
    hp.n_expert_used = m.arch_u32("expert_used_count");
    hp.n_ff_exp = m.arch_u32("expert_feed_forward_length", hp.n_ff);
    hp.n_expert_shared = m.arch_u32("expert_shared_count", 0);
    hp.n_ff_shexp = m.arch_u32("expert_shared_feed_forward_length", hp.n_ff_exp * hp.n_expert_shared);
    hp.n_layer_dense_lead = m.arch_u32("leading_dense_block_count", 0);
    // llama.cpp's expert_gating_func: 1 softmax, 2 sigmoid (0: the default).
    const uint32_t gating = m.arch_u32("expert_gating_func", 0);
    if (gating > 2) fail(VT_ERR_UNSUPPORTED, "%s: expert gating function %u is not supported", arch, gating);
    hp.expert_gating = gating == 0 ? d.gating : gating == 2 ? kMoeSigmoid : kMoeSoftmax;
    hp.expert_weights_norm = m.arch_bool("expert_weights_norm", d.norm);
    hp.expert_weights_scale = m.arch_f32("expert_weights_scale", 1.0f);
    if (!(hp.expert_weights_scale > 0.0f)) hp.expert_weights_scale = 1.0f;  // converters write 0 for "none"
    hp.expert_groups = m.arch_u32("expert_group_count", 0);
    hp.expert_groups_used = m.arch_u32("expert_group_used_count", 0);
    if (hp.n_expert_used == 0 || hp.n_expert_used > hp.n_expert || hp.n_ff_exp == 0 ||
        hp.n_layer_dense_lead > hp.n_layer)
        fail(VT_ERR_FORMAT, "%s: invalid experts: %u of %u per token, width %u, %u dense layers first", arch,
             hp.n_expert_used, hp.n_expert, hp.n_ff_exp, hp.n_layer_dense_lead);
    if (hp.expert_groups > 1 &&
        (hp.n_expert % hp.expert_groups != 0 || hp.n_expert / hp.expert_groups < 2 || hp.expert_groups_used == 0 ||
         hp.expert_groups_used > hp.expert_groups ||
         hp.expert_groups_used * (hp.n_expert / hp.expert_groups) < hp.n_expert_used))
        fail(VT_ERR_FORMAT, "%s: invalid expert groups: %u of %u over %u experts, %u per token", arch,
             hp.expert_groups_used, hp.expert_groups, hp.n_expert, hp.n_expert_used);
}

bool is_moe_layer(const Model &m, uint32_t il) {
    return m.hparams.n_expert > 0 && il >= m.hparams.n_layer_dense_lead;
}

MoeWeights load_moe_weights(Model &m, uint32_t il) {
    const Hparams &hp = m.hparams;
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t E = hp.n_embd, F = hp.n_ff_exp, X = hp.n_expert;
    MoeWeights w;
    w.router = m.weight(p + "ffn_gate_inp.weight", {E, X});
    w.gate = m.expert_weight(p + "ffn_gate_exps.weight", {E, F, X});
    w.up = m.expert_weight(p + "ffn_up_exps.weight", {E, F, X});
    w.down = m.expert_weight(p + "ffn_down_exps.weight", {F, E, X});
    w.probs_bias = load_norm(m, p + "exp_probs_b.bias", X, false);
    if (hp.n_expert_shared > 0 || hp.n_ff_shexp > 0) {
        const int64_t S = hp.n_ff_shexp;
        w.shared.gate = m.matmul_weight(p + "ffn_gate_shexp.weight", {E, S});
        w.shared.up = m.matmul_weight(p + "ffn_up_shexp.weight", {E, S});
        w.shared.down = m.matmul_weight(p + "ffn_down_shexp.weight", {S, E});
        // Qwen2-MoE's line (Qwen3-Next, Qwen3.5-MoE): a sigmoid gate per token on the shared expert.
        w.shared_gate = m.weight(p + "ffn_gate_inp_shexp.weight", {E, 1}, false);
    }
    return w;
}

const Tensor *load_norm(Model &m, const std::string &name, int64_t ne0, bool required) {
    const Tensor *t = m.weight(name, {ne0}, required);
    if (t && t->type != DType::F32)
        fail(VT_ERR_UNSUPPORTED, "%s: norm weight %s must be F32", m.arch_name().c_str(), name.c_str());
    return t;
}

AttnWeights load_attn_weights(Model &m, uint32_t il, bool qk_norm_full, uint32_t n_head) {
    const Hparams &hp = m.hparams;
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t E = hp.n_embd, Q = (int64_t)(n_head ? n_head : hp.n_head) * hp.head_dim, KV = hp.n_embd_kv();
    AttnWeights w;
    if (const std::string qkv = p + "attn_qkv.weight"; m.gguf().find_tensor(qkv)) {
        // Fused (Phi-3): the three projections are row ranges of one matrix.
        w.wq = m.matmul_weight_rows(qkv, E, Q + 2 * KV, 0, Q);
        w.wk = m.matmul_weight_rows(qkv, E, Q + 2 * KV, Q, KV);
        w.wv = m.matmul_weight_rows(qkv, E, Q + 2 * KV, Q + KV, KV);
    } else {
        w.wq = m.matmul_weight(p + "attn_q.weight", {E, Q});
        w.wk = m.matmul_weight(p + "attn_k.weight", {E, KV});
        w.wv = m.matmul_weight(p + "attn_v.weight", {E, KV});
    }
    w.wo = m.matmul_weight(p + "attn_output.weight", {Q, E});
    w.bq = load_norm(m, p + "attn_q.bias", Q, false);
    w.bk = load_norm(m, p + "attn_k.bias", KV, false);
    w.bv = load_norm(m, p + "attn_v.bias", KV, false);
    w.q_norm = load_norm(m, p + "attn_q_norm.weight", qk_norm_full ? Q : hp.head_dim, false);
    w.k_norm = load_norm(m, p + "attn_k_norm.weight", qk_norm_full ? KV : hp.head_dim, false);
    if (!w.q_norm != !w.k_norm) fail(VT_ERR_FORMAT, "%sattn: a q norm without a k norm or the reverse", p.c_str());
    w.qk_norm_full = qk_norm_full && w.q_norm;
    return w;
}

FfnWeights load_ffn_weights(Model &m, uint32_t il) {
    const Hparams &hp = m.hparams;
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t E = hp.n_embd, F = hp.n_ff;
    if (F == 0) fail(VT_ERR_FORMAT, "%s: blk.%u has a dense FFN but the model has no feed_forward_length",
                     m.arch_name().c_str(), il);
    FfnWeights w;
    if (m.gguf().find_tensor(p + "ffn_gate.weight")) {
        w.gate = m.matmul_weight(p + "ffn_gate.weight", {E, F});
        w.up = m.matmul_weight(p + "ffn_up.weight", {E, F});
    } else {
        // Fused (Phi-3's gate_up): ffn_up holds the gate's rows, then the up's.
        w.gate = m.matmul_weight_rows(p + "ffn_up.weight", E, 2 * F, 0, F);
        w.up = m.matmul_weight_rows(p + "ffn_up.weight", E, 2 * F, F, F);
    }
    w.down = m.matmul_weight(p + "ffn_down.weight", {F, E});
    return w;
}

LayerBuilder::LayerBuilder(const Model &m, const ForwardArgs &a) : m_(m), a_(a), g_(*a.graph), n_(a.n_tokens) {}

RopeParams LayerBuilder::rope() const {
    const Hparams &hp = m_.hparams;
    RopeParams r{};
    r.n_rot = (int32_t)hp.n_rot;
    r.mode = hp.rope_mode;
    r.freq_base = hp.rope_freq_base;
    r.freq_scale = hp.rope_freq_scale;
    r.ext_factor = hp.rope_ext_factor;
    r.attn_factor = hp.rope_attn_factor;
    r.beta_fast = hp.rope_beta_fast;
    r.beta_slow = hp.rope_beta_slow;
    r.n_ctx_orig = (int32_t)hp.rope_n_ctx_orig;
    r.yarn_exact = hp.rope_yarn_exact;
    return r;
}

Tensor *LayerBuilder::embed(const Tensor *tok_embd) {
    return g_.op<Op::GET_ROWS>(DType::F32, {tok_embd->ne[0], n_}, {w(tok_embd), a_.tokens});
}

Tensor *LayerBuilder::rms_norm(Tensor *x, const Tensor *weight) { return rms_norm(x, weight, m_.hparams.norm_eps); }

Tensor *LayerBuilder::rms_norm(Tensor *x, const Tensor *weight, float eps) {
    int64_t ne[kMaxDims];
    for (int d = 0; d < kMaxDims; ++d) ne[d] = x->ne[d];
    return g_.op<Op::RMS_NORM>(DType::F32, {ne[0], ne[1], ne[2], ne[3]}, {x, w(weight)}, {eps});
}

Tensor *LayerBuilder::linear(const Tensor *weight, Tensor *x, const Tensor *bias) {
    Tensor *y = g_.op<Op::MUL_MAT>(DType::F32, {weight->ne[1], x->nrows()}, {w(weight), x});
    if (const float s = m_.output_scale(weight); s != 1.0f) y = scale(y, s);  // an NVFP4 weight's (Model::output_scale)
    // Each adapter of the batch that updates this weight adds its low-rank
    // product to the rows of its own tokens: the base product is shared.
    for (const LoraSlot &slot : a_.lora) {
        const LoraPair *p = slot.adapter->find(weight->name);
        if (!p) continue;
        if (x->nrows() != n_) fail(VT_ERR_INTERNAL, "LoRA on %s, whose input is not one row per token", weight->name);
        Tensor *x2 = x->ne[1] == n_ ? x : g_.reshape(x, {x->ne[0], n_});
        y = g_.op<Op::LORA>(DType::F32, {weight->ne[1], n_},
                            {y, x2, w(&p->a), w(&p->b), slot.rows, slot.scales});
    }
    return bias ? add(y, w(bias)) : y;
}

Tensor *LayerBuilder::add(Tensor *a, Tensor *b) {
    return g_.op<Op::ADD>(DType::F32, {a->ne[0], a->ne[1], a->ne[2], a->ne[3]}, {a, b});
}

Tensor *LayerBuilder::scale(Tensor *x, float s) {
    return g_.op<Op::SCALE>(DType::F32, {x->ne[0], x->ne[1], x->ne[2], x->ne[3]}, {x}, {s});
}

Tensor *LayerBuilder::softcap(Tensor *x, float cap) {
    return g_.op<Op::UNARY>(DType::F32, {x->ne[0], x->ne[1], x->ne[2], x->ne[3]}, {x},
                            UnaryParams{kUnarySoftcap, cap});
}

Tensor *LayerBuilder::attention(uint32_t il, Tensor *h, const AttnWeights &aw, const RopeParams &rope, float scale,
                                const Tensor *rope_factors) {
    const Hparams &hp = m_.hparams;
    const int64_t hd = hp.head_dim, H = hp.n_head, HK = hp.n_head_kv;
    Tensor *q = linear(aw.wq, h, aw.bq), *k = linear(aw.wk, h, aw.bk);
    if (aw.qk_norm_full) {  // over the whole projection (OLMoE)
        q = rms_norm(q, aw.q_norm);
        k = rms_norm(k, aw.k_norm);
    }
    q = g_.reshape(q, {hd, H, n_});
    k = g_.reshape(k, {hd, HK, n_});
    Tensor *v = g_.reshape(linear(aw.wv, h, aw.bv), {hd, HK, n_});
    return linear(aw.wo, attend(il, q, k, v, aw, rope, scale, rope_factors), aw.bo);
}

Tensor *LayerBuilder::attend(uint32_t il, Tensor *q, Tensor *k, Tensor *v, const AttnWeights &aw,
                             const RopeParams &rope, float scale, const Tensor *rope_factors) {
    // The shapes are the tensors': a layer's head size and KV head count may
    // be its own (Gemma 4's global layers).
    const int64_t hd = q->ne[0], H = q->ne[1];
    Tensor *kc = &(*a_.k_cache)[il], *vc = &(*a_.v_cache)[il];
    if (aw.q_norm && !aw.qk_norm_full) {  // per head (Qwen3)
        q = rms_norm(q, aw.q_norm);
        if (k) k = rms_norm(k, aw.k_norm);
    }
    if (rope.n_rot > 0) {  // 0: a layer without rope (Muse Glimmer's full layers)
        Tensor *factors = w(rope_factors);
        q = g_.op<Op::ROPE>(DType::F32, {hd, H, n_}, {q, a_.positions, factors}, rope);
        if (k) k = g_.op<Op::ROPE>(DType::F32, {hd, k->ne[1], n_}, {k, a_.positions, factors}, rope);
    }
    const int32_t window = attention_window(m_.cache_layer(il));
    Tensor *att = g_.op<Op::ATTN_PAGED>(DType::F32, {hd, H, n_}, {q, k, v, kc, vc, a_.kv_index[il], w(aw.sinks)},
                                        {scale, window, (int32_t)a_.n_ctx});
    return g_.reshape(att, {hd * H, n_});
}

Tensor *LayerBuilder::ffn(Tensor *h, const FfnWeights &fw, Activation act) {
    Tensor *gate = linear(fw.gate, h);
    Tensor *up = linear(fw.up, h);
    const int64_t F = gate->ne[0];
    Tensor *a = act == Activation::silu ? g_.op<Op::SWIGLU>(DType::F32, {F, n_}, {gate, up})
                                        : g_.op<Op::GEGLU>(DType::F32, {F, n_}, {gate, up});
    return linear(fw.down, a);
}

Tensor *LayerBuilder::moe(Tensor *h, const MoeWeights &mw) {
    const Hparams &hp = m_.hparams;
    const int64_t E = h->ne[0], k = hp.n_expert_used, F = mw.gate->ne[1];
    MoeRouteParams route{};
    route.k = (int32_t)k;
    route.gating = hp.expert_gating;
    route.n_group = (int32_t)hp.expert_groups;
    route.topk_group = (int32_t)hp.expert_groups_used;
    route.norm = hp.expert_weights_norm;
    route.scale = hp.expert_weights_scale;
    Tensor *logits = linear(mw.router, h, mw.router_bias);  // (n_expert, n)
    if (mw.router_softcap > 0.0f) logits = softcap(logits, mw.router_softcap);  // Laguna's, before the sigmoid
    Tensor *ids = g_.op<Op::MOE_TOPK>(DType::I32, {k, n_}, {logits, w(mw.probs_bias)}, route);
    Tensor *weights = g_.op<Op::MOE_WEIGHTS>(DType::F32, {k, n_}, {logits, ids}, route);
    Tensor *x = g_.reshape(h, {E, 1, n_});  // every slot reads the token's row
    // An expert's bias: the row of each slot's expert (GET_ROWS of the
    // (width, n_expert) matrix by the ids), added to its product.
    Tensor *flat_ids = nullptr;
    auto biased = [&](Tensor *y, const Tensor *bias) {
        if (!bias) return y;
        if (!flat_ids) flat_ids = g_.reshape(ids, {k * n_});
        Tensor *rows = g_.op<Op::GET_ROWS>(DType::F32, {y->ne[0], k * n_}, {w(bias), flat_ids});
        return add(y, g_.reshape(rows, {y->ne[0], k, n_}));
    };
    Tensor *gate = biased(experts(mw.gate, x, ids), mw.gate_bias);
    Tensor *up = biased(experts(mw.up, x, ids), mw.up_bias);
    Tensor *act = g_.op<Op::SWIGLU>(DType::F32, {F, k, n_}, {gate, up}, mw.swiglu);
    Tensor *down = biased(experts(mw.down, act, ids), mw.down_bias);
    Tensor *out = g_.op<Op::MOE_SUM>(DType::F32, {E, n_}, {down, weights});
    if (!mw.shared.gate) return out;
    Tensor *shared = ffn(h, mw.shared, Activation::silu);
    if (mw.shared_gate) {
        Tensor *gate = g_.op<Op::UNARY>(DType::F32, {1, n_}, {linear(mw.shared_gate, h)}, UnaryParams{kUnarySigmoid, 0.0f});
        shared = g_.op<Op::MUL>(DType::F32, {E, n_}, {shared, gate});
    }
    return add(out, shared);
}

Tensor *LayerBuilder::experts(const Tensor *weight, Tensor *x, Tensor *ids) {
    const int64_t k = ids->ne[0], n = ids->ne[1];
    Tensor *y = g_.op<Op::MUL_MAT_ID>(DType::F32, {weight->ne[1], k, n}, {w(weight), x, ids});
    const Tensor *s = m_.expert_output_scales(weight);
    if (!s) return y;
    // The slot's expert's entry of the (n_expert) table, broadcast over the row.
    Tensor *rows = g_.op<Op::GET_ROWS>(DType::F32, {1, k * n}, {g_.reshape(w(s), {1, s->ne[0]}), g_.reshape(ids, {k * n})});
    return g_.op<Op::MUL>(DType::F32, {y->ne[0], k, n}, {y, g_.reshape(rows, {1, k, n})});
}

Tensor *LayerBuilder::logits(Tensor *x, const Tensor *norm, const Tensor *output, float s, float cap) {
    const int64_t n_out = a_.out_rows->ne[0];
    Tensor *normed;
    if (a_.hidden_out) {  // every token's, for a multi-token-prediction layer (the same rows, normed first)
        Tensor *all = rms_norm(x, norm);
        g_.mark_output(all);
        *a_.hidden_out = all;
        normed = g_.op<Op::GET_ROWS>(DType::F32, {x->ne[0], n_out}, {all, a_.out_rows});
    } else {
        normed = rms_norm(g_.op<Op::GET_ROWS>(DType::F32, {x->ne[0], n_out}, {x, a_.out_rows}), norm);
    }
    Tensor *lg = linear(output, normed);
    if (s != 1.0f) lg = scale(lg, s);
    if (cap > 0.0f) lg = softcap(lg, cap);
    g_.mark_output(lg);
    return lg;
}

} // namespace vt
