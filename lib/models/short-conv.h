// LFM2's gated short convolution (Liquid AI): in_proj -> [B | C | x] per
// token, B * x through a causal depthwise conv of L_cache taps (no
// activation, a bias only where the checkpoint has one), C * the conv's
// output, out_proj. Unlike Mamba and the delta nets there is no recurrent
// state beside the conv: a sequence's slot (CacheKind::recurrent) holds
// the last L_cache - 1 inputs of B * x per channel (conv_floats) and
// nothing else (state_floats 0, so v_cache[il] has no elements and no
// data). Reference: transformers' models/lfm2/modeling_lfm2.py
// (Lfm2ShortConv); llama.cpp's src/models/lfm2.cpp reads the same GGUF.
#pragma once

#include <cstdint>

#include "models/layers.h"

namespace vt {

// The conv's width (GGUF "<arch>.shortconv.l_cache"), checked. Throws
// vt::Error(VT_ERR_FORMAT).
uint32_t read_short_conv_kernel(Model &m);

// A short-conv layer's slot: (kernel - 1) * n_embd floats of conv tail, no state.
LayerCacheSpec short_conv_cache_spec(int64_t n_embd, int64_t kernel);

struct ShortConvWeights {
    // in_proj (n_embd, 3 n_embd), rows [B | C | x], as three matmul weights
    // of its rows (n_embd, n_embd) each: three contiguous products, no copies.
    const Tensor *in_b = nullptr, *in_c = nullptr, *in_x = nullptr;
    const Tensor *in_bias = nullptr;   // (3 n_embd) or null
    const Tensor *conv = nullptr;      // (kernel, n_embd) f32
    const Tensor *conv_bias = nullptr; // (n_embd) or null
    const Tensor *out_proj = nullptr;  // (n_embd, n_embd)
    const Tensor *out_bias = nullptr;  // (n_embd) or null
};

// blk.<il>.shortconv.{in_proj, conv, out_proj}.weight and, when present,
// their .bias; names the tensor that is missing or of the wrong shape or type.
ShortConvWeights load_short_conv_weights(Model &m, uint32_t il, int64_t kernel);

// The block on normed input h (n_embd, n), its conv tail in layer il's
// slots (k_cache[il], a.state_index). Returns (n_embd, n).
Tensor *short_conv(LayerBuilder &b, uint32_t il, Tensor *h, const ShortConvWeights &w);

} // namespace vt
