// vt_tokenize / vt_detokenize / token shims.
#include <cstring>

#include "api/api-handles.h"
#include "api/api-internal.h"

using vt::api::copy_out;
using vt::api::fail_arg;
using vt::api::guard;

extern "C" {

VT_API vt_status vt_model_tokenizer(const vt_model *model, const vt_tokenizer **out) {
    if (!model || !out) return fail_arg("vt_model_tokenizer: model and out must not be NULL");
    *out = &model->tokenizer;
    return VT_OK;
}

VT_API vt_status vt_tokenizer_load(const char *path, vt_tokenizer **out) {
    if (out) *out = nullptr;
    if (!path || !out) return fail_arg("vt_tokenizer_load: path and out must not be NULL");
    return guard([&] {
        auto t = std::make_unique<vt_tokenizer>();
        t->owned = vt::Tokenizer::from_file(path);  // errors name the path
        t->impl = t->owned.get();
        *out = t.release();
    });
}

VT_API void vt_tokenizer_destroy(vt_tokenizer *tok) {
    if (tok && tok->owned) delete tok;
}

VT_API vt_status vt_tokenize(const vt_tokenizer *tok, const char *text, size_t len, uint32_t flags,
                             vt_token *tokens, size_t cap, size_t *n_tokens) {
    if (!tok || !n_tokens || (!text && len) || (!tokens && cap))
        return fail_arg("vt_tokenize: NULL tokenizer, n_tokens, or buffer with a nonzero size");
    if (flags & ~(uint32_t)(VT_TOKENIZE_ADD_SPECIAL | VT_TOKENIZE_PARSE_SPECIAL))
        return fail_arg("vt_tokenize: unknown flags");
    vt_status st = VT_OK;
    vt_status g = guard([&] {
        std::vector<int32_t> ids = from_handle(tok)->encode(std::string_view(text ? text : "", len),
                                                            flags & VT_TOKENIZE_ADD_SPECIAL,
                                                            flags & VT_TOKENIZE_PARSE_SPECIAL);
        *n_tokens = ids.size();
        if (ids.size() > cap) {
            st = vt::api::fail(VT_ERR_BUFFER_TOO_SMALL,
                               vt::strprintf("vt_tokenize: the text needs %zu tokens, cap is %zu", ids.size(), cap));
            return;
        }
        if (!ids.empty()) std::memcpy(tokens, ids.data(), ids.size() * sizeof(vt_token));
    });
    return g != VT_OK ? g : st;
}

VT_API vt_status vt_token_to_piece(const vt_tokenizer *tok, vt_token token, bool render_special, char *buf,
                                   size_t buf_size, size_t *needed) {
    if (!tok) return fail_arg("vt_token_to_piece: tokenizer is NULL");
    if (token < 0 || (uint32_t)token >= from_handle(tok)->n_vocab()) return fail_arg("vt_token_to_piece: token out of range");
    vt_status st = VT_OK;
    vt_status g = guard([&] { st = copy_out(from_handle(tok)->token_to_piece(token, render_special), buf, buf_size, needed); });
    return g != VT_OK ? g : st;
}

VT_API vt_status vt_detokenize(const vt_tokenizer *tok, const vt_token *tokens, size_t n_tokens, bool render_special,
                               char *buf, size_t buf_size, size_t *needed) {
    if (!tok || (!tokens && n_tokens)) return fail_arg("vt_detokenize: tokenizer or tokens is NULL");
    const uint32_t n_vocab = from_handle(tok)->n_vocab();
    for (size_t i = 0; i < n_tokens; ++i)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= n_vocab) return fail_arg("vt_detokenize: token out of range");
    vt_status st = VT_OK;
    vt_status g = guard([&] { st = copy_out(from_handle(tok)->decode(tokens, n_tokens, render_special), buf, buf_size, needed); });
    return g != VT_OK ? g : st;
}

VT_API uint32_t vt_tokenizer_n_vocab(const vt_tokenizer *tok) { return tok ? from_handle(tok)->n_vocab() : 0; }
VT_API vt_token vt_token_bos(const vt_tokenizer *tok) { return tok ? from_handle(tok)->bos() : VT_TOKEN_NULL; }
VT_API vt_token vt_token_eos(const vt_tokenizer *tok) { return tok ? from_handle(tok)->eos() : VT_TOKEN_NULL; }
VT_API bool vt_token_is_eog(const vt_tokenizer *tok, vt_token token) {
    return tok && token >= 0 && (uint32_t)token < from_handle(tok)->n_vocab() && from_handle(tok)->is_eog(token);
}

} // extern "C"
