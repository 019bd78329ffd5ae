/* vt_model.h - loading a model and reading its metadata.
 *
 * A vt_model is immutable after loading: every function here that takes a
 * `const vt_model *` is thread-safe, and one model may be shared by any number
 * of contexts on any threads. Weights the CPU kernels read as stored stay
 * in a read-only memory mapping of the file; the types that have a faster
 * layout of their own (the CPU backend's repacked formats) are copied into it
 * at load, and the mapping's pages of those weights are released; experts
 * beyond vt_model_params.weights_memory_bytes stay in the mapping. With
 * vt_model_params.quantize, float matmul weights are quantized into memory
 * at load (a bf16 checkpoint then runs as a GGUF of that type would).
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

/* Weight types a model can be quantized to at load (vt_model_params.quantize);
 * the names are GGUF's. */
typedef enum vt_quant_type {
    VT_QUANT_NONE = 0,  /* keep the file's types (default) */
    VT_QUANT_Q8_0 = 1,
    VT_QUANT_Q4_0 = 2,
    VT_QUANT_Q4_1 = 3,
    VT_QUANT_Q5_0 = 4,
    VT_QUANT_Q5_1 = 5,
    VT_QUANT_Q4_K = 6,
    VT_QUANT_Q6_K = 7,
    VT_QUANT_MXFP4 = 8  /* since ABI 1.11: e2m1 values, an e8m0 scale per 32 (OCP MX, ggml type 39) */
} vt_quant_type;

typedef struct vt_model_params {
    uint32_t struct_size;              /* sizeof(vt_model_params) */
    vt_progress_callback progress;     /* optional, default NULL */
    void *progress_user_data;          /* passed to progress */
    bool use_mmap;                     /* default true; false reads into memory */
    /* Since ABI 1.3 (read only when struct_size covers both: the 1.0 struct
     * ends in padding where `quantize` now lies). */
    uint32_t quantize;                 /* a vt_quant_type; default VT_QUANT_NONE. Every
                                          matmul weight stored as F32, F16, BF16 or FP8 (attention,
                                          FFN and output projections) is quantized at load
                                          to this type, as llama.cpp's quantizer does without
                                          an importance matrix (the same bytes), so a bf16
                                          checkpoint runs at the speed of a GGUF of that type.
                                          Norms, biases and the token embedding stay as
                                          stored; with tied embeddings the output projection
                                          becomes a quantized copy of the embedding. Weights
                                          already quantized in the file stay as they are.
                                          A row length that is not a whole number of the
                                          type's blocks falls back as llama.cpp does: Q4_K to
                                          Q5_0, Q6_K to Q8_0 (256-element blocks to 32); a
                                          row that fits no 32-element block either keeps its
                                          stored type. The load logs what was quantized (info
                                          level) and vt_model_get_info counts it. */
    uint32_t reserved;                 /* must be 0 */
    /* Since ABI 1.4. */
    const char *device;                /* the device that holds the weights and computes: a
                                          name from vt_device_get_info ("cpu", "vulkan0");
                                          NULL or "" = "cpu". Weights are uploaded to it
                                          straight from the file mapping; vt_model_get_info
                                          reports the bytes and seconds. Ops the device lacks
                                          run on the CPU (vt_device.h). */
    int32_t n_gpu_layers;              /* with a device other than the CPU: how many layers
                                          (the last ones, as llama.cpp's -ngl) it holds, weights
                                          and KV; the others stay on the CPU, as do the token
                                          embedding and the output unless every layer is on the
                                          device. < 0 (default) = every layer. For models larger
                                          than the device's memory. */
    /* Since ABI 1.6. */
    uint64_t weights_memory_bytes;     /* the most bytes of weight copies in memory (the CPU
                                          kernels' repacked layouts, quantized copies, a
                                          folder's stacked experts); 0 (default) = 3/4 of the
                                          memory the process can still have at load (MemAvailable,
                                          or its cgroup's limit less its usage when lower);
                                          UINT64_MAX = no limit. Mixture-of-experts weights that
                                          would take the copies past it are read from the file
                                          mapping instead (the kernels read the stored layout,
                                          slower per byte), so a model larger than memory runs
                                          from the page cache: a decode token reads only its
                                          experts' pages. vt_model_info reports where the bytes
                                          ended up. */
} vt_model_params;

/* Defaults of the ABI 1.0 fields only (struct_size = their size), as
 * published in 1.0: a model loaded with them keeps the file's types. */
VT_API void(vt_model_params_init)(vt_model_params *params);

/* Defaults of every field that fits in `size` bytes (pass
 * sizeof(vt_model_params)); struct_size = that size. Since ABI 1.3. */
VT_API void vt_model_params_init_v2(vt_model_params *params, size_t size);

/* The call a program writes fills the struct it was compiled against (see
 * vt_context_params_init): (vt_model_params_init)(p) is the 1.0 symbol. */
