#include "models/gated-deltanet.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace vt {

GdnShape read_gdn_shape(Model &m) {
    GdnShape s;
    s.kernel = m.arch_u32("ssm.conv_kernel");
    s.dk = m.arch_u32("ssm.state_size");
    s.nk = m.arch_u32("ssm.group_count");
    s.nv = m.arch_u32("ssm.time_step_rank");
    const int64_t inner = m.arch_u32("ssm.inner_size");
    const char *arch = m.arch_name().c_str();
    if (s.kernel < 2 || s.kernel > 64 || s.dk == 0 || s.dk > 1024 || s.nk == 0 || s.nv == 0 || s.nv % s.nk != 0 ||
        inner % s.nv != 0 || inner == 0 || inner / s.nv > 1024)
        fail(VT_ERR_FORMAT, "%s: invalid linear attention: conv kernel %lld, %lld key heads of %lld, %lld value "
             "heads, inner size %lld", arch, (long long)s.kernel, (long long)s.nk, (long long)s.dk, (long long)s.nv,
             (long long)inner);
    s.dv = inner / s.nv;
    return s;
}

std::vector<bool> read_recurrent_layers(Model &m) {
    const uint32_t n = m.hparams.n_layer;
    std::vector<bool> rec(n, false);
    const std::string key = m.arch_name() + ".attention.recurrent_layers";
    if (const GgufValue *v = m.gguf().get_array(key, GgufType::BOOL)) {
        if (!m.per_layer_list_ok(v->arr_n)) fail(VT_ERR_FORMAT, "%s: %s is not one bool per layer", m.arch_name().c_str(), key.c_str());
        const uint8_t *b = static_cast<const uint8_t *>(v->raw);
        for (uint32_t i = 0; i < n; ++i) rec[i] = b[i] != 0;
        return rec;
    }
    const uint32_t every = m.arch_u32("full_attention_interval", 4);
    if (every == 0) fail(VT_ERR_FORMAT, "%s: full_attention_interval is 0", m.arch_name().c_str());
    for (uint32_t i = 0; i < n; ++i) rec[i] = (i + 1) % every != 0;
    return rec;
}

LayerCacheSpec gdn_cache_spec(const GdnShape &s) {
    LayerCacheSpec c;
    c.kind = CacheKind::recurrent;
    c.conv_floats = (uint32_t)((s.kernel - 1) * s.conv_channels());
    c.state_floats = (uint32_t)(s.nv * s.dk * s.dv);
    return c;
}

GdnWeights load_gdn_weights(Model &m, uint32_t il, const GdnShape &s) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t E = m.hparams.n_embd, C = s.conv_channels(), V = s.nv * s.dv;
    GdnWeights w;
    // Early llama.cpp conversions of Qwen3-Next fused every input
    // projection into ssm_in (per K head [q k v z], then b and a).
    if (m.gguf().find_tensor(p + "ssm_in.weight"))
        fail(VT_ERR_UNSUPPORTED, "%s: %sssm_in.weight is the fused layout of an older llama.cpp converter; "
             "convert the checkpoint again (attn_qkv, attn_gate and ssm_ba)", m.arch_name().c_str(), p.c_str());
    w.qkv = m.matmul_weight(p + "attn_qkv.weight", {E, C});
    w.z = m.matmul_weight(p + "attn_gate.weight", {E, V});
    if (m.gguf().find_tensor(p + "ssm_ba.weight")) {
        w.ba = m.matmul_weight(p + "ssm_ba.weight", {E, 2 * s.nv});
    } else {
        w.beta = m.matmul_weight(p + "ssm_beta.weight", {E, s.nv});
        w.alpha = m.matmul_weight(p + "ssm_alpha.weight", {E, s.nv});
    }
    w.a = load_norm(m, p + "ssm_a", s.nv);
    w.dt_bias = load_norm(m, p + "ssm_dt.bias", s.nv);
    w.conv = m.weight(p + "ssm_conv1d.weight", {s.kernel, C});
    if (w.conv->type != DType::F32)
        fail(VT_ERR_UNSUPPORTED, "%s: %sssm_conv1d.weight must be F32", m.arch_name().c_str(), p.c_str());
    w.norm = load_norm(m, p + "ssm_norm.weight", s.dv);
    w.out = m.matmul_weight(p + "ssm_out.weight", {V, E});
    return w;
}

