#include "models/kimi-delta.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "models/gated-deltanet.h"  // kDeltaL2Eps

namespace vt {

namespace {
const char *const kConvNames[3] = {"ssm_conv1d_q.weight", "ssm_conv1d_k.weight", "ssm_conv1d_v.weight"};
} // namespace

KdaShape read_kda_shape(Model &m) {
    KdaShape s;
    s.heads = m.arch_u32("attention.head_count");
    s.dk = m.arch_u32("kda.head_dim");
    s.kernel = m.arch_u32("ssm.conv_kernel");
    if (s.heads == 0 || s.heads > 4096 || s.dk == 0 || s.dk > 1024 || s.kernel < 2 || s.kernel > 64)
        fail(VT_ERR_FORMAT, "%s: invalid KDA shape: %lld heads of %lld, conv kernel %lld", m.arch_name().c_str(),
             (long long)s.heads, (long long)s.dk, (long long)s.kernel);
    return s;
}

LayerCacheSpec kda_cache_spec(const KdaShape &s) {
    LayerCacheSpec c;
    c.kind = CacheKind::recurrent;
    c.conv_floats = (uint32_t)(3 * (s.kernel - 1) * s.channels());
    c.state_floats = (uint32_t)(s.heads * s.dk * s.dk);
    return c;
}

KdaWeights load_kda_weights(Model &m, uint32_t il, const KdaShape &s) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t E = m.hparams.n_embd, C = s.channels(), H = s.heads, dk = s.dk;
    KdaWeights w;
    w.q = m.matmul_weight(p + "attn_q.weight", {E, C});
    w.k = m.matmul_weight(p + "attn_k.weight", {E, C});
    w.v = m.matmul_weight(p + "attn_v.weight", {E, C});
    for (int i = 0; i < 3; ++i) {
        const std::string name = p + kConvNames[i];
        // The converter keeps the checkpoint's (C, 1, K) as (K, 1, C); a
        // folder's is squeezed to (K, C). The graph reads (K, C) either way.
        const GgufTensorInfo *info = m.gguf().find_tensor(name);
        const bool middle_one = info && info->ne[1] == 1 && info->ne[2] == C;
        w.conv[i] = middle_one ? m.weight(name, {s.kernel, 1, C}) : m.weight(name, {s.kernel, C});
        if (w.conv[i]->type != DType::F32)
            fail(VT_ERR_UNSUPPORTED, "%s: %s must be F32", m.arch_name().c_str(), name.c_str());
    }
    w.f_a = m.matmul_weight(p + "ssm_f_a.weight", {E, dk});
    w.f_b = m.matmul_weight(p + "ssm_f_b.weight", {dk, C});
    w.dt_bias = load_norm(m, p + "ssm_dt.bias", C);
    w.a = m.weight(p + "ssm_a", {1, H});
    if (w.a->type != DType::F32) fail(VT_ERR_UNSUPPORTED, "%s: %sssm_a must be F32", m.arch_name().c_str(), p.c_str());
    w.beta = m.matmul_weight(p + "ssm_beta.weight", {E, H});
    w.g_a = m.matmul_weight(p + "ssm_g_a.weight", {E, dk});
    w.g_b = m.matmul_weight(p + "ssm_g_b.weight", {dk, C});
    w.norm = load_norm(m, p + "ssm_norm.weight", dk);
    w.out = m.matmul_weight(p + "attn_output.weight", {C, E});
    return w;
}

Tensor *kimi_delta_attention(LayerBuilder &b, uint32_t il, Tensor *h, const KdaWeights &w, const KdaShape &s) {
    Graph &g = b.graph();
    const ForwardArgs &a = b.args();
    const int64_t n = b.n_tokens(), C = s.channels(), H = s.heads, dk = s.dk, K = s.kernel;
    const float eps = b.model().hparams.norm_eps;
    Tensor *conv_pool = &(*a.k_cache)[il], *state_pool = &(*a.v_cache)[il];

    // q, k, v: each projection through its own causal conv and SiLU, its
    // tail the slot's part [i (K-1) C, (i+1) (K-1) C) (a view of the pool
    // with the pool's slot stride).
    const size_t f = sizeof(float), tail = (size_t)((K - 1) * C);
    Tensor *qkv[3];
    const Tensor *proj[3] = {w.q, w.k, w.v};
    for (int i = 0; i < 3; ++i) {
        Tensor *x = b.linear(proj[i], h);  // (C, n)
        Tensor *wt = g.reshape(const_cast<Tensor *>(w.conv[i]), {K, C});
        Tensor *pool = g.view(conv_pool, {(int64_t)tail, conv_pool->ne[1]}, {conv_pool->nb[1]}, (size_t)i * tail * f);
        qkv[i] = g.op<Op::CONV1D_CAUSAL>(DType::F32, {C, n}, {x, wt, nullptr, pool, a.state_index}, ConvParams{1});
    }
    Tensor *q = g.op<Op::L2_NORM>(DType::F32, {dk, H, n}, {g.reshape(qkv[0], {dk, H, n})}, NormParams{kDeltaL2Eps});
    q = b.scale(q, 1.0f / std::sqrt((float)dk));
    Tensor *k = g.op<Op::L2_NORM>(DType::F32, {dk, H, n}, {g.reshape(qkv[1], {dk, H, n})}, NormParams{kDeltaL2Eps});
    Tensor *v = g.reshape(qkv[2], {dk, H, n});

    // The log-decay per key channel: -exp(A_log[head]) * softplus(f_b(f_a(h)) + dt_bias).
    Tensor *fg = b.add(b.linear(w.f_b, b.linear(w.f_a, h)), const_cast<Tensor *>(w.dt_bias));  // (C, n)
    fg = g.op<Op::UNARY>(DType::F32, {C, n}, {fg}, UnaryParams{kUnarySoftplus, 0.0f});
    Tensor *decay = g.op<Op::MUL>(DType::F32, {dk, H, n}, {g.reshape(fg, {dk, H, n}), const_cast<Tensor *>(w.a)});
    Tensor *beta = g.op<Op::UNARY>(DType::F32, {H, n}, {b.linear(w.beta, h)}, UnaryParams{kUnarySigmoid, 0.0f});

    DeltaRuleParams dp{};
    dp.k_head_mode = kDeltaHeadsInterleaved;  // one K head per V head: either mode reads the same
    dp.gate_per_channel = 1;
    Tensor *o = g.op<Op::GATED_DELTA_RULE>(DType::F32, {dk, H, n}, {q, k, v, decay, beta, state_pool, a.state_index},
                                           dp);
    // RMSNorm per head (rms_norm_eps) times sigmoid of the low-rank gate, then the output projection.
    Tensor *gate = g.reshape(b.linear(w.g_b, b.linear(w.g_a, h)), {dk, H, n});
    o = g.op<Op::RMS_NORM_GATED>(DType::F32, {dk, H, n}, {o, const_cast<Tensor *>(w.norm), gate},
                                 GatedNormParams{eps, kGateSigmoid, 0, kGateAfterNorm});
    return b.linear(w.out, g.reshape(o, {C, n}));
}

} // namespace vt
