// FP8 checkpoint folders: the weights stored as F8_E4M3 with a scale tensor
// beside each, in the schemes people ship, read as stored into vt's
// FP8_E4M3 rows (core/quant/blocks.h BlockFP8: 64 e4m3 bytes and the f32
// scale of the checkpoint block they lie in).
//
// config.json's quantization_config (top level, or a multimodal
// checkpoint's text_config) names the scheme:
// - "fp8" (transformers' FineGrainedFP8Config; DeepSeek-V3, Qwen3-*-FP8):
//   fmt e4m3, `<w>.weight_scale_inv` per weight_block_size block (128 x 128)
//   or, without a block size, one `<w>.weight_scale` per tensor;
// - "compressed-tensors" with format float-quantized (or naive-quantized)
//   and config_groups whose weights are 8-bit floats, symmetric, static:
//   `<w>.weight_scale` per tensor (1 element), per channel (rows x 1), per
//   group of columns (rows x cols / g) or per block (block_structure);
// - "modelopt" with quant_algo FP8 (hf_quant_config.json's, NVIDIA's
//   ModelOpt): `<w>.weight_scale` per tensor.
// The scale's shape says which applies; each checkpoint block must cover
// whole 64-element pieces of a row. Scales may be F32, BF16 or F16; value =
// e4m3 * scale (all three define it so).
//
// Activations stay f32: the schemes' activation quantization (dynamic per
// token or group, or a static input_scale) is how FP8 matrix hardware is fed,
// which a CPU does not have; transformers on a CPU runs these checkpoints the
// same way (it dequantizes the weights). The load says so.
#pragma once

#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace vt {

struct Fp8Scheme {
    std::string method;             // "fp8", "compressed-tensors", "modelopt"
    int64_t block_rows = 0;         // the config's block (weight_block_size, block_structure), 0 if none
    int64_t block_cols = 0;
    std::string activations;        // what the checkpoint asks for its activations ("" none), for the log
};

// The FP8 scheme of config.json `top` (dir names the folder in errors).
// Throws VT_ERR_UNSUPPORTED, naming it, for a quantization_config vt cannot
// honour: another quant_method, non-float or non-8-bit weights, asymmetric
// or dynamic weight scales, an fmt other than e4m3; VT_ERR_FORMAT when
// there is none at all (F8_E4M3 tensors without a config).
Fp8Scheme read_fp8_scheme(const nlohmann::json &top, const std::string &dir);

// Each F8_E4M3 tensor of `fp8` with its scale tensor from `all` (any shard),
// as an FP8_E4M3 tensor whose rows `store` owns; the scales used are added
// to `used`. VT_ERR_FORMAT for a weight without a scale, a scale whose shape
// fits no scheme, rows that are not whole 64-element blocks, or a block that
// splits a 64-element piece.
std::vector<SafetensorsTensor> pair_fp8(const std::vector<const SafetensorsTensor *> &fp8,
                                        const std::vector<const SafetensorsTensor *> &all, const Fp8Scheme &scheme,
                                        std::deque<std::vector<uint8_t>> &store,
                                        std::vector<const SafetensorsTensor *> &used, const std::string &dir);

} // namespace vt
