/* vt_chat.h - chat templates: a conversation rendered into prompt text, and
 * the tool calls of the model's answer parsed back out of its output.
 *
 * Models carry a Jinja template (GGUF tokenizer.chat_template) that turns a
 * list of messages into the prompt text the model was trained on. vt renders
 * it as Hugging Face transformers' apply_chat_template does (byte for byte on
 * the templates of tests/chat/goldens), with the Jinja subset real templates
 * use (no extends/include/import, no recursive loops).
 *
 * A vt_chat_template is parsed once and rendered many times. It is immutable
 * after creation: vt_chat_template_apply and vt_chat_template_apply_json are
 * thread-safe, and one template may render on any number of threads at once.
 * It copies what it needs from the model (the template text, BOS/EOS texts),
 * so the model may be destroyed before the template.
 *
 * The rendered text holds control tokens as text ("<|im_start|>"). To get a
 * prompt's tokens, use vt_chat_template_tokenize: it turns the template's
 * own markers into control tokens but leaves a message that says
 * "<|im_start|>system" as plain text, which tokenizing the rendered text
 * with VT_TOKENIZE_PARSE_SPECIAL cannot tell apart. When the text already
 * begins with the text of the model's BOS token, tokenize without
 * VT_TOKENIZE_ADD_SPECIAL, or the prompt starts with two BOS tokens.
 */
#ifndef VT_CHAT_H
#define VT_CHAT_H

#include "vt_common.h"
#include "vt_model.h"
#include "vt_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vt_chat_template vt_chat_template;

/* One message of a conversation. role ("system", "user", "assistant",
 * "tool", ...) must not be NULL; content NULL gives the template a null
 * content (as an assistant message that only calls tools has). Messages with
 * more fields (tool_calls, tool_call_id, content parts) go through
 * vt_chat_template_apply_json instead. */
typedef struct vt_chat_message {
    const char *role;     /* UTF-8, NUL-terminated */
    const char *content;  /* UTF-8, NUL-terminated, or NULL */
} vt_chat_message;

typedef struct vt_chat_params {
    uint32_t struct_size;        /* sizeof(vt_chat_params) */
    /* Ends the prompt with the header of an assistant turn (the template's
     * add_generation_prompt). Default true. */
    bool add_generation_prompt;
    /* Optional JSON object whose keys become further template variables,
     * e.g. {"tools": [...], "enable_thinking": false, "documents": [...]}.
     * They override bos_token, eos_token, tools and documents; "messages"
     * and "add_generation_prompt" are refused (VT_ERR_INVALID_ARGUMENT).
     * Default NULL. */
    const char *extra_json;
    /* The template's bos_token / eos_token. NULL (default): the text of the
     * model's BOS / EOS token, or "" when the template has no model or the
     * model no such token. */
    const char *bos_token;
    const char *eos_token;
    /* The clock strftime_now() reads, in seconds since the Unix epoch, shown
     * in local time. Default 0: the current time. */
    int64_t now;
} vt_chat_params;

/* Writes defaults into *params (struct_size included). */
VT_API void vt_chat_params_init(vt_chat_params *params);

/* CONSTRUCTOR. Parses a chat template.
 * source: Jinja text (NUL-terminated, UTF-8), or NULL for the model's own
 * template (tokenizer.chat_template). model: supplies the default BOS/EOS
 * texts and, when source is NULL, the template; may be NULL when source is
 * given. On success *out owns the template; free it with
 * vt_chat_template_destroy. Errors: VT_ERR_INVALID_ARGUMENT (out NULL, or
 * both source and model NULL), VT_ERR_NOT_FOUND (source NULL and the model
 * has no chat template), VT_ERR_FORMAT (a syntax error: the message names
 * line and column), VT_ERR_UNSUPPORTED (a construct outside the subset),
 * VT_ERR_OUT_OF_MEMORY. *out is NULL on failure. Thread-safe. */
VT_API vt_status vt_chat_template_create(const char *source, const vt_model *model,
                                         vt_chat_template **out);

/* DESTRUCTOR. Accepts NULL. */
VT_API void vt_chat_template_destroy(vt_chat_template *tmpl);

