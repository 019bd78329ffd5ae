/* vt_tokenizer.h - text <-> token ids.
 *
 * A vt_tokenizer is immutable: every function here is thread-safe. The
 * tokenizer of a model is owned by the model and lives as long as it.
 */
#ifndef VT_TOKENIZER_H
#define VT_TOKENIZER_H

#include "vt_common.h"
#include "vt_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vt_tokenizer vt_tokenizer;
typedef int32_t vt_token;

#define VT_TOKEN_NULL (-1)

/* METHOD. The model's tokenizer (read from its GGUF metadata); owned by the
 * model, never NULL for a loaded model. */
VT_API vt_status vt_model_tokenizer(const vt_model *model,
                                    const vt_tokenizer **out);

/* CONSTRUCTOR. A tokenizer alone, read from the tokenizer.ggml.* metadata of
 * a GGUF file (a vocab-only GGUF or a full model; no weights are kept).
 * Errors as vt_model_load (VT_ERR_IO, VT_ERR_FORMAT, VT_ERR_UNSUPPORTED for
 * an unknown tokenizer model or pre-tokenizer). Thread-safe. */
VT_API vt_status vt_tokenizer_load(const char *path, vt_tokenizer **out);

/* DESTRUCTOR. Frees a tokenizer from vt_tokenizer_load. Accepts NULL; a
 * model's own tokenizer (vt_model_tokenizer) is left alone. */
VT_API void vt_tokenizer_destroy(vt_tokenizer *tok);

typedef enum vt_tokenize_flags {
    VT_TOKENIZE_NONE = 0,
    /* Add the model's BOS/EOS as its metadata asks (tokenizer.ggml.add_bos_token). */
    VT_TOKENIZE_ADD_SPECIAL = 1 << 0,
    /* Turn the text of control/special tokens ("<|im_start|>") into those
     * tokens. Off by default: user text must not become control tokens
     * (a prompt-injection guard); templates rendered by the host ask for it. */
    VT_TOKENIZE_PARSE_SPECIAL = 1 << 1
} vt_tokenize_flags;

/* METHOD. Tokenizes `len` bytes of UTF-8 text into tokens[0..cap).
 * *n_tokens receives the count needed; VT_ERR_BUFFER_TOO_SMALL if > cap
 * (call again with a larger buffer). VT_ERR_INVALID_UTF8 if text is not
 * valid UTF-8 (the message names the byte offset). flags: vt_tokenize_flags. */
VT_API vt_status vt_tokenize(const vt_tokenizer *tok, const char *text,
                             size_t len, uint32_t flags, vt_token *tokens,
                             size_t cap, size_t *n_tokens);

/* METHOD. Bytes of one token as it appears in text (byte-level and
 * SentencePiece pieces decoded: "Ġthe" -> " the", "<0x0A>" -> "\n").
 * Control tokens give their text only if render_special, else "".
 * May be a partial UTF-8 sequence: streaming callers keep incomplete bytes
 * until the next piece completes them. */
VT_API vt_status vt_token_to_piece(const vt_tokenizer *tok, vt_token token,
                                   bool render_special, char *buf,
                                   size_t buf_size, size_t *needed);

/* METHOD. Text of a token sequence (the concatenation of pieces, with the
 * leading space SentencePiece adds removed when the model asks for it).
 * Invalid UTF-8 from split byte tokens is passed through unchanged. */
VT_API vt_status vt_detokenize(const vt_tokenizer *tok, const vt_token *tokens,
                               size_t n_tokens, bool render_special, char *buf,
                               size_t buf_size, size_t *needed);

/* Vocabulary size, special ids (VT_TOKEN_NULL if the vocabulary has none)
 * and whether a token ends generation (EOS, EOT, <|im_end|> ...). With a NULL
 * tokenizer they return 0, VT_TOKEN_NULL and false. */
VT_API uint32_t vt_tokenizer_n_vocab(const vt_tokenizer *tok);
VT_API vt_token vt_token_bos(const vt_tokenizer *tok);
VT_API vt_token vt_token_eos(const vt_tokenizer *tok);
VT_API bool vt_token_is_eog(const vt_tokenizer *tok, vt_token token);

#ifdef __cplusplus
}
#endif

#endif /* VT_TOKENIZER_H */
