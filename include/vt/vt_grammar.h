/* vt_grammar.h - constrained decoding: grammars, JSON Schema, regular
 * expressions and choices compiled to per-step token masks.
 *
 * A vt_grammar is a constraint compiled once for one tokenizer's vocabulary:
 * a language of byte strings and, for every state of its parser that a token
 * can start in, which tokens are allowed whatever the surrounding rules are
 * (the context-independent part, as in xgrammar) and which must be checked
 * against the parser's stack at run time. A vt_grammar_matcher walks one
 * output: it gives the mask of tokens allowed next and accepts the token
 * chosen. A token is allowed when the text generated so far followed by the
 * token's bytes is a prefix of some string of the language; tokens span rule
 * boundaries and partial UTF-8 characters freely. End-of-generation tokens
 * are allowed exactly when the text so far is a whole string of the language;
 * other control tokens (those whose piece is empty) never are.
 *
 * The usual way to use one is as a sampler stage (vt_sampler_add_grammar):
 * the engine then masks each request's logits with its own matcher. The
 * matcher API is for callers who run their own decoding loop.
 *
 * Thread-safety: a grammar is immutable once compiled; any thread may use it
 * and many matchers may share it. A matcher is externally synchronized.
 */
#ifndef VT_GRAMMAR_H
#define VT_GRAMMAR_H

#include "vt_common.h"
#include "vt_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vt_grammar vt_grammar;
typedef struct vt_grammar_matcher vt_grammar_matcher;

typedef enum vt_grammar_kind {
    /* llama.cpp's GBNF: `name ::= ...` rules, "literals", [classes] with
     * ranges and ^, ( groups ), | alternatives, * + ? {m} {m,} {m,n}, `.`,
     * # comments; the start rule is `root`. Left-recursive rules are refused. */
    VT_GRAMMAR_GBNF = 0,
    /* A JSON Schema (draft 2020-12 subset; see vt_grammar_compile). The output
     * is one JSON value valid against it, whitespace between tokens allowed. */
    VT_GRAMMAR_JSON_SCHEMA = 1,
    /* Any JSON object or array, with no whitespace around it (xgrammar's
     * builtin JSON grammar, vLLM's json_object; `source` is ignored and may
     * be NULL). */
    VT_GRAMMAR_JSON = 2,
    /* A regular expression (ECMAScript-like: classes, escapes \d \w \s,
     * groups, alternation, quantifiers, anchors ^ $ at the ends only). The
     * whole output must match. */
    VT_GRAMMAR_REGEX = 3,
    /* One of several strings: `source` is a JSON array of strings. */
    VT_GRAMMAR_CHOICE = 4
} vt_grammar_kind;

/* CONSTRUCTOR. Since ABI 1.8. Compiles `source` (len bytes of UTF-8) of the
 * given kind for tok's vocabulary. The tokenizer must outlive the grammar
 * (a model's tokenizer: the model).
 *
 * JSON Schema: type (one or a list), properties and required (properties come
 * in the schema's order; additionalProperties is false unless given as true
 * or as a schema), enum, const, items / prefixItems with minItems / maxItems,
 * minLength / maxLength, pattern (matching the whole string, as xgrammar),
 * the formats that are regular (date, time, date-time, duration, email,
 * ipv4, ipv6, hostname, uri, uri-reference, uri-template, uuid, json-pointer,
 * relative-json-pointer), minimum / maximum / exclusiveMinimum /
 * exclusiveMaximum on integers, anyOf / oneOf (as anyOf), allOf of one
 * schema, $ref to a #/... pointer in the document (recursive refs included,
 * left recursion refused).
 * Every other keyword that constrains values (not, if/then/else, multipleOf,
 * patternProperties, uniqueItems, nullable, number ranges, unevaluated*, ...)
 * and combinations whose meaning xgrammar gets wrong (format or pattern with
 * lengths, siblings of $ref) are refused with VT_ERR_UNSUPPORTED
 * naming it, never ignored; annotations (title, description, default,
 * examples, $schema, $id) are ignored.
 *
 * Errors: VT_ERR_INVALID_ARGUMENT (malformed source: the message names where;
 * an undefined rule, an empty language such as a regex that matches nothing
 * or an empty choice list), VT_ERR_UNSUPPORTED (a feature named in the
 * message). Thread-safe. */
VT_API vt_status vt_grammar_compile(const vt_tokenizer *tok, vt_grammar_kind kind,
                                    const char *source, size_t len, vt_grammar **out);

/* DESTRUCTOR. Accepts NULL. Matchers and samplers that use the grammar keep
 * it alive until they are destroyed. */
VT_API void vt_grammar_destroy(vt_grammar *grammar);

/* METHOD. The size of a token mask: the tokenizer's vocabulary. */
VT_API size_t vt_grammar_n_vocab(const vt_grammar *grammar);

/* CONSTRUCTOR. A matcher at the start of the grammar's language. */
VT_API vt_status vt_grammar_matcher_create(const vt_grammar *grammar,
                                           vt_grammar_matcher **out);
/* DESTRUCTOR. Accepts NULL. */
VT_API void vt_grammar_matcher_destroy(vt_grammar_matcher *m);

/* METHOD. Writes the allowed tokens as a bitmask: bit (t % 32) of
 * mask[t / 32] is set when token t is allowed. n_words must be at least
 * (vt_grammar_n_vocab + 31) / 32 (VT_ERR_BUFFER_TOO_SMALL); words past the
 * vocabulary are zeroed. After the matcher has accepted an
 * end-of-generation token, no token is allowed. */
VT_API vt_status vt_grammar_matcher_fill_mask(vt_grammar_matcher *m, uint32_t *mask,
                                              size_t n_words);

/* METHOD. Advances over one token. VT_ERR_INVALID_ARGUMENT (state unchanged)
 * if the mask would not allow it. Accepting an end-of-generation token
 * terminates the matcher. */
VT_API vt_status vt_grammar_matcher_accept(vt_grammar_matcher *m, vt_token token);

/* METHOD. Advances over text (len bytes) as if it had been generated; the
 * same rule per byte. VT_ERR_INVALID_ARGUMENT (state unchanged) if the
 * language has no string with that prefix. */
VT_API vt_status vt_grammar_matcher_accept_text(vt_grammar_matcher *m, const char *text,
                                                size_t len);

/* METHOD. Whether the text so far is a whole string of the language (an
 * end-of-generation token is allowed, until one is accepted), and whether
 * nothing else can follow (only end of generation is allowed, or the matcher
 * has terminated). */
VT_API bool vt_grammar_matcher_is_accepting(const vt_grammar_matcher *m);
VT_API bool vt_grammar_matcher_is_completed(const vt_grammar_matcher *m);

/* METHOD. Back to the start of the language. */
VT_API void vt_grammar_matcher_reset(vt_grammar_matcher *m);

#ifdef __cplusplus
}
#endif

#endif /* VT_GRAMMAR_H */
