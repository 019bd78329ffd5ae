// Element and block types. The numeric ids are GGUF's (ggml_type), so a type
// read from a file indexes this table directly. Block layouts are in quant.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace vt {

#define VT_DTYPE_LIST(X)                  \
    /* name, ggml id, block elems, block bytes */ \
    X(F32, 0, 1, 4)                       \
    X(F16, 1, 1, 2)                       \
    X(Q4_0, 2, 32, 18)                    \
    X(Q4_1, 3, 32, 20)                    \
    X(Q5_0, 6, 32, 22)                    \
    X(Q5_1, 7, 32, 24)                    \
    X(Q8_0, 8, 32, 34)                    \
    X(Q8_1, 9, 32, 36)                    \
    X(Q2_K, 10, 256, 84)                  \
    X(Q3_K, 11, 256, 110)                 \
    X(Q4_K, 12, 256, 144)                 \
    X(Q5_K, 13, 256, 176)                 \
    X(Q6_K, 14, 256, 210)                 \
    X(Q8_K, 15, 256, 292)                 \
    X(I32, 26, 1, 4)                      \
    X(BF16, 30, 1, 2)                     \
    X(Q4_0_X16, 31, 32, 18)               \
    X(Q4_1_X16, 32, 32, 20)               \
    X(Q8_0_X16, 33, 32, 34)               \
    X(Q4_K_X16, 36, 256, 144)              \
    X(BF16_X16, 37, 1, 2)                 \
    X(F16_X16, 38, 1, 2)                  \
    X(Q6_K_X16, 40, 256, 210)             \
    X(Q5_0_X16, 41, 32, 22)               \
    X(Q5_1_X16, 42, 32, 24)

// The _X16 types are vt's own layouts, not GGUF types (31..33 and 36..38
// were ggml's long-removed Q4_0_4_4, Q4_0_4_8, Q4_0_8_8, IQ4_NL_4_4,
// IQ4_NL_4_8 and IQ4_NL_8_8, and 40..42 are past ggml's last type, MXFP4 =
// 39; the GGUF reader refuses them all; being internal, they may be
// renumbered should ggml take those): rows of the
// base type repacked at load in groups of 16, block by block (F16, BF16: 32
// elements at a time), interleaved 4 bytes at a time (quant/blocks.h), so
// that one 512-bit register holds 16 rows and the kernels keep one row per
// 32-bit lane (the AVX2 ones 8 rows per register, half a group). A row takes
// the same bytes as in the base type. Only matmul and embedding weights are
// stored so (Model::matmul_weight): MUL_MAT and GET_ROWS read them, no other
// op does.

enum class DType : uint32_t {
#define VT_DTYPE_ENUM_(name, id, be, bb) name = id,
    VT_DTYPE_LIST(VT_DTYPE_ENUM_)
#undef VT_DTYPE_ENUM_
};

// The row type an _X16 layout was repacked from; t itself for any other type.
constexpr DType x16_base(DType t) {
    switch (t) {
    case DType::Q4_0_X16: return DType::Q4_0;
    case DType::Q4_1_X16: return DType::Q4_1;
    case DType::Q8_0_X16: return DType::Q8_0;
    case DType::Q4_K_X16: return DType::Q4_K;
    case DType::BF16_X16: return DType::BF16;
    case DType::F16_X16: return DType::F16;
    case DType::Q6_K_X16: return DType::Q6_K;
    case DType::Q5_0_X16: return DType::Q5_0;
    case DType::Q5_1_X16: return DType::Q5_1;
    default: return t;
    }
}
// Whether the type id is a load-time layout (never found in a file).
constexpr bool is_x16(uint32_t id) { return x16_base((DType)id) != (DType)id; }
// The _X16 layout of a row type, or F32 where it has none (from x16_base,
// over every type of the list).
constexpr DType x16_of(DType base) {
#define VT_DTYPE_X16_OF_(name, id, be, bb) \
    if (DType::name != base && x16_base(DType::name) == base) return DType::name;
    VT_DTYPE_LIST(VT_DTYPE_X16_OF_)
#undef VT_DTYPE_X16_OF_
    return DType::F32;
}

struct DTypeInfo {
    const char *name;     // "Q4_K"
    int64_t block_elems;  // elements per block (1 for plain floats)
    size_t block_bytes;   // bytes per block
};

// Info for a GGUF type id, or nullptr if vt does not know the type.
const DTypeInfo *dtype_info(uint32_t ggml_id);
inline const DTypeInfo &dtype_info(DType t) { return *dtype_info((uint32_t)t); }
inline const char *dtype_name(DType t) { return dtype_info(t).name; }

// Bytes of a row of n elements; n must be a multiple of the block size.
inline size_t row_bytes(DType t, int64_t n) {
    const DTypeInfo &i = dtype_info(t);
    return (size_t)(n / i.block_elems) * i.block_bytes;
}

} // namespace vt
