/* Bad inputs through the C ABI: NULL handles and out-pointers, out-of-range
 * sampler values, and files that are not models. Every fallible call must
 * return its documented status with a message in vt_last_error(); void
 * functions and destroy(NULL) must simply return. Nothing may crash.
 *
 * usage: test-abi-bad-inputs [GGUF]  (a real GGUF file, copied truncated to
 * check VT_ERR_FORMAT on a cut file; skipped when absent) */
#define _POSIX_C_SOURCE 200809L

#include "vt/vt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi-check.h"

/* The call returns `want` and leaves a non-empty message. */
#define CHECK_STATUS(call, want)                                             \
    do {                                                                     \
        vt_status got_ = (call);                                             \
        if (got_ != (want)) {                                                \
            fprintf(stderr, "%s:%d: %s\n  returned %d (%s), want %d (%s)\n",  \
                    __FILE__, __LINE__, #call, (int)got_,                    \
                    vt_status_str(got_), (int)(want), vt_status_str(want));  \
            ++failures;                                                      \
        } else if ((want) != VT_OK &&                                        \
                   (vt_last_error() == NULL || vt_last_error()[0] == 0)) {   \
            fprintf(stderr, "%s:%d: %s\n  left no vt_last_error message\n",   \
                    __FILE__, __LINE__, #call);                              \
            ++failures;                                                      \
        }                                                                    \
    } while (0)

#define ARG VT_ERR_INVALID_ARGUMENT

static void test_status_str(void) {
#define VT_CHECK_STR_(name, value, desc)                                     \
    CHECK(vt_status_str(name) != NULL);                                      \
    CHECK(strcmp(vt_status_str(name), desc) == 0);
    VT_STATUS_LIST(VT_CHECK_STR_)
#undef VT_CHECK_STR_
    CHECK(vt_status_str((vt_status)12345) != NULL);
    CHECK(vt_status_str((vt_status)-12345) != NULL);
    CHECK(vt_last_error() != NULL);
    CHECK(vt_version() != NULL);
}

static void test_null_model(void) {
    vt_model *m = NULL;
    vt_model_info info;
    char buf[16];
    size_t n = 0;

    (vt_model_params_init)(NULL);
    vt_model_params_init_v2(NULL, sizeof(vt_model_params));
    vt_model_destroy(NULL);
    CHECK_STATUS(vt_model_load(NULL, NULL, &m), ARG);
    CHECK(m == NULL);
    CHECK_STATUS(vt_model_load("model.gguf", NULL, NULL), ARG);

    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_STATUS(vt_model_get_info(NULL, &info), ARG);
    CHECK_STATUS(vt_model_arch(NULL, buf, sizeof buf, &n), ARG);
    CHECK_STATUS(vt_model_chat_template(NULL, buf, sizeof buf, &n), ARG);
    CHECK_STATUS(vt_model_meta_get(NULL, "general.architecture", buf, sizeof buf, &n), ARG);
    CHECK_STATUS(vt_model_meta_count(NULL, &n), ARG);
    CHECK_STATUS(vt_model_meta_key(NULL, 0, buf, sizeof buf, &n), ARG);
}

static void test_null_tokenizer(void) {
    const vt_tokenizer *tok = NULL;
    vt_token toks[4];
    char buf[16];
    size_t n = 0;

    CHECK_STATUS(vt_model_tokenizer(NULL, &tok), ARG);
    CHECK_STATUS(vt_tokenize(NULL, "a", 1, VT_TOKENIZE_NONE, toks, 4, &n), ARG);
    CHECK_STATUS(vt_token_to_piece(NULL, 0, false, buf, sizeof buf, &n), ARG);
    toks[0] = 0;
    CHECK_STATUS(vt_detokenize(NULL, toks, 1, false, buf, sizeof buf, &n), ARG);
    /* Infallible getters on NULL: neutral answers, no crash. */
    CHECK(vt_tokenizer_n_vocab(NULL) == 0);
    CHECK(vt_token_bos(NULL) == VT_TOKEN_NULL);
    CHECK(vt_token_eos(NULL) == VT_TOKEN_NULL);
    CHECK(!vt_token_is_eog(NULL, 0));
}

static void test_null_context(void) {
    vt_context *ctx = NULL;
    vt_seq *seq = NULL;
    vt_token t = 0;
    const float *logits = NULL;
    size_t n = 0;

    (vt_context_params_init)(NULL);
    vt_context_params_init_v2(NULL, sizeof(vt_context_params));
    vt_seq_params_init(NULL);
    vt_context_destroy(NULL);
    vt_seq_destroy(NULL);
    CHECK_STATUS(vt_context_create(NULL, NULL, &ctx), ARG);
    CHECK(ctx == NULL);
    CHECK_STATUS(vt_context_create(NULL, NULL, NULL), ARG);
    CHECK_STATUS(vt_seq_create(NULL, NULL, &seq), ARG);
    CHECK(seq == NULL);
    CHECK_STATUS(vt_seq_feed(NULL, &t, 1), ARG);
    CHECK_STATUS(vt_seq_step(NULL), ARG);
    CHECK_STATUS(vt_seq_logits(NULL, -1, &logits, &n), ARG);
    CHECK_STATUS(vt_seq_n_past(NULL, &n), ARG);
    CHECK_STATUS(vt_seq_reset(NULL), ARG);
    CHECK_STATUS(vt_seq_set_lora(NULL, NULL, 1.0f), ARG);
}

static void test_lora(void) {
    vt_lora *lora = (vt_lora *)0x1;
    vt_lora_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_STATUS(vt_lora_load(NULL, "adapter", &lora), ARG);
    CHECK(lora == NULL);
    CHECK_STATUS(vt_lora_load(NULL, NULL, NULL), ARG);
    CHECK_STATUS(vt_lora_get_info(NULL, &info), ARG);
    vt_lora_destroy(NULL);
}

static void test_sampler(void) {
    vt_sampler *s = NULL;
    vt_token t = VT_TOKEN_NULL;
    const float logits[4] = {0.5f, 2.0f, -1.0f, 1.0f};

    vt_sampler_destroy(NULL);
    CHECK_STATUS(vt_sampler_create(NULL), ARG);
    CHECK_STATUS(vt_sampler_add_penalties(NULL, 64, 1.1f, 0.0f, 0.0f), ARG);
    CHECK_STATUS(vt_sampler_add_top_k(NULL, 40), ARG);
    CHECK_STATUS(vt_sampler_add_top_p(NULL, 0.9f, 1), ARG);
    CHECK_STATUS(vt_sampler_add_min_p(NULL, 0.05f, 1), ARG);
    CHECK_STATUS(vt_sampler_add_temp(NULL, 0.8f), ARG);
    CHECK_STATUS(vt_sampler_add_greedy(NULL), ARG);
    CHECK_STATUS(vt_sampler_add_dist(NULL, 1), ARG);
    CHECK_STATUS(vt_sampler_sample(NULL, logits, 4, &t), ARG);
    CHECK_STATUS(vt_sampler_accept(NULL, 0), ARG);
    CHECK_STATUS(vt_sampler_reset(NULL), ARG);

    CHECK_STATUS(vt_sampler_create(&s), VT_OK);
    if (!s) return;
    CHECK_STATUS(vt_sampler_sample(s, logits, 4, &t), VT_ERR_INVALID_STATE); /* no final stage */
    CHECK_STATUS(vt_sampler_add_penalties(s, -2, 1.1f, 0.0f, 0.0f), ARG);
    CHECK_STATUS(vt_sampler_add_penalties(s, 64, 0.0f, 0.0f, 0.0f), ARG);
    CHECK_STATUS(vt_sampler_add_top_p(s, 1.5f, 1), ARG);
    CHECK_STATUS(vt_sampler_add_min_p(s, -0.5f, 1), ARG);
    CHECK_STATUS(vt_sampler_add_penalties(s, 64, 1.5f, 0.0f, 0.0f), VT_OK);
    CHECK_STATUS(vt_sampler_add_greedy(s), VT_OK);
    CHECK_STATUS(vt_sampler_add_top_k(s, 3), VT_ERR_INVALID_STATE); /* after a final stage */
    CHECK_STATUS(vt_sampler_add_dist(s, 3), VT_ERR_INVALID_STATE);
    CHECK_STATUS(vt_sampler_sample(s, NULL, 4, &t), ARG);
    CHECK_STATUS(vt_sampler_sample(s, logits, 4, NULL), ARG);
    CHECK_STATUS(vt_sampler_sample(s, logits, 0, &t), ARG);
    CHECK_STATUS(vt_sampler_accept(s, -1), ARG);
    CHECK_STATUS(vt_sampler_sample(s, logits, 4, &t), VT_OK);
    CHECK(t == 1);
    CHECK_STATUS(vt_sampler_accept(s, 1), VT_OK);
    CHECK_STATUS(vt_sampler_accept(s, 1), VT_OK); /* the repeat penalty applies once per token */
    CHECK_STATUS(vt_sampler_sample(s, logits, 4, &t), VT_OK);
    CHECK(t == 1); /* 2.0 / 1.5 = 1.33 still beats 1.0 */
    CHECK_STATUS(vt_sampler_reset(s), VT_OK);
    vt_sampler_destroy(s);
}

/* Writes `len` bytes to a new temporary file; returns its malloc'd path. */
static char *temp_file(const void *data, size_t len) {
    char tmpl[] = "/tmp/vt-abi-XXXXXX";
    int fd = mkstemp(tmpl);
    char *path;
    if (fd < 0) {
        fprintf(stderr, "mkstemp: %s\n", strerror(errno));
        return NULL;
    }
    if (len && write(fd, data, len) != (ssize_t)len) {
        fprintf(stderr, "write: %s\n", strerror(errno));
        close(fd);
        unlink(tmpl);
        return NULL;
    }
    close(fd);
    path = (char *)malloc(sizeof tmpl);
    if (path) memcpy(path, tmpl, sizeof tmpl);
    return path;
}

/* vt_model_load(path) returns want and no model. */
static void check_load(const char *path, vt_status want, const char *what) {
    vt_model *m = NULL;
    vt_status got = vt_model_load(path, NULL, &m);
    if (got != want) {
        fprintf(stderr, "load of %s (%s): returned %d (%s), want %d (%s); message: %s\n", what,
                path, (int)got, vt_status_str(got), (int)want, vt_status_str(want), vt_last_error());
        ++failures;
    } else if (!vt_last_error() || !vt_last_error()[0]) {
        fprintf(stderr, "load of %s: no vt_last_error message\n", what);
        ++failures;
    }
    CHECK(m == NULL);
    vt_model_destroy(m);
}

static void check_load_bytes(const void *data, size_t len, vt_status want, const char *what) {
    char *path = temp_file(data, len);
    CHECK(path != NULL);
    if (!path) return;
    check_load(path, want, what);
    unlink(path);
    free(path);
}

static void test_bad_files(const char *gguf) {
    static const char text[] = "This is a plain text file, not a GGUF model.\n";
    /* "GGUF", version 3, 1 tensor, 2 metadata pairs, then a key length of
     * 20 bytes and only 4 of them. */
    static const unsigned char cut_header[] = {
        'G', 'G', 'U', 'F', 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
        20, 0, 0, 0, 0, 0, 0, 0, 'g', 'e', 'n', 'e'};
    char dir[] = "/tmp/vt-abi-dir-XXXXXX";

    check_load("/nonexistent-vt-dir/missing.gguf", VT_ERR_IO, "a missing file");
    if (mkdtemp(dir)) {
        check_load(dir, VT_ERR_IO, "a folder without config.json");
        rmdir(dir);
    } else {
        check_load("/", VT_ERR_IO, "a directory");
    }
    check_load_bytes(text, sizeof text - 1, VT_ERR_FORMAT, "a text file");
    check_load_bytes("", 0, VT_ERR_FORMAT, "an empty file");
    check_load_bytes(cut_header, 6, VT_ERR_FORMAT, "a GGUF cut inside its header");
    check_load_bytes(cut_header, sizeof cut_header, VT_ERR_FORMAT, "a GGUF cut inside a key");

    if (gguf && gguf[0]) {
        FILE *f = fopen(gguf, "rb");
        long size;
        unsigned char *data;
        if (!f) {
            printf("skipped the truncated real GGUF: cannot open %s\n", gguf);
            return;
        }
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        fseek(f, 0, SEEK_SET);
        data = size > 0 ? (unsigned char *)malloc((size_t)size) : NULL;
        if (data && fread(data, 1, (size_t)size, f) == (size_t)size) {
            check_load_bytes(data, (size_t)size / 2, VT_ERR_FORMAT, "a real GGUF cut in half");
            check_load_bytes(data, 100, VT_ERR_FORMAT, "a real GGUF cut at 100 bytes");
        } else {
            CHECK(!"could not read the GGUF file");
        }
        free(data);
        fclose(f);
    } else {
        printf("skipped the truncated real GGUF: no file given\n");
    }
}

static void quiet(vt_log_level level, const char *msg, size_t len, void *user_data) {
    (void)level;
    (void)msg;
    (void)len;
    (void)user_data;
}

int main(int argc, char **argv) {
    vt_log_set(quiet, NULL, VT_LOG_LEVEL_NONE); /* keep expected failures quiet */
    test_status_str();
    test_null_model();
    test_null_tokenizer();
    test_null_context();
    test_lora();
    test_sampler();
    test_bad_files(argc > 1 ? argv[1] : NULL);
    vt_log_set(NULL, NULL, VT_LOG_LEVEL_WARN); /* back to the default sink */
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all bad-input checks passed\n");
    return 0;
}
