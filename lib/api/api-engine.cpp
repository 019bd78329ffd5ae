// vt_context_submit / cancel / step / poll / stats shims (include/vt/vt_engine.h).
#include <cmath>
#include <cstring>

#include "api/api-handles.h"
#include "api/api-internal.h"
#include "tokenizer/utf8.h"

using vt::api::fail_arg;
using vt::api::guard;
using vt::api::read_params;

namespace {
constexpr uint32_t kMaxTopLogprobs = 20;

// The context's engine, made on first use. Thread-safe; throws vt::Error.
vt::Engine &engine_of(vt_context *ctx) {
    if (vt::Engine *e = ctx->engine.load(std::memory_order_acquire)) return *e;
    std::lock_guard<std::mutex> lk(ctx->engine_mu);
    if (!ctx->engine_owner) {
        ctx->engine_owner = std::make_unique<vt::Engine>(*ctx->impl, engine_config(ctx->params));
        ctx->engine.store(ctx->engine_owner.get(), std::memory_order_release);
    }
    return *ctx->engine_owner;
}

} // namespace

extern "C" {

VT_API void vt_request_params_init(vt_request_params *params) {
    if (!params) return;
    std::memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->lora_scale = 1.0f;
}

VT_API vt_status vt_context_submit(vt_context *ctx, const vt_request_params *params, uint64_t *id) {
    if (id) *id = 0;
    if (!ctx || !params || !id) return fail_arg("vt_context_submit: ctx, params and id must not be NULL");
    vt_request_params p;
    vt_request_params_init(&p);
    if (!read_params(params, p)) return fail_arg("vt_context_submit: params->struct_size is not set");
    if (!p.prompt || p.n_prompt == 0) return fail_arg("vt_context_submit: the prompt is empty");
    if (p.n_stop_tokens && !p.stop_tokens) return fail_arg("vt_context_submit: stop_tokens is NULL");
    if (p.n_stop_strings && !p.stop_strings) return fail_arg("vt_context_submit: stop_strings is NULL");
    if (p.top_logprobs > kMaxTopLogprobs) return fail_arg("vt_context_submit: top_logprobs must be at most 20");
    if (p.prompt_top_logprobs > kMaxTopLogprobs)
        return fail_arg("vt_context_submit: prompt_top_logprobs must be at most 20");
    if (p.n_prompt > (1u << 24)) return fail_arg("vt_context_submit: the prompt is longer than 16M tokens");
    for (size_t i = 0; i < p.n_stop_strings; ++i) {
        const char *s = p.stop_strings[i];
        if (!s || !*s) return fail_arg("vt_context_submit: a stop string is NULL or empty");
        const size_t n = std::strlen(s);
        if (n > 4096) return fail_arg("vt_context_submit: a stop string is longer than 4096 bytes");
    }
    if (p.lora && p.lora->model != ctx->model)
        return fail_arg("vt_context_submit: the LoRA adapter belongs to another model");
    if (p.lora && !std::isfinite(p.lora_scale)) return fail_arg("vt_context_submit: lora_scale is not finite");
    if (p.sampler && !p.sampler->impl.has_final())
        return vt::api::fail(VT_ERR_INVALID_STATE, "vt_context_submit: the sampler chain has no final stage "
                                                   "(vt_sampler_add_greedy or vt_sampler_add_dist)");
    return guard([&] {
        for (size_t i = 0; i < p.n_stop_strings; ++i) vt::tok::utf8_validate(p.stop_strings[i]);
        vt::Engine &engine = engine_of(ctx);
        vt::RequestSpec spec;
        spec.prompt.assign(p.prompt, p.prompt + p.n_prompt);
        spec.max_tokens = p.max_tokens;
        if (p.n_stop_tokens) spec.stop_tokens.assign(p.stop_tokens, p.stop_tokens + p.n_stop_tokens);
        for (size_t i = 0; i < p.n_stop_strings; ++i) spec.stop_strings.emplace_back(p.stop_strings[i]);
        spec.ignore_eos = p.ignore_eos;
        spec.logprobs = p.logprobs;
        spec.top_logprobs = p.top_logprobs;
        spec.prompt_logprobs = p.prompt_logprobs;
        spec.prompt_top_logprobs = p.prompt_top_logprobs;
        spec.render_special = p.render_special;
        spec.no_speculation = p.no_speculation;
        spec.spec_k = p.num_speculative_tokens;
        spec.callback = p.callback;
        spec.user_data = p.user_data;
        if (p.lora && p.lora_scale != 0.0f) {  // scale 0 is the base model, exactly
            spec.lora = p.lora->impl;
            spec.lora_scale = p.lora_scale;
        }
        // The chain moves into the request; the handle is freed only once
        // the submit can no longer fail.
        if (p.sampler) spec.sampler = std::make_unique<vt::Sampler>(p.sampler->impl);
        *id = engine.submit(std::move(spec));
        delete p.sampler;
    });
}

VT_API vt_status vt_context_cancel(vt_context *ctx, uint64_t id) {
    if (!ctx) return fail_arg("vt_context_cancel: ctx is NULL");
    vt::Engine *e = ctx->engine.load(std::memory_order_acquire);
    if (!e) return VT_OK;  // nothing was ever submitted
    return guard([&] { e->cancel(id); });
}

VT_API vt_status vt_context_step(vt_context *ctx, uint32_t wait_ms, size_t *n_tokens) {
    if (n_tokens) *n_tokens = 0;
    if (!ctx) return fail_arg("vt_context_step: ctx is NULL");
    return guard([&] {
        size_t n = engine_of(ctx).step(wait_ms);
        if (n_tokens) *n_tokens = n;
    });
}

VT_API vt_status vt_context_poll(vt_context *ctx, const vt_request_output **out) {
    if (out) *out = nullptr;
    if (!ctx || !out) return fail_arg("vt_context_poll: ctx and out must not be NULL");
    vt::Engine *e = ctx->engine.load(std::memory_order_acquire);
    if (e) *out = e->poll();
    return VT_OK;
}

VT_API vt_status vt_context_stats(vt_context *ctx, vt_engine_stats *stats) {
    if (!ctx || !stats) return fail_arg("vt_context_stats: ctx and stats must not be NULL");
    if (stats->struct_size < sizeof(uint32_t)) return fail_arg("vt_context_stats: stats->struct_size is not set");
    return guard([&] {
        vt_engine_stats s{};
        if (vt::Engine *e = ctx->engine.load(std::memory_order_acquire)) e->stats(s);
        s.fallback_nodes = ctx->impl->executor().fallback_nodes();
        s.fallback_bytes = ctx->impl->executor().fallback_bytes();
        const uint32_t size = stats->struct_size < sizeof s ? stats->struct_size : (uint32_t)sizeof s;
        s.struct_size = size;
        std::memcpy(stats, &s, size);
    });
}

} // extern "C"
