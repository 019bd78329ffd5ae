// safetensors reader over a memory mapping: an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__":
// {...}}, then the tensor bytes. Nothing is copied. Every offset, size and
// shape is checked against the file before a tensor is listed, so a corrupt
// or truncated file is an error, never an out-of-bounds read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mmap.h"

namespace vt {

struct SafetensorsTensor {
    std::string name;
    DType type = DType::F32;
    int n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};  // ne[0] contiguous: the shape reversed
    const void *data = nullptr;    // into the mapping
    size_t nbytes = 0;
    // An MXFP4 tensor paired from transformers' two byte tensors
    // (pair_mxfp4 below): data stays null until materialize_mxfp4 writes
    // ggml's blocks from these (owned by their SafetensorsFile).
    const SafetensorsTensor *mx_blocks = nullptr, *mx_scales = nullptr;
    // What the product of this weight is multiplied by (model/hf-quantized.h:
    // an NVFP4 weight's per-tensor factor; Model::output_scale).
    float product_scale = 1.0f;
};

class SafetensorsFile {
public:
    // Opens and validates path. Throws vt::Error: VT_ERR_IO (missing,
    // unreadable), VT_ERR_FORMAT (corrupt or truncated; names the path and
    // the tensor), VT_ERR_UNSUPPORTED (a dtype other than F32, F16, BF16, F8_E4M3, or
    // more than 4 dimensions).
    static std::unique_ptr<SafetensorsFile> open(const std::string &path, bool use_mmap = true);
    // Parses bytes owned by the caller (tests, fuzzing); they must outlive it.
    static std::unique_ptr<SafetensorsFile> parse(const uint8_t *data, size_t size, const std::string &name = "safetensors");

    const std::vector<SafetensorsTensor> &tensors() const { return tensors_; }
    // The U8 tensors whose names end in _blocks or _scales (MXFP4 halves,
    // pair_mxfp4), kept apart: no other reader takes raw bytes. Their type
    // field means nothing (F32); nbytes is their element count.
    const std::vector<SafetensorsTensor> &mxfp4_parts() const { return mx_parts_; }
    // The F8_E4M3 tensors (FP8 weights and NVFP4's group scales,
    // model/hf-quantized.h: pair_fp8, pair_nvfp4) and the other U8 tensors
    // (NVFP4's packed codes), kept apart too; type means nothing, nbytes is
    // the count.
    const std::vector<SafetensorsTensor> &fp8_parts() const { return fp8_parts_; }
    const std::vector<SafetensorsTensor> &u8_parts() const { return u8_parts_; }
    const std::string &path() const { return name_; }
    // See MappedFile::release.
    void release(const void *p, size_t n) const {
        if (file_) file_->release(p, n);
    }

private:
    SafetensorsFile() = default;
    void parse_all(const uint8_t *data, size_t size);
    std::unique_ptr<MappedFile> file_;
    std::string name_;
    std::vector<SafetensorsTensor> tensors_;
    std::vector<SafetensorsTensor> mx_parts_;
    std::vector<SafetensorsTensor> fp8_parts_;
    std::vector<SafetensorsTensor> u8_parts_;
};

// MXFP4 checkpoints of transformers (gpt-oss; config.json's
// quantization_config {"quant_method": "mxfp4"}; integrations/mxfp4.py)
// store each quantized matrix `<name>` as two U8 tensors: `<name>_blocks`,
// shape (..., rows, n_blocks, 16), 32 e2m1 codes per block, element 2i in
// the low nibble of byte i and 2i+1 in the high one; and `<name>_scales`,
// shape (..., rows, n_blocks), the blocks' e8m0 exponents. pair_mxfp4 matches
// the halves across all of a folder's files and returns one MXFP4 tensor
// `<name>` per pair, of shape (..., rows, n_blocks * 32) (ne[0] =
// n_blocks * 32), its bytes not yet written (data null, mx_blocks and
// mx_scales set). `where` names the folder in errors: VT_ERR_FORMAT for a
// half without the other or halves whose shapes disagree.
std::vector<SafetensorsTensor> pair_mxfp4(const std::vector<const SafetensorsTensor *> &parts, const std::string &where);

// The bytes of a paired tensor in ggml's block_mxfp4 layout (e, then byte j =
// element j | element j + 16 << 4): rows first, first + step, first + 2 step,
// ... of each matrix (ne[1] rows, for every ne[2] and ne[3]), as a tensor of
// that many rows whose data `store` owns. (0, 1) takes every row; gpt-oss's
// interleaved gate_up rows are (0, 2) for gate and (1, 2) for up. Values are
// moved, never rounded: ggml's table is the e2m1 values doubled and its
// scale 2^(e - 128), the same numbers as transformers' ldexp(value, e - 127).
SafetensorsTensor materialize_mxfp4(const SafetensorsTensor &t, int64_t first, int64_t step,
                                    std::deque<std::vector<uint8_t>> &store);

} // namespace vt
