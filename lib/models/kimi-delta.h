// Kimi Delta Attention (KDA), the linear-attention layer of Kimi-Linear: the
// gated delta rule (Op::GATED_DELTA_RULE) with one log-decay per key channel
// instead of one per head. Each of q, k and v has its own projection and its
// own short causal depthwise conv (then SiLU); q and k are L2-normalised (q
// also scaled by 1/sqrt(dk)); the decay is -exp(A_log[head]) *
// softplus(f_b(f_a(x)) + dt_bias) per channel, beta = sigmoid(b(x)) per head;
// the output is RMS-normed per head and gated by sigmoid(g_b(g_a(x))) (not
// SiLU, as Gated DeltaNet's), then projected. K and V heads are one to one.
// State: the layer's slot (CacheKind::recurrent) holds the three conv tails
// one after the other in k_cache[il] ([q | k | v], each (kernel-1) x H dk,
// the layout llama.cpp keeps too) and the H states of dk x dk in v_cache[il].
// Reference: transformers' models/kimi_linear/modeling_kimi_linear.py
// (KimiLinearDeltaAttention); flash-linear-attention's fla/ops/kda.
#pragma once

#include <cstdint>

#include "models/layers.h"

namespace vt {

// The shape of a model's KDA layers.
struct KdaShape {
    int64_t heads = 0;   // attention.head_count: llama.cpp has no KDA head count of its own
    int64_t dk = 0;      // kda.head_dim, the key and value head size
    int64_t kernel = 0;  // ssm.conv_kernel
    int64_t channels() const { return heads * dk; }  // of each of q, k and v
};

// Reads kda.head_dim, ssm.conv_kernel and the head count; checks them.
// Throws vt::Error(VT_ERR_FORMAT).
KdaShape read_kda_shape(Model &m);

// The cache spec of a KDA layer: three conv tails and H states of dk x dk.
LayerCacheSpec kda_cache_spec(const KdaShape &s);

struct KdaWeights {
    const Tensor *q = nullptr, *k = nullptr, *v = nullptr;  // (n_embd, H dk) each
    // (kernel, H dk) or, as the converter writes them, (kernel, 1, H dk).
    const Tensor *conv[3] = {};                            // q, k, v
    const Tensor *f_a = nullptr;      // (n_embd, dk): the decay's low-rank down projection
    const Tensor *f_b = nullptr;      // (dk, H dk)
    const Tensor *dt_bias = nullptr;  // (H dk): per key channel
    const Tensor *a = nullptr;        // (1, H): -exp(A_log), one per head
    const Tensor *beta = nullptr;     // (n_embd, H)
    const Tensor *g_a = nullptr;      // (n_embd, dk): the output gate's low-rank down projection
    const Tensor *g_b = nullptr;      // (dk, H dk)
    const Tensor *norm = nullptr;     // (dk): the gated norm's weight, shared by the heads
    const Tensor *out = nullptr;      // (H dk, n_embd)
};

// Loads blk.<il>.{attn_q, attn_k, attn_v, ssm_conv1d_{q,k,v}, ssm_f_a,
// ssm_f_b, ssm_dt.bias, ssm_a, ssm_beta, ssm_g_a, ssm_g_b, ssm_norm,
// attn_output}, checked against s.
KdaWeights load_kda_weights(Model &m, uint32_t il, const KdaShape &s);

// The layer on normed input h (n_embd, n). Returns (n_embd, n).
Tensor *kimi_delta_attention(LayerBuilder &b, uint32_t il, Tensor *h, const KdaWeights &w, const KdaShape &s);

} // namespace vt
