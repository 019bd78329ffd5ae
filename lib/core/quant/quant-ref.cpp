// The reference table (core/quant.h's ref::row_kernels) and the throwing
// row helpers on it.
#include <stdexcept>
#include <string>

#include "core/quant/ref-table.h"

namespace vt {

DType vec_dot_type(DType t) {
    switch (t) {
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0:
    case DType::MXFP4:
    case DType::IQ4_NL:
    case DType::NVFP4:
    case DType::Q1_0:
    case DType::Q2_0: return DType::Q8_0;
    case DType::Q4_1:
    case DType::Q5_1: return DType::Q8_1;
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS:
    case DType::IQ2_XXS:
    case DType::IQ2_XS:
    case DType::IQ2_S:
    case DType::IQ3_XXS:
    case DType::IQ3_S:
    case DType::IQ1_S:
    case DType::IQ1_M:
    case DType::TQ1_0:
    case DType::TQ2_0: return DType::Q8_K;
    case DType::FP8_E4M3: return DType::BF16;  // FP8 checkpoints as transformers runs them (fp8-scalar.cpp)
    default: return t; // F32, F16, BF16 (and the activation types themselves)
    }
}

namespace ref {
namespace {

struct Table {
    RowKernels by_type[kTypeIds];
    Table() {
        fill_legacy(by_type);
        fill_kquants(by_type);
        fill_mxfp4(by_type);
        fill_iq4(by_type);
        fill_lowbit(by_type);
        fill_iquants(by_type);
        fill_fp8(by_type);
        fill_ternary(by_type);
    }
};

[[noreturn]] void no_kernel(DType t, const char *what) {
    throw std::invalid_argument(std::string("quant: no ") + what + " for type " + std::to_string((uint32_t)t));
}

} // namespace

const RowKernels &row_kernels(DType t) {
    static const Table table;
    static const RowKernels none;
    return (uint32_t)t < (uint32_t)kTypeIds ? table.by_type[(int)t] : none;
}

void dequantize_row(DType t, const void *src, float *dst, int64_t n) {
    const DequantFn f = row_kernels(t).dequant;
    if (!f) no_kernel(t, "dequantizer");
    f(src, dst, n);
}

void quantize_row(DType t, const float *src, void *dst, int64_t n) {
    const QuantFn f = row_kernels(t).quant;
    if (!f) no_kernel(t, "quantizer");
    f(src, dst, n);
}

float vec_dot(DType t, int64_t n, const void *w, const void *a) {
    const VecDotFn f = row_kernels(t).dot;
    if (!f) no_kernel(t, "vec_dot");
    return f(n, w, a);
}

} // namespace ref
} // namespace vt
