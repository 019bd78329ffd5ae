/* vt-dlopen: greedy text completion through libvt loaded at run time.
 *
 * A C99 host that does not link libvt: it dlopen()s libvt.so.<VT_ABI_MAJOR>,
 * checks that the library's ABI version is compatible with the headers it was
 * compiled with, resolves every vt_ function it calls with dlsym() and then
 * runs the usual loop: load, tokenize, feed, step, sample greedily. This is
 * the pattern for runtimes that bind C libraries dynamically (plugins, FFI
 * layers, optional acceleration): only the headers of include/vt are needed to build.
 *
 *   vt-dlopen [--lib PATH] -m MODEL -p PROMPT [-n N] [-t THREADS]
 *
 * Without --lib the library is looked up by its SONAME alone, so the dynamic
 * loader's search applies (LD_LIBRARY_PATH, the executable's RUNPATH,
 * ld.so.cache). The continuation goes to stdout, byte for byte what
 * `vt-generate --temp 0` prints for the same model, prompt and -n; every
 * failure prints "vt-dlopen: <message>" on stderr and exits 1 (2 for usage).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt/vt.h"

#define VT_STR_(x) #x
#define VT_STR(x) VT_STR_(x)
/* The SONAME this program was built for: "libvt.so.1". */
#define VT_SONAME "libvt.so." VT_STR(VT_ABI_MAJOR)

/* Function pointer types of the vt functions used here, spelled as in the
 * headers. check_types() below makes the compiler compare each with the
 * header's declaration, so a drifting typedef is a compile error, not a
 * crash. */
typedef uint32_t (*pfn_vt_abi_version)(void);
typedef const char *(*pfn_vt_version)(void);
typedef const char *(*pfn_vt_last_error)(void);
typedef const char *(*pfn_vt_status_str)(vt_status);
typedef void (*pfn_vt_model_params_init)(vt_model_params *);
typedef vt_status (*pfn_vt_model_load)(const char *, const vt_model_params *, vt_model **);
typedef void (*pfn_vt_model_destroy)(vt_model *);
typedef vt_status (*pfn_vt_model_tokenizer)(const vt_model *, const vt_tokenizer **);
typedef vt_status (*pfn_vt_tokenize)(const vt_tokenizer *, const char *, size_t, uint32_t,
                                     vt_token *, size_t, size_t *);
typedef vt_status (*pfn_vt_token_to_piece)(const vt_tokenizer *, vt_token, bool, char *,
                                           size_t, size_t *);
typedef bool (*pfn_vt_token_is_eog)(const vt_tokenizer *, vt_token);
typedef void (*pfn_vt_context_params_init)(vt_context_params *);
typedef vt_status (*pfn_vt_context_create)(const vt_model *, const vt_context_params *,
                                           vt_context **);
typedef void (*pfn_vt_context_destroy)(vt_context *);
typedef void (*pfn_vt_seq_params_init)(vt_seq_params *);
typedef vt_status (*pfn_vt_seq_create)(vt_context *, const vt_seq_params *, vt_seq **);
typedef void (*pfn_vt_seq_destroy)(vt_seq *);
typedef vt_status (*pfn_vt_seq_feed)(vt_seq *, const vt_token *, size_t);
typedef vt_status (*pfn_vt_seq_step)(vt_seq *);
typedef vt_status (*pfn_vt_seq_logits)(const vt_seq *, int32_t, const float **, size_t *);
typedef vt_status (*pfn_vt_sampler_create)(vt_sampler **);
typedef void (*pfn_vt_sampler_destroy)(vt_sampler *);
typedef vt_status (*pfn_vt_sampler_add_greedy)(vt_sampler *);
typedef vt_status (*pfn_vt_sampler_sample)(vt_sampler *, const float *, size_t, vt_token *);
typedef vt_status (*pfn_vt_sampler_accept)(vt_sampler *, vt_token);

