// Block quantization formats on the CPU: conversion, dequantization,
// activation quantization and dot products, with run-time SIMD dispatch.
//
// Layouts are bit-compatible with GGUF/ggml blocks (see dtype.h for sizes).
// Numerics follow llama.cpp's x86 CPU backend so that results agree with it:
// activations are quantized once per row to the weight type's vec_dot_type
// (Q8_0 for Q4_0/Q5_0/Q8_0, Q8_1 for Q4_1/Q5_1, Q8_K for the K quants, F16
// for F16, BF16 for BF16), rounding to nearest-even as its SIMD paths do, and
// the dot product is an integer dot per block scaled in f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace vt {

// IEEE binary16 and bfloat16 <-> f32. f32_to_bf16 rounds to nearest-even
// (NaN stays NaN), as ggml does.
float fp16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float f);
float bf16_to_f32(uint16_t h);
uint16_t f32_to_bf16(float f);

// Type activations are converted to before a dot with weights of type t.
DType vec_dot_type(DType t);

// Dequantizes n elements (a multiple of t's block size) of type t.
void dequantize_row(DType t, const void *src, float *dst, int64_t n);

// Quantizes/converts n f32 values to t, where t is a vec_dot_type
// (F32, F16, BF16, Q8_0, Q8_1, Q8_K).
void quantize_row(DType t, const float *src, void *dst, int64_t n);

// Weight quantizers: n f32 weights (whole blocks of t) to t, byte for byte
// what ggml's quantize_row_<t>_ref writes (llama.cpp's quantizer without an
// importance matrix), for t in Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q6_K.
// Inputs must be finite. Scalar, thread-safe, one caller thread; throws
// std::invalid_argument for another t or a partial block.
bool can_quantize_weights(DType t);
void quantize_weights(DType t, const float *src, void *dst, int64_t n);

// Dot product of a row w of type t with a row a of vec_dot_type(t), n elements.
typedef float (*VecDotFn)(int64_t n, const void *w, const void *a);

// The fastest kernel for t on this CPU (chosen once, at first use);
// nullptr if t cannot be a weight type (Q8_1, Q8_K).
VecDotFn vec_dot_fn(DType t);

inline float vec_dot(DType t, int64_t n, const void *w, const void *a) {
    return vec_dot_fn(t)(n, w, a);
}

// Name of the instruction set the dispatcher picked ("avx512vnni", "avx512",
// "avx2", "scalar"). $VT_CPU_ISA set to one of these names caps the choice
// (read once, at first use); a name the CPU cannot run falls back lower.
const char *cpu_kernel_isa();

// Portable scalar references of the same operations, for tests.
namespace ref {
void dequantize_row(DType t, const void *src, float *dst, int64_t n);
void quantize_row(DType t, const float *src, void *dst, int64_t n);
float vec_dot(DType t, int64_t n, const void *w, const void *a);
} // namespace ref

} // namespace vt
