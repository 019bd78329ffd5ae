/* vt_context.h - compute contexts and sequences.
 *
 * A vt_context binds a model to a backend and a thread pool. A vt_seq is one
 * token stream evaluated in a context: it owns its KV cache (n_ctx tokens),
 * takes tokens with vt_seq_feed, evaluates them with vt_seq_step and exposes
 * the logits of that step.
 *
 * Thread-safety: a context and its sequences are externally synchronized:
 * one thread at a time per context (different contexts run in parallel).
 */
#ifndef VT_CONTEXT_H
#define VT_CONTEXT_H

#include "vt_common.h"
#include "vt_model.h"
#include "vt_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vt_context vt_context;
typedef struct vt_seq vt_seq;

/* Draft proposers of speculative decoding (vt_context_params.spec_method). */
typedef enum vt_spec_method {
    VT_SPEC_NONE = 0,
    /* N-gram prompt lookup (vLLM's "ngram"): the longest n-gram, of
     * prompt_lookup_min..prompt_lookup_max tokens, that ends the request's
     * tokens (prompt and output) and occurs earlier in them, at its earliest
     * place, proposes the tokens that followed it there. No model runs: it
     * pays off where the output repeats the input (editing code, quoting,
     * records turned into JSON). */
    VT_SPEC_NGRAM = 1,
    /* Suffix decoding (vLLM's "suffix", Arctic Inference's SuffixDecoding;
     * since ABI 1.13): the continuation that most often followed the
     * request's last tokens, counted over its own prompt and output and over
     * the outputs of earlier requests, as long as its estimated probability
     * stays above suffix_min_token_prob and at most suffix_max_spec_factor
     * times the matched length. Pays off where outputs repeat (agents,
     * rewrites, code edits). */
    VT_SPEC_SUFFIX = 2,
    /* A draft model (vLLM's "draft_model", llama.cpp's --model-draft; since
     * ABI 1.14): vt_context_params.draft_model, a smaller model with the
     * same vocabulary, proposes num_speculative_tokens greedy tokens per
     * step for every drafting request, batched, from a KV cache of its own
     * (as many tokens as the context's pool, out of the same budget). Pays
     * off where the draft agrees with the model often and costs far less. */
    VT_SPEC_DRAFT_MODEL = 3,
    /* The model's own multi-token-prediction layer (vLLM's "mtp", llama.cpp's
     * draft-mtp; since ABI 1.15): Qwen3.5 / Qwen3.6's mtp.* and the nextn
     * block llama.cpp's converter keeps in their GGUFs, DeepSeek-V3's next-n
     * layer (a folder's model.layers.61.*). It drafts from the
     * model's final hidden states, chained num_speculative_tokens times; its
     * KV cache is one more layer in the context's pool (kv_cache_bytes), in
     * the same blocks, so prefix caching serves it too. vt_context_create
     * fails with VT_ERR_INVALID_ARGUMENT for a model without one. */
    VT_SPEC_MTP = 4
} vt_spec_method;

#define VT_SPEC_MAX_TOKENS 16  /* most draft tokens per request and step */

typedef struct vt_context_params {
    uint32_t struct_size;   /* sizeof(vt_context_params) */
    uint32_t n_threads;     /* compute threads; 0 = the physical cores the process may run on
                               (affinity mask), at most its cgroup's CPU quota (default) */
    const char *backend;    /* the device to compute on: NULL (default) = the model's
                               (vt_model_params.device); a name must be that one */
    uint32_t n_batch;       /* most tokens per forward pass (vt_seq_step chunks, engine steps); default 512 */
    /* Serving (vt_engine.h); read at the first vt_context_submit. */
    uint64_t kv_cache_bytes;      /* KV block pool; 0 = what the memory it lives in holds, capped at
                                     what max_num_seqs requests of max_model_len tokens can use: on
                                     the CPU a quarter of the available memory; on a device 90% of
                                     its free memory after the weights and the compute arena of a
                                     full step, each layer's pool within its largest allocation.
                                     On a device, a budget that does not fit fails
                                     vt_context_create (VT_ERR_OUT_OF_MEMORY, saying what fits) */
    uint32_t kv_block_size;       /* tokens per KV block; 0 = 16 */
    uint32_t max_num_seqs;        /* requests running at once; 0 = 64 */
    uint32_t max_model_len;       /* tokens per request (prompt + output); 0 = the model's training
                                     context, capped by the pool */
    bool no_prefix_caching;       /* do not share KV blocks between requests (default false) */
    /* Since ABI 1.12. Speculative decoding in the serving engine (vt_engine.h):
     * each decoding request drafts up to num_speculative_tokens tokens per step
     * and the step's forward pass verifies them with the request's own sampler
     * chain, so the tokens are those it draws without drafts, greedy or
     * sampled, seed for seed; a step then adds up to num_speculative_tokens + 1
     * tokens to a request. Models with recurrent layers draft too (since
     * 1.15): a request's state is checkpointed before a verification and
     * rolled back when it rejects a draft token, and the kept tokens are
     * computed again in its next step; each state slot then has a
     * checkpoint beside it in kv_cache_bytes. Counters: vt_engine_stats. */
    uint32_t spec_method;             /* a vt_spec_method: VT_SPEC_NONE (default), VT_SPEC_NGRAM,
                                         VT_SPEC_SUFFIX, VT_SPEC_DRAFT_MODEL or VT_SPEC_MTP (an integer field, as
                                         vt_model_params.quantize: any value a caller passes is read
                                         safely, the unknown refused) */
    uint32_t num_speculative_tokens;  /* 1..VT_SPEC_MAX_TOKENS with a method */
    uint32_t prompt_lookup_min;       /* VT_SPEC_NGRAM's n-gram sizes (vLLM's): 0 and 0 = 5 and 5, */
    uint32_t prompt_lookup_max;       /*   one of them 0 = the other's value */
    /* Since ABI 1.13. VT_SPEC_SUFFIX's parameters, vLLM's suffix_decoding_*
     * (the defaults are vLLM's too, set by vt_context_params_init_v2). */
    uint32_t suffix_max_tree_depth;      /* tokens of context matched and drafted within: 2..1024;
                                            0 = 24 */
    uint32_t suffix_max_cached_requests; /* finished requests whose outputs are matched, the oldest
                                            dropped first: default 10000, 0 = none */
    float suffix_max_spec_factor;        /* a draft is at most this times the matched length:
                                            default 1.0 */
    float suffix_min_token_prob;         /* a draft ends where the estimated probability of its
                                            tokens falls below this: 0..1, default 0.1 */
    /* Since ABI 1.14. VT_SPEC_DRAFT_MODEL's model: its tokenizer must be the
     * context's model's, token for token (else vt_context_create fails with
     * VT_ERR_INVALID_ARGUMENT); it computes on its own device
     * (vt_model_params.device), with n_threads, and must outlive the
     * context. Since 1.15 it may have recurrent layers (a state slot and a
     * checkpoint per request, in kv_cache_bytes). NULL (default) with any
     * other method. */
    const vt_model *draft_model;
} vt_context_params;

