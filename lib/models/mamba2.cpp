#include "models/mamba2.h"

#include <string>

#include "core/error.h"

namespace vt {

Mamba2Shape read_mamba2_shape(Model &m) {
    Mamba2Shape s;
    s.kernel = m.arch_u32("ssm.conv_kernel");
    s.n_state = m.arch_u32("ssm.state_size");
    s.n_group = m.arch_u32("ssm.group_count");
    s.n_head = m.arch_u32("ssm.time_step_rank");
    s.d_inner = m.arch_u32("ssm.inner_size");
    const char *arch = m.arch_name().c_str();
    if (s.kernel < 2 || s.kernel > 64)
        fail(VT_ERR_FORMAT, "%s: ssm.conv_kernel %lld is not from 2 to 64", arch, (long long)s.kernel);
    if (s.n_state == 0 || s.n_state > 1024)
        fail(VT_ERR_FORMAT, "%s: ssm.state_size %lld is not from 1 to 1024", arch, (long long)s.n_state);
    if (s.n_head == 0 || s.n_group == 0 || s.n_head % s.n_group != 0)
        fail(VT_ERR_FORMAT, "%s: ssm.time_step_rank (%lld heads) is not a multiple of ssm.group_count (%lld)", arch,
             (long long)s.n_head, (long long)s.n_group);
    if (s.d_inner == 0 || s.d_inner % s.n_head != 0 || s.d_inner / s.n_head > 4096)
        fail(VT_ERR_FORMAT, "%s: ssm.inner_size %lld is not a multiple of %lld heads of at most 4096", arch,
             (long long)s.d_inner, (long long)s.n_head);
    s.head_dim = s.d_inner / s.n_head;
    return s;
}

LayerCacheSpec mamba2_cache_spec(const Mamba2Shape &s) {
    LayerCacheSpec c;
    c.kind = CacheKind::recurrent;
    c.conv_floats = (uint32_t)((s.kernel - 1) * s.conv_channels());
    c.state_floats = (uint32_t)(s.n_head * s.head_dim * s.n_state);
    return c;
}

namespace {
// A small F32 tensor of n0 x n1 values, as the converter writes it (n0, n1)
// or as a folder holds it (n0 * n1): A and D (1, H), the norm (d_inner / G, G).
const Tensor *small_f32(Model &m, const std::string &name, int64_t n0, int64_t n1, bool required = true) {
    const GgufTensorInfo *info = m.gguf().find_tensor(name);
    if (!info && !required) return nullptr;
    const Tensor *t = info && info->n_dims == 1 ? m.weight(name, {n0 * n1}) : m.weight(name, {n0, n1});
    if (t->type != DType::F32) fail(VT_ERR_UNSUPPORTED, "%s: %s must be F32", m.arch_name().c_str(), name.c_str());
    return t;
}
} // namespace

Mamba2Weights load_mamba2_weights(Model &m, uint32_t il, const Mamba2Shape &s, const Mamba2LoadOptions &o) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const int64_t E = m.hparams.n_embd, C = s.conv_channels(), R = s.in_rows(), H = s.n_head;
    Mamba2Weights w;
    w.in = m.matmul_weight(p + "ssm_in.weight", {E, R});
    w.in_bias = load_norm(m, p + "ssm_in.bias", R, false);
    w.conv = m.weight(p + "ssm_conv1d.weight", {s.kernel, C});
    if (w.conv->type != DType::F32)
        fail(VT_ERR_UNSUPPORTED, "%s: %sssm_conv1d.weight must be F32", m.arch_name().c_str(), p.c_str());
    w.conv_bias = load_norm(m, p + "ssm_conv1d.bias", C, false);
    w.dt_bias = load_norm(m, p + "ssm_dt.bias", H);
    w.a = small_f32(m, p + "ssm_a", 1, H);
    w.d = small_f32(m, p + "ssm_d", 1, H);
    w.norm = small_f32(m, p + "ssm_norm.weight", s.d_inner / s.n_group, s.n_group, o.norm);
    w.out = m.matmul_weight(p + "ssm_out.weight", {s.d_inner, E});
    w.out_bias = load_norm(m, p + "ssm_out.bias", E, false);
    return w;
}

