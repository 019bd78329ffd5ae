// vt_grammar_* shims and the sampler's grammar stage (include/vt/vt_grammar.h).
#include <cstring>

#include "api/api-handles.h"
#include "api/api-internal.h"
#include "grammar/compile.h"

using vt::api::fail;
using vt::api::fail_arg;
using vt::api::guard;

extern "C" {

VT_API vt_status vt_grammar_compile(const vt_tokenizer *tok, vt_grammar_kind kind, const char *source,
                                    size_t len, vt_grammar **out) {
    if (out) *out = nullptr;
    if (!tok || !out) return fail_arg("vt_grammar_compile: tok and out must not be NULL");
    // A C caller may pass any int: in C++ an enum value outside the
    // enumerators' range is undefined behaviour to load (UBSan: -fsanitize=enum),
    // so the check reads the argument's bits as the int they are.
    int kind_value;
    static_assert(sizeof kind_value == sizeof kind, "vt_grammar_kind is int-sized");
    std::memcpy(&kind_value, &kind, sizeof kind_value);
    if (kind_value < VT_GRAMMAR_GBNF || kind_value > VT_GRAMMAR_CHOICE)
        return fail_arg("vt_grammar_compile: unknown kind");
    if (!source && (len || kind != VT_GRAMMAR_JSON)) return fail_arg("vt_grammar_compile: source is NULL");
    return guard([&] {
        auto g = std::make_unique<vt_grammar>();
        std::string_view src = source ? std::string_view(source, len) : std::string_view();
        g->impl = vt::grammar::compile(*from_handle(tok), vt::grammar::Kind(kind), src);
        *out = g.release();
    });
}

VT_API void vt_grammar_destroy(vt_grammar *grammar) { delete grammar; }

VT_API size_t vt_grammar_n_vocab(const vt_grammar *grammar) {
    return grammar ? grammar->impl->vocab().n_vocab : 0;
}

VT_API vt_status vt_grammar_matcher_create(const vt_grammar *grammar, vt_grammar_matcher **out) {
    if (out) *out = nullptr;
    if (!grammar || !out) return fail_arg("vt_grammar_matcher_create: grammar and out must not be NULL");
    return guard([&] { *out = new vt_grammar_matcher{vt::grammar::TokenMatcher(grammar->impl)}; });
}

VT_API void vt_grammar_matcher_destroy(vt_grammar_matcher *m) { delete m; }

VT_API vt_status vt_grammar_matcher_fill_mask(vt_grammar_matcher *m, uint32_t *mask, size_t n_words) {
    if (!m || !mask) return fail_arg("vt_grammar_matcher_fill_mask: m and mask must not be NULL");
    size_t need = (m->impl.compiled().vocab().n_vocab + 31) / 32;
    if (n_words < need) return fail(VT_ERR_BUFFER_TOO_SMALL, "vt_grammar_matcher_fill_mask: mask too small");
    return guard([&] {
        m->impl.fill_mask(mask);
        std::memset(mask + need, 0, (n_words - need) * sizeof(uint32_t));
    });
}

VT_API vt_status vt_grammar_matcher_accept(vt_grammar_matcher *m, vt_token token) {
    if (!m) return fail_arg("vt_grammar_matcher_accept: m is NULL");
    return guard([&] {
        if (!m->impl.accept(token))
            throw vt::Error(VT_ERR_INVALID_ARGUMENT,
                            "vt_grammar_matcher_accept: token " + std::to_string(token) + " is not allowed here");
    });
}

VT_API vt_status vt_grammar_matcher_accept_text(vt_grammar_matcher *m, const char *text, size_t len) {
    if (!m || (!text && len)) return fail_arg("vt_grammar_matcher_accept_text: m and text must not be NULL");
    return guard([&] {
        if (!m->impl.accept_bytes(std::string_view(text ? text : "", len)))
            throw vt::Error(VT_ERR_INVALID_ARGUMENT, "vt_grammar_matcher_accept_text: the text leaves the language");
    });
}

VT_API bool vt_grammar_matcher_is_accepting(const vt_grammar_matcher *m) {
    return m && m->impl.is_accepting();
}

VT_API bool vt_grammar_matcher_is_completed(const vt_grammar_matcher *m) {
    return m && m->impl.is_completed();
}

VT_API void vt_grammar_matcher_reset(vt_grammar_matcher *m) {
    if (m) m->impl.reset();
}

VT_API vt_status vt_sampler_add_grammar(vt_sampler *smpl, const vt_grammar *grammar) {
    if (!smpl || !grammar) return fail_arg("vt_sampler_add_grammar: smpl and grammar must not be NULL");
    return guard([&] { smpl->impl.add_grammar(grammar->impl); });
}

VT_API vt_status vt_sampler_add_logit_bias(vt_sampler *smpl, const vt_token *tokens, const float *bias,
                                           size_t n) {
    if (!smpl) return fail_arg("vt_sampler_add_logit_bias: smpl is NULL");
    return guard([&] { smpl->impl.add_logit_bias(tokens, bias, n); });
}

} // extern "C"
