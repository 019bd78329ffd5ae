// Quantization at load (vt_model_params.quantize): float matmul weights of
// a GGUF file or a Hugging Face folder become a block type in memory, with
// the bytes llama.cpp's quantizer would have written into a file, and then
// take the same repack path as weights read from such a file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "core/dtype.h"

namespace vt {

// What a load quantized (vt_model_info's fields of the same names).
struct QuantizeStats {
    std::optional<DType> target;   // the type asked for; nullopt: keep the file's types
    uint32_t n_quantized = 0;      // weights quantized (a tied output's copy counts)
    uint32_t n_fallback = 0;       // of those, weights that took the fallback type
    uint32_t n_kept = 0;           // float matmul weights kept as stored: rows fit no block
    uint64_t bytes_in = 0;         // their float bytes
    uint64_t bytes_out = 0;        // their quantized bytes
    double seconds = 0;            // wall time spent quantizing
};

// Whether a weight stored as t is one quantization at load converts.
constexpr bool quantizable_source(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::FP8_E4M3;
}

// The type a weight with rows of ne0 elements takes when `want` is asked:
// want where the rows are whole blocks of it; else llama.cpp's fallback for
// such rows (Q4_K -> Q5_0, Q6_K -> Q8_0) where they are whole blocks of
// that; else nullopt (the weight keeps its stored type; llama.cpp would
// store F16 there).
std::optional<DType> quantize_type_for_rows(DType want, int64_t ne0);

// Converts the n_rows rows of ne0 elements of type `from` (F32, F16 or
// BF16; row r at src + r * src_stride) to `to` (can_quantize_weights) into
// dst, rows packed (row_bytes(to, ne0) apart). Large matrices split their
// rows over a few threads; the bytes do not depend on the split.
void quantize_rows_parallel(DType from, const uint8_t *src, size_t src_stride, DType to, uint8_t *dst, int64_t ne0,
                            int64_t n_rows);

} // namespace vt
