// vt_model_* shims.
#include <cstring>

#include "api/api-handles.h"
#include "api/api-internal.h"

using vt::api::copy_out;
using vt::api::fail_arg;
using vt::api::guard;

extern "C" {

VT_API void vt_model_params_init(vt_model_params *params) {
    if (!params) return;
    std::memset(params, 0, sizeof *params);
    params->struct_size = sizeof *params;
    params->use_mmap = true;
}

VT_API vt_status vt_model_load(const char *path, const vt_model_params *params, vt_model **out) {
    if (out) *out = nullptr;
    if (!path || !out) return fail_arg("vt_model_load: path and out must not be NULL");
    vt_model_params p;
    vt_model_params_init(&p);
    if (params) {
        if (params->struct_size < offsetof(vt_model_params, use_mmap) + sizeof(bool))
            return fail_arg("vt_model_load: params->struct_size is too small; call vt_model_params_init");
        std::memcpy(&p, params, params->struct_size < sizeof p ? params->struct_size : sizeof p);
    }
    return guard([&] {
        vt::Model::Progress progress;
        if (p.progress) progress = [&](float f) { return p.progress(f, p.progress_user_data); };
        auto m = std::make_unique<vt_model>();
        m->impl = vt::Model::load(path, p.use_mmap, progress);
        m->tokenizer.impl = &m->impl->tokenizer();
        *out = m.release();
    });
}

VT_API void vt_model_destroy(vt_model *model) { delete model; }

VT_API vt_status vt_model_get_info(const vt_model *model, vt_model_info *info) {
    if (!model || !info) return fail_arg("vt_model_get_info: model and info must not be NULL");
    if (info->struct_size < sizeof(uint32_t)) return fail_arg("vt_model_get_info: set info->struct_size");
    const vt::Model &m = *model->impl;
    vt_model_info full{};
    full.struct_size = info->struct_size;
    full.n_params = m.n_params;
    full.size_bytes = m.size_bytes;
    full.n_ctx_train = m.hparams.n_ctx_train;
    full.n_vocab = m.hparams.n_vocab;
    full.n_embd = m.hparams.n_embd;
    full.n_layer = m.hparams.n_layer;
    full.n_head = m.hparams.n_head;
    full.n_head_kv = m.hparams.n_head_kv;
    // Older callers pass a smaller struct: fill only what they know of.
    std::memcpy(info, &full, info->struct_size < sizeof full ? info->struct_size : sizeof full);
    return VT_OK;
}

VT_API vt_status vt_model_arch(const vt_model *model, char *buf, size_t buf_size, size_t *needed) {
    if (!model) return fail_arg("vt_model_arch: model is NULL");
    return copy_out(model->impl->arch_name(), buf, buf_size, needed);
}

VT_API vt_status vt_model_chat_template(const vt_model *model, char *buf, size_t buf_size, size_t *needed) {
    if (!model) return fail_arg("vt_model_chat_template: model is NULL");
    vt_status st = VT_OK;
    vt_status g = guard([&] {
        auto t = model->impl->gguf().get_string("tokenizer.chat_template");
        if (!t) vt::fail(VT_ERR_NOT_FOUND, "the model has no chat template");
        st = copy_out(*t, buf, buf_size, needed);
    });
    return g != VT_OK ? g : st;
}

VT_API vt_status vt_model_meta_get(const vt_model *model, const char *key, char *buf, size_t buf_size,
                                   size_t *needed) {
    if (!model || !key) return fail_arg("vt_model_meta_get: model and key must not be NULL");
    vt_status st = VT_OK;
    vt_status g = guard([&] {
        const vt::GgufKV *kv = model->impl->gguf().find(key);
        if (!kv) vt::fail(VT_ERR_NOT_FOUND, "no metadata key '%s'", key);
        st = copy_out(vt::GgufFile::to_string(kv->value), buf, buf_size, needed);
    });
    return g != VT_OK ? g : st;
}

VT_API vt_status vt_model_meta_count(const vt_model *model, size_t *count) {
    if (!model || !count) return fail_arg("vt_model_meta_count: model and count must not be NULL");
    *count = model->impl->gguf().kvs().size();
    return VT_OK;
}

VT_API vt_status vt_model_meta_key(const vt_model *model, size_t i, char *buf, size_t buf_size, size_t *needed) {
    if (!model) return fail_arg("vt_model_meta_key: model is NULL");
    const auto &kvs = model->impl->gguf().kvs();
    if (i >= kvs.size()) return fail_arg("vt_model_meta_key: index out of range");
    return copy_out(kvs[i].key, buf, buf_size, needed);
}

} // extern "C"
