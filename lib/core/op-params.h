// Typed parameters of graph ops: one struct per op (named in ops.def), held
// in a Node's OpParams union under the op's field name, e.g.
// node.params.rope.n_rot. Plain structs: they cross the backend vtable.
#pragma once

#include <cstdint>

namespace vt {

struct NoParams {};

struct NormParams {
    float eps;
};

struct ScaleParams {
    float scale;
};

// SwiGLU (Op::SWIGLU). Value-initialized it is the plain silu(gate) * up;
// limit > 0 selects gpt-oss's clamped form (ops.def).
struct SwigluParams {
    float alpha;  // the sigmoid's slope in the clamped form (gpt-oss: swiglu_alpha 1.702)
    float limit;  // > 0: gate clamped above, up to [-limit, limit] (gpt-oss: swiglu_limit 7); 0: plain
};

// Element-wise functions (Op::UNARY).
struct UnaryParams {
    int32_t kind;  // kUnary*
    float cap;     // kUnarySoftcap's c; unused by the other kinds (0 in their {kind})
};
constexpr int32_t kUnarySigmoid = 0;   // 1 / (1 + exp(-x))
constexpr int32_t kUnarySilu = 1;      // x / (1 + exp(-x))
constexpr int32_t kUnarySoftplus = 2;  // log1p(exp(x)), x where x > 20 (torch's softplus, threshold 20)
constexpr int32_t kUnaryExp = 3;       // exp(x)
constexpr int32_t kUnaryReluSqr = 4;   // max(x, 0)^2 (NemotronH's relu2 MLPs and experts)
constexpr int32_t kUnarySoftcap = 5;   // c * tanh(x / c): Gemma's and Muse Glimmer's logit soft-cap, Laguna's router's

// RMSNorm times a gate (Op::RMS_NORM_GATED). The fields after gate are
// zero in every older caller's {eps, gate}, and zero means the old
// behaviour: the whole row one norm, the gate after the weight.
struct GatedNormParams {
    float eps;
    int32_t gate;   // kGateSilu or kGateSigmoid: the activation of z
    int32_t group;  // elements per norm group within the ne[0] row (a divisor of ne[0]); 0: the whole row
    int32_t order;  // kGateAfterNorm or kGateBeforeNorm
};
constexpr int32_t kGateSilu = 0;
constexpr int32_t kGateSigmoid = 1;
// ((x * rms_scale(x)) * w) * act(z): Qwen3-Next's and Kimi's gated norms.
constexpr int32_t kGateAfterNorm = 0;
// ((x * act(z)) * rms_scale(x * act(z))) * w: Mamba's MambaRMSNormGated with
// norm_before_gate=False (NemotronH, Granite 4 hybrid, Falcon-H1).
constexpr int32_t kGateBeforeNorm = 1;

// Causal depthwise convolution with per-sequence state (Op::CONV1D_CAUSAL).
struct ConvParams {
    int32_t silu;  // nonzero: silu on the output
};

// The gated delta rule (Op::GATED_DELTA_RULE): Gated DeltaNet (one log-decay
// per head and token) and Kimi Delta Attention (one per key channel).
struct DeltaRuleParams {
    int32_t k_head_mode;       // which K head a V head reads: kDeltaHeadsInterleaved or kDeltaHeadsTiled
    int32_t gate_per_channel;  // 0: g (Hv, n_tok); nonzero: g (dk, Hv, n_tok)
    int32_t chunked_from;      // a sequence with at least this many tokens in the step takes the chunked
                               // form (per-head gates only); 0: kDeltaChunkedFrom
};
constexpr int32_t kDeltaHeadsInterleaved = 0;  // V head h reads K head h / (Hv / Hk) (transformers' repeat_interleave)
constexpr int32_t kDeltaHeadsTiled = 1;        // V head h reads K head h % Hk (llama.cpp's reordered GGUF V heads)
constexpr int32_t kDeltaChunk = 64;            // tokens per chunk of the chunked form, from a sequence's first token
// By default no sequence takes the chunked form: on the CPU the recurrent
// form is the faster one at every length (its state rows stay in L1 across
// a block of tokens, and it does no more arithmetic than the chunked form:
// perf-delta-rule, dk = dv = 128, 16 heads, 64 tokens, 1 thread: 2.5 ms
// recurrent, 8.1 ms chunked), and it gives a sequence the same bits however
// its tokens are split into steps. The chunked form stays for devices where
// it pays (chunked_from selects it).
constexpr int32_t kDeltaChunkedFrom = INT32_MAX;

// Mamba-2's selective state-space scan (Op::SSM_SCAN). Value-initialized
// (SsmScanParams{}) it is the transformers defaults: time_step_limit (0,
// inf), the chunk size kSsmChunk, the default choice of form.
struct SsmScanParams {
    int32_t chunk_size;    // tokens per chunk of the chunked (SSD) form (the checkpoint's chunk_size),
                           // at most kSsmChunkMax; 0: kSsmChunk
    float dt_min;          // dt is clamped to [dt_min, dt_max] after softplus (time_step_limit)
    float dt_max;          // <= 0: no upper limit (as +inf)
    int32_t chunked_from;  // a sequence with at least this many tokens in the step takes the chunked
                           // form; 0: kSsmChunkedFrom; INT32_MAX: never
};
constexpr int32_t kSsmChunk = 128;     // transformers' Mamba2Config/NemotronHConfig default chunk_size
constexpr int32_t kSsmChunkMax = 512;  // the largest chunk_size the CPU backend takes
// Which form a prompt takes by default: see ops-ssm-scan.cpp (measured).
constexpr int32_t kSsmChunkedFrom = INT32_MAX;

// Rotary embedding, with ggml's YaRN terms (ext_factor 0 = plain RoPE).
// theta_i = pos * freq_base^(-2i/n_rot) / freq_factor_i (src2, when given),
// then YaRN's ramp between interpolated (freq_scale * theta) and
// extrapolated angles over the correction dims of beta_fast/beta_slow, and
// cos/sin scaled by attn_factor (and YaRN's magnitude term).
struct RopeParams {
    int32_t n_rot;       // rotated dimensions per head (even, <= head_dim)
    int32_t mode;        // kRopeAdjacent (x[2i], x[2i+1]) or kRopeNeox (x[i], x[i + n_rot/2])
    float freq_base;
    float freq_scale;    // 1 / linear scaling factor
    float ext_factor;    // YaRN ramp mix (0: off)
    float attn_factor;   // multiplies cos and sin (1: none)
    float beta_fast;
    float beta_slow;
    int32_t n_ctx_orig;  // YaRN: the training context the ramp is computed for
};
constexpr int32_t kRopeAdjacent = 0;
constexpr int32_t kRopeNeox = 2;

// Causal attention over a paged pool (Op::ATTN_PAGED).
struct PagedAttnParams {
    float scale;      // multiplies q.k
    int32_t window;   // sliding window in positions (a query sees itself and window-1 before); 0 = all
    int32_t max_kv;   // the most positions a token may see (the context): bounds the kernel's scratch
};

// Mixture-of-experts routing (Op::MOE_TOPK picks, Op::MOE_WEIGHTS weighs).
// scores = gating(router logits): softmax over the experts, an
// element-wise sigmoid (DeepSeek-V3), or the logits themselves
// (kMoeSoftmaxTopk, whose weights are a softmax over the chosen). Experts are chosen by scores + the
// optional selection bias; with n_group > 1 only experts of the topk_group
// groups with the largest sums of their two best choices may be chosen
// (DeepSeek-V3), the others never are (transformers' masked_fill of -inf). A
// chosen expert's weight is its score (without the bias), divided by the
// sum of the chosen ones when norm is set, times scale.
struct MoeRouteParams {
    int32_t k;           // experts per token
    int32_t gating;      // kMoeSoftmax, kMoeSigmoid or kMoeSoftmaxTopk
    int32_t n_group;     // expert groups (<= 1: none)
    int32_t topk_group;  // groups a token may choose from
    int32_t norm;        // nonzero: chosen weights sum to 1 (before scale)
    float scale;         // routed scaling factor (1: none)
};
constexpr int32_t kMoeSoftmax = 0;
constexpr int32_t kMoeSigmoid = 1;
// gpt-oss (transformers' GptOssTopKRouter, llama.cpp's SOFTMAX_WEIGHT):
// experts chosen on the raw logits (plus any selection bias), the weights a
// softmax over the chosen ones' logits only. Softmax over all then norm is
// the same in exact arithmetic, but it chooses on rounded probabilities (two
// close logits can tie, an underflowed tail ties at 0) and rounds twice.
constexpr int32_t kMoeSoftmaxTopk = 2;

} // namespace vt
