/* vt_engine.h - serving many requests from one context (continuous batching).
 *
 * A context can run many requests at once: each is submitted with its prompt
 * tokens, sampler and stop conditions, and every vt_context_step() is one
 * forward pass over a batch that mixes prompt chunks and one decode token of
 * each running request (chunked prefill under a token budget, as in vLLM;
 * while requests decode, a step's prompt tokens are capped at max(16, 6 per
 * decoding request), so a prompt chunk never stalls the running requests;
 * with speculative decoding, vt_context_params.spec_method, a decoding
 * request's draft tokens join its step and are verified by it).
 * KV memory is a pool of fixed-size blocks sized from
 * vt_context_params.kv_cache_bytes; full blocks are shared between requests
 * through a prefix cache (chained XXH3 hashes of the token ids), unused cached
 * blocks are evicted least recently used first, and when blocks run out the
 * newest running request is preempted and recomputed later: requests are
 * never failed for lack of memory once admitted.
 *
 * Batching is exact: a request's tokens do not depend on what else runs in
 * the same steps (every kernel computes each row on its own).
 *
 * Threads: one thread drives the engine (vt_context_step and
 * vt_context_poll); vt_context_submit, vt_context_cancel and
 * vt_context_stats may be called from any thread at the same time. The
 * single-sequence vt_seq_* calls of vt_context.h must not run on the context
 * while another thread steps it. A request's output callback runs on the
 * stepping thread, inside vt_context_step.
 */
#ifndef VT_ENGINE_H
#define VT_ENGINE_H

#include "vt_common.h"
#include "vt_context.h"
#include "vt_lora.h"
#include "vt_sampler.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vt_finish_reason {
    VT_FINISH_NONE = 0,      /* still running */
    VT_FINISH_STOP = 1,      /* end-of-generation token, a stop token or a stop string */
    VT_FINISH_LENGTH = 2,    /* max_tokens, or the context's max_model_len */
    VT_FINISH_CANCELLED = 3, /* vt_context_cancel */
    VT_FINISH_ERROR = 4      /* the step failed (see the event's status) */
} vt_finish_reason;

/* One event of a request: a new token (and the text it completes), its end,
 * or both. The struct and every pointer in it are owned by the context and
 * valid until the callback returns (callback) or the next vt_context_poll /
 * vt_context_step (poll). New fields only ever go last: read struct_size. */
typedef struct vt_request_output {
    uint32_t struct_size;
    uint64_t request_id;
    void *user_data;                 /* as given in vt_request_params */
    vt_token token;                  /* the generated token, or -1 when the event carries none */
    const char *text;                /* new text that is safe to show (UTF-8, not NUL-terminated); */
    size_t text_len;                 /*   text that may begin a stop string is held back until it cannot */
    float logprob;                   /* log-probability of token under the model (raw logits); 0 unless requested */
    uint32_t n_top;                  /* top_logprobs entries below */
    const vt_token *top_tokens;      /* most likely tokens, most likely first */
    const float *top_logprobs;       /* their log-probabilities */
    vt_finish_reason finish_reason;  /* VT_FINISH_NONE until the request's last event */
    vt_status status;                /* VT_OK, or why it ended with VT_FINISH_ERROR */
    uint32_t n_prompt_tokens;
    uint32_t n_output_tokens;        /* generated so far, this token included */
    uint32_t n_cached_tokens;        /* prompt tokens served from the prefix cache at admission */
    /* Since ABI 1.8. */
    bool is_prompt;                  /* a prompt token's event (vt_request_params.prompt_logprobs):
                                        token is the prompt token, logprob and the top list its
                                        log-probabilities given the tokens before it, no text */
    /* Since ABI 1.14. Speculative decoding (vt_context_params.spec_method),
     * this request's so far: */
    uint32_t n_draft_tokens;         /* draft tokens verified */
    uint32_t n_accepted_tokens;      /* of those, accepted (each saved a forward pass) */
} vt_request_output;

/* Receives one event; called on the stepping thread. Must not call
 * vt_context_step or vt_context_poll (submit, cancel and stats are fine). */
