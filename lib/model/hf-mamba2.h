// The Mamba-2 layers of a Hugging Face folder (NemotronH, Granite 4 hybrid,
// Falcon-H1) as llama.cpp's converter writes them (conversion/mamba.py,
// Mamba2Model): the config's Mamba keys as "<arch>.ssm.*", the mixer's tensor
// names as blk.<i>.ssm_*. hf-folder.cpp does the value changes every
// recurrent layer shares: A_log -> ssm_a = -exp(A_log), the conv weight
// (C, 1, K) squeezed to (K, C) in ne order, 1-D tensors copied to F32; the
// loader (models/mamba2.h) reads A, D and the gated norm's weight either as
// the folder's 1-D tensors or as the converter's (1, H) and (d_inner / G, G).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace vt {

struct Mamba2Config {
    uint64_t n_head = 0;    // mamba_num_heads (ssm.time_step_rank)
    uint64_t head_dim = 0;  // mamba_head_dim (inner_size = n_head * head_dim)
    uint64_t n_state = 0;   // ssm_state_size (ssm.state_size)
    uint64_t n_group = 0;   // n_groups (ssm.group_count)
    uint64_t kernel = 0;    // conv_kernel (ssm.conv_kernel)
    uint64_t inner() const { return n_head * head_dim; }
};

// The Mamba-2 shape of cfg under its keys, transformers' names first, then
// the original checkpoints' ("mamba_num_heads" / "mamba_n_heads", "mamba_head_dim"
// / "mamba_d_head", "ssm_state_size" / "mamba_d_state", "n_groups" /
// "mamba_n_groups", "conv_kernel" / "mamba_d_conv"). Throws VT_ERR_FORMAT
// naming a missing or inconsistent key (n_head not a multiple of n_group).
Mamba2Config read_mamba2_config(const nlohmann::json &cfg, const std::string &where);

// The GGUF name of a Mamba-2 mixer tensor: rest is the name after
// "<...>.layers.<i>." and mixer the module's prefix ("mixer." NemotronH,
// "mamba." Granite 4 and Falcon-H1); "" when rest is not one.
// in_proj -> ssm_in, conv1d -> ssm_conv1d, dt_bias -> ssm_dt.bias, A_log ->
// ssm_a, D -> ssm_d, norm -> ssm_norm, out_proj -> ssm_out (weights and biases).
std::string mamba2_gguf_name(const std::string &rest, const std::string &mixer);

} // namespace vt