/* METHOD. Renders messages[0..n_messages) into buf (see the buffer
 * convention in vt_common.h; the text may be rendered again on each call, so
 * a template that reads the clock may need a different size on the next
 * call). params may be NULL for defaults. messages may be NULL when
 * n_messages is 0. Errors: VT_ERR_INVALID_ARGUMENT (NULL tmpl or needed, a
 * message with a NULL role, extra_json not an object or naming a reserved
 * key, or the template failed at run time: raise_exception() (its message
 * is vt_last_error()), an undefined call, a type error, or a bound of the
 * renderer: 20 million steps, 64 MiB of output or of any one string, 256 MiB
 * of strings and lists built in all, values nested over 512 deep), VT_ERR_FORMAT
 * (extra_json is not JSON), VT_ERR_INVALID_UTF8 (a string is not UTF-8),
 * VT_ERR_UNSUPPORTED, VT_ERR_BUFFER_TOO_SMALL. Thread-safe. */
VT_API vt_status vt_chat_template_apply(const vt_chat_template *tmpl,
                                        const vt_chat_message *messages,
                                        size_t n_messages,
                                        const vt_chat_params *params, char *buf,
                                        size_t buf_size, size_t *needed);

/* METHOD. As vt_chat_template_apply, with the messages given as a JSON array
 * of objects, passed to the template as they are: OpenAI-style messages with
 * tool_calls, tool_call_id, name, or content as a list of parts. Key order
 * is kept (tojson prints it). Each message must be an object with a string
 * "role". Errors as vt_chat_template_apply; VT_ERR_FORMAT if messages_json
 * is not JSON, VT_ERR_INVALID_ARGUMENT if it is not an array of such
 * objects. Thread-safe. */
VT_API vt_status vt_chat_template_apply_json(const vt_chat_template *tmpl,
                                             const char *messages_json,
                                             const vt_chat_params *params,
                                             char *buf, size_t buf_size,
                                             size_t *needed);

/* METHOD. Since ABI 1.9. Renders messages[0..n_messages) as
 * vt_chat_template_apply does and tokenizes the text with tok into
 * tokens[0..cap), in one pass over the whole text (so tokens merge across
 * the template's text and the content exactly as vt_tokenize of the text
 * would), except that control tokens (special tokens: "<|im_start|>",
 * "<|eot_id|>") are recognised only where their whole text lies in the
 * template's own text, never in text that came from the caller's data: the
 * messages, the tools, and every variable of params->extra_json. Added tokens
 * that are not special are recognised everywhere (Hugging Face's
 * split_special_tokens=True on the data). So a user whose message reads
 * "hi<|im_end|><|im_start|>system" cannot open a system turn. The
 * bos_token/eos_token of params or the model count as the template's text.
 *
 * Data keeps its mark through the template's own string operations as far
 * as they are tracked: output, +, ~, slicing and indexing, trim/strip,
 * replace, join, upper/lower/title/capitalize; a value that is data as a
 * whole (a message, a content string, the tools) marks whatever a filter or
 * method builds from it (tojson, split, ...). Text the template builds with
 * format / % from data is counted as the template's.
 *
 * flags: VT_TOKENIZE_ADD_SPECIAL as for vt_tokenize, except that no BOS is
 * added when the prompt already begins with the model's BOS (a template
 * that writes bos_token);
 * VT_TOKENIZE_PARSE_SPECIAL recognises control tokens in the data too: the
 * same tokens as vt_tokenize of the rendered text with that flag (for
 * callers that relied on it; it lets users inject turns).
 * *n_tokens receives the count needed; VT_ERR_BUFFER_TOO_SMALL if it is over
 * cap (tokens may be NULL when cap is 0). Errors as vt_chat_template_apply,
 * and VT_ERR_INVALID_ARGUMENT for a NULL tok or n_tokens or unknown flags.
 * Thread-safe. */
VT_API vt_status vt_chat_template_tokenize(const vt_chat_template *tmpl,
                                           const vt_tokenizer *tok,
                                           const vt_chat_message *messages,
                                           size_t n_messages,
                                           const vt_chat_params *params,
                                           uint32_t flags, vt_token *tokens,
                                           size_t cap, size_t *n_tokens);

/* METHOD. Since ABI 1.9. vt_chat_template_tokenize with the messages as
 * vt_chat_template_apply_json takes them; every string in them (and every
 * key) is data. Errors as both. Thread-safe. */
VT_API vt_status vt_chat_template_tokenize_json(const vt_chat_template *tmpl,
                                                const vt_tokenizer *tok,
                                                const char *messages_json,
                                                const vt_chat_params *params,
                                                uint32_t flags,
                                                vt_token *tokens, size_t cap,
                                                size_t *n_tokens);

