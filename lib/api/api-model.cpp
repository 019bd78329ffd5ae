// vt_model_* shims.
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstring>
#include <optional>

#include "api/api-handles.h"
#include "backend/backend.h"
#include "api/api-internal.h"

using vt::api::copy_out;
using vt::api::fail_arg;
using vt::api::guard;

extern "C" {

// The 1.0 struct: use_mmap then padding to pointer alignment. The 1.3
// fields begin inside that padding, so a struct_size of this size or less
// never carries them (a 1.0 caller's padding is not read).
struct ModelParamsV1 {
    uint32_t struct_size;
    vt_progress_callback progress;
    void *progress_user_data;
    bool use_mmap;
};
constexpr size_t kModelParamsV1Size = sizeof(ModelParamsV1);
static_assert(offsetof(vt_model_params, quantize) < kModelParamsV1Size, "quantize lies in the 1.0 padding");
static_assert(offsetof(vt_model_params, reserved) + sizeof(uint32_t) > kModelParamsV1Size,
              "a struct_size past the 1.0 size carries the 1.3 fields");

namespace {

// vt_quant_type -> the block type, in enum order (VT_QUANT_NONE first).
struct QuantName {
    vt_quant_type type;
    const char *name;
    vt::DType dtype;
};
constexpr QuantName kQuantNames[] = {
    {VT_QUANT_NONE, "none", vt::DType::F32},  {VT_QUANT_Q8_0, "Q8_0", vt::DType::Q8_0},
    {VT_QUANT_Q4_0, "Q4_0", vt::DType::Q4_0}, {VT_QUANT_Q4_1, "Q4_1", vt::DType::Q4_1},
    {VT_QUANT_Q5_0, "Q5_0", vt::DType::Q5_0}, {VT_QUANT_Q5_1, "Q5_1", vt::DType::Q5_1},
    {VT_QUANT_Q4_K, "Q4_K", vt::DType::Q4_K}, {VT_QUANT_Q6_K, "Q6_K", vt::DType::Q6_K},
    {VT_QUANT_MXFP4, "MXFP4", vt::DType::MXFP4},
};

const QuantName *quant_entry(uint32_t t) {
    for (const QuantName &q : kQuantNames)
        if ((uint32_t)q.type == t) return &q;
    return nullptr;
}

bool same_name(const char *a, const char *b) {
    for (; *a && *b; ++a, ++b)
        if (std::tolower((unsigned char)*a) != std::tolower((unsigned char)*b)) return false;
    return *a == *b;
}

} // namespace

VT_API void vt_model_params_init_v2(vt_model_params *params, size_t size) {
    if (!params || size < sizeof(uint32_t)) return;
    vt_model_params d;
    std::memset(&d, 0, sizeof d);
    d.use_mmap = true;
    d.quantize = VT_QUANT_NONE;
    d.n_gpu_layers = -1;
    if (size > sizeof d) size = sizeof d;
    d.struct_size = (uint32_t)size;
    std::memcpy(params, &d, size);
}

VT_API void(vt_model_params_init)(vt_model_params *params) { vt_model_params_init_v2(params, kModelParamsV1Size); }

VT_API vt_status vt_quant_type_from_name(const char *name, vt_quant_type *out) {
    if (!name || !out) return fail_arg("vt_quant_type_from_name: name and out must not be NULL");
    if (!*name) {
        *out = VT_QUANT_NONE;
        return VT_OK;
    }
    for (const QuantName &q : kQuantNames)
        if (same_name(name, q.name)) {
            *out = q.type;
            return VT_OK;
        }
    return guard([&] {
        vt::fail(VT_ERR_UNSUPPORTED, "cannot quantize to '%s' (supported: Q8_0, Q6_K, Q5_0, Q5_1, Q4_K, Q4_0, Q4_1, MXFP4, none)",
                 name);
    });
}

VT_API const char *vt_quant_type_name(vt_quant_type type) {
    const QuantName *q = quant_entry((uint32_t)type);
    return q ? q->name : nullptr;
}

VT_API vt_status vt_model_load(const char *path, const vt_model_params *params, vt_model **out) {
    if (out) *out = nullptr;
    if (!path || !out) return fail_arg("vt_model_load: path and out must not be NULL");
    vt_model_params p;
    vt_model_params_init_v2(&p, sizeof p);
    if (params) {
        if (params->struct_size < offsetof(vt_model_params, use_mmap) + sizeof(bool))
            return fail_arg("vt_model_load: params->struct_size is too small; call vt_model_params_init");
        // Up to the 1.0 size: the 1.0 fields only (its padding holds no field).
        const size_t n = params->struct_size <= kModelParamsV1Size ? std::min<size_t>(params->struct_size, offsetof(vt_model_params, use_mmap) + sizeof(bool))
                                                                    : std::min<size_t>(params->struct_size, sizeof p);
        std::memcpy(&p, params, n);
        p.struct_size = (uint32_t)sizeof p;
    }
    const QuantName *q = quant_entry(p.quantize);
    if (!q) return fail_arg("vt_model_load: params->quantize is not a vt_quant_type");
    if (p.reserved != 0) return fail_arg("vt_model_load: params->reserved must be 0");
    return guard([&] {
        vt::Model::Progress progress;
        if (p.progress) progress = [&](float f) { return p.progress(f, p.progress_user_data); };
        std::optional<vt::DType> quantize;
        if (q->type != VT_QUANT_NONE) quantize = q->dtype;
        auto m = std::make_unique<vt_model>();
        vt_device *device = vt::find_device(p.device);
        m->impl = vt::Model::load(path, p.use_mmap, progress, quantize, device, p.n_gpu_layers,
                                  p.weights_memory_bytes);
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
    const vt::QuantizeStats &q = m.quantize_stats();
    full.quantize = VT_QUANT_NONE;
    for (const QuantName &e : kQuantNames)
        if (q.target && e.type != VT_QUANT_NONE && e.dtype == *q.target) full.quantize = e.type;
    full.n_quantized = q.n_quantized;
    full.n_quantize_fallback = q.n_fallback;
    full.n_quantize_kept = q.n_kept;
    full.quantized_bytes = q.bytes_out;
    full.quantize_seconds = q.seconds;
    full.device = vt::device_props(m.device()).name;
    full.uploaded_bytes = m.uploaded_bytes();
    full.upload_seconds = m.upload_seconds();
    full.n_device_layers = m.n_device_layers();
    const vt::Model::WeightBytes &wb = m.weight_bytes();
    full.resident_weight_bytes = wb.resident;
    full.mapped_weight_bytes = wb.mapped;
    full.weight_bytes_per_token = wb.per_token;
    full.n_expert = m.hparams.n_expert;
    full.n_expert_used = m.hparams.n_expert_used;
    full.n_expert_tensors_mapped = wb.experts_mapped;
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
