#include "models/short-conv.h"

#include <string>

#include "core/error.h"

namespace vt {

uint32_t read_short_conv_kernel(Model &m) {
    const uint32_t k = m.arch_u32("shortconv.l_cache");
    // 1 would leave no tail (and llama.cpp refuses it); real models use 3.
    if (k < 2 || k > 64) fail(VT_ERR_FORMAT, "%s: shortconv.l_cache %u is not from 2 to 64", m.arch_name().c_str(), k);
    return k;
}

LayerCacheSpec short_conv_cache_spec(int64_t n_embd, int64_t kernel) {
    LayerCacheSpec c;
    c.kind = CacheKind::recurrent;
    c.conv_floats = (uint32_t)((kernel - 1) * n_embd);
    c.state_floats = 0;  // the conv tail is the whole state
    return c;
}

ShortConvWeights load_short_conv_weights(Model &m, uint32_t il, int64_t kernel) {
    const std::string p = "blk." + std::to_string(il) + ".shortconv.";
    const int64_t E = m.hparams.n_embd;
    ShortConvWeights w;
    w.in_b = m.matmul_weight_rows(p + "in_proj.weight", E, 3 * E, 0, E);
    w.in_c = m.matmul_weight_rows(p + "in_proj.weight", E, 3 * E, E, E);
    w.in_x = m.matmul_weight_rows(p + "in_proj.weight", E, 3 * E, 2 * E, E);
    w.in_bias = load_norm(m, p + "in_proj.bias", 3 * E, false);
    w.conv = m.weight(p + "conv.weight", {kernel, E});
    if (w.conv->type != DType::F32)
        fail(VT_ERR_UNSUPPORTED, "%s: %sconv.weight must be F32", m.arch_name().c_str(), p.c_str());
    w.conv_bias = load_norm(m, p + "conv.bias", E, false);
    w.out_proj = m.matmul_weight(p + "out_proj.weight", {E, E});
    w.out_bias = load_norm(m, p + "out_proj.bias", E, false);
    return w;
}

Tensor *short_conv(LayerBuilder &b, uint32_t il, Tensor *h, const ShortConvWeights &w) {
    Graph &g = b.graph();
    const ForwardArgs &a = b.args();
    const int64_t n = b.n_tokens(), E = b.model().hparams.n_embd;
    const size_t f = sizeof(float);
    // [B | C | x]: three products (a bias, where the checkpoint has one, in thirds).
    auto third = [&](const Tensor *wt, int i) {
        Tensor *y = b.linear(wt, h);
        if (!w.in_bias) return y;
        return b.add(y, g.view(const_cast<Tensor *>(w.in_bias), {E}, {}, (size_t)i * E * f));
    };
    Tensor *B = third(w.in_b, 0), *C = third(w.in_c, 1), *x = third(w.in_x, 2);
    Tensor *bx = g.op<Op::MUL>(DType::F32, {E, n}, {B, x});
    Tensor *conv = g.op<Op::CONV1D_CAUSAL>(DType::F32, {E, n},
                                           {bx, const_cast<Tensor *>(w.conv), const_cast<Tensor *>(w.conv_bias),
                                            &(*a.k_cache)[il], a.state_index},
                                           ConvParams{0});
    Tensor *y = g.op<Op::MUL>(DType::F32, {E, n}, {C, conv});
    return b.linear(w.out_proj, y, w.out_bias);
}

} // namespace vt