#define vt_model_params_init(params) vt_model_params_init_v2((params), sizeof *(params))

/* The vt_quant_type of a GGUF type name ("Q4_K", case-insensitive; "none" and
 * "" give VT_QUANT_NONE). Errors: VT_ERR_INVALID_ARGUMENT (NULL name or out),
 * VT_ERR_UNSUPPORTED (a name vt cannot quantize to; the message lists the
 * ones it can). Since ABI 1.3. Thread-safe. */
VT_API vt_status vt_quant_type_from_name(const char *name, vt_quant_type *out);

/* Static name of a vt_quant_type ("Q4_K", "none"), NULL for an unknown value.
 * Since ABI 1.3. Thread-safe. */
VT_API const char *vt_quant_type_name(vt_quant_type type);

/* CONSTRUCTOR. Loads a model: a GGUF file, or a Hugging Face model folder
 * (config.json; model.safetensors, or shards listed by
 * model.safetensors.index.json, with F32, F16 or BF16 weights, or FP8 (F8_E4M3)
 * ones with the scales of a quant_method fp8, compressed-tensors FP8 or
 * ModelOpt FP8 checkpoint, read as stored; tokenizer.json
 * with tokenizer_config.json; generation_config.json's eos_token_id ends
 * generation too). params may be NULL for defaults. On success *out owns the
 * model; free it with vt_model_destroy. Errors: VT_ERR_INVALID_ARGUMENT (NULL
 * path/out), VT_ERR_IO (missing or unreadable file, a folder without
 * config.json or without weights, a missing shard), VT_ERR_FORMAT (not GGUF,
 * corrupt or truncated, malformed JSON, a tensor of the wrong shape: the
 * message names it), VT_ERR_UNSUPPORTED (unknown architecture, naming the
 * supported ones, or tensor type), VT_ERR_CANCELLED (progress returned
 * false), VT_ERR_OUT_OF_MEMORY; VT_ERR_INVALID_ARGUMENT also for a
 * params->quantize that is no vt_quant_type or a reserved field that is not 0.
 * Thread-safe. */
VT_API vt_status vt_model_load(const char *path, const vt_model_params *params,
                               vt_model **out);

/* DESTRUCTOR. Accepts NULL. No context created from the model may outlive it. */
VT_API void vt_model_destroy(vt_model *model);

/* Summary numbers of a loaded model. */
typedef struct vt_model_info {
    uint32_t struct_size;   /* set by the caller: sizeof(vt_model_info) */
    uint64_t n_params;      /* number of weights (elements of all tensors) */
    uint64_t size_bytes;    /* bytes of all tensor data, as stored in the file(s) */
    uint32_t n_ctx_train;   /* training context length */
    uint32_t n_vocab;       /* vocabulary size (rows of the logits) */
    uint32_t n_embd;        /* hidden size */
    uint32_t n_layer;       /* transformer blocks */
    uint32_t n_head;        /* query heads */
    uint32_t n_head_kv;     /* key/value heads */
    /* Since ABI 1.3: quantization at load (vt_model_params.quantize). */
    uint32_t quantize;             /* the vt_quant_type asked for (VT_QUANT_NONE: none) */
    uint32_t n_quantized;          /* weights quantized at load (a tied output's copy counts) */
    uint32_t n_quantize_fallback;  /* of those, weights that took the fallback type */
    uint32_t n_quantize_kept;      /* float matmul weights kept as stored (rows fit no block) */
    uint64_t quantized_bytes;      /* bytes the quantized weights take (size_bytes counts the file's) */
    double quantize_seconds;       /* wall time spent quantizing */
    /* Since ABI 1.4: where the weights are (vt_model_params.device). */
    const char *device;            /* the device's name; valid as long as the process */
    uint64_t uploaded_bytes;       /* weight bytes copied into the device's memory (0 for
                                      the CPU, which reads the mapping or its repacked copies) */
    double upload_seconds;         /* wall time of those copies */
    uint32_t n_device_layers;      /* layers on that device (n_layer on the CPU) */
    /* Since ABI 1.6: where the weights a forward pass reads are in host memory
     * (those uploaded to another device not counted: with a device, experts
     * stay in host memory and run on the CPU), and mixture of experts. */
    uint64_t resident_weight_bytes;  /* copies in memory: repacked, quantized, stacked */
    uint64_t mapped_weight_bytes;    /* read from the file mapping (the page cache) */
    uint64_t weight_bytes_per_token; /* weight bytes one decode token reads: every weight
                                        but an untied embedding (one row) and the experts
                                        (n_expert_used of n_expert): the bandwidth roofline */
    uint32_t n_expert;               /* experts per MoE layer (0: a dense model) */
    uint32_t n_expert_used;          /* experts each token runs */
    uint32_t n_expert_tensors_mapped; /* expert tensors left in the mapping (weights_memory_bytes) */
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