/* X(name): every function resolved after the version check. */
#define VT_DLOPEN_FUNCS(X)                                                     \
    X(vt_last_error)                                                           \
    X(vt_status_str)                                                           \
    X(vt_model_params_init)                                                    \
    X(vt_model_load)                                                           \
    X(vt_model_destroy)                                                        \
    X(vt_model_tokenizer)                                                      \
    X(vt_tokenize)                                                             \
    X(vt_token_to_piece)                                                       \
    X(vt_token_is_eog)                                                         \
    X(vt_context_params_init)                                                  \
    X(vt_context_create)                                                       \
    X(vt_context_destroy)                                                      \
    X(vt_seq_params_init)                                                      \
    X(vt_seq_create)                                                           \
    X(vt_seq_destroy)                                                          \
    X(vt_seq_feed)                                                             \
    X(vt_seq_step)                                                             \
    X(vt_seq_logits)                                                           \
    X(vt_sampler_create)                                                       \
    X(vt_sampler_destroy)                                                      \
    X(vt_sampler_add_greedy)                                                   \
    X(vt_sampler_sample)                                                       \
    X(vt_sampler_accept)

struct vt_api {
    pfn_vt_abi_version vt_abi_version;
    pfn_vt_version vt_version;
#define VT_API_FIELD_(name) pfn_##name name;
    VT_DLOPEN_FUNCS(VT_API_FIELD_)
#undef VT_API_FIELD_
};

/* Compile-time check: each comparison sits inside sizeof, which is not
 * evaluated, so no vt_ symbol is referenced and nothing needs libvt at link
 * time; a typedef that differs from the header's prototype is "comparison of
 * distinct pointer types", an error under -Werror (as this example is built). */
#define VT_CHECK_TYPE_(name) typedef char vt_check_##name[sizeof((pfn_##name)0 == &name)];
VT_CHECK_TYPE_(vt_abi_version)
VT_CHECK_TYPE_(vt_version)
VT_DLOPEN_FUNCS(VT_CHECK_TYPE_)
#undef VT_CHECK_TYPE_

static struct vt_api api;

/* dlsym() returns an object pointer; ISO C has no conversion to a function
 * pointer, POSIX guarantees the representation: copy the bytes. */
static int resolve(void *lib, const char *libname, const char *name, void *slot,
                   size_t slot_size) {
    void *p;
    dlerror();
    p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "vt-dlopen: %s has no symbol %s (a library older than this "
                        "program's headers, or not libvt)\n", libname, name);
        return 0;
    }
    if (slot_size != sizeof p) {
        fprintf(stderr, "vt-dlopen: function pointers are not object-pointer sized here\n");
        return 0;
    }
    memcpy(slot, &p, sizeof p);
    return 1;
}

/* The rule of vt_abi_version(): same major, library minor >= header minor. */
static int abi_compatible(uint32_t lib_version, uint32_t header_version) {
    return (lib_version >> 16) == (header_version >> 16) &&
           (lib_version & 0xFFFFu) >= (header_version & 0xFFFFu);
}

#define RESOLVE(lib, libname, name) resolve(lib, libname, #name, &api.name, sizeof api.name)

static void *open_libvt(const char *path) {
    const char *name = path ? path : VT_SONAME;
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    uint32_t v, major, minor;
    if (!lib) {
        const char *err = dlerror();
        fprintf(stderr, "vt-dlopen: cannot load %s: %s\n", name, err ? err : "unknown error");
        if (!path)
            fprintf(stderr, "vt-dlopen: pass --lib PATH or put the directory of %s on "
                            "LD_LIBRARY_PATH\n", VT_SONAME);
        return NULL;
    }
    /* The version first: with a foreign major nothing else may be trusted. */
    if (!RESOLVE(lib, name, vt_abi_version) || !RESOLVE(lib, name, vt_version)) {
        dlclose(lib);
        return NULL;
    }
    v = api.vt_abi_version();
    major = v >> 16;
    minor = v & 0xFFFFu;
    if (!abi_compatible(v, VT_ABI_VERSION)) {
        fprintf(stderr,
                "vt-dlopen: %s (libvt %s) has ABI version %u.%u, but this program was "
                "built against ABI %u.%u and needs major %u with minor >= %u\n",
                name, api.vt_version(), (unsigned)major, (unsigned)minor,
                (unsigned)VT_ABI_MAJOR, (unsigned)VT_ABI_MINOR, (unsigned)VT_ABI_MAJOR,
                (unsigned)VT_ABI_MINOR);
        dlclose(lib);
        return NULL;
    }
#define VT_RESOLVE_(fn) || !RESOLVE(lib, name, fn)
    if (0 VT_DLOPEN_FUNCS(VT_RESOLVE_)) {
        dlclose(lib);
        return NULL;
    }
#undef VT_RESOLVE_
    return lib;
}

