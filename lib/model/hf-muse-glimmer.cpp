#include "model/hf-muse-glimmer.h"

#include <nlohmann/json.hpp>

#include <cmath>

#include "core/error.h"

namespace vt {

using json = nlohmann::json;

namespace {
double number(const json &cfg, const char *key, double def, const std::string &where) {
    auto it = cfg.find(key);
    if (it == cfg.end() || it->is_null()) return def;
    if (!it->is_number()) fail(VT_ERR_FORMAT, "%s: '%s' is not a number", where.c_str(), key);
    return it->get<double>();
}
} // namespace

MuseGlimmerMeta read_muse_glimmer_config(const json &cfg, uint64_t n_layer, const std::string &where) {
    MuseGlimmerMeta out;
    // transformers' defaults (MuseGlimmerTextConfig).
    const double qk = number(cfg, "qk_scale_factor", 3.87, where);
    const double mult = number(cfg, "output_multiplier", 0.19611613513818404, where);
    const double post_eps = number(cfg, "post_norm_eps", 1e-8, where);
    if (!std::isfinite(qk) || !std::isfinite(mult) || !(post_eps >= 0.0 && post_eps < 1.0))
        fail(VT_ERR_FORMAT, "%s: qk_scale_factor %g, output_multiplier %g or post_norm_eps %g", where.c_str(), qk, mult,
             post_eps);
    out.qk_scale = (float)qk;
    out.f32s.emplace_back("logit_scale", mult);
    out.f32s.emplace_back("attention.post_norm_rms_epsilon", post_eps);
    // final_logit_softcapping: the common code writes it when it is a number.
    // layer_types and layer_rope_theta: the defaults of transformers where absent.
    std::vector<bool> full(n_layer);
    if (auto t = cfg.find("layer_types"); t != cfg.end() && t->is_array()) {
        if (t->size() != n_layer)
            fail(VT_ERR_FORMAT, "%s: layer_types lists %zu kinds for %llu layers", where.c_str(), t->size(),
                 (unsigned long long)n_layer);
        for (uint64_t i = 0; i < n_layer; ++i) full[i] = (*t)[i] == "full_attention";
    } else {
        for (uint64_t i = 0; i < n_layer; ++i) full[i] = (n_layer - 1 - i) % 4 == 0;
    }
    if (auto r = cfg.find("layer_rope_theta"); r != cfg.end() && !r->is_null()) {
        if (!r->is_array() || r->size() != n_layer)
            fail(VT_ERR_FORMAT, "%s: layer_rope_theta must list one number per layer (%llu)", where.c_str(),
                 (unsigned long long)n_layer);
        for (uint64_t i = 0; i < n_layer; ++i) {
            const json &v = (*r)[i];
            if (!v.is_number()) fail(VT_ERR_FORMAT, "%s: layer_rope_theta[%llu] is not a number", where.c_str(), (unsigned long long)i);
            const bool nope = v.get<double>() == 0.0;
            if (nope != full[i])
                fail(VT_ERR_UNSUPPORTED, "%s: layer %llu is %s attention %s rope (layer_rope_theta): only full layers "
                     "without rope and sliding ones with it are supported", where.c_str(), (unsigned long long)i,
                     full[i] ? "full" : "sliding", nope ? "without" : "with");
        }
    }
    return out;
}

std::string muse_glimmer_gguf_name(const std::string &rest) {
    if (rest == "self_attn.gate_proj.weight") return "attn_gate.weight";
    return "";
}

} // namespace vt
