#include "model/quantize-load.h"

#include <cstring>
#include <stdexcept>
#include <vector>

#include "core/quant.h"
#include "core/threadpool.h"

namespace vt {

std::optional<DType> quantize_type_for_rows(DType want, int64_t ne0) {
    auto fits = [&](DType t) { return ne0 > 0 && ne0 % dtype_info(t).block_elems == 0; };
    if (fits(want)) return want;
    // llama.cpp's tensor_type_fallback for the 256-element types vt writes.
    const DType fallback = want == DType::Q4_K ? DType::Q5_0 : want == DType::Q6_K ? DType::Q8_0 : want;
    if (fallback != want && fits(fallback)) return fallback;
    return std::nullopt;
}

void quantize_rows_parallel(DType from, const uint8_t *src, size_t src_stride, DType to, uint8_t *dst, int64_t ne0,
                            int64_t n_rows) {
    // Checked here, where it can throw: the workers below must not.
    if (!quantizable_source(from) || !can_quantize_weights(to) || ne0 % dtype_info(to).block_elems != 0)
        throw std::invalid_argument("quantize_rows_parallel: cannot convert these rows");
    const size_t out_row = row_bytes(to, ne0);
    // The K-quant fits cost ~100x a repack per byte (Qwen3-0.6B's 0.44 B
    // matmul weights to Q4_K: measured in the commit that added this), so
    // any matrix past a few rows is worth a thread; 8 at most, as the repack.
    const int n = load_parts_for((size_t)(n_rows * ne0), (size_t)1 << 16);
    run_load_parts(n, [&](int i) {
        const int64_t r0 = n_rows * i / n, r1 = n_rows * (i + 1) / n;
        std::vector<float> row((size_t)ne0);
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t *s = src + (size_t)r * src_stride;
            // Copied, not cast: a safetensors tensor need not be 4-byte aligned.
            if (from == DType::F32) std::memcpy(row.data(), s, (size_t)ne0 * sizeof(float));
            else ref::dequantize_row(from, s, row.data(), ne0);  // F16, BF16 widen exactly; FP8 rounds once
            quantize_weights(to, row.data(), dst + (size_t)r * out_row, ne0);
        }
    });
}

} // namespace vt
