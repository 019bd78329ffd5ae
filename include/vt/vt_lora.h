/* vt_lora.h - LoRA adapters: low-rank updates of a model's projections,
 * chosen per request.
 *
 * An adapter holds, for some weights W of its model, two small matrices A
 * (rank x in) and B (out x rank); a token computed with the adapter at scale
 * s gets W x + s * c * B (A x), where c is the adapter's own factor
 * (lora_alpha / rank, or lora_alpha / sqrt(rank) with rsLoRA). The base
 * weights are never changed: requests with different adapters, or none,
 * share one engine step, which computes each base product once and each
 * adapter's low-rank product for its own requests' tokens only. A KV block
 * is shared through the prefix cache only between requests with the same
 * adapter and scale.
 *
 * Formats: a PEFT folder (adapter_config.json + adapter_model.safetensors)
 * and llama.cpp's GGUF LoRA (convert_lora_to_gguf.py). Targets are the
 * attention and MLP projections of the decoder blocks (and a mixture of
 * experts' router and shared experts); vt refuses, naming them, what it
 * cannot apply: modules_to_save, DoRA, LoRA biases, per-module rank or alpha
 * patterns, embedding or output targets, expert weights, fused projections
 * (Phi-3's qkv and gate_up) and DeepSeek's kv_b_proj.
 *
 * Thread-safety: an adapter is immutable once loaded; any thread may use it.
 */
#ifndef VT_LORA_H
#define VT_LORA_H

#include "vt_common.h"
#include "vt_context.h"
#include "vt_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vt_lora vt_lora;

/* CONSTRUCTOR. Since ABI 1.7. Loads an adapter of model from path (a PEFT
 * folder or a GGUF LoRA file) and checks it against the model: the GGUF's
 * architecture, every target a weight of the model, shapes that fit it. The
 * model must outlive the adapter. Errors: VT_ERR_IO (missing or unreadable),
 * VT_ERR_FORMAT (malformed config, safetensors or GGUF; an A without its B),
 * VT_ERR_INVALID_ARGUMENT (made for another model: architecture, a target
 * the model lacks, shapes), VT_ERR_UNSUPPORTED (see above). */
VT_API vt_status vt_lora_load(const vt_model *model, const char *path, vt_lora **out);

/* DESTRUCTOR. Accepts NULL. Requests and sequences already given the
 * adapter keep it alive until they end or drop it. */
VT_API void vt_lora_destroy(vt_lora *lora);

typedef struct vt_lora_info {
    uint32_t struct_size;   /* set by the caller: sizeof(vt_lora_info) */
    uint32_t rank;          /* the largest rank of its targets */
    float alpha;            /* lora_alpha (GGUF: adapter.lora.alpha; 0 there means the scale alone) */
    float scale;            /* c above: what B A is multiplied by at a request scale of 1 */
    uint32_t n_weights;     /* model weights it updates */
    uint64_t n_params;      /* values in its A and B matrices */
    const char *targets;    /* the kinds of weights it updates, GGUF names without the block:
                               "attn_q,attn_v,ffn_up"; owned by the adapter */
    const char *format;     /* "peft" or "gguf"; static */
} vt_lora_info;

/* METHOD. Since ABI 1.7. info->struct_size must be set; fields beyond it
 * are not written. */
VT_API vt_status vt_lora_get_info(const vt_lora *lora, vt_lora_info *info);

/* METHOD. Since ABI 1.7. The adapter the sequence's next steps compute
 * with, at scale (1 = as trained; 0 = as the base); lora NULL: none. Tokens
 * already in its KV cache keep what they were computed with (vt_seq_reset
 * to recompute). The sequence holds the adapter until it is replaced or the
 * sequence destroyed. Errors: VT_ERR_INVALID_ARGUMENT (an adapter of
 * another model, a scale that is not finite). */
VT_API vt_status vt_seq_set_lora(vt_seq *seq, const vt_lora *lora, float scale);

#ifdef __cplusplus
}
#endif

#endif /* VT_LORA_H */
