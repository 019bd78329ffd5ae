// extern "C" shims of include/vt/vt_sampler.h over vt::Sampler.
#include "api/api-handles.h"
#include "api/api-internal.h"

using vt::api::fail_arg;
using vt::api::guard;

extern "C" {

vt_status vt_sampler_create(vt_sampler **out) {
    if (!out) return fail_arg("vt_sampler_create: out is NULL");
    *out = nullptr;
    return guard([&] { *out = new vt_sampler{}; });
}

void vt_sampler_destroy(vt_sampler *smpl) { delete smpl; }

vt_status vt_sampler_add_penalties(vt_sampler *smpl, int32_t last_n, float repeat, float freq,
                                   float present) {
    if (!smpl) return fail_arg("vt_sampler_add_penalties: smpl is NULL");
    return guard([&] { smpl->impl.add_penalties(last_n, repeat, freq, present); });
}

vt_status vt_sampler_add_top_k(vt_sampler *smpl, int32_t k) {
    if (!smpl) return fail_arg("vt_sampler_add_top_k: smpl is NULL");
    return guard([&] { smpl->impl.add_top_k(k); });
}

vt_status vt_sampler_add_top_p(vt_sampler *smpl, float p, size_t min_keep) {
    if (!smpl) return fail_arg("vt_sampler_add_top_p: smpl is NULL");
    return guard([&] { smpl->impl.add_top_p(p, min_keep); });
}

vt_status vt_sampler_add_min_p(vt_sampler *smpl, float p, size_t min_keep) {
    if (!smpl) return fail_arg("vt_sampler_add_min_p: smpl is NULL");
    return guard([&] { smpl->impl.add_min_p(p, min_keep); });
}

vt_status vt_sampler_add_temp(vt_sampler *smpl, float t) {
    if (!smpl) return fail_arg("vt_sampler_add_temp: smpl is NULL");
    return guard([&] { smpl->impl.add_temp(t); });
}

vt_status vt_sampler_add_greedy(vt_sampler *smpl) {
    if (!smpl) return fail_arg("vt_sampler_add_greedy: smpl is NULL");
    return guard([&] { smpl->impl.add_greedy(); });
}

vt_status vt_sampler_add_dist(vt_sampler *smpl, uint32_t seed) {
    if (!smpl) return fail_arg("vt_sampler_add_dist: smpl is NULL");
    return guard([&] { smpl->impl.add_dist(seed); });
}

vt_status vt_sampler_sample(vt_sampler *smpl, const float *logits, size_t n_vocab, vt_token *out) {
    if (!smpl || !logits || !out) return fail_arg("vt_sampler_sample: smpl, logits and out must not be NULL");
    return guard([&] { *out = smpl->impl.sample(logits, n_vocab); });
}

vt_status vt_sampler_accept(vt_sampler *smpl, vt_token token) {
    if (!smpl) return fail_arg("vt_sampler_accept: smpl is NULL");
    return guard([&] { smpl->impl.accept(token); });
}

vt_status vt_sampler_reset(vt_sampler *smpl) {
    if (!smpl) return fail_arg("vt_sampler_reset: smpl is NULL");
    return guard([&] { smpl->impl.reset(); });
}

} // extern "C"
