//! FP8_E4M3 (vt's own type 43; blocks.h BlockFP8): the scalar reference of
//! core/quant.h for the FP8 checkpoint formats, read as stored.
//!
//! The activations are bf16 (vec_dot_type BF16), as for BF16 weights: what
//! transformers and vLLM compute on a CPU with a checkpoint's FP8 weights
//! (dequantized to the model's bf16, products with bf16 activations summed in
//! f32), and what lets the CPUs with vdpbf16ps multiply the weights as they
//! stream (e4m3 values are exact in bf16; backends/cpu/kernels/
//! fp8-avx512bf16.cpp). Each byte is read as h = its value / 256, the binary16
//! fp8_e4m3_half16 builds (exact; vcvtph2ps does it in hardware), and the
//! block's scale as d256 = d * 256 (exact but for overflow past 2^120, which
//! no checkpoint scale comes near), so x = h * d256 to the bit.
//!
//! The canonical order, which the SIMD dots and tiles replay bit for bit
//! (but the tables with vdpbf16ps, which have their own: Kernels::fp8_dp),
//! keeps 16 f32 lanes (one AVX-512 register, two AVX2 ones): per block, lane
//! l pairs its four products, with p_i = h[16i + l] * a[16i + l],
//!     u = fma(h1, a1, p0), v = fma(h3, a3, p2), acc[l] = fma(d256, u + v, acc[l])
//! (only the last FMA waits on the previous block: one row streams at the
//! rate of its loads, not of a chain's latency); the result folds the lanes
//! in halves, acc[l] += acc[l + w] for w = 8, 4, 2, 1 (fold16).
#include <cmath>
#include <cstring>

#include "core/quant/blocks.h"
#include "core/quant/ref-table.h"

namespace vt {
namespace quant::scalar {
namespace {

inline float fp8_h(uint8_t q) { return h2f(fp8_e4m3_half16(q)); }
// The scale of a block that may sit at any 2-byte offset (tests' rows do).
inline float scale(const BlockFP8 &b) {
    float d;
    std::memcpy(&d, &b.d, 4);
    return d;
}

void deq_fp8(const void *src, float *y, int64_t n) {
    const BlockFP8 *b = (const BlockFP8 *)src;
    for (int64_t i = 0; i < n / 64; ++i, y += 64) {
        const float d256 = scale(b[i]) * 256.0f;
        for (int j = 0; j < 64; ++j) y[j] = fp8_h(b[i].q[j]) * d256;
    }
}

float fold16(float a[16]) {
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; ++l) a[l] += a[l + w];
    return a[0];
}

float dot_fp8(int64_t n, const void *w, const void *act) {
    const BlockFP8 *x = (const BlockFP8 *)w;
    const uint16_t *a16 = (const uint16_t *)act;
    float acc[16] = {};
    for (int64_t b = 0; b < n / 64; ++b, a16 += 64) {
        auto a = [&](int i) { return b2f(a16[i]); };
        const float d256 = scale(x[b]) * 256.0f;
        for (int l = 0; l < 16; ++l) {
            auto h = [&](int i) { return fp8_h(x[b].q[16 * i + l]); };
            const float u = std::fma(h(1), a(16 + l), h(0) * a(l));
            const float v = std::fma(h(3), a(48 + l), h(2) * a(32 + l));
            acc[l] = std::fma(d256, u + v, acc[l]);
        }
    }
    return fold16(acc);
}

} // namespace
} // namespace quant::scalar

void ref::fill_fp8(RowKernels *by_type) {
    by_type[(int)DType::FP8_E4M3] = {quant::scalar::dot_fp8, quant::scalar::deq_fp8, nullptr};
}

} // namespace vt