/* Prints the error of a failed vt call; returns 1 when s is a failure. */
static int failed(vt_status s) {
    const char *msg;
    if (s == VT_OK) return 0;
    msg = api.vt_last_error();
    fprintf(stderr, "vt-dlopen: %s\n", msg && *msg ? msg : api.vt_status_str(s));
    return 1;
}

struct options {
    const char *lib;
    const char *model;
    const char *prompt;
    long n_predict;
    long threads;
};

static int usage(void) {
    fprintf(stderr,
            "usage: vt-dlopen [--lib PATH] -m MODEL -p PROMPT [-n N] [-t THREADS]\n"
            "  --lib PATH     libvt to load (default: %s through the loader's search)\n"
            "  -m, --model    GGUF model file\n"
            "  -p, --prompt   prompt text\n"
            "  -n N           tokens to generate (default 32)\n"
            "  -t THREADS     compute threads, 0 = physical cores (default)\n",
            VT_SONAME);
    return 2;
}

static int parse_long(const char *opt, const char *s, long lo, long *out) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > (1L << 30)) {
        fprintf(stderr, "vt-dlopen: %s needs an integer >= %ld, not '%s'\n", opt, lo, s);
        return 0;
    }
    *out = v;
    return 1;
}

static int parse_args(int argc, char **argv, struct options *o) {
    int i;
    o->lib = NULL;
    o->model = NULL;
    o->prompt = NULL;
    o->n_predict = 32;
    o->threads = 0;
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 0;
        if (!v) {
            fprintf(stderr, "vt-dlopen: %s: unknown option or missing value\n", a);
            return 0;
        }
        ++i;
        if (!strcmp(a, "--lib")) o->lib = v;
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "-n")) {
            if (!parse_long("-n", v, 0, &o->n_predict)) return 0;
        } else if (!strcmp(a, "-t")) {
            if (!parse_long("-t", v, 0, &o->threads)) return 0;
        } else {
            fprintf(stderr, "vt-dlopen: unknown option %s\n", a);
            return 0;
        }
    }
    if (!o->model || !o->prompt) {
        fprintf(stderr, "vt-dlopen: -m MODEL and -p PROMPT are required\n");
        return 0;
    }
    return 1;
}

/* Tokenizes text with the model's BOS rules; control-token text in it becomes
 * control tokens, as vt-generate does by default. *out is malloc'ed. */
static int tokenize(const vt_tokenizer *tok, const char *text, vt_token **out, size_t *n) {
    size_t len = strlen(text), cap = len + 16, need = 0;
    const uint32_t flags = VT_TOKENIZE_ADD_SPECIAL | VT_TOKENIZE_PARSE_SPECIAL;
    vt_token *buf = malloc(cap * sizeof *buf);
    vt_status s;
    if (!buf) {
        fprintf(stderr, "vt-dlopen: out of memory\n");
        return 0;
    }
    s = api.vt_tokenize(tok, text, len, flags, buf, cap, &need);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        vt_token *bigger = realloc(buf, (need ? need : 1) * sizeof *buf);
        if (!bigger) {
            free(buf);
            fprintf(stderr, "vt-dlopen: out of memory\n");
            return 0;
        }
        buf = bigger;
        cap = need;
        s = api.vt_tokenize(tok, text, len, flags, buf, cap, &need);
    }
    if (failed(s)) {
        free(buf);
        return 0;
    }
    *out = buf;
    *n = need;
    return 1;
}

/* Writes the bytes of one token to stdout (pieces may split a UTF-8
 * character; written as they come, the concatenation is the text). */
static int print_piece(const vt_tokenizer *tok, vt_token t, char **buf, size_t *cap) {
    size_t need = 0;
    vt_status s = api.vt_token_to_piece(tok, t, false, *buf, *cap, &need);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        char *bigger = realloc(*buf, need + 1);
        if (!bigger) {
            fprintf(stderr, "vt-dlopen: out of memory\n");
            return 0;
        }
        *buf = bigger;
        *cap = need + 1;
        s = api.vt_token_to_piece(tok, t, false, *buf, *cap, &need);
    }
    if (failed(s)) return 0;
    fwrite(*buf, 1, need, stdout);
    fflush(stdout);
    return 1;
}

