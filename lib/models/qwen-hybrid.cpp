#include "models/qwen-hybrid.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace vt {

void QwenHybrid::load_layer(Model &m, uint32_t il, bool recurrent, Layer &l) {
    const Hparams &hp = m.hparams;
    const int64_t E = hp.n_embd, hd = hp.head_dim, Q = (int64_t)hp.n_head * hd, KV = hp.n_embd_kv();
    const std::string p = "blk." + std::to_string(il) + ".";
    l.recurrent = recurrent;
    l.attn_norm = load_norm(m, p + "attn_norm.weight", E);
    l.post_norm = load_norm(m, p + "post_attention_norm.weight", E);
    if (l.recurrent) {
        l.gdn = load_gdn_weights(m, il, gdn_);
    } else {
        l.attn.wq = m.matmul_weight(p + "attn_q.weight", {E, 2 * Q});
        l.attn.wk = m.matmul_weight(p + "attn_k.weight", {E, KV});
        l.attn.wv = m.matmul_weight(p + "attn_v.weight", {E, KV});
        l.attn.wo = m.matmul_weight(p + "attn_output.weight", {Q, E});
        l.attn.q_norm = load_norm(m, p + "attn_q_norm.weight", hd);
        l.attn.k_norm = load_norm(m, p + "attn_k_norm.weight", hd);
    }
    if (is_moe_layer(m, il)) {
        l.moe = load_moe_weights(m, il);
        if (!l.moe.shared.gate || !l.moe.shared_gate)
            fail(VT_ERR_FORMAT, "%s: %sffn_{gate,up,down}_shexp and ffn_gate_inp_shexp are required", traits_.name,
                 p.c_str());
    } else {
        l.ffn = load_ffn_weights(m, il);
    }
}

void QwenHybrid::load(Model &m) {
    read_decoder_hparams(m, kRopeNeox);
    read_moe_hparams(m, {kMoeSoftmax, true});
    gdn_ = read_gdn_shape(m);
    k_heads_ = m.from_folder() ? kDeltaHeadsInterleaved : traits_.gguf_k_heads;
    const std::vector<bool> recurrent = read_recurrent_layers(m);
    Hparams &hp = m.hparams;
    m.cache_layers.assign(hp.n_layer, LayerCacheSpec{CacheKind::full_attention, 0, hp.n_embd_kv()});
    load_embeddings_and_output(m, tok_embd_, output_, output_norm_);
    layers_.resize(hp.n_layer);
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
        if (recurrent[il]) m.cache_layers[il] = gdn_cache_spec(gdn_);
        load_layer(m, il, recurrent[il], layers_[il]);
    }
    bool any_attention = false;
    for (bool r : recurrent) any_attention |= !r;
    if (!any_attention) fail(VT_ERR_FORMAT, "%s: no full-attention layer", traits_.name);
    // The MTP layer, the block after the layers (vLLM and llama.cpp read
    // one; a checkpoint with more chains the same one).
    if (m.nextn_layers() > 0) {
        const uint32_t il = hp.n_layer;
        Mtp t;
        load_layer(m, il, false, t.layer);
        t.head = load_mtp_head(m, il, tok_embd_, output_, output_norm_);
        mtp_ = t;
        m.mtp_cache.assign(1, LayerCacheSpec{CacheKind::full_attention, 0, hp.n_embd_kv()});
    }
}

Tensor *QwenHybrid::gated_attention(LayerBuilder &b, uint32_t il, Tensor *h, const AttnWeights &w) const {
    Graph &g = b.graph();
    const Hparams &hp = b.model().hparams;
    const int64_t n = b.n_tokens(), hd = hp.head_dim, H = hp.n_head, HK = hp.n_head_kv;
    const size_t f = sizeof(float);
    // Per head: hd query values, then hd gate values.
    Tensor *qg = b.linear(w.wq, h);  // (2 hd H, n)
    Tensor *q = g.op<Op::CPY>(DType::F32, {hd, H, n}, {g.view(qg, {hd, H, n}, {2 * hd * f, 2 * hd * H * f}, 0)});
    Tensor *gate = g.reshape(g.op<Op::CPY>(DType::F32, {hd, H, n},
                                           {g.view(qg, {hd, H, n}, {2 * hd * f, 2 * hd * H * f}, hd * f)}),
                             {hd * H, n});
    Tensor *k = g.reshape(b.linear(w.wk, h), {hd, HK, n});
    Tensor *v = g.reshape(b.linear(w.wv, h), {hd, HK, n});
    Tensor *att = b.attend(il, q, k, v, w, b.rope(), 1.0f / std::sqrt((float)hd));
    gate = g.op<Op::UNARY>(DType::F32, {hd * H, n}, {gate}, UnaryParams{kUnarySigmoid, 0.0f});
    return b.linear(w.wo, g.op<Op::MUL>(DType::F32, {hd * H, n}, {att, gate}));
}

Tensor *QwenHybrid::block(LayerBuilder &b, uint32_t il, Tensor *x, const Layer &l) const {
    Tensor *h = b.rms_norm(x, l.attn_norm);
    x = b.add(x, l.recurrent ? gated_delta_net(b, il, h, l.gdn, gdn_, k_heads_) : gated_attention(b, il, h, l.attn));
    return b.add(x, b.ffn_or_moe(b.rms_norm(x, l.post_norm), l.ffn, l.moe, Activation::silu));
}

Tensor *QwenHybrid::build(const Model &m, const ForwardArgs &a) const {
    LayerBuilder b(m, a);
    Tensor *x = b.embed(tok_embd_);
    for (uint32_t il = 0; il < m.hparams.n_layer; ++il) x = block(b, il, x, layers_[il]);
    return b.logits(x, output_norm_, output_);
}

Tensor *QwenHybrid::build_mtp(const Model &m, const ForwardArgs &a) const {
    if (!mtp_) return Architecture::build_mtp(m, a);
    LayerBuilder b(m, a);
    // Its cache is the one after the model's (Model::mtp_cache).
    Tensor *x = block(b, (uint32_t)m.cache_layers.size(), mtp_block_input(b, mtp_->head), mtp_->layer);
    return mtp_logits(b, mtp_->head, x);
}

} // namespace vt
