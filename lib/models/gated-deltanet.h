// The Gated DeltaNet block of the hybrid linear-attention models (Qwen3.5,
// Qwen3.6, Qwen3-Next; Kimi's KDA is the per-channel-gate variant): a causal
// depthwise conv over [q | k | v], L2-normalised q and k, the gated delta
// rule over a state per sequence (Op::GATED_DELTA_RULE), an RMSNorm gated by
// silu(z), the output projection. The layer's state lives in a slot of the
// runner's PagedKv (CacheKind::recurrent): the conv tail in k_cache[il], the
// delta-rule state in v_cache[il]. Reference: transformers'
// models/qwen3_next/modeling_qwen3_next.py (Qwen3NextGatedDeltaNet) and
// models/qwen3_5/modeling_qwen3_5.py; flash-linear-attention's
// fla/ops/gated_delta_rule for the chunked form.
#pragma once

#include <cstdint>

#include "models/layers.h"

namespace vt {

// The epsilon of the L2 norm of q and k before the delta rule:
// transformers' l2norm, x / sqrt(sum(x^2) + 1e-6), fixed in the modeling
// code of Qwen3-Next, Qwen3.5 and Kimi-Linear. llama.cpp uses the RMS
// epsilon instead (1e-6 for Qwen, 1e-5 for Kimi, which moves the tiny Kimi
// model's logits by up to 5e-3): vt follows transformers.
constexpr float kDeltaL2Eps = 1e-6f;

// The shape of a model's Gated DeltaNet layers (GGUF "<arch>.ssm.*").
struct GdnShape {
    int64_t nk = 0;      // key heads (ssm.group_count)
    int64_t nv = 0;      // value heads (ssm.time_step_rank), a multiple of nk
    int64_t dk = 0;      // key head size (ssm.state_size)
    int64_t dv = 0;      // value head size (ssm.inner_size / nv)
    int64_t kernel = 0;  // conv width (ssm.conv_kernel)
    int64_t conv_channels() const { return 2 * nk * dk + nv * dv; }  // [q | k | v]
};

// Reads the ssm.* keys; checks them. Throws vt::Error(VT_ERR_FORMAT).
GdnShape read_gdn_shape(Model &m);

// Which layers are recurrent: attention.recurrent_layers (a bool per layer)
// or, without it, every layer but each full_attention_interval-th.
std::vector<bool> read_recurrent_layers(Model &m);

// The cache spec of a Gated DeltaNet layer: the conv tail of the [q|k|v]
// channels and nv states of dk x dv.
LayerCacheSpec gdn_cache_spec(const GdnShape &s);

struct GdnWeights {
    const Tensor *qkv = nullptr;     // (n_embd, 2 nk dk + nv dv): [q heads | k heads | v heads]
    const Tensor *z = nullptr;       // (n_embd, nv dv): the output gate
    const Tensor *beta = nullptr;    // (n_embd, nv), or null with ba
    const Tensor *alpha = nullptr;   // (n_embd, nv), or null with ba
    // Qwen3-Next: b and a fused, per K head g [b (nv/nk) | a (nv/nk)].
    const Tensor *ba = nullptr;      // (n_embd, 2 nv)
    const Tensor *a = nullptr;       // (nv): -exp(A_log)
    const Tensor *dt_bias = nullptr; // (nv)
    const Tensor *conv = nullptr;    // (kernel, channels)
    const Tensor *norm = nullptr;    // (dv): the gated norm's weight, shared by the heads
    const Tensor *out = nullptr;     // (nv dv, n_embd)
};

// Loads blk.<il>.{attn_qkv, attn_gate, ssm_beta + ssm_alpha | ssm_ba, ssm_a,
// ssm_dt.bias, ssm_conv1d, ssm_norm, ssm_out}, checked against s; names the
// tensor that is missing or of the wrong shape.
GdnWeights load_gdn_weights(Model &m, uint32_t il, const GdnShape &s);

// The block on normed input h (n_embd, n); k_head_mode: which K head a V
// head reads (kDeltaHeadsInterleaved: transformers' order; kDeltaHeadsTiled:
// llama.cpp's converter reorders Qwen3.5's V heads). Returns (n_embd, n).
Tensor *gated_delta_net(LayerBuilder &b, uint32_t il, Tensor *h, const GdnWeights &w, const GdnShape &s,
                        int32_t k_head_mode);

} // namespace vt
