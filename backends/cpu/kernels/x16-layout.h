// The CPU backend's load-time weight layouts (_X16). Not GGUF types: a
// weight in one keeps its base type in Tensor::type and says so in
// Tensor::layout (kLayoutX16), in memory of the CPU buffer type, whose
// prepare_weight hook writes it (cpu-weights.cpp). Rows of the base type are
// repacked in groups of 16, block by block (F16, BF16: 32 elements at a
// time), interleaved 4 bytes at a time (below), so that one 512-bit register
// holds 16 rows and the kernels keep one row per 32-bit lane (the AVX2 ones
// 8 rows per register, half a group). A row takes the same bytes as in the
// base type. Only matmul and embedding weights are stored so: MUL_MAT and
// GET_ROWS read them, no other op does, and no other backend.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace vt::quant {

constexpr uint32_t kLayoutX16 = 1;  // Tensor::layout of a weight in an _X16 layout

// The kernel tables (kernels.h) have one slot per type id (all below 44:
// FP8_E4M3 is 43) and, after them, one per _X16 layout.
constexpr int kX16Slot0 = 44;
constexpr int x16_slot(DType base) {
    switch (base) {
    case DType::Q4_0: return kX16Slot0 + 0;
    case DType::Q4_1: return kX16Slot0 + 1;
    case DType::Q8_0: return kX16Slot0 + 2;
    case DType::Q4_K: return kX16Slot0 + 3;
    case DType::BF16: return kX16Slot0 + 4;
    case DType::F16: return kX16Slot0 + 5;
    case DType::Q6_K: return kX16Slot0 + 6;
    case DType::Q5_0: return kX16Slot0 + 7;
    case DType::Q5_1: return kX16Slot0 + 8;
    case DType::MXFP4: return kX16Slot0 + 9;
    case DType::IQ4_NL: return kX16Slot0 + 10;
    case DType::IQ4_XS: return kX16Slot0 + 11;
    case DType::NVFP4: return kX16Slot0 + 12;
    case DType::Q1_0: return kX16Slot0 + 13;
    case DType::TQ2_0: return kX16Slot0 + 14;
    case DType::TQ1_0: return kX16Slot0 + 15;
    case DType::Q2_0: return kX16Slot0 + 16;
    case DType::FP8_E4M3: return kX16Slot0 + 17;
    default: return -1;  // no _X16 layout
    }
}
constexpr int kTypeSlots = kX16Slot0 + 18;

// The bytes of a group: rows 16g..16g+15 of a Q4_0, Q4_1,
// Q5_0, Q5_1, Q8_0, MXFP4, IQ4_NL, IQ4_XS, NVFP4, Q1_0, Q2_0, TQ1_0, TQ2_0, Q4_K, Q6_K, FP8_E4M3, F16 or BF16 matrix, block column b, take 16
// times the base block's bytes (F16, BF16: blocks of 32 elements without a header).
// First the 16 rows' payload (everything but the f16 header: quants, and the
// K quants' scales; F16/BF16: the elements, a pair per dword; Q6_K: its
// scales, then per half h and l = 4j the dwords of ql at l and 32 + l and of
// qh at l, in the order one step of the kernels reads them; Q5_0, Q5_1: their
// qh dword sliced by step, byte i holding qh's bit 4k + i, the fifth bit of
// element 4k + i, as its bit k; Q2_0: each qs dword's 2-bit fields
// transposed 4 x 4, byte i holding field i of the dword's bytes 0..3, so
// that step k's 4 codes per row are one shift and a mask away (repack.cpp)),
// 4 bytes at a time
// (dword u of row r at byte 64u + 4r), then the 16 rows' d (f16), for Q4_1,
// Q5_1 and Q4_K the 16 rows' m / dmin; MXFP4: its e8m0 exponent is the
// header, one byte per row (16 bytes for the group); NVFP4's four UE4M3 bytes are
// four one-byte fields; FP8_E4M3's header is its f32 scale (64 bytes for the
// group, one 512-bit load). Blocks go in pairs, both payloads first,
// then both d, then both m, which keeps every payload 64-byte aligned. X16At
// gives the offsets (repack.cpp and the kernels both use it).
struct X16At {
    size_t q;     // block b's payload, from the group's start
    size_t h;     // its first header field (16 x f16)
    size_t field; // bytes from one header field to the next
};
// field_bytes: the size of one row's header field (2: f16; MXFP4's e and
// NVFP4's scales: 1; FP8_E4M3's d: 4).
static inline X16At x16_at(size_t block_bytes, size_t payload_bytes, int64_t b, int64_t nb, size_t field_bytes = 2) {
    const size_t pair = (size_t)(b & ~(int64_t)1) * 16 * block_bytes, odd = (size_t)(b & 1);
    const size_t n = (b + 1 < nb || odd) ? 2 : 1; // blocks in this pair
    const size_t f = 16 * field_bytes;             // one field of the 16 rows
    return {pair + odd * 16 * payload_bytes, pair + n * 16 * payload_bytes + odd * f, n * f};
}

} // namespace vt::quant
