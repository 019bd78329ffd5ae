#include "model/hf-mamba2.h"

#include <nlohmann/json.hpp>

#include <map>

#include "core/error.h"

namespace vt {

using json = nlohmann::json;

namespace {
// The first of keys cfg has (a positive integer of at most 65536); its
// absence or another value is the config's error, naming the first key.
uint64_t size_of(const json &cfg, std::initializer_list<const char *> keys, const std::string &where) {
    for (const char *k : keys) {
        auto it = cfg.find(k);
        if (it == cfg.end() || it->is_null()) continue;
        if (!it->is_number_unsigned() || it->get<uint64_t>() == 0 || it->get<uint64_t>() > 65536)
            fail(VT_ERR_FORMAT, "%s: '%s' is not an integer from 1 to 65536", where.c_str(), k);
        return it->get<uint64_t>();
    }
    fail(VT_ERR_FORMAT, "%s: '%s' is missing", where.c_str(), *keys.begin());
}
} // namespace

Mamba2Config read_mamba2_config(const json &cfg, const std::string &where) {
    Mamba2Config c;
    c.n_head = size_of(cfg, {"mamba_num_heads", "mamba_n_heads"}, where);
    c.head_dim = size_of(cfg, {"mamba_head_dim", "mamba_d_head"}, where);
    c.n_state = size_of(cfg, {"ssm_state_size", "mamba_d_state"}, where);
    c.n_group = size_of(cfg, {"n_groups", "mamba_n_groups"}, where);
    c.kernel = size_of(cfg, {"conv_kernel", "mamba_d_conv"}, where);
    if (c.n_head % c.n_group != 0)
        fail(VT_ERR_FORMAT, "%s: %llu Mamba heads are no multiple of n_groups %llu", where.c_str(),
             (unsigned long long)c.n_head, (unsigned long long)c.n_group);
    return c;
}

std::string mamba2_gguf_name(const std::string &rest, const std::string &mixer) {
    static const std::map<std::string, std::string> names = {
        {"in_proj.weight", "ssm_in.weight"},     {"in_proj.bias", "ssm_in.bias"},
        {"conv1d.weight", "ssm_conv1d.weight"},  {"conv1d.bias", "ssm_conv1d.bias"},
        {"dt_bias", "ssm_dt.bias"},              {"A_log", "ssm_a"},
        {"D", "ssm_d"},                          {"norm.weight", "ssm_norm.weight"},
        {"out_proj.weight", "ssm_out.weight"},   {"out_proj.bias", "ssm_out.bias"},
    };
    if (rest.compare(0, mixer.size(), mixer) != 0) return "";
    auto it = names.find(rest.substr(mixer.size()));
    return it == names.end() ? "" : it->second;
}

} // namespace vt
