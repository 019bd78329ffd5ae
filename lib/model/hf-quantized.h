// Quantized checkpoint folders read as stored: FP8 and NVFP4 weights with
// their scale tensors, in the schemes people ship.
//
// config.json's quantization_config (top level, or a multimodal
// checkpoint's text_config; ModelOpt's may be only in hf_quant_config.json)
// names the scheme:
// - "fp8" (transformers' FineGrainedFP8Config; DeepSeek-V3, Qwen3-*-FP8):
//   fmt e4m3, `<w>.weight_scale_inv` per weight_block_size block (128 x 128)
//   or, without a block size, one `<w>.weight_scale` per tensor;
// - "compressed-tensors": format float-quantized (or naive-quantized) with
//   8-bit float weights, symmetric, static: `<w>.weight_scale` per tensor
//   (1 element), per channel (rows x 1), per group of columns (rows x cols /
//   g) or per block (block_structure); or format nvfp4-pack-quantized
//   (4-bit float weights in groups of 16): `<w>.weight_packed` U8 (two e2m1
//   codes a byte, the first in the low nibble), `<w>.weight_scale` F8_E4M3
//   per 16, `<w>.weight_global_scale` F32, value = e2m1 * scale / global;
// - "modelopt" (NVIDIA ModelOpt) with quant_algo FP8 (`<w>.weight_scale` per
//   tensor) or NVFP4 / W4A16_NVFP4 (`<w>.weight` U8 as above, `<w>.weight_scale`
//   F8_E4M3 per 16, `<w>.weight_scale_2` F32, value = e2m1 * scale * scale_2).
//
// FP8 weights become vt's FP8_E4M3 rows (core/quant/blocks.h BlockFP8: 64
// e4m3 bytes and the f32 scale of the checkpoint block they lie in; the
// scale's shape says which scheme applies, and each checkpoint block must
// cover whole 64-element pieces of a row). NVFP4 weights become ggml's NVFP4
// blocks (type 40, what llama.cpp's converter writes: the e4m3 scale bytes
// as UE4M3, sign dropped) and their per-tensor factor (scale_2, or 1 /
// global) a product scale, as the converter's `<tensor>.scale`
// (Model::output_scale).
//
// Activations stay as vt runs the weight type (bf16 for FP8 as for BF16,
// Q8_0 for NVFP4 as llama.cpp's CPU backend): the schemes' activation
// quantization (dynamic per token or group, a static input_scale, NVFP4's
// 4-bit activations) is how FP8 and FP4 matrix hardware is fed, which a CPU
// does not have;
// transformers on a CPU also dequantizes the weights (to the model's dtype)
// and keeps the activations. The load says so.
#pragma once

#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace vt {

struct QuantScheme {
    std::string method;      // "fp8", "compressed-tensors", "modelopt", "" (none)
    bool fp8 = false;        // FP8 weights
    bool nvfp4 = false;      // NVFP4 weights
    int64_t block_rows = 0;  // FP8: the config's block (weight_block_size, block_structure), 0 if none
    int64_t block_cols = 0;
    std::string activations; // what the checkpoint asks for its activations ("" none), for the log
};

// The scheme of config.json `top` (dir names the folder in errors; its
// hf_quant_config.json is read when config.json has no quantization_config).
// Throws VT_ERR_UNSUPPORTED, naming it, for a quantization_config vt cannot
// honour: another quant_method or compressed-tensors format, integer or
// asymmetric weights, dynamic weight scales, an fmt other than e4m3. A folder
// without any gives method "".
QuantScheme read_quant_scheme(const nlohmann::json &top, const std::string &dir);

// Each F8_E4M3 tensor of `fp8` with its scale tensor from `all` (any shard),
// as an FP8_E4M3 tensor whose rows `store` owns; the scales used are added
// to `used`. VT_ERR_FORMAT for a weight without a scale, a scale whose shape
// fits no scheme; VT_ERR_UNSUPPORTED for rows that are not whole 64-element
// blocks or a block that splits a 64-element piece.
std::vector<SafetensorsTensor> pair_fp8(const std::vector<const SafetensorsTensor *> &fp8,
                                        const std::vector<const SafetensorsTensor *> &all, const QuantScheme &scheme,
                                        std::deque<std::vector<uint8_t>> &store,
                                        std::vector<const SafetensorsTensor *> &used, const std::string &dir);

// Each NVFP4 weight among the U8 tensors `bytes` (compressed-tensors'
// `<w>.weight_packed`, ModelOpt's `<w>.weight`) with its F8_E4M3 group
// scales (from `fp8`) and its per-tensor scale (from `all`), as an NVFP4
// tensor named `<w>.weight` whose blocks `store` owns, its product_scale
// set; the tensors used are added to `used`. VT_ERR_FORMAT for a missing
// or misshapen scale; VT_ERR_UNSUPPORTED for rows that are not whole
// 64-element blocks.
std::vector<SafetensorsTensor> pair_nvfp4(const std::vector<const SafetensorsTensor *> &bytes,
                                          const std::vector<const SafetensorsTensor *> &fp8,
                                          const std::vector<const SafetensorsTensor *> &all,
                                          std::deque<std::vector<uint8_t>> &store,
                                          std::vector<const SafetensorsTensor *> &used, const std::string &dir);

} // namespace vt