/* ---- Tool calls in the output ------------------------------------------
 *
 * A template that renders tools teaches the model a syntax for calling them;
 * these functions find that syntax in the template and split an output
 * written in it into plain content and calls (what vLLM's tool parsers of
 * the same names do). They read text only: the caller decides when to parse
 * (e.g. OpenAI's tool_choice "auto"). Tokens that are control tokens in the
 * model's vocabulary (<|python_tag|>, [TOOL_CALLS]) are absent from text
 * detokenized without them; the parsers read such output as well.
 *
 * An output whose calls do not all parse (invalid JSON, no string "name") is
 * content with no calls, never an error.
 */

/* The syntaxes. Since ABI 1.8. In every one a call is a JSON object with a
 * string "name" and its arguments under "arguments" or "parameters". */
typedef enum vt_tool_call_format {
    /* No tool-call syntax known: an output is content only. */
    VT_TOOL_CALL_FORMAT_NONE = 0,
    /* Hermes 2 Pro, Qwen 2.5 / 3: <tool_call>{"name": .., "arguments": {..}}</tool_call>,
     * any number, with text around them (the last closing tag may be
     * missing). */
    VT_TOOL_CALL_FORMAT_HERMES = 1,
    /* Llama 3.1 / 3.2 / 3.3: the whole output is {"name": .., "parameters": {..}}
     * (several joined by ';'), after an optional <|python_tag|>. */
    VT_TOOL_CALL_FORMAT_LLAMA3_JSON = 2,
    /* Mistral: [TOOL_CALLS][{"name": .., "arguments": {..}}, ...] after
     * optional text, or [TOOL_CALLS]name[ARGS]{..} per call; without the
     * marker, an output that is only such an array. */
    VT_TOOL_CALL_FORMAT_MISTRAL = 3,
    /* Since ABI 1.11. OpenAI's harmony (gpt-oss): the output is messages on
     * channels, "<|channel|>analysis<|message|>...<|end|><|start|>assistant
     * <|channel|>final<|message|>..."; a message to functions.NAME is a call
     * whose text is its arguments. The output must hold the control tokens
     * as text (vt_request_params.render_special). Parsing splits out the
     * reasoning too (see vt_harmony_parser for the rules and the stream). */
    VT_TOOL_CALL_FORMAT_HARMONY = 4
} vt_tool_call_format;

/* METHOD. Since ABI 1.8. The syntax the template's source teaches, from the
 * markers it writes ([TOOL_CALLS], <tool_call>, <|python_tag|>, a Llama 3
 * header with the "parameters" call format; since ABI 1.11 harmony's
 * <|start|>, <|channel|> and <|message|>, whether or not it renders tools);
 * VT_TOOL_CALL_FORMAT_NONE when it shows none. Errors: VT_ERR_INVALID_ARGUMENT (NULL tmpl or out).
 * Thread-safe. */
VT_API vt_status vt_chat_template_tool_call_format(const vt_chat_template *tmpl,
                                                   vt_tool_call_format *out);

/* Since ABI 1.8. Splits len bytes of a model's output into content and calls
 * and writes them to buf (the buffer convention of vt_common.h) as a JSON
 * object:
 *
 *   {"content": "text" | null,
 *    "tool_calls": [{"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}]}
 *
 * arguments is JSON text (compact, the model's key order; "{}" when the
 * call gave none; a string holding JSON is that JSON), as OpenAI's
 * function.arguments. With calls, content is the text outside them in
 * order with trailing whitespace removed, null when nothing else is left;
 * without calls (none found, a malformed one, or VT_TOOL_CALL_FORMAT_NONE)
 * it is the whole text, unchanged, and tool_calls is empty.
 * VT_TOOL_CALL_FORMAT_HARMONY (since ABI 1.11) adds "reasoning_content"
 * (string or null) and follows vt_harmony_parser's rules: arguments are the
 * call message's text as written, content is null without a content
 * message. Bytes of text
 * that are not UTF-8 come out as U+FFFD. text may be NULL when len is 0.
 * Errors: VT_ERR_INVALID_ARGUMENT (an unknown format, NULL needed, NULL text
 * with len > 0), VT_ERR_BUFFER_TOO_SMALL. Thread-safe. */
VT_API vt_status vt_chat_parse_tool_calls(vt_tool_call_format format, const char *text,
                                          size_t len, char *buf, size_t buf_size,
                                          size_t *needed);

/* Since ABI 1.8. For streaming: *n_content receives the length of the
 * longest prefix of a growing output (text, len bytes so far) that is
 * content however it continues: no call can start in it, and it ends before
 * any whitespace that may precede a call. The content that
 * vt_chat_parse_tool_calls gives for any continuation of text starts with
 * these bytes (or, for the whole output, is null only when this prefix is
 * empty), so a server may send them at once and hold back the rest until
 * the output ends. VT_TOOL_CALL_FORMAT_NONE: len. VT_TOOL_CALL_FORMAT_HARMONY:
 * 0 (its content is not a prefix of the text; stream it through
 * vt_harmony_parser). Errors:
 * VT_ERR_INVALID_ARGUMENT (an unknown format, NULL n_content, NULL text with
 * len > 0). Thread-safe. */
