/* Streaming detokenization through the C ABI (vt_detokenizer_*), on the
 * vocab-only GGUF files of llama.cpp: every .inp string streamed token by
 * token equals vt_detokenize of the whole; chunk boundaries equal Hugging
 * Face's DecodeStream; pending text when the buffer is too small; reset,
 * prefill, finish with an unfinished character, invalid bytes, a 10,000-token
 * stream and the bound on tokens held back; bad arguments.
 *
 * usage: test-abi-detokenizer VOCAB_DIR  (llama.cpp-vocab of the shared
 * data; exit 77, a skip, when it is absent) */
#define _POSIX_C_SOURCE 200809L

#include "vt/vt.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi-check.h"

#define CHECK_OK(call)                                                       \
    do {                                                                     \
        vt_status st_ = (call);                                              \
        if (st_ != VT_OK) {                                                  \
            fprintf(stderr, "%s:%d: %s\n  returned %s: %s\n", __FILE__,       \
                    __LINE__, #call, vt_status_str(st_), vt_last_error());   \
            ++failures;                                                      \
        }                                                                    \
    } while (0)

/* ---- helpers ------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t n, cap;
} text_buf;

static void buf_append(text_buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) abort();
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    text_buf b = {NULL, 0, 0};
    char chunk[4096];
    size_t got;
    if (!f) return NULL;
    buf_append(&b, "", 0);
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&b, chunk, got);
    fclose(f);
    *len = b.n;
    return b.p;
}

/* Strict UTF-8 (RFC 3629). */
static int utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i], len, k;
        unsigned long cpt, min;
        if (c < 0x80) { ++i; continue; }
        if ((c & 0xE0) == 0xC0) { len = 2; cpt = c & 0x1F; min = 0x80; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cpt = c & 0x0F; min = 0x800; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cpt = c & 0x07; min = 0x10000; }
        else return 0;
        if (n - i < len) return 0;
        for (k = 1; k < len; ++k) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cpt = (cpt << 6) | (p[i + k] & 0x3F);
        }
        if (cpt < min || cpt > 0x10FFFF || (cpt >= 0xD800 && cpt <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

static vt_token *tokenize(const vt_tokenizer *tok, const char *text, size_t len, size_t *n) {
    size_t cap = len + 16;
    vt_token *ids = malloc(cap * sizeof *ids);
    if (!ids) abort();
    if (vt_tokenize(tok, text, len, 0, ids, cap, n) != VT_OK) {
        fprintf(stderr, "vt_tokenize failed: %s\n", vt_last_error());
        ++failures;
        *n = 0;
    }
    return ids;
}

static text_buf detokenize(const vt_tokenizer *tok, const vt_token *ids, size_t n, bool render_special) {
    text_buf b = {NULL, 0, 0};
    size_t needed = 0;
    vt_status st = vt_detokenize(tok, ids, n, render_special, NULL, 0, &needed);
    buf_append(&b, "", 0);
    if (st != VT_OK && st != VT_ERR_BUFFER_TOO_SMALL) {
        ++failures;
        return b;
    }
    b.p = realloc(b.p, needed + 1);
    if (!b.p) abort();
    b.cap = needed + 1;
    CHECK_OK(vt_detokenize(tok, ids, n, render_special, b.p, b.cap, &needed));
    b.n = needed;
    return b;
}

/* Pushes ids one by one (chunk buffers of `chunk_cap` bytes, fetching
 * pending text with VT_TOKEN_NULL when too small) and finishes. Returns the
 * text; *all_chunks_valid tells whether every chunk was UTF-8 on its own. */
static text_buf stream(vt_detokenizer *d, const vt_token *ids, size_t n, size_t chunk_cap,
                       int *all_chunks_valid) {
    text_buf out = {NULL, 0, 0};
    char *chunk = malloc(chunk_cap + 1);
    size_t i, needed = 0;
    buf_append(&out, "", 0);
    *all_chunks_valid = 1;
    for (i = 0; i <= n; ++i) {
        vt_status st = i < n ? vt_detokenizer_push(d, ids[i], chunk, chunk_cap, &needed)
                             : vt_detokenizer_finish(d, chunk, chunk_cap, &needed);
        while (st == VT_ERR_BUFFER_TOO_SMALL) {
            chunk = realloc(chunk, needed + 1);
            if (!chunk) abort();
            chunk_cap = needed + 1;
            st = vt_detokenizer_push(d, VT_TOKEN_NULL, chunk, chunk_cap, &needed);
        }
        CHECK_OK(st);
        if (st != VT_OK) break;
        if (!utf8_valid(chunk, needed)) *all_chunks_valid = 0;
        buf_append(&out, chunk, needed);
    }
    free(chunk);
    return out;
}

static vt_tokenizer *load(const char *dir, const char *name) {
    char path[4096];
    vt_tokenizer *tok = NULL;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (vt_tokenizer_load(path, &tok) != VT_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, vt_last_error());
        ++failures;
        return NULL;
    }
    return tok;
}

/* ---- every .inp string ----------------------------------------------------- */

/* Splits the .inp text as llama.cpp's test does and streams each piece. */
static void stream_vectors(const vt_tokenizer *tok, const char *name, char *inp, size_t len) {
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sep_len = sizeof sep - 1;
    size_t at = 0;
    vt_detokenizer *d = NULL;
    CHECK_OK(vt_detokenizer_create(tok, false, &d));
    while (at < len) {
        char *end = strstr(inp + at, sep);
        size_t tlen = end ? (size_t)(end - (inp + at)) : len - at;
        size_t n = 0;
        vt_token *ids = tokenize(tok, inp + at, tlen, &n);
        text_buf whole = detokenize(tok, ids, n, false);
        int valid_chunks = 0;
        size_t cap;
        for (cap = 1; cap <= 256; cap *= 256) {  /* tiny buffers, then roomy ones */
            text_buf got = stream(d, ids, n, cap, &valid_chunks);
            if (got.n != whole.n || memcmp(got.p, whole.p, got.n) != 0) {
                fprintf(stderr, "%s: streamed text differs from vt_detokenize for \"%.*s\"\n", name,
                        (int)tlen, inp + at);
                ++failures;
            }
            if (utf8_valid(whole.p, whole.n) && !valid_chunks) {
                fprintf(stderr, "%s: a chunk is not UTF-8 for \"%.*s\"\n", name, (int)tlen, inp + at);
                ++failures;
            }
            free(got.p);
        }
        free(whole.p);
        free(ids);
        if (!end) break;
        at += tlen + sep_len;
    }
    vt_detokenizer_destroy(d);
}

static int test_vectors(const char *dir) {
    DIR *dp = opendir(dir);
    struct dirent *e;
    int tested_gpt2 = 0, tested_spm = 0, n_files = 0;
    if (!dp) return 0;
    while ((e = readdir(dp)) != NULL) {
        const char *nm = e->d_name;
        size_t l = strlen(nm);
        char path[4096];
        char *inp;
        size_t len = 0;
        vt_tokenizer *tok = NULL;
        vt_status st;
        if (strncmp(nm, "ggml-vocab-", 11) != 0 || l < 5 || strcmp(nm + l - 5, ".gguf") != 0) continue;
        snprintf(path, sizeof path, "%s/%s.inp", dir, nm);
        inp = read_file(path, &len);
        if (!inp) continue;
        snprintf(path, sizeof path, "%s/%s", dir, nm);
        st = vt_tokenizer_load(path, &tok);
        if (st != VT_OK) {
            /* Loading is the tokenizer tests' subject; gpt-2 and llama-spm
             * must load (checked below). */
            printf("skip %s: %s\n", nm, vt_last_error());
        } else {
            stream_vectors(tok, nm, inp, len);
            printf("ok   %s\n", nm);
            tested_gpt2 |= strcmp(nm, "ggml-vocab-gpt-2.gguf") == 0;
            tested_spm |= strcmp(nm, "ggml-vocab-llama-spm.gguf") == 0;
            ++n_files;
            vt_tokenizer_destroy(tok);
        }
        free(inp);
    }
    closedir(dp);
    CHECK(tested_gpt2 && tested_spm);
    return n_files;
}

/* ---- chunk boundaries: Hugging Face's DecodeStream ------------------------------ */

/* Expected chunks ("" where DecodeStream.step returns None) come from
 * tokenizers 0.23.3, run live on the tokenizer transformers builds from the
 * same GGUF (PreTrainedTokenizerFast.from_pretrained(dir, gguf_file=...)),
 * with the ids it encoded: DecodeStream(skip_special_tokens=False).step. */
typedef struct {
    const char *file;
    vt_token ids[12];
    size_t n;
    const char *chunks[12];
} oracle_case;

static const oracle_case oracle[] = {
    {"ggml-vocab-gpt-2.gguf", {15496, 12520, 99, 247, 995}, 5,
     {"Hello", "", "", " \xF0\x9F\xA6\x99", " world"}},
    {"ggml-vocab-gpt-2.gguf", {33768, 98, 17312, 105, 45739, 252}, 6,
     {"", "\xE6\x97\xA5", "", "\xE6\x9C\xAC", "", "\xE8\xAA\x9E"}},
    {"ggml-vocab-gpt-2.gguf", {428, 318, 12520, 99, 247, 13, 20322}, 7,
     {" this", " is", "", "", " \xF0\x9F\xA6\x99", ".", "cpp"}},
    {"ggml-vocab-llama-spm.gguf", {15043, 29871, 243, 162, 169, 156, 3186}, 7,
     {"Hello", " ", "", "", "", "\xF0\x9F\xA6\x99", " world"}},
    {"ggml-vocab-llama-spm.gguf", {29871, 30325, 30346, 30968}, 4,
     {"", "\xE6\x97\xA5", "\xE6\x9C\xAC", "\xE8\xAA\x9E"}},
    {"ggml-vocab-llama-spm.gguf", {445, 338, 29871, 243, 162, 169, 156, 29889, 8223}, 9,
     {"this", " is", " ", "", "", "", "\xF0\x9F\xA6\x99", ".", "cpp"}},
    {"ggml-vocab-llama-spm.gguf", {263, 10126}, 2, {"a", "\xC3\xA9" "b"}},
};

static void test_oracle_chunks(const char *dir) {
    size_t c, i;
    for (c = 0; c < sizeof oracle / sizeof oracle[0]; ++c) {
        vt_tokenizer *tok = load(dir, oracle[c].file);
        vt_detokenizer *d = NULL;
        char buf[64];
        size_t needed = 0;
        if (!tok) continue;
        CHECK_OK(vt_detokenizer_create(tok, false, &d));
        for (i = 0; i < oracle[c].n; ++i) {
            CHECK_OK(vt_detokenizer_push(d, oracle[c].ids[i], buf, sizeof buf, &needed));
            if (needed != strlen(oracle[c].chunks[i]) || strcmp(buf, oracle[c].chunks[i]) != 0) {
                fprintf(stderr, "%s case %zu token %zu: chunk \"%s\", want \"%s\"\n", oracle[c].file, c, i, buf,
                        oracle[c].chunks[i]);
                ++failures;
            }
        }
        CHECK_OK(vt_detokenizer_finish(d, buf, sizeof buf, &needed));
        CHECK(needed == 0);
        vt_detokenizer_destroy(d);
        vt_tokenizer_destroy(tok);
    }
}

/* ---- buffers, reset, finish, prefill (GPT-2 and Llama SentencePiece) ------------ */

static void test_buffer_too_small(const vt_tokenizer *gpt2) {
    /* "Hello", " world", "!": 15496 995 0 */
    vt_detokenizer *d = NULL;
    char buf[32];
    size_t needed = 99;
    CHECK_OK(vt_detokenizer_create(gpt2, false, &d));
    CHECK(vt_detokenizer_push(d, 15496, NULL, 0, &needed) == VT_ERR_BUFFER_TOO_SMALL);
    CHECK(needed == 5);
    /* A prefix is written, nothing is consumed. */
    CHECK(vt_detokenizer_push(d, VT_TOKEN_NULL, buf, 3, &needed) == VT_ERR_BUFFER_TOO_SMALL);
    CHECK(needed == 5 && strcmp(buf, "He") == 0);
    /* Room for the text but not its NUL is too small too. */
    CHECK(vt_detokenizer_push(d, VT_TOKEN_NULL, buf, 5, &needed) == VT_ERR_BUFFER_TOO_SMALL);
    /* Pushing the next token instead returns both texts. */
    CHECK_OK(vt_detokenizer_push(d, 995, buf, sizeof buf, &needed));
    CHECK(needed == 11 && strcmp(buf, "Hello world") == 0);
    CHECK_OK(vt_detokenizer_push(d, VT_TOKEN_NULL, buf, sizeof buf, &needed));
    CHECK(needed == 0 && buf[0] == '\0');
    CHECK(vt_detokenizer_push(d, 0, buf, 1, &needed) == VT_ERR_BUFFER_TOO_SMALL);
    CHECK(needed == 1 && buf[0] == '\0');
    /* finish keeps its text pending too, then delivers it. */
    CHECK(vt_detokenizer_finish(d, buf, 1, &needed) == VT_ERR_BUFFER_TOO_SMALL);
    CHECK(needed == 1);
    CHECK_OK(vt_detokenizer_finish(d, buf, sizeof buf, &needed));
    CHECK(needed == 1 && strcmp(buf, "!") == 0);
    CHECK_OK(vt_detokenizer_finish(d, buf, sizeof buf, &needed));
    CHECK(needed == 0);
    vt_detokenizer_destroy(d);
}

static void test_reset_and_finish(const vt_tokenizer *gpt2, const vt_tokenizer *spm) {
    /* GPT-2 " 🦙" is 12520 99 247: " \xF0\x9F", "\xA6", "\x99". */
    const vt_token half_llama[] = {12520, 99};
    vt_detokenizer *d = NULL;
    char buf[64];
    size_t needed = 0;
    text_buf whole;
    CHECK_OK(vt_detokenizer_create(gpt2, false, &d));

    /* Reset drops the held-back bytes. */
    CHECK_OK(vt_detokenizer_push(d, 12520, buf, sizeof buf, &needed));
    CHECK_OK(vt_detokenizer_push(d, 99, buf, sizeof buf, &needed));
    CHECK(needed == 0);
    vt_detokenizer_reset(d);
    CHECK_OK(vt_detokenizer_push(d, 995, buf, sizeof buf, &needed));
    CHECK(needed == 6 && strcmp(buf, " world") == 0);
    CHECK_OK(vt_detokenizer_finish(d, buf, sizeof buf, &needed));
    CHECK(needed == 0);

    /* Finish with an unfinished character: its bytes, as vt_detokenize
     * gives them (passed through, not replaced). */
    CHECK_OK(vt_detokenizer_push(d, 12520, buf, sizeof buf, &needed));
    CHECK_OK(vt_detokenizer_push(d, 99, buf, sizeof buf, &needed));
    CHECK(needed == 0);
    CHECK_OK(vt_detokenizer_finish(d, buf, sizeof buf, &needed));
    whole = detokenize(gpt2, half_llama, 2, false);
    CHECK(needed == 4 && memcmp(buf, " \xF0\x9F\xA6", 4) == 0);
    CHECK(needed == whole.n && memcmp(buf, whole.p, needed) == 0);
    free(whole.p);

    /* Bytes that cannot start or finish a character are not held back:
     * a lone continuation byte (99 is 0xA6) goes out at once. */
    CHECK_OK(vt_detokenizer_push(d, 99, buf, sizeof buf, &needed));
    CHECK(needed == 1 && (unsigned char)buf[0] == 0xA6);
    CHECK_OK(vt_detokenizer_push(d, 995, buf, sizeof buf, &needed));
    CHECK(needed == 6 && strcmp(buf, " world") == 0);
    vt_detokenizer_destroy(d);

    /* SentencePiece: finish starts over, so a new stream's first word loses
     * its leading space again, as in vt_detokenize. "▁Hello" is 15043. */
    CHECK_OK(vt_detokenizer_create(spm, false, &d));
    CHECK_OK(vt_detokenizer_push(d, 15043, buf, sizeof buf, &needed));
    CHECK(strcmp(buf, "Hello") == 0);
    CHECK_OK(vt_detokenizer_push(d, 15043, buf, sizeof buf, &needed));
    CHECK(strcmp(buf, " Hello") == 0);
    CHECK_OK(vt_detokenizer_finish(d, buf, sizeof buf, &needed));
    CHECK_OK(vt_detokenizer_push(d, 15043, buf, sizeof buf, &needed));
    CHECK(strcmp(buf, "Hello") == 0);
    vt_detokenizer_reset(d);
    CHECK_OK(vt_detokenizer_push(d, 15043, buf, sizeof buf, &needed));
    CHECK(strcmp(buf, "Hello") == 0);
    vt_detokenizer_destroy(d);
}

static void test_prefill(const vt_tokenizer *gpt2, const vt_tokenizer *spm) {
    static const char prompt[] = "The capital of France is";
    vt_detokenizer *d = NULL;
    char buf[64];
    size_t needed = 0, n = 0;
    vt_token *ids = tokenize(spm, prompt, sizeof prompt - 1, &n);
    vt_token all[64];
    text_buf p, pa;

    /* The output continues the prompt: " Paris" keeps its space. */
    CHECK_OK(vt_detokenizer_create(spm, false, &d));
    CHECK_OK(vt_detokenizer_prefill(d, ids, n));
    CHECK_OK(vt_detokenizer_push(d, 3681, buf, sizeof buf, &needed)); /* "▁Paris" */
    CHECK(strcmp(buf, " Paris") == 0);
    /* = vt_detokenize(prompt + output) less vt_detokenize(prompt). */
    if (n < 63) {
        memcpy(all, ids, n * sizeof *ids);
        all[n] = 3681;
        p = detokenize(spm, ids, n, false);
        pa = detokenize(spm, all, n + 1, false);
        CHECK(pa.n == p.n + needed && memcmp(pa.p + p.n, buf, needed) == 0);
        free(p.p);
        free(pa.p);
    }
    /* Without prefill the first word loses it. */
    CHECK_OK(vt_detokenizer_prefill(d, NULL, 0));
    CHECK_OK(vt_detokenizer_push(d, 3681, buf, sizeof buf, &needed));
    CHECK(strcmp(buf, "Paris") == 0);
    vt_detokenizer_destroy(d);
    free(ids);

    /* A prefill ending inside a character: the character comes out whole
     * with the token that finishes it ("Hello" then " 🦙" cut after 2 of
     * its 3 tokens). */
    {
        const vt_token cut[] = {15496, 12520, 99};
        CHECK_OK(vt_detokenizer_create(gpt2, false, &d));
        CHECK_OK(vt_detokenizer_prefill(d, cut, 3));
        CHECK_OK(vt_detokenizer_push(d, 247, buf, sizeof buf, &needed));
        CHECK(strcmp(buf, " \xF0\x9F\xA6\x99") == 0);
        CHECK_OK(vt_detokenizer_push(d, 995, buf, sizeof buf, &needed));
        CHECK(strcmp(buf, " world") == 0);
        vt_detokenizer_destroy(d);
    }
}

static void test_render_special(const vt_tokenizer *gpt2) {
    vt_detokenizer *plain = NULL, *special = NULL;
    char buf[64];
    size_t needed = 0;
    CHECK_OK(vt_detokenizer_create(gpt2, false, &plain));
    CHECK_OK(vt_detokenizer_create(gpt2, true, &special));
    CHECK_OK(vt_detokenizer_push(plain, 50256, buf, sizeof buf, &needed));
    CHECK(needed == 0);
    CHECK_OK(vt_detokenizer_push(special, 50256, buf, sizeof buf, &needed));
    CHECK(strcmp(buf, "<|endoftext|>") == 0);
    vt_detokenizer_destroy(plain);
    vt_detokenizer_destroy(special);
}

/* ---- long streams ------------------------------------------------------------------ */

static void test_long_streams(const vt_tokenizer *gpt2, const char *dir) {
    char path[4096];
    size_t len = 0, n = 0, i;
    char *inp;
    text_buf text = {NULL, 0, 0}, whole, got;
    vt_token *ids;
    vt_detokenizer *d = NULL;
    int valid = 0;
    enum { kLong = 10000 };
    vt_token *many = malloc(kLong * sizeof *many);
    char buf[256];
    size_t needed = 0, before_finish = 0;

    /* The .inp strings repeated to 10,000+ tokens: equal to the whole. */
    snprintf(path, sizeof path, "%s/ggml-vocab-gpt-2.gguf.inp", dir);
    inp = read_file(path, &len);
    if (!inp || !many) {
        ++failures;
        free(many);
        return;
    }
    while (text.n < 16 * len) buf_append(&text, inp, len);
    ids = tokenize(gpt2, text.p, text.n, &n);
    CHECK(n >= kLong);
    CHECK_OK(vt_detokenizer_create(gpt2, false, &d));
    whole = detokenize(gpt2, ids, n, false);
    got = stream(d, ids, n, 256, &valid);
    CHECK(got.n == whole.n && memcmp(got.p, whole.p, got.n) == 0);
    CHECK(valid);
    free(got.p);
    free(whole.p);
    free(ids);
    free(text.p);
    free(inp);

    /* 10,000 times "\xEF\xBF\xBD" (U+FFFD, GPT-2 token 4210): text that
     * ends in U+FFFD is held back, but not for more than 64 tokens, so the
     * detokenizer's memory stays bounded and text keeps coming out. */
    for (i = 0; i < kLong; ++i) many[i] = 4210;
    for (i = 0; i < kLong; ++i) {
        if (vt_detokenizer_push(d, many[i], buf, sizeof buf, &needed) != VT_OK || needed > 3 * 64) {
            ++failures;
            fprintf(stderr, "a chunk of %zu bytes: more than 64 tokens were held back\n", needed);
            break;
        }
        before_finish += needed;
    }
    CHECK(before_finish >= 3 * (kLong - 64));
    CHECK_OK(vt_detokenizer_finish(d, buf, sizeof buf, &needed));
    CHECK(before_finish + needed == 3 * (size_t)kLong);

    /* 10,000 control tokens that render as nothing, then a word. */
    for (i = 0; i < kLong; ++i) {
        if (vt_detokenizer_push(d, 50256, buf, sizeof buf, &needed) != VT_OK || needed != 0) {
            fprintf(stderr, "control token %zu: text or failure\n", i);
            ++failures;
            break;
        }
    }
    CHECK_OK(vt_detokenizer_push(d, 995, buf, sizeof buf, &needed));
    CHECK(strcmp(buf, " world") == 0);
    vt_detokenizer_destroy(d);
    free(many);
}

/* ---- bad arguments ---------------------------------------------------------------- */

static void test_bad_arguments(const vt_tokenizer *gpt2) {
    vt_detokenizer *d = (vt_detokenizer *)1;
    char buf[16];
    size_t needed = 0;
    const vt_token bad[] = {15496, 50257};
    CHECK(vt_detokenizer_create(NULL, false, &d) == VT_ERR_INVALID_ARGUMENT && d == NULL);
    CHECK(vt_detokenizer_create(gpt2, false, NULL) == VT_ERR_INVALID_ARGUMENT);
    CHECK(vt_detokenizer_push(NULL, 0, buf, sizeof buf, &needed) == VT_ERR_INVALID_ARGUMENT);
    CHECK(vt_detokenizer_finish(NULL, buf, sizeof buf, &needed) == VT_ERR_INVALID_ARGUMENT);
    CHECK(vt_detokenizer_prefill(NULL, NULL, 0) == VT_ERR_INVALID_ARGUMENT);
    vt_detokenizer_reset(NULL);
    vt_detokenizer_destroy(NULL);

    CHECK_OK(vt_detokenizer_create(gpt2, false, &d));
    CHECK(vt_detokenizer_push(d, 0, buf, sizeof buf, NULL) == VT_ERR_INVALID_ARGUMENT);
    CHECK(vt_detokenizer_push(d, 0, NULL, 4, &needed) == VT_ERR_INVALID_ARGUMENT);
    CHECK(vt_detokenizer_finish(d, buf, sizeof buf, NULL) == VT_ERR_INVALID_ARGUMENT);
    CHECK(vt_detokenizer_finish(d, NULL, 4, &needed) == VT_ERR_INVALID_ARGUMENT);
    CHECK(vt_detokenizer_prefill(d, NULL, 2) == VT_ERR_INVALID_ARGUMENT);
    CHECK(vt_detokenizer_prefill(d, bad, 2) == VT_ERR_INVALID_ARGUMENT);
    CHECK(vt_last_error()[0] != '\0');
    /* Out-of-range tokens change nothing: the held-back byte stays. */
    CHECK_OK(vt_detokenizer_push(d, 12520, buf, sizeof buf, &needed));
    CHECK(vt_detokenizer_push(d, 50257, buf, sizeof buf, &needed) == VT_ERR_INVALID_ARGUMENT);
    CHECK(vt_detokenizer_push(d, -2, buf, sizeof buf, &needed) == VT_ERR_INVALID_ARGUMENT);
    CHECK_OK(vt_detokenizer_push(d, 99, buf, sizeof buf, &needed));
    CHECK_OK(vt_detokenizer_push(d, 247, buf, sizeof buf, &needed));
    CHECK(strcmp(buf, " \xF0\x9F\xA6\x99") == 0);
    vt_detokenizer_destroy(d);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "";
    vt_tokenizer *gpt2, *spm;
    DIR *probe = opendir(dir);
    if (!probe) {
        printf("SKIP: no llama.cpp vocabulary directory at '%s'\n", dir);
        return 77;
    }
    closedir(probe);
    printf("%d vocabularies streamed\n", test_vectors(dir));
    test_oracle_chunks(dir);
    gpt2 = load(dir, "ggml-vocab-gpt-2.gguf");
    spm = load(dir, "ggml-vocab-llama-spm.gguf");
    if (gpt2 && spm) {
        test_buffer_too_small(gpt2);
        test_reset_and_finish(gpt2, spm);
        test_prefill(gpt2, spm);
        test_render_special(gpt2);
        test_long_streams(gpt2, dir);
        test_bad_arguments(gpt2);
    }
    vt_tokenizer_destroy(gpt2);
    vt_tokenizer_destroy(spm);
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}
