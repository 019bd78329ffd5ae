// vt_context_* and vt_seq_* shims.
#include <cstddef>
#include <cstring>

#include "api/api-handles.h"
#include "engine/kv-plan.h"
#include "api/api-internal.h"

using vt::api::fail_arg;
using vt::api::guard;

using vt::api::read_params;

extern "C" {

namespace {
// The size of vt_context_params in ABI 1.0 and 1.1: what their callers allocate.
constexpr size_t kContextParamsV1Size = offsetof(vt_context_params, kv_cache_bytes);
} // namespace

VT_API void vt_context_params_init_v2(vt_context_params *params, size_t size) {
    if (!params || size < sizeof(uint32_t)) return;
    vt_context_params d;
    std::memset(&d, 0, sizeof d);
    d.n_batch = 512;
    d.suffix_max_cached_requests = 10000;  // vLLM's suffix_decoding_* defaults
    d.suffix_max_spec_factor = 1.0f;
    d.suffix_min_token_prob = 0.1f;
    if (size > sizeof d) size = sizeof d;
    d.struct_size = (uint32_t)size;
    std::memcpy(params, &d, size);
}

VT_API void(vt_context_params_init)(vt_context_params *params) {
    vt_context_params_init_v2(params, kContextParamsV1Size);
}

VT_API vt_status vt_context_create(const vt_model *model, const vt_context_params *params, vt_context **out) {
    if (out) *out = nullptr;
    if (!model || !out) return fail_arg("vt_context_create: model and out must not be NULL");
    vt_context_params p;
    vt_context_params_init_v2(&p, sizeof p);
    if (!read_params(params, p)) return fail_arg("vt_context_create: params->struct_size is not set");
    if (p.n_threads > 1024) return fail_arg("vt_context_create: n_threads must be at most 1024");
    if (p.n_batch > 65536) return fail_arg("vt_context_create: n_batch must be at most 65536");
    if (p.spec_method != VT_SPEC_NONE && p.spec_method != VT_SPEC_NGRAM && p.spec_method != VT_SPEC_SUFFIX &&
        p.spec_method != VT_SPEC_DRAFT_MODEL && p.spec_method != VT_SPEC_MTP)
        return fail_arg("vt_context_create: spec_method is not a vt_spec_method");
    if ((p.spec_method == VT_SPEC_DRAFT_MODEL) != (p.draft_model != nullptr))
        return fail_arg("vt_context_create: draft_model goes with spec_method VT_SPEC_DRAFT_MODEL, and only with it");
    if (p.spec_method != VT_SPEC_NONE &&
        (p.num_speculative_tokens == 0 || p.num_speculative_tokens > VT_SPEC_MAX_TOKENS))
        return fail_arg("vt_context_create: num_speculative_tokens must be 1..16 (VT_SPEC_MAX_TOKENS) with a "
                        "spec_method");
    if (p.spec_method == VT_SPEC_NGRAM && p.prompt_lookup_min && p.prompt_lookup_max &&
        p.prompt_lookup_min > p.prompt_lookup_max)
        return fail_arg("vt_context_create: prompt_lookup_min is above prompt_lookup_max");
    if (p.spec_method == VT_SPEC_NGRAM && (p.prompt_lookup_min > 64 || p.prompt_lookup_max > 64))
        return fail_arg("vt_context_create: n-gram sizes must be at most 64");
    if (p.spec_method == VT_SPEC_SUFFIX && (p.suffix_max_tree_depth == 1 || p.suffix_max_tree_depth > 1024))
        return fail_arg("vt_context_create: suffix_max_tree_depth must be 2..1024 (0 = 24)");
    if (p.spec_method == VT_SPEC_SUFFIX && !(p.suffix_max_spec_factor >= 0 && p.suffix_max_spec_factor <= 1e6f))
        return fail_arg("vt_context_create: suffix_max_spec_factor must be a number >= 0");
    if (p.spec_method == VT_SPEC_SUFFIX && !(p.suffix_min_token_prob >= 0 && p.suffix_min_token_prob <= 1))
        return fail_arg("vt_context_create: suffix_min_token_prob must be 0..1");
    return guard([&] {
        auto c = std::make_unique<vt_context>();
        c->model = model;
        c->params = p;
        c->impl = std::make_unique<vt::Context>(*model->impl, p.backend ? p.backend : "", p.n_threads, p.n_batch);
        // On a device the serving engine's pool is allocated whole: a budget
        // that cannot fit there fails now, saying what fits, not at the
        // first submit.
        if (!vt::device_is_host(model->impl->device())) vt::plan_kv(*c->impl, engine_config(p));
        if (p.draft_model) vt::check_draft_vocabulary(*model->impl, *p.draft_model->impl);
        if (p.spec_method == VT_SPEC_MTP && !model->impl->arch().has_mtp())
            vt::fail(VT_ERR_INVALID_ARGUMENT, "vt_context_create: spec_method VT_SPEC_MTP: %s has no "
                     "multi-token-prediction layer (a Qwen3.5 checkpoint's mtp.*, DeepSeek-V3's next-n layer, "
                     "a GGUF's nextn block)",
                     model->impl->arch_name().c_str());
        *out = c.release();
    });
}

VT_API void vt_context_destroy(vt_context *ctx) { delete ctx; }

VT_API void vt_seq_params_init(vt_seq_params *params) {
    if (!params) return;
    std::memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
}

VT_API vt_status vt_seq_create(vt_context *ctx, const vt_seq_params *params, vt_seq **out) {
    if (out) *out = nullptr;
    if (!ctx || !out) return fail_arg("vt_seq_create: ctx and out must not be NULL");
    vt_seq_params p;
    vt_seq_params_init(&p);
    if (!read_params(params, p)) return fail_arg("vt_seq_create: params->struct_size is not set");
    if (p.n_ctx > (1u << 24)) return fail_arg("vt_seq_create: n_ctx must be at most 16M tokens");
    return guard([&] {
        auto s = std::make_unique<vt_seq>();
        s->ctx = ctx;
        s->impl = std::make_unique<vt::Sequence>(*ctx->impl, p.n_ctx, p.logits_all);
        *out = s.release();
    });
}

VT_API void vt_seq_destroy(vt_seq *seq) { delete seq; }

VT_API vt_status vt_seq_feed(vt_seq *seq, const vt_token *tokens, size_t n) {
    if (!seq || (!tokens && n)) return fail_arg("vt_seq_feed: seq or tokens is NULL");
    return guard([&] { seq->impl->feed(tokens, n); });
}

VT_API vt_status vt_seq_step(vt_seq *seq) {
    if (!seq) return fail_arg("vt_seq_step: seq is NULL");
    return guard([&] { seq->impl->step(); });
}

VT_API vt_status vt_seq_logits(const vt_seq *seq, int32_t i, const float **logits, size_t *n_vocab) {
    if (!seq || !logits) return fail_arg("vt_seq_logits: seq and logits must not be NULL");
    return guard([&] {
        *logits = seq->impl->logits(i);
        if (n_vocab) *n_vocab = seq->ctx->model->impl->hparams.n_vocab;
    });
}

VT_API vt_status vt_seq_n_past(const vt_seq *seq, size_t *n_past) {
    if (!seq || !n_past) return fail_arg("vt_seq_n_past: seq and n_past must not be NULL");
    *n_past = seq->impl->n_past();
    return VT_OK;
}

VT_API vt_status vt_seq_reset(vt_seq *seq) {
    if (!seq) return fail_arg("vt_seq_reset: seq is NULL");
    seq->impl->reset();
    return VT_OK;
}

} // extern "C"