typedef void (*vt_request_callback)(const vt_request_output *out, void *user_data);

typedef struct vt_request_params {
    uint32_t struct_size;            /* sizeof(vt_request_params) */
    const vt_token *prompt;          /* prompt ids (copied); at least one */
    size_t n_prompt;
    uint32_t max_tokens;             /* most tokens to generate; 0 = until max_model_len (default 0) */
    vt_sampler *sampler;             /* OWNED by the request after a successful submit (not after a
                                        failed one); NULL = greedy. Penalty stages see the generated
                                        tokens only, as OpenAI's presence/frequency penalties do. */
    const vt_token *stop_tokens;     /* extra ids that end the request (not shown as text); copied */
    size_t n_stop_tokens;
    const char *const *stop_strings; /* UTF-8, NUL-terminated, non-empty; copied. The text up to a */
    size_t n_stop_strings;           /*   stop string is shown, the stop string itself never is */
    bool ignore_eos;                 /* keep going after end-of-generation tokens (default false) */
    bool logprobs;                   /* fill logprob (default false) */
    uint32_t top_logprobs;           /* 0..20 most likely tokens per event (default 0) */
    vt_request_callback callback;    /* NULL: events queue for vt_context_poll */
    void *user_data;                 /* passed back in every event */
    /* Since ABI 1.7. */
    const vt_lora *lora;             /* the adapter the request computes with (vt_lora.h), held until
                                        it ends; NULL = the base model (default) */
    float lora_scale;                /* the adapter's scale (default 1) */
    /* Since ABI 1.8. */
    bool prompt_logprobs;            /* before the first generated token, one is_prompt event per
                                        prompt token from the second on, in order (default false).
                                        Such a request computes its whole prompt: it does not
                                        read the prefix cache */
    uint32_t prompt_top_logprobs;    /* 0..20 most likely tokens per prompt event (default 0) */
    /* Since ABI 1.11. It takes bytes that were the struct's tail padding in
     * 1.10, so sizeof is unchanged: vt_request_params_init, which has always
     * zeroed the whole struct, leaves it false for 1.10 programs. */
    bool render_special;             /* control tokens that do not end the request appear in text
                                        ("<|channel|>"), as a chat format such as gpt-oss's harmony
                                        needs for parsing (vt_harmony_parser); default false: they
                                        are left out, as Hugging Face's skip_special_tokens */
    /* Since ABI 1.12, in tail padding as render_special. */
    bool no_speculation;             /* decode without drafts even where the context drafts
                                        (vt_context_params.spec_method); default false */
    /* Since ABI 1.14. */
    uint32_t num_speculative_tokens; /* the most draft tokens this request takes per step: 0 = the
                                        context's num_speculative_tokens (default); a larger value
                                        is taken as the context's */
} vt_request_params;

VT_API void vt_request_params_init(vt_request_params *params);

/* METHOD. Queues a request; its events start at a later vt_context_step.
 * Thread-safe. *id (> 0, never reused by this context) names it for
 * vt_context_cancel. The first submit (or step) allocates the KV pool.
 * Errors: VT_ERR_INVALID_ARGUMENT (empty prompt, ids outside the vocabulary,
 * bad stop strings, top_logprobs > 20, an adapter of another model or a
 * lora_scale that is not finite); VT_ERR_CONTEXT_FULL when the
 * prompt leaves no room for one output token (max_model_len tokens or
 * more); VT_ERR_OUT_OF_MEMORY for the
 * pool. Nothing is queued on error. */
VT_API vt_status vt_context_submit(vt_context *ctx, const vt_request_params *params,
                                   uint64_t *id);

/* METHOD. Asks to end a request: the next step frees its KV blocks and emits
 * its last event with VT_FINISH_CANCELLED. Unknown or finished ids are
 * ignored. Thread-safe; never blocks on a step in progress. */
VT_API vt_status vt_context_cancel(vt_context *ctx, uint64_t id);

