// Internal kernel tables behind core/quant.h. One table per instruction set;
// each ISA's translation unit (built with its own -m flags, see meson.build)
// overwrites the entries it implements in a copy of the table below it, so a
// missing kernel falls back to the next lower ISA, finally to scalar.
//
// Tests reach every ISA the CPU supports through kernels_for(); the engine
// uses only the functions of core/quant.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/quant.h"

namespace vt::quant {

using DequantFn = void (*)(const void *src, float *dst, int64_t n);
using QuantFn = void (*)(const float *src, void *dst, int64_t n);
// out[t * out_stride + r] = dot(k, w + r * w_stride, a + t * a_stride) for
// r < nr, t < nt: many (row, token) pairs in register tiles, each output
// bit-identical to the same table's dot (strides in bytes for w and a, in
// floats for out).
using GemmFn = void (*)(int64_t k, const void *w, size_t w_stride, int64_t nr, const void *a, size_t a_stride,
                        int64_t nt, float *out, size_t out_stride);

// For a load-time layout (dtype.h's _X16 types, which have no row dot) the
// gemm takes any nt, 1 included, and whole groups of rows from a group's
// start: each output bit-identical to the table's dot for the base type,
// except BF16_X16 and F16_X16, which have their own orders (dot_f16_pairs;
// BF16_X16: dot_bf16_chain on tables with vdpbf16ps, Kernels::bf16_chain,
// else dot_bf16_pairs; below). Where Kernels::gemm_f32_acts is set for a
// type, its gemm reads the activations as f32 rows holding vec_dot_type's
// values (the op rounds them through that type), so its tiles broadcast them
// without converting each use.

// The attention products (backends/cpu/ops-attention-paged.cpp): each
// output one f32 FMA chain in index order, so every table's kernels give the
// scalar reference's bits. Scores: sc[i * scs + j] = sum_d qf[i * hd + d] *
// f16 kt[d * kts + j] (K transposed), i < nq, j < n_keys. Values:
// out[i][d] = sum_j pf[i * ps + j] * f16 v[j * vs + d], i < nq, d < hd; with
// accumulate the chain starts from out[i][d] instead of 0, so a product over
// keys in consecutive runs (the blocks of a paged cache) gives the bits of
// one call over all of them.
using AttnScoresFn = void (*)(const float *qf, int64_t nq, int64_t hd, const uint16_t *kt, size_t kts, int64_t n_keys,
                              float *sc, size_t scs);
using AttnValuesFn = void (*)(const float *pf, size_t ps, int64_t nq, int64_t n_keys, const uint16_t *v, size_t vs,
                              int64_t hd, float *const *out, bool accumulate);

// Built on expf_poly::exp_ref (expf-poly.h), the same bits on every table.
// Softmax of a score row: x[j] = exp(scale * x[j] - max), j < n; returns
// the sum of the x[j] in double (16 lanes, expf_poly::fold16). SwiGLU:
// d[i] = g[i] / (1 + exp(-g[i])) * u[i].
using SoftmaxFn = double (*)(float *x, int64_t n, float scale);
using SwigluFn = void (*)(const float *g, const float *u, float *d, int64_t n);

constexpr int kTypeSlots = 43; // GGUF type ids used by vt are < 31; 31..33, 36..38 and 40..42 are vt's layouts

enum class Isa { scalar = 0, avx2 = 1, avx512 = 2, avx512vnni = 3 };
constexpr int kIsaCount = 4;

struct Kernels {
    const char *isa = "scalar";
    VecDotFn dot[kTypeSlots] = {};
    DequantFn dequant[kTypeSlots] = {};
    QuantFn quant[kTypeSlots] = {}; // only for vec_dot types
    GemmFn gemm[kTypeSlots] = {};   // optional: null means loop over dot (required for _X16)
    AttnScoresFn attn_scores = nullptr;
    AttnValuesFn attn_values = nullptr;
    SoftmaxFn softmax = nullptr;
    SwigluFn swiglu = nullptr;
    bool gemm_f32_acts[kTypeSlots] = {}; // see above
    bool bf16_chain = false; // BF16_X16's gemm follows dot_bf16_chain, not dot_bf16_pairs
};

// The table for isa, or nullptr if this build or this CPU lacks it (never
// returns a table whose kernels the CPU cannot run). Thread-safe.
const Kernels *kernels_for(Isa isa);

// The table the public API uses: the best ISA, capped by $VT_CPU_ISA
// (scalar|avx2|avx512|avx512vnni), read once.
const Kernels &active_kernels();

// Per-ISA fillers, each defined in its own translation unit.
void fill_scalar(Kernels &k);
#if defined(__x86_64__)
void fill_avx2(Kernels &k);
void fill_avx512(Kernels &k);
void fill_avx512vnni(Kernels &k);
// Overlay on the AVX-512 tables for CPUs with avx512bf16 (BF16 dot).
void fill_avx512bf16(Kernels &k);
// The gemm tiles matching each table's dots (gemm-avx2.cpp, gemm-avx512*.cpp).
void fill_gemm_avx2(Kernels &k);
void fill_gemm_avx512(Kernels &k);
void fill_gemm_avx512vnni(Kernels &k);
void fill_gemm_avx512bf16(Kernels &k);
// The order of BF16_X16's gemm (gemm-avx512bf16.cpp), for tests: one
// vdpbf16ps step per bf16 pair of the rows w and a (k elements, even), pair
// 0 first, from zero. Only where a table has gemm[BF16_X16].
float dot_bf16_chain(int64_t k, const uint16_t *w, const uint16_t *a);
#endif

// The order of F16_X16's gemm (gemm-pairs-x86.h), for tests and as its
// reference: per (row w, activation a) two f32 FMA chains from zero, even
// elements and odd ones in index order, then even + odd (k even).
float dot_f16_pairs(int64_t k, const uint16_t *w, const uint16_t *a);
// The same order over bf16 values: BF16_X16's gemm on tables without
// vdpbf16ps (gemm-pairs-x86.h's Bf16Pairs8).
float dot_bf16_pairs(int64_t k, const uint16_t *w, const uint16_t *a);

// Scalar reference kernels (quant-scalar.cpp, kquants-scalar.cpp), also the
// fallback where no SIMD version exists.
namespace scalar {
void fill_legacy(Kernels &k); // F32/F16/BF16 and the 32-element block types
void fill_kquants(Kernels &k);
void fill_attn(Kernels &k);
void fill_exp(Kernels &k);
} // namespace scalar

} // namespace vt::quant
