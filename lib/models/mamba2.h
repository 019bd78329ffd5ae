// The Mamba-2 mixer shared by the Mamba-2 hybrids (NemotronH, Granite 4
// hybrid, Falcon-H1): in_proj -> [z | xBC | dt]; a causal depthwise conv with
// bias and SiLU over xBC (Op::CONV1D_CAUSAL); x, B, C split; the selective
// state-space scan (Op::SSM_SCAN: dt = softplus(dt + dt_bias) clamped to the
// time-step limit, state = exp(dt A) state + dt B x, y = C . state) plus the
// D skip; the grouped gated RMSNorm in Mamba's order (gate first:
// norm(y * silu(z)) per group of d_inner / G channels, times the weight);
// out_proj. The layer's state lives in a slot of the runner's PagedKv
// (CacheKind::recurrent): the conv tail of the xBC channels in k_cache[il],
// the scan state (H x P x N f32) in v_cache[il].
// Reference: transformers' models/mamba2/modeling_mamba2.py (Mamba2Mixer,
// torch_forward) and models/zamba2 (the grouped gated norm NemotronH reuses);
// the GGUF layout is llama.cpp's converter's (conversion/mamba.py, Mamba2Model).
#pragma once

#include <cmath>
#include <cstdint>

#include "models/layers.h"

namespace vt {

// The shape of a model's Mamba-2 layers (GGUF "<arch>.ssm.*").
struct Mamba2Shape {
    int64_t d_inner = 0;  // H * P (ssm.inner_size)
    int64_t n_state = 0;  // N (ssm.state_size)
    int64_t n_head = 0;   // H (ssm.time_step_rank)
    int64_t head_dim = 0; // P = d_inner / H
    int64_t n_group = 0;  // G (ssm.group_count); H is a multiple of G
    int64_t kernel = 0;   // conv width (ssm.conv_kernel)
    // The time-step limit dt is clamped to after softplus (the config's
    // time_step_limit; GGUF has no key for it: (0, inf), as llama.cpp).
    float dt_min = 0.0f, dt_max = INFINITY;
    // Tokens per chunk of the scan's chunked form (the config's chunk_size;
    // GGUF has no key for it): 0 is the op's default. The forms agree to
    // float rounding.
    int32_t chunk_size = 0;
    int64_t conv_channels() const { return d_inner + 2 * n_group * n_state; }  // [x | B | C]
    int64_t in_rows() const { return 2 * d_inner + 2 * n_group * n_state + n_head; }  // [z | xBC | dt]
};

// Reads the ssm.* keys and checks them. Throws vt::Error(VT_ERR_FORMAT)
// naming the key.
Mamba2Shape read_mamba2_shape(Model &m);

// The cache spec of a Mamba-2 layer: the conv tail ((kernel - 1) x
// conv_channels) and H states of P x N, f32, laid out [(h * P + p) * N + n].
LayerCacheSpec mamba2_cache_spec(const Mamba2Shape &s);

struct Mamba2Weights {
    const Tensor *in = nullptr;        // ssm_in.weight (n_embd, in_rows): [z | x | B | C | dt]
    const Tensor *in_bias = nullptr;   // ssm_in.bias (in_rows) or null
    const Tensor *conv = nullptr;      // ssm_conv1d.weight (kernel, conv_channels), F32
    const Tensor *conv_bias = nullptr; // ssm_conv1d.bias (conv_channels) or null
    const Tensor *dt_bias = nullptr;   // ssm_dt.bias (H)
    const Tensor *a = nullptr;         // ssm_a (1, H): -exp(A_log)
    const Tensor *d = nullptr;         // ssm_d (1, H)
    const Tensor *norm = nullptr;      // ssm_norm.weight (d_inner / G, G), or null: no norm, y * silu(z) only
    const Tensor *out = nullptr;       // ssm_out.weight (d_inner, n_embd)
    const Tensor *out_bias = nullptr;  // ssm_out.bias (n_embd) or null
    // Per-row multipliers of in_proj's output (in_rows), or null: Falcon-H1's
    // muP multipliers per segment [z | x | B | C | dt], built by the caller
    // (an F32 tensor it owns, e.g. from Model::weight or a constant).
    const Tensor *in_scale = nullptr;
};

struct Mamba2LoadOptions {
    bool norm = true;  // ssm_norm.weight is required (Falcon-H1 may have none)
};

// Loads blk.<il>.{ssm_in, ssm_conv1d (+ .bias), ssm_dt.bias, ssm_a, ssm_d,
// ssm_norm, ssm_out} (biases of ssm_in and ssm_out when present) checked
// against s; names the tensor that is missing or of the wrong shape.
Mamba2Weights load_mamba2_weights(Model &m, uint32_t il, const Mamba2Shape &s, const Mamba2LoadOptions &o = {});

// The mixer of layer il on normed input h (n_embd, n); the state from the
// layer's slot (k_cache[il], v_cache[il]). Returns (n_embd, n), before the
// residual.
Tensor *mamba2_mixer(LayerBuilder &b, uint32_t il, Tensor *h, const Mamba2Weights &w, const Mamba2Shape &s);

} // namespace vt
