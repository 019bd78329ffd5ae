// Multi-head latent attention (MLA, DeepSeek-V2's), shared by deepseek2.cpp
// and kimi-linear.cpp. The cache keeps, per token and layer, the normed
// latent c_kv (kv_lora_rank values) and k_pe (rope dims, shared by every
// head): CacheKind::latent. Attention runs in the absorbed form: head h's
// query becomes [W_UK_h^T q_nope_h, q_pe_h] (attn_k_b as a per-head product,
// MUL_MAT_ID without ids), the keys are the cached rows, the values their
// c_kv part (ATTN_PAGED's latent mode), and head h's output is W_UV_h times
// its mixed latent (attn_v_b) before attn_output. Queries come straight from
// attn_q, or through the low-rank attn_q_a, its norm and attn_q_b. DeepSeek
// rotates q_pe and k_pe; Kimi-Linear's MLA has no position encoding at all
// (its "rope" dims are plain dims).
// Reference: transformers/models/deepseek_v2/modeling_deepseek_v2.py;
// https://arxiv.org/abs/2405.04434.
#pragma once

#include <cstdint>

#include "models/layers.h"

namespace vt {

struct MlaShape {
    uint32_t kv_lora = 0;  // attention.kv_lora_rank: the latent's width
    uint32_t q_lora = 0;   // attention.q_lora_rank, 0: plain attn_q
    uint32_t d_nope = 0;   // per head: the query/key dims without rope (key_length_mla - rope dims)
    uint32_t d_rope = 0;   // rope.dimension_count: k_pe's width
    uint32_t d_v = 0;      // attention.value_length_mla
    uint32_t row() const { return kv_lora + d_rope; }  // the cached row
};

// Reads the MLA keys (after read_decoder_hparams: head_dim is
// key_length_mla, n_rot the rope dims); checks key_length = kv_lora + rope
// dims. Throws vt::Error(VT_ERR_FORMAT).
MlaShape read_mla_shape(Model &m);

struct MlaWeights {
    const Tensor *wq = nullptr;                                          // (n_embd, n_head * d_qk), without q_lora
    const Tensor *wq_a = nullptr, *q_a_norm = nullptr, *wq_b = nullptr;  // (n_embd, q_lora), (q_lora), (q_lora, n_head * d_qk)
    const Tensor *wkv_a = nullptr;                                       // (n_embd, kv_lora + d_rope)
    const Tensor *kv_a_norm = nullptr;                                   // (kv_lora)
    const Tensor *wk_b = nullptr;                                        // (d_nope, kv_lora, n_head): W_UK_h^T per head
    const Tensor *wv_b = nullptr;                                        // (kv_lora, d_v, n_head)
    const Tensor *wo = nullptr;                                          // (n_head * d_v, n_embd)
};

// blk.<il>.{attn_q | attn_q_a, attn_q_a_norm, attn_q_b}, attn_kv_a_mqa,
// attn_kv_a_norm, attn_k_b, attn_v_b, attn_output.
MlaWeights load_mla_weights(Model &m, uint32_t il, const MlaShape &s);

struct MlaParams {
    const RopeParams *rope = nullptr;  // null: q_pe and k_pe are not rotated (Kimi-Linear)
    float kq_scale = 1.0f;             // the softmax scale
    float kv_norm_eps = 1e-6f;         // kv_a_norm's (and q_a_norm's) epsilon
};

// The attention of layer il on normed input h (n_embd, n). Returns (n_embd, n).
Tensor *mla_attention(LayerBuilder &b, uint32_t il, Tensor *h, const MlaWeights &w, const MlaShape &s,
                      const MlaParams &p);

} // namespace vt
