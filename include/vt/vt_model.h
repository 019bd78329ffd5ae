/* vt_model.h - loading a model and reading its metadata.
 *
 * A vt_model is immutable after loading: every function here that takes a
 * `const vt_model *` is thread-safe, and one model may be shared by any number
 * of contexts on any threads. Weights the CPU kernels read as stored stay
 * in a read-only memory mapping of the file; the types that have a faster
 * layout of their own (the CPU backend's repacked formats) are copied into it
 * at load, and the mapping's pages of those weights are released.
 */
#ifndef VT_MODEL_H
#define VT_MODEL_H

#include "vt_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vt_model vt_model;

/* Load progress in [0, 1]. Return false to cancel the load, which then fails
 * with VT_ERR_CANCELLED. Called on the loading thread. */
typedef bool (*vt_progress_callback)(float progress, void *user_data);

typedef struct vt_model_params {
    uint32_t struct_size;              /* sizeof(vt_model_params) */
    vt_progress_callback progress;     /* optional, default NULL */
    void *progress_user_data;          /* passed to progress */
    bool use_mmap;                     /* default true; false reads into memory */
} vt_model_params;

/* Writes defaults into *params (struct_size included). */
VT_API void vt_model_params_init(vt_model_params *params);

/* CONSTRUCTOR. Loads a model: a GGUF file, or a Hugging Face model folder
 * (config.json; model.safetensors, or shards listed by
 * model.safetensors.index.json, with F32, F16 or BF16 weights; tokenizer.json
 * with tokenizer_config.json; generation_config.json's eos_token_id ends
 * generation too). params may be NULL for defaults. On success *out owns the
 * model; free it with vt_model_destroy. Errors: VT_ERR_INVALID_ARGUMENT (NULL
 * path/out), VT_ERR_IO (missing or unreadable file, a folder without
 * config.json or without weights, a missing shard), VT_ERR_FORMAT (not GGUF,
 * corrupt or truncated, malformed JSON, a tensor of the wrong shape: the
 * message names it), VT_ERR_UNSUPPORTED (unknown architecture, naming the
 * supported ones, or tensor type), VT_ERR_CANCELLED (progress returned
 * false), VT_ERR_OUT_OF_MEMORY. Thread-safe. */
VT_API vt_status vt_model_load(const char *path, const vt_model_params *params,
                               vt_model **out);

/* DESTRUCTOR. Accepts NULL. No context created from the model may outlive it. */
VT_API void vt_model_destroy(vt_model *model);

/* Summary numbers of a loaded model. */
typedef struct vt_model_info {
    uint32_t struct_size;   /* set by the caller: sizeof(vt_model_info) */
    uint64_t n_params;      /* number of weights (elements of all tensors) */
    uint64_t size_bytes;    /* bytes of all tensor data */
    uint32_t n_ctx_train;   /* training context length */
    uint32_t n_vocab;       /* vocabulary size (rows of the logits) */
    uint32_t n_embd;        /* hidden size */
    uint32_t n_layer;       /* transformer blocks */
    uint32_t n_head;        /* query heads */
    uint32_t n_head_kv;     /* key/value heads */
} vt_model_info;

/* METHOD. Fills *info; info->struct_size must be set by the caller (fields
 * past it are left alone, so older callers keep working). */
VT_API vt_status vt_model_get_info(const vt_model *model, vt_model_info *info);

/* METHOD. Architecture name as in GGUF general.architecture ("llama").
 * Writes it to buf (see the buffer convention in vt_common.h). */
VT_API vt_status vt_model_arch(const vt_model *model, char *buf, size_t buf_size,
                               size_t *needed);

/* METHOD. Chat template (tokenizer.chat_template), VT_ERR_NOT_FOUND if the
 * model has none. */
VT_API vt_status vt_model_chat_template(const vt_model *model, char *buf,
                                        size_t buf_size, size_t *needed);

/* METHOD. Any GGUF metadata value by key, rendered as text: numbers in
 * decimal, booleans as true/false, strings as they are, arrays as a JSON
 * array. VT_ERR_NOT_FOUND if absent. */
VT_API vt_status vt_model_meta_get(const vt_model *model, const char *key,
                                   char *buf, size_t buf_size, size_t *needed);

/* METHOD. Number of metadata keys, and the key at index i (0 <= i < count). */
VT_API vt_status vt_model_meta_count(const vt_model *model, size_t *count);
VT_API vt_status vt_model_meta_key(const vt_model *model, size_t i, char *buf,
                                   size_t buf_size, size_t *needed);

#ifdef __cplusplus
}
#endif

#endif /* VT_MODEL_H */