/* METHOD. Runs one engine step: one forward pass over the scheduled tokens
 * of the running requests, sampling, and their events. When nothing is
 * queued or running it first waits up to wait_ms milliseconds for a submit
 * or cancel (0: return at once). *n_tokens (may be NULL) receives the tokens
 * computed (0 when idle). A failing forward pass ends every admitted request
 * with VT_FINISH_ERROR (their KV may be half written, so the prefix cache is
 * dropped too) and returns its status; the context stays usable.
 * Not thread-safe: one stepping thread. */
VT_API vt_status vt_context_step(vt_context *ctx, uint32_t wait_ms, size_t *n_tokens);

/* METHOD. The next queued event of requests submitted without a callback:
 * *out is NULL when there is none. The event is valid until the next poll or
 * step. Call from the stepping thread. */
VT_API vt_status vt_context_poll(vt_context *ctx, const vt_request_output **out);

typedef struct vt_engine_stats {
    uint32_t struct_size;            /* set by the caller: sizeof(vt_engine_stats) */
    uint32_t n_running;              /* requests holding KV blocks */
    uint32_t n_waiting;              /* queued, or preempted and waiting to be recomputed */
    uint32_t kv_block_size;          /* tokens per block */
    uint32_t kv_blocks_total;        /* summed over the cache groups (full-attention, latent
                                        and sliding-window layers have blocks of their own) */
    uint32_t kv_blocks_used;         /* held by requests */
    uint32_t kv_blocks_cached;       /* free, still holding a cached prefix */
    uint32_t max_model_len;          /* tokens per request at most */
    uint64_t kv_cache_bytes;         /* the pool's size */
    uint64_t prefix_query_tokens;    /* prompt tokens looked up in the prefix cache */
    uint64_t prefix_hit_tokens;      /* of those, found */
    uint64_t prompt_tokens;          /* prompt tokens computed (cache hits excluded) */
    uint64_t generated_tokens;       /* tokens sampled */
    uint64_t steps;                  /* forward passes */
    uint64_t preemptions;
    uint64_t requests_finished;
    double tokens_per_second;        /* tokens computed per second over the last ~10 s (over
                                        the time since the first step, while shorter) */
    /* Since ABI 1.5. Graph nodes the context's device could not run, computed on
     * the CPU with copies in between, and the bytes those copies moved; for
     * every forward pass of the context (vt_seq's included). 0 on the CPU and
     * where the device runs every op. */
    uint64_t fallback_nodes;
    uint64_t fallback_bytes;
    /* Since ABI 1.10. Models with recurrent layers (linear attention: Qwen3.5,
     * Qwen3-Next): a fixed-size state per running request instead of KV rows
     * per token. state_slots bounds the requests running at once; snapshots
     * of states at block boundaries serve prefix-cache hits. state_bytes is
     * what slots and snapshots take of kv_cache_bytes (and, with speculative
     * decoding, a checkpoint per slot: since 1.15). 0 for other models. */
    uint32_t state_slots;
    uint32_t state_snapshots;
    uint64_t state_bytes;
    /* Since ABI 1.12. Speculative decoding (vt_context_params.spec_method), as
     * vLLM's spec_decode_* metrics: drafts verified (a request's step that
     * carried one), the tokens they proposed, those accepted, and per draft
     * position i the drafts whose token i was accepted. Acceptance rate =
     * accepted / draft tokens; mean accepted length = 1 + accepted / drafts. */
    uint64_t spec_num_drafts;
    uint64_t spec_num_draft_tokens;
    uint64_t spec_num_accepted_tokens;
    uint64_t spec_num_accepted_per_position[VT_SPEC_MAX_TOKENS];
} vt_engine_stats;

/* METHOD. A snapshot of the engine's counters. stats->struct_size must be
 * set; fields beyond it are not written. Before the first submit the pool
 * fields are 0. Thread-safe. Also works on a context used only through
 * vt_seq (the engine's fields then stay 0). */
VT_API vt_status vt_context_stats(vt_context *ctx, vt_engine_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* VT_ENGINE_H */
