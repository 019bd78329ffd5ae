/* vt_tokenizer.h - text <-> token ids.
 *
 * A vt_tokenizer is immutable: every vt_tokenizer function here is
 * thread-safe. The tokenizer of a model is owned by the model and lives as
 * long as it. A vt_detokenizer (streaming text of generated tokens) is a
 * per-stream object: see its section below.
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

/* CONSTRUCTOR. A tokenizer alone (no weights), from any of these files; the
 * format is read from the content, not the name:
 *  - GGUF: its tokenizer.ggml.* metadata (a vocab-only GGUF or a full model;
 *    tokenizer models gpt2, llama, bert, t5);
 *  - a Hugging Face tokenizer.json (tokenizer_config.json beside it adds
 *    BOS/EOS, add_bos_token/add_eos_token and added tokens), or a directory
 *    holding one;
 *  - a tiktoken rank file, named <encoding>.tiktoken (r50k_base, p50k_base,
 *    cl100k_base, o200k_base: the name picks the split pattern and specials);
 *  - GPT-2 style vocab.json / encoder.json with merges.txt / vocab.bpe beside it;
 *  - a SentencePiece .model (BPE or Unigram).
 * Errors: VT_ERR_IO, VT_ERR_FORMAT (malformed file, naming what is wrong),
 * VT_ERR_UNSUPPORTED (an unknown tokenizer model, pre-tokenizer or
 * component). Thread-safe. */
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
 * Raw bytes, whatever the vocabulary's format: a byte token that is part of
 * a UTF-8 character gives that one byte (as llama.cpp's token_to_piece; HF's
 * decode([id]) gives U+FFFD instead), so a piece may be a partial UTF-8
 * sequence. Pieces alone miss the spacing rules of vt_detokenize: to print
 * tokens as they come, use a vt_detokenizer. */
VT_API vt_status vt_token_to_piece(const vt_tokenizer *tok, vt_token token,
                                   bool render_special, char *buf,
                                   size_t buf_size, size_t *needed);

/* METHOD. Text of a token sequence (the concatenation of pieces, with the
 * leading space SentencePiece adds removed when the model asks for it).
 * Invalid UTF-8 from split byte tokens is passed through unchanged. */
VT_API vt_status vt_detokenize(const vt_tokenizer *tok, const vt_token *tokens,
                               size_t n_tokens, bool render_special, char *buf,
                               size_t buf_size, size_t *needed);

/* ---- Streaming detokenization ------------------------------------------
 *
 * A vt_detokenizer turns a token stream into text as it grows (generation
 * output), in chunks that never end inside a UTF-8 character: it decodes a
 * short window of recent tokens with vt_detokenize and hands out the text
 * that follows what was already handed out, once that text grew and does not
 * end in an unfinished character (the method of Hugging Face tokenizers'
 * DecodeStream). Spaces come out as vt_detokenize gives them for the whole
 * sequence: e.g. the leading space SentencePiece removes from the first word
 * is removed from the first chunk only (see vt_detokenizer_prefill to
 * continue a prompt instead).
 *
 * Invalid UTF-8 (byte tokens that never form a character) is passed through
 * unchanged, as vt_detokenize does: bytes that are invalid whatever follows
 * go out with the next chunk, and an unfinished character at the end of the
 * stream is returned by vt_detokenizer_finish as its bytes. So the chunks of
 * a stream, concatenated with what finish returns, equal vt_detokenize of
 * the whole stream, byte for byte, valid UTF-8 or not.
 *
 * Memory stays bounded whatever the stream's length: a detokenizer holds a
 * few tokens, and a run of 64 tokens that finishes no character (e.g. 64
 * control tokens not rendered, or text ending in U+FFFD each time) is
 * handed out as it stands.
 *
 * Thread-safety: one detokenizer per stream, used by one thread at a time
 * (externally synchronized); distinct detokenizers, even of one tokenizer,
 * may run in parallel. The tokenizer must outlive its detokenizers (a
 * model's tokenizer: the model). No function here changes the tokenizer. */
typedef struct vt_detokenizer vt_detokenizer;

/* CONSTRUCTOR. A detokenizer for `tok`, empty (no context). Control tokens
 * give their text only if render_special, as in vt_detokenize.
 * VT_ERR_INVALID_ARGUMENT if tok or out is NULL (*out is then NULL). */
VT_API vt_status vt_detokenizer_create(const vt_tokenizer *tok,
                                       bool render_special,
                                       vt_detokenizer **out);

/* DESTRUCTOR. Accepts NULL. */
VT_API void vt_detokenizer_destroy(vt_detokenizer *d);

/* METHOD. Adds `token` to the stream and writes the text it completes to
 * buf (maybe none: *needed 0). If the text does not fit,
 * VT_ERR_BUFFER_TOO_SMALL with *needed set: the token is kept and the text
 * stays pending; push VT_TOKEN_NULL with a larger buffer to fetch it without
 * adding a token (a push of another token instead returns the pending text
 * followed by that token's). buf may be NULL when buf_size is 0. The text is
 * *needed bytes (it may hold a NUL byte) followed by a NUL.
 * VT_ERR_INVALID_ARGUMENT, leaving the stream unchanged, if d or needed is
 * NULL, buf is NULL with buf_size > 0, or token is outside the vocabulary
 * (and not VT_TOKEN_NULL). */
VT_API vt_status vt_detokenizer_push(vt_detokenizer *d, vt_token token,
                                     char *buf, size_t buf_size,
                                     size_t *needed);

/* METHOD. Ends the stream: writes everything still held back (an unfinished
 * character, as its bytes) and any pending text to buf, then starts over as
 * after vt_detokenizer_reset. Buffer and errors as vt_detokenizer_push; on
 * VT_ERR_BUFFER_TOO_SMALL the text stays pending (call finish again, or push
 * VT_TOKEN_NULL, with a larger buffer). */
VT_API vt_status vt_detokenizer_finish(vt_detokenizer *d, char *buf,
                                       size_t buf_size, size_t *needed);

/* METHOD. Starts over: drops held-back tokens and pending text, and the
 * context. Accepts NULL. */
VT_API void vt_detokenizer_reset(vt_detokenizer *d);

/* METHOD. Starts over (as vt_detokenizer_reset) with tokens[0..n_tokens) as
 * text already shown, typically the prompt a generation continues: their
 * text is not handed out, but the tokens pushed next come out as they do in
 * vt_detokenize of prompt + output (a SentencePiece word keeps its leading
 * space). Only the last few tokens are kept. If they end in an unfinished
 * character, that character is handed out whole once the pushed tokens
 * finish it. tokens may be NULL when n_tokens is 0.
 * VT_ERR_INVALID_ARGUMENT if d is NULL, tokens is NULL with n_tokens > 0, or
 * a token is outside the vocabulary; the detokenizer is then empty. */
VT_API vt_status vt_detokenizer_prefill(vt_detokenizer *d,
                                        const vt_token *tokens,
                                        size_t n_tokens);

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
