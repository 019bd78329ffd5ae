#include "core/dtype.h"

namespace vt {

// x16_of inverts x16_base, and types without a layout map to F32.
static_assert(x16_of(DType::Q4_0) == DType::Q4_0_X16 && x16_of(DType::Q4_K) == DType::Q4_K_X16 &&
              x16_of(DType::F16) == DType::F16_X16 && x16_of(DType::BF16) == DType::BF16_X16 &&
              x16_of(DType::Q6_K) == DType::Q6_K_X16 && x16_of(DType::Q5_0) == DType::Q5_0_X16 &&
              x16_of(DType::Q5_K) == DType::F32 &&
              x16_of(DType::Q4_0_X16) == DType::F32);

const DTypeInfo *dtype_info(uint32_t ggml_id) {
    switch (ggml_id) {
#define VT_DTYPE_CASE_(name, id, be, bb)              \
    case id: {                                        \
        static const DTypeInfo info{#name, be, bb};   \
        return &info;                                 \
    }
        VT_DTYPE_LIST(VT_DTYPE_CASE_)
#undef VT_DTYPE_CASE_
    default: return nullptr;
    }
}

} // namespace vt
