// Element and block types. The numeric ids are GGUF's (ggml_type), so a type
// read from a file indexes this table directly, up to kFirstOwnType: the ids
// from there on are vt's own, for checkpoint formats GGUF has no type for
// (never read from or written to a GGUF file, so they may be renumbered
// when ggml takes the id). Block layouts are in quant/blocks.h.
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
    X(IQ2_XXS, 16, 256, 66)               \
    X(IQ2_XS, 17, 256, 74)                \
    X(IQ3_XXS, 18, 256, 98)               \
    X(IQ1_S, 19, 256, 50)                 \
    X(IQ4_NL, 20, 32, 18)                 \
    X(IQ3_S, 21, 256, 110)                \
    X(IQ2_S, 22, 256, 82)                 \
    X(IQ4_XS, 23, 256, 136)               \
    X(I32, 26, 1, 4)                      \
    X(IQ1_M, 29, 256, 56)                 \
    X(BF16, 30, 1, 2)                     \
    X(TQ1_0, 34, 256, 54)                 \
    X(TQ2_0, 35, 256, 66)                 \
    X(MXFP4, 39, 32, 17)                  \
    X(NVFP4, 40, 64, 36)                  \
    X(Q1_0, 41, 128, 18)                  \
    X(Q2_0, 42, 64, 18)                   \
    /* vt's own (kFirstOwnType and on) */ \
    X(FP8_E4M3, 43, 64, 68)

enum class DType : uint32_t {
#define VT_DTYPE_ENUM_(name, id, be, bb) name = id,
    VT_DTYPE_LIST(VT_DTYPE_ENUM_)
#undef VT_DTYPE_ENUM_
};

// The first id that is vt's own, not a GGUF type (see above).
constexpr uint32_t kFirstOwnType = 43;

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