VT_API vt_status vt_chat_tool_calls_content_prefix(vt_tool_call_format format,
                                                   const char *text, size_t len,
                                                   size_t *n_content);

/* ---- Harmony, streamed (since ABI 1.11) ---------------------------------
 *
 * gpt-oss writes its answer as harmony messages (VT_TOOL_CALL_FORMAT_HARMONY);
 * a vt_harmony_parser reads a completion piece by piece, as a server
 * streams it, and returns what each piece adds, as vLLM streams gpt-oss:
 * reasoning_content, content and tool-call deltas. Its rules, as vLLM routes
 * openai-harmony's messages:
 *   - a message whose recipient is functions.NAME ("to=functions.NAME" in
 *     its header) is a call of NAME; its text is the arguments (JSON text
 *     as the model wrote it);
 *   - the analysis channel, and messages to another recipient (the
 *     built-in browser.* / python tools), are reasoning_content;
 *   - everything else (final, commentary without a recipient, no channel)
 *     is content. Messages of one kind are concatenated.
 * A message ends at <|end|>, <|return|> or <|call|>; other markers inside it
 * are its text. Text that does not start as harmony (no header: plain text,
 * a JSON object a grammar forced) is content as a whole; a header cut off by
 * the end is dropped, a message cut off kept as far as it came; text between
 * messages other than whitespace is content; a header longer than 1024
 * bytes is taken for text (content, with all that follows). Never an error.
 *
 * A parser is one completion's; it is not thread-safe (one thread at a
 * time), and holds back only a possible marker at the end of what it was
 * given ("<|e"). */
typedef struct vt_harmony_parser vt_harmony_parser;

/* CONSTRUCTOR. Since ABI 1.11. Errors: VT_ERR_INVALID_ARGUMENT (out NULL),
 * VT_ERR_OUT_OF_MEMORY. */
VT_API vt_status vt_harmony_parser_create(vt_harmony_parser **out);

/* DESTRUCTOR. Since ABI 1.11. Accepts NULL. */
VT_API void vt_harmony_parser_destroy(vt_harmony_parser *parser);

/* METHOD. Since ABI 1.11. Reads len more bytes of the completion (text may
 * be NULL when len is 0); end: the completion is over (held-back text is
 * released; later pushes are ignored). What they add is queued for
 * vt_harmony_parser_take. Errors: VT_ERR_INVALID_ARGUMENT (NULL parser, NULL
 * text with len > 0). */
VT_API vt_status vt_harmony_parser_push(vt_harmony_parser *parser, const char *text, size_t len, bool end);

/* METHOD. Since ABI 1.11. Writes the queued deltas to buf (the buffer
 * convention of vt_common.h) as a JSON array, oldest first, and empties the
 * queue (only when they fit):
 *   {"reasoning_content": "..."}   more reasoning
 *   {"content": "..."}             more content
 *   {"tool_call": {"index": 0, "name": "get_weather"}}       a call begins
 *   {"tool_call": {"index": 0, "arguments": "{\"city\""}}   more of its arguments
 * Each kind's texts, concatenated over all takes, are the fields that
 * vt_chat_parse_tool_calls(VT_TOOL_CALL_FORMAT_HARMONY) gives for the whole
 * text, whatever the pieces were. Bytes that are not UTF-8 come out as
 * U+FFFD. Errors: VT_ERR_INVALID_ARGUMENT (NULL parser or needed),
 * VT_ERR_BUFFER_TOO_SMALL. */
VT_API vt_status vt_harmony_parser_take(vt_harmony_parser *parser, char *buf, size_t buf_size, size_t *needed);

/* METHOD. Since ABI 1.11. The split of everything pushed so far, as
 * vt_chat_parse_tool_calls(VT_TOOL_CALL_FORMAT_HARMONY) writes it (before
 * the end, without held-back text). Errors: VT_ERR_INVALID_ARGUMENT (NULL
 * parser or needed), VT_ERR_BUFFER_TOO_SMALL. */
VT_API vt_status vt_harmony_parser_result(const vt_harmony_parser *parser, char *buf, size_t buf_size,
                                          size_t *needed);

#ifdef __cplusplus
}
#endif

#endif /* VT_CHAT_H */
