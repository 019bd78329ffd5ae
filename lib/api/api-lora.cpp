// vt_lora_* and vt_seq_set_lora shims (include/vt/vt_lora.h).
#include <algorithm>
#include <cstring>

#include "api/api-handles.h"
#include "api/api-internal.h"

using vt::api::fail_arg;
using vt::api::guard;

extern "C" {

VT_API vt_status vt_lora_load(const vt_model *model, const char *path, vt_lora **out) {
    if (out) *out = nullptr;
    if (!model || !path || !out) return fail_arg("vt_lora_load: model, path and out must not be NULL");
    return guard([&] {
        auto l = std::make_unique<vt_lora>();
        l->model = model;
        l->impl = vt::LoraAdapter::load(*model->impl, path);
        *out = l.release();
    });
}

VT_API void vt_lora_destroy(vt_lora *lora) { delete lora; }

VT_API vt_status vt_lora_get_info(const vt_lora *lora, vt_lora_info *info) {
    if (!lora || !info) return fail_arg("vt_lora_get_info: lora and info must not be NULL");
    if (info->struct_size < sizeof(uint32_t)) return fail_arg("vt_lora_get_info: set info->struct_size");
    const vt::LoraAdapter &a = *lora->impl;
    vt_lora_info full{};
    full.struct_size = info->struct_size;
    full.rank = a.rank();
    full.alpha = a.alpha();
    full.scale = a.scale();
    full.n_weights = (uint32_t)a.n_weights();
    full.n_params = a.n_params();
    full.targets = a.targets().c_str();
    full.format = a.format();
    std::memcpy(info, &full, std::min<size_t>(info->struct_size, sizeof full));
    return VT_OK;
}

VT_API vt_status vt_seq_set_lora(vt_seq *seq, const vt_lora *lora, float scale) {
    if (!seq) return fail_arg("vt_seq_set_lora: seq is NULL");
    if (lora && lora->model != seq->ctx->model) return fail_arg("vt_seq_set_lora: the adapter belongs to another model");
    return guard([&] { seq->impl->set_lora(lora ? lora->impl : nullptr, scale); });
}

} // extern "C"