Tensor *mamba2_mixer(LayerBuilder &b, uint32_t il, Tensor *h, const Mamba2Weights &w, const Mamba2Shape &s) {
    Graph &g = b.graph();
    const ForwardArgs &a = b.args();
    const int64_t n = b.n_tokens(), Di = s.d_inner, C = s.conv_channels(), R = s.in_rows(), H = s.n_head,
                  P = s.head_dim, N = s.n_state, G = s.n_group;
    const size_t f = sizeof(float);
    auto cw = [](const Tensor *t) { return const_cast<Tensor *>(t); };
    Tensor *conv_pool = &(*a.k_cache)[il], *state_pool = &(*a.v_cache)[il];

    // [z | x B C | dt] per token.
    Tensor *zxbcdt = b.linear(w.in, h, w.in_bias);  // (R, n)
    if (w.in_scale) zxbcdt = g.op<Op::MUL>(DType::F32, {R, n}, {zxbcdt, cw(w.in_scale)});
    const size_t row = (size_t)R * f;
    Tensor *z = g.view(zxbcdt, {Di, n}, {row}, 0);
    Tensor *xbc = g.view(zxbcdt, {C, n}, {row}, (size_t)Di * f);
    Tensor *dt = g.op<Op::CPY>(DType::F32, {H, n}, {g.view(zxbcdt, {H, n}, {row}, (size_t)(Di + C) * f)});

    // The causal conv (its tail in the sequence's slot) with bias, then silu.
    xbc = g.op<Op::CONV1D_CAUSAL>(DType::F32, {C, n}, {xbc, cw(w.conv), cw(w.conv_bias), conv_pool, a.state_index},
                                  ConvParams{1});
    const size_t crow = (size_t)C * f;
    Tensor *x = g.view(xbc, {P, H, n}, {P * f, crow}, 0);
    Tensor *B = g.view(xbc, {N, G, n}, {N * f, crow}, (size_t)Di * f);
    Tensor *Cm = g.view(xbc, {N, G, n}, {N * f, crow}, (size_t)(Di + G * N) * f);

    // The scan: softplus(dt + dt_bias) clamped inside the op; the D skip after.
    dt = b.add(dt, cw(w.dt_bias));
    SsmScanParams sp{};
    sp.chunk_size = s.chunk_size;
    sp.dt_min = s.dt_min;
    sp.dt_max = std::isfinite(s.dt_max) ? s.dt_max : 0.0f;  // 0: no upper limit
    Tensor *y = g.op<Op::SSM_SCAN>(DType::F32, {P, H, n},
                                   {x, dt, g.reshape(cw(w.a), {H}), B, Cm, state_pool, a.state_index}, sp);
    Tensor *xd = g.op<Op::MUL>(DType::F32, {P, H, n}, {g.op<Op::CPY>(DType::F32, {P, H, n}, {x}),
                                                       g.reshape(cw(w.d), {1, H})});
    y = g.reshape(b.add(y, xd), {Di, n});

    // Mamba's gated norm: norm(y * silu(z)) per group of Di / G, times the weight.
    if (w.norm) {
        GatedNormParams np{};
        np.eps = b.model().hparams.norm_eps;
        np.gate = kGateSilu;
        np.group = (int32_t)(Di / G);
        np.order = kGateBeforeNorm;
        y = g.op<Op::RMS_NORM_GATED>(DType::F32, {Di, n}, {y, g.reshape(cw(w.norm), {Di}), z}, np);
    } else {
        Tensor *gate = g.op<Op::UNARY>(DType::F32, {Di, n}, {g.op<Op::CPY>(DType::F32, {Di, n}, {z})},
                                       UnaryParams{kUnarySilu, 0.0f});
        y = g.op<Op::MUL>(DType::F32, {Di, n}, {y, gate});
    }
    return b.linear(w.out, y, w.out_bias);
}

} // namespace vt