/* Defaults of the ABI 1.0 fields only (n_threads .. n_batch; struct_size =
 * their size), as published in 1.0: the serving fields keep their defaults. */
VT_API void(vt_context_params_init)(vt_context_params *params);

/* Defaults of every field that fits in `size` bytes (pass
 * sizeof(vt_context_params)); struct_size = that size. Since ABI 1.2. */
VT_API void vt_context_params_init_v2(vt_context_params *params, size_t size);

/* The call a program writes fills the struct it was compiled against: the
 * name is this macro, which passes sizeof *params to the sized entry point
 * (vt_common.h). Binaries built against 1.0 keep the 1.0 symbol, which
 * (vt_context_params_init)(p) still calls. */
#define vt_context_params_init(params) vt_context_params_init_v2((params), sizeof *(params))

/* CONSTRUCTOR. params may be NULL for defaults. The model must outlive the
 * context. Errors: VT_ERR_INVALID_ARGUMENT (also: params->backend names a
 * device other than the model's), VT_ERR_NOT_FOUND (no such device),
 * VT_ERR_OUT_OF_MEMORY. */
VT_API vt_status vt_context_create(const vt_model *model,
                                   const vt_context_params *params,
                                   vt_context **out);

/* DESTRUCTOR. Accepts NULL. Sequences of the context must be destroyed first. */
VT_API void vt_context_destroy(vt_context *ctx);

typedef struct vt_seq_params {
    uint32_t struct_size;   /* sizeof(vt_seq_params) */
    uint32_t n_ctx;         /* KV capacity in tokens; 0 = the model's training context (default 4096 cap) */
    bool logits_all;        /* keep logits of every token of a step, not just the last (default false) */
} vt_seq_params;

VT_API void vt_seq_params_init(vt_seq_params *params);

/* CONSTRUCTOR. A new empty sequence in ctx. Errors: VT_ERR_OUT_OF_MEMORY for
 * the KV cache, VT_ERR_INVALID_ARGUMENT. */
VT_API vt_status vt_seq_create(vt_context *ctx, const vt_seq_params *params,
                               vt_seq **out);

/* DESTRUCTOR. Accepts NULL. */
VT_API void vt_seq_destroy(vt_seq *seq);

/* METHOD. Queues tokens to be evaluated by the next vt_seq_step.
 * VT_ERR_CONTEXT_FULL if the tokens already held plus queued would exceed
 * n_ctx (nothing is queued then); VT_ERR_INVALID_ARGUMENT for ids outside
 * the vocabulary. */
VT_API vt_status vt_seq_feed(vt_seq *seq, const vt_token *tokens, size_t n);

/* METHOD. Evaluates all queued tokens (in chunks of n_batch) and makes their
 * logits readable. VT_ERR_INVALID_STATE if nothing is queued. */
VT_API vt_status vt_seq_step(vt_seq *seq);

/* METHOD. Logits (n_vocab floats) of token `i` of the last step: i = -1 is
 * the last token; other indexes need logits_all. The pointer is owned by the
 * sequence and valid until its next step, reset or destroy. */
VT_API vt_status vt_seq_logits(const vt_seq *seq, int32_t i, const float **logits,
                               size_t *n_vocab);

/* METHOD. Number of tokens evaluated into the KV cache so far. */
VT_API vt_status vt_seq_n_past(const vt_seq *seq, size_t *n_past);

/* METHOD. Forgets every token (KV cache, queue and logits); keeps memory. */
VT_API vt_status vt_seq_reset(vt_seq *seq);

#ifdef __cplusplus
}
#endif

#endif /* VT_CONTEXT_H */
