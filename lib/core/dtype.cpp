#include "core/dtype.h"

namespace vt {

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