static int generate(const struct options *o) {
    vt_model_params mp;
    vt_context_params cp;
    vt_seq_params sp;
    vt_model *model = NULL;
    const vt_tokenizer *tok = NULL;
    vt_context *ctx = NULL;
    vt_seq *seq = NULL;
    vt_sampler *smpl = NULL;
    vt_token *prompt = NULL;
    size_t n_prompt = 0, piece_cap = 64;
    char *piece = malloc(piece_cap);
    long n_gen = 0;
    int ok = 0;

    if (!piece) {
        fprintf(stderr, "vt-dlopen: out of memory\n");
        return 0;
    }
    (api.vt_model_params_init)(&mp);  /* the 1.0 symbol: this program uses 1.0 fields only */
    if (failed(api.vt_model_load(o->model, &mp, &model))) goto done;
    if (failed(api.vt_model_tokenizer(model, &tok))) goto done;
    if (!tokenize(tok, o->prompt, &prompt, &n_prompt)) goto done;
    if (n_prompt == 0) {
        fprintf(stderr, "vt-dlopen: the prompt is empty (no tokens to evaluate)\n");
        goto done;
    }

    (api.vt_context_params_init)(&cp);
    cp.n_threads = (uint32_t)o->threads;
    if (failed(api.vt_context_create(model, &cp, &ctx))) goto done;
    api.vt_seq_params_init(&sp);
    if (failed(api.vt_seq_create(ctx, &sp, &seq))) goto done;
    if (failed(api.vt_sampler_create(&smpl))) goto done;
    if (failed(api.vt_sampler_add_greedy(smpl))) goto done;

    if (failed(api.vt_seq_feed(seq, prompt, n_prompt))) goto done;
    if (failed(api.vt_seq_step(seq))) goto done;
    while (n_gen < o->n_predict) {
        const float *logits = NULL;
        size_t n_vocab = 0;
        vt_token t = VT_TOKEN_NULL;
        vt_status s;
        if (failed(api.vt_seq_logits(seq, -1, &logits, &n_vocab))) goto done;
        if (failed(api.vt_sampler_sample(smpl, logits, n_vocab, &t))) goto done;
        if (api.vt_token_is_eog(tok, t)) break;
        ++n_gen;
        if (failed(api.vt_sampler_accept(smpl, t))) goto done;
        if (!print_piece(tok, t, &piece, &piece_cap)) goto done;
        if (n_gen >= o->n_predict) break;
        s = api.vt_seq_feed(seq, &t, 1);
        if (s == VT_ERR_CONTEXT_FULL) {
            fprintf(stderr, "vt-dlopen: stopped early: the context is full\n");
            break;
        }
        if (failed(s) || failed(api.vt_seq_step(seq))) goto done;
    }
    fprintf(stderr, "vt-dlopen: prompt %lu tokens, generated %ld tokens\n",
            (unsigned long)n_prompt, n_gen);
    ok = 1;

done:
    /* Destroy in reverse order of creation; every destroy accepts NULL. */
    api.vt_sampler_destroy(smpl);
    api.vt_seq_destroy(seq);
    api.vt_context_destroy(ctx);
    api.vt_model_destroy(model);
    free(prompt);
    free(piece);
    return ok;
}

int main(int argc, char **argv) {
    struct options o;
    void *lib;
    int ok;
    if (!parse_args(argc, argv, &o)) return usage();
    lib = open_libvt(o.lib);
    if (!lib) return 1;
    fprintf(stderr, "vt-dlopen: loaded %s: libvt %s, ABI %u.%u (built against %u.%u)\n",
            o.lib ? o.lib : VT_SONAME, api.vt_version(), (unsigned)(api.vt_abi_version() >> 16),
            (unsigned)(api.vt_abi_version() & 0xFFFFu), (unsigned)VT_ABI_MAJOR,
            (unsigned)VT_ABI_MINOR);
    ok = generate(&o);
    fflush(stdout);
    dlclose(lib);
    return ok ? 0 : 1;
}
