// The CPU backend's kernel tables. One table per instruction set: the
// scalar one holds core/quant.h's references, and each ISA's translation
// unit (built with its own -m flags, see meson.build) overwrites the entries
// it implements in a copy of the table below it, so a missing kernel falls
// back to the next lower ISA, finally to scalar.
//
// Tests reach every ISA the CPU supports through kernels_for(); the ops use
// active_kernels() and the row functions at the end.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/quant.h"
#include "cpu/kernels/x16-layout.h"

namespace vt::quant {

// out[t * out_stride + r] = dot(k, w + r * w_stride, a + t * a_stride) for
// r < nr, t < nt: many (row, token) pairs in register tiles, each output
// bit-identical to the same table's dot (strides in bytes for w and a, in
// floats for out).
using GemmFn = void (*)(int64_t k, const void *w, size_t w_stride, int64_t nr, const void *a, size_t a_stride,
                        int64_t nt, float *out, size_t out_stride);

// For a load-time layout (x16-layout.h's _X16, which have no row dot) the
// gemm takes any nt, 1 included, and whole groups of rows from a group's
// start: each output bit-identical to the table's dot for the base type,
// except BF16_X16 and F16_X16, which have their own orders (dot_f16_pairs;
// BF16_X16: dot_bf16_chain on tables with vdpbf16ps, Kernels::bf16_chain,
// else dot_bf16_pairs; below). Where Kernels::gemm_f32_acts is set for a
// type, its gemm reads the activations as f32 rows holding vec_dot_type's
// values (the op rounds them through that type), so its tiles broadcast them
// without converting each use; such a gemm takes any nt, 1 included (the op
// has no vec_dot_type rows for the dot then).

// The attention products and the exp-based row kernels: core/quant.h's
// ref::attn_scores, attn_values, softmax_row and swiglu_row, reproduced bit
// for bit by every table.
using AttnScoresFn = void (*)(const float *qf, int64_t nq, int64_t hd, const uint16_t *const *kt, const int64_t *nk,
                              int64_t n_runs, size_t kts, float *sc, size_t scs);
using AttnValuesFn = void (*)(const float *pf, size_t ps, int64_t nq, int64_t n_keys, const uint16_t *v, size_t vs,
                              int64_t hd, float *const *out, bool accumulate);

using SoftmaxFn = double (*)(float *x, int64_t n, float scale);
// n f32 values through a vec_dot type and back in one pass: what
// dequant(quant(x)) gives, bit for bit (the activations of the gemms that
// read them as f32, Kernels::gemm_f32_acts).
using RoundFn = void (*)(const float *x, float *out, int64_t n);
using SwigluFn = void (*)(const float *g, const float *u, float *d, int64_t n);

// The recurrent form of the gated delta rule (GATED_DELTA_RULE, backends/
// cpu/ops-delta-rule.cpp) over a block of n tokens for state rows [j0, j1)
// of dk floats each (row j is column j of the state S): for each row, token
// by token, kv = r.kd_t (kd_t = dec_t k_t, the decayed key: the decayed
// row's dot with k); delta = beta_t (v_t[j] - kv); r = r dec_t + delta k_t;
// o_t[j] = r.q_t. The dots' order is the table's (the op's tolerance holds
// for any order).
struct DeltaRows {
    int64_t n, dk;
    bool per_channel;
    const float *const *q;  // n pointers to dk floats
    const float *const *k;
    const float *const *v;  // n pointers to the token's v (element j for row j)
    const float *dec;       // n decays, or n x dk when per_channel
    const float *kd;        // n x dk: dec_t k_t
    const float *beta;      // n
    float *const *o;        // n pointers: o[t][j] for row j
};
using DeltaRowsFn = void (*)(float *S, int64_t j0, int64_t j1, const DeltaRows &b);

// The recurrent form of Mamba-2's scan (SSM_SCAN, backends/cpu/ops-ssm-scan.cpp)
// over a block of n tokens for state rows [p0, p1) of N floats each (row p of
// a head's P x N state): for each row, token by token, r = r a_t + xd_t[p]
// B_t; y_t[p] = r.C_t. The dot's order is the table's (the op's tolerance
// holds for any order).
struct SsmRows {
    int64_t n, N, P;
    const float *a;         // n decays
    const float *xd;        // n x P: d_t x_t
    const float *const *B;  // n pointers to N floats
    const float *const *C;
    float *const *y;        // n pointers: y[t][p] for row p
};
using SsmRowsFn = void (*)(float *S, int64_t p0, int64_t p1, const SsmRows &b);

// The chunked (SSD) form of the same scan for one head over a chunk of n
// tokens, its state S (P x N) updated in place: with decay(t, u) =
// exp(g_t - g_u) for u <= t,
//   y_t = e_t (S0 C_t) + sum_{u <= t} decay(t, u) (C_t.B_u) xd_u
//   S  <- e_last S0 + sum_u w_u xd_u B_u^T
// as tiled matrix products (ops-ssm-scan.cpp's chunked_block is the portable
// form). scratch: ssm_chunk_floats(n, N, P) floats, 64-byte aligned.
struct SsmChunk {
    int64_t n, N, P;
    const float *g;         // n: gamma_t, the cumulative d A within the chunk (<= 0, descending)
    const float *e;         // n: exp(gamma_t)
    const float *w;         // n: exp(gamma_last - gamma_u)
    const float *xd;        // n x P: d_t x_t
    const float *const *B;  // n pointers to N floats
    const float *const *C;
    float *const *y;        // n pointers to P floats
    float *scratch;
};
using SsmChunkFn = void (*)(float *S, const SsmChunk &c);
inline size_t ssm_chunk_floats(int64_t n, int64_t N, int64_t P) {
    auto r16 = [](int64_t v) { return (size_t)((v + 15) & ~(int64_t)15); };
    const int64_t m = n > N ? (n > P ? n : P) : (N > P ? N : P);
    // B^T (N x n), S0^T (N x P), M (n x n), QS and Z (n x P), XW (P x n),
    // two arrays of m row pointers.
    return r16(N) * r16(n) + r16(N) * r16(P) + r16(n) * r16(n) + 2 * r16(n) * r16(P) + r16(P) * r16(n) +
           4 * r16(m) + 64;
}

enum class Isa { scalar = 0, avx2 = 1, avx512 = 2, avx512vnni = 3 };
constexpr int kIsaCount = 4;

struct Kernels {
    const char *isa = "scalar";
    VecDotFn dot[kTypeSlots] = {};
    DequantFn dequant[kTypeSlots] = {};
    QuantFn quant[kTypeSlots] = {}; // only for vec_dot types
    RoundFn round[kTypeSlots] = {}; // F16 and BF16
    GemmFn gemm[kTypeSlots] = {};   // optional: null means loop over dot (required for _X16)
    AttnScoresFn attn_scores = nullptr;
    AttnValuesFn attn_values = nullptr;
    SoftmaxFn softmax = nullptr;
    SwigluFn swiglu = nullptr;
    DeltaRowsFn delta_rows = nullptr; // optional: null means the op's portable loop
    SsmRowsFn ssm_rows = nullptr;     // optional: null means the op's portable loop
    SsmChunkFn ssm_chunk = nullptr;   // optional: null means the op's portable chunked form
    bool gemm_f32_acts[kTypeSlots] = {}; // see above
    bool bf16_chain = false; // BF16_X16's gemm follows dot_bf16_chain, not dot_bf16_pairs
    bool fp8_dp = false;     // FP8_E4M3's dot and gemm: fp8-avx512bf16.cpp's order, not fp8-scalar.cpp's
};

// The table for isa, or nullptr if this build or this CPU lacks it (never
// returns a table whose kernels the CPU cannot run). Thread-safe.
const Kernels *kernels_for(Isa isa);

// The table the public API uses: the best ISA, capped by $VT_CPU_ISA
// (scalar|avx2|avx512|avx512vnni), read once.
const Kernels &active_kernels();

// Per-ISA fillers, each defined in its own translation unit (the scalar
// one in quant-dispatch.cpp, from core/quant.h's references).
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
// FP8_E4M3 with vdpbf16ps, for CPUs that also have avx512vbmi (its byte
// permutes convert the weights): dot, gemm and FP8_X16's gemm, on the same
// tables.
void fill_fp8_avx512bf16(Kernels &k);
// The order of FP8_X16's gemm (fp8-avx512bf16.cpp), for tests: per block of
// the FP8_E4M3 row w, one vdpbf16ps step per bf16 pair from zero, then
// acc = fma(d, that, acc). Only where a table has gemm[FP8_X16].
float dot_fp8_chain(int64_t k, const void *w, const uint16_t *a);
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

} // namespace vt::quant

namespace vt {

// Row functions on the active table (what the ops use).
// Dequantizes n elements (a multiple of t's block size) of type t.
void dequantize_row(DType t, const void *src, float *dst, int64_t n);
// Quantizes/converts n f32 values to an activation type t (F32, F16, BF16,
// Q8_0, Q8_1, Q8_K).
void quantize_row(DType t, const float *src, void *dst, int64_t n);
// The fastest dot for t on this CPU (chosen once, at first use); nullptr if
// t cannot be a weight type (Q8_1, Q8_K).
VecDotFn vec_dot_fn(DType t);
// Name of the instruction set the dispatcher picked ("avx512vnni",
// "avx512", "avx2", "scalar"). $VT_CPU_ISA set to one of these names caps
// the choice (read once, at first use); a name the CPU cannot run falls
// back lower.
const char *cpu_kernel_isa();

} // namespace vt
