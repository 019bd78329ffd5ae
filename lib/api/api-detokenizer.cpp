// vt_detokenizer shims: a tok::DecodeStream plus the text it completed that
// the caller's buffer could not take yet.
#include <string>

#include "api/api-handles.h"
#include "api/api-internal.h"
#include "tokenizer/detok-stream.h"

using vt::api::copy_out;
using vt::api::fail_arg;
using vt::api::guard;

struct vt_detokenizer {
    vt_detokenizer(const vt::Tokenizer &tok, bool render_special) : tok(tok), stream(tok, render_special) {}
    const vt::Tokenizer &tok;
    vt::tok::DecodeStream stream;
    std::string pending;  // completed text not yet delivered (buffer too small)
};

namespace {

bool in_vocab(const vt_detokenizer *d, vt_token t) { return t >= 0 && (uint32_t)t < d->tok.n_vocab(); }

// Delivers d->pending; it stays pending when it does not fit.
vt_status deliver(vt_detokenizer *d, char *buf, size_t buf_size, size_t *needed) {
    vt_status st = copy_out(d->pending, buf, buf_size, needed);
    if (st == VT_OK) d->pending.clear();
    return st;
}

} // namespace

extern "C" {

VT_API vt_status vt_detokenizer_create(const vt_tokenizer *tok, bool render_special, vt_detokenizer **out) {
    if (out) *out = nullptr;
    if (!tok || !out) return fail_arg("vt_detokenizer_create: tok and out must not be NULL");
    return guard([&] { *out = new vt_detokenizer(*from_handle(tok), render_special); });
}

VT_API void vt_detokenizer_destroy(vt_detokenizer *d) { delete d; }

VT_API vt_status vt_detokenizer_push(vt_detokenizer *d, vt_token token, char *buf, size_t buf_size,
                                     size_t *needed) {
    if (!d || !needed || (!buf && buf_size))
        return fail_arg("vt_detokenizer_push: NULL detokenizer or needed, or NULL buf with a nonzero size");
    if (token != VT_TOKEN_NULL && !in_vocab(d, token))
        return vt::api::fail(VT_ERR_INVALID_ARGUMENT,
                             vt::strprintf("vt_detokenizer_push: token %d out of range [0, %u)", (int)token,
                                           d->tok.n_vocab()));
    vt_status st = VT_OK;
    vt_status g = guard([&] {
        if (token != VT_TOKEN_NULL) d->stream.push(token, d->pending);
        st = deliver(d, buf, buf_size, needed);
    });
    return g != VT_OK ? g : st;
}

VT_API vt_status vt_detokenizer_finish(vt_detokenizer *d, char *buf, size_t buf_size, size_t *needed) {
    if (!d || !needed || (!buf && buf_size))
        return fail_arg("vt_detokenizer_finish: NULL detokenizer or needed, or NULL buf with a nonzero size");
    vt_status st = VT_OK;
    vt_status g = guard([&] {
        d->stream.finish(d->pending);
        st = deliver(d, buf, buf_size, needed);
    });
    return g != VT_OK ? g : st;
}

VT_API void vt_detokenizer_reset(vt_detokenizer *d) {
    if (!d) return;
    d->stream.reset();
    d->pending.clear();
}

VT_API vt_status vt_detokenizer_prefill(vt_detokenizer *d, const vt_token *tokens, size_t n_tokens) {
    if (!d) return fail_arg("vt_detokenizer_prefill: the detokenizer is NULL");
    vt_detokenizer_reset(d);
    if (!tokens && n_tokens) return fail_arg("vt_detokenizer_prefill: tokens is NULL with a nonzero count");
    for (size_t i = 0; i < n_tokens; ++i)
        if (!in_vocab(d, tokens[i]))
            return vt::api::fail(VT_ERR_INVALID_ARGUMENT,
                                 vt::strprintf("vt_detokenizer_prefill: token %d at position %zu out of range [0, %u)",
                                               (int)tokens[i], i, d->tok.n_vocab()));
    return guard([&] { d->stream.reset(tokens, n_tokens); });
}

} // extern "C"