Tensor *gated_delta_net(LayerBuilder &b, uint32_t il, Tensor *h, const GdnWeights &w, const GdnShape &s,
                        int32_t k_head_mode) {
    Graph &g = b.graph();
    const ForwardArgs &a = b.args();
    const int64_t n = b.n_tokens(), C = s.conv_channels(), nk = s.nk, nv = s.nv, dk = s.dk, dv = s.dv;
    const float eps = b.model().hparams.norm_eps;
    Tensor *conv_pool = &(*a.k_cache)[il], *state_pool = &(*a.v_cache)[il];

    // [q | k | v] through the causal conv (its tail in the sequence's slot), then silu.
    Tensor *qkv = b.linear(w.qkv, h);  // (C, n)
    Tensor *x = g.op<Op::CONV1D_CAUSAL>(DType::F32, {C, n}, {qkv, const_cast<Tensor *>(w.conv), nullptr, conv_pool,
                                                             a.state_index}, ConvParams{1});
    const size_t f = sizeof(float), row = (size_t)C * f;
    Tensor *q = g.view(x, {dk, nk, n}, {dk * f, row}, 0);
    Tensor *k = g.view(x, {dk, nk, n}, {dk * f, row}, (size_t)(nk * dk) * f);
    Tensor *v = g.view(x, {dv, nv, n}, {dv * f, row}, (size_t)(2 * nk * dk) * f);
    q = g.op<Op::L2_NORM>(DType::F32, {dk, nk, n}, {q}, NormParams{kDeltaL2Eps});
    q = b.scale(q, 1.0f / std::sqrt((float)dk));
    k = g.op<Op::L2_NORM>(DType::F32, {dk, nk, n}, {k}, NormParams{kDeltaL2Eps});

    // beta = sigmoid(b), g = -exp(A_log) * softplus(a + dt_bias), per V head and token.
    Tensor *beta_in, *alpha_in;
    if (w.ba) {
        // Per K head: [b (r) | a (r)], r = nv / nk; in V-head order once the
        // K heads' halves are read one after the other.
        const int64_t r = nv / nk;
        Tensor *ba = b.linear(w.ba, h);  // (2 nv, n)
        beta_in = g.op<Op::CPY>(DType::F32, {r, nk, n}, {g.view(ba, {r, nk, n}, {2 * r * f, 2 * nv * f}, 0)});
        alpha_in = g.op<Op::CPY>(DType::F32, {r, nk, n}, {g.view(ba, {r, nk, n}, {2 * r * f, 2 * nv * f}, r * f)});
        beta_in = g.reshape(beta_in, {nv, n});
        alpha_in = g.reshape(alpha_in, {nv, n});
    } else {
        beta_in = b.linear(w.beta, h);
        alpha_in = b.linear(w.alpha, h);
    }
    Tensor *beta = g.op<Op::UNARY>(DType::F32, {nv, n}, {beta_in}, UnaryParams{kUnarySigmoid, 0.0f});
    Tensor *decay = g.op<Op::UNARY>(DType::F32, {nv, n}, {b.add(alpha_in, const_cast<Tensor *>(w.dt_bias))},
                                    UnaryParams{kUnarySoftplus, 0.0f});
    decay = g.op<Op::MUL>(DType::F32, {nv, n}, {decay, const_cast<Tensor *>(w.a)});

    DeltaRuleParams dp{};
    dp.k_head_mode = k_head_mode;
    Tensor *o = g.op<Op::GATED_DELTA_RULE>(DType::F32, {dv, nv, n}, {q, k, v, decay, beta, state_pool, a.state_index},
                                           dp);
    // RMSNorm per head times silu(z), then the output projection.
    Tensor *z = g.reshape(b.linear(w.z, h), {dv, nv, n});
    o = g.op<Op::RMS_NORM_GATED>(DType::F32, {dv, nv, n}, {o, const_cast<Tensor *>(w.norm), z},
                                 GatedNormParams{eps, kGateSilu, 0, kGateAfterNorm});
    return b.linear(w.out, g.reshape(o, {dv * nv, n}));
}

} // namespace vt
