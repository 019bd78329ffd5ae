// Block quantization formats: conversion, dequantization, activation
// quantization and dot products, as portable scalar references.
//
// Layouts are bit-compatible with GGUF/ggml blocks (see dtype.h for sizes,
// quant/blocks.h for the fields). Numerics follow llama.cpp's x86 CPU
// backend so that results agree with it: activations are quantized once per
// row to the weight type's vec_dot_type (Q8_0 for Q4_0/Q5_0/Q8_0/MXFP4/IQ4_NL/NVFP4/Q1_0/Q2_0, Q8_1 for
// Q4_1/Q5_1, Q8_K for the K quants, IQ4_XS, TQ1_0, TQ2_0 and the 2- and 3-bit
// and IQ1 i-quants, F16 for F16, BF16 for BF16 and FP8_E4M3), rounding to
// nearest-even as its SIMD paths do, and the dot product is an integer dot
// per block scaled in f32.
//
// These functions are the numeric definition every backend is tested
// against: the CPU backend's SIMD tables (backends/cpu/kernels) quantize and
// dequantize to exactly these bytes and floats, and dot products differ from
// them only by f32 accumulation order. They are also what the loader uses
// (converting and quantizing weights), so lib/ never needs a backend's
// kernels.
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

// Weight quantizers: n f32 weights (whole blocks of t) to t, byte for byte
// what ggml's quantize_row_<t>_ref writes (llama.cpp's quantizer without an
// importance matrix), for t in Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q6_K, MXFP4.
// Inputs must be finite. Scalar, thread-safe, one caller thread; throws
// std::invalid_argument for another t or a partial block.
bool can_quantize_weights(DType t);
void quantize_weights(DType t, const float *src, void *dst, int64_t n);

// Row kernels of one type: dequantize n elements (whole blocks); quantize n
// f32 values to an activation type (F32, F16, BF16, Q8_0, Q8_1, Q8_K); dot
// a weight row w with an activation row a of vec_dot_type, n elements.
using DequantFn = void (*)(const void *src, float *dst, int64_t n);
using QuantFn = void (*)(const float *src, void *dst, int64_t n);
using VecDotFn = float (*)(int64_t n, const void *w, const void *a);

// The scalar references.
namespace ref {

struct RowKernels {
    VecDotFn dot = nullptr;         // null where t cannot be a weight type (Q8_1, Q8_K)
    DequantFn dequant = nullptr;
    QuantFn quant = nullptr;        // only for the activation types
};
// The references for type t (all null for a type vt does not know).
const RowKernels &row_kernels(DType t);

// The same, throwing std::invalid_argument where t has no such kernel.
void dequantize_row(DType t, const void *src, float *dst, int64_t n);
void quantize_row(DType t, const float *src, void *dst, int64_t n);
float vec_dot(DType t, int64_t n, const void *w, const void *a);

// Attention products, each output one f32 FMA chain in index order (the
// CPU tables reproduce them lane by lane). Scores over the runs of a paged
// K (keys transposed: key j of run r is f16 kt[r][d * kts + j], j < nk[r]):
// sc[i * scs + c] = sum_d qf[i * hd + d] * key(c), i < nq, with the runs'
// keys numbered c = 0, 1, ... across runs in order.
// Values: out[i][d] = sum_j pf[i * ps + j] * f16 v[j * vs + d]; with
// accumulate the chain starts from out[i][d] instead of 0, so a product over
// keys in consecutive runs (the blocks of a paged cache) gives the bits of
// one call over all of them.
void attn_scores(const float *qf, int64_t nq, int64_t hd, const uint16_t *const *kt, const int64_t *nk,
                 int64_t n_runs, size_t kts, float *sc, size_t scs);
void attn_values(const float *pf, size_t ps, int64_t nq, int64_t n_keys, const uint16_t *v, size_t vs, int64_t hd,
                 float *const *out, bool accumulate);

// On expf_poly::exp_ref (quant/expf-poly.h). Softmax of a score row: x[j] =
// exp(scale * x[j] - max), j < n; returns the sum of the x[j] in double (16
// lanes, expf_poly::fold16). SwiGLU: d[i] = g[i] / (1 + exp(-g[i])) * u[i].
double softmax_row(float *x, int64_t n, float scale);
void swiglu_row(const float *g, const float *u, float *d, int64_t n);

} // namespace ref
} // namespace vt
