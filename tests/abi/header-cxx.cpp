// The public headers as C++ (built as C++11 and C++20 by meson): extern "C"
// linkage, no C-only constructs. Calls go to the C symbols of libvt.
#include "vt/vt.h"
#include "vt/vt_chat.h"
#include "vt/vt_common.h"
#include "vt/vt_context.h"
#include "vt/vt_model.h"
#include "vt/vt_sampler.h"
#include "vt/vt_tokenizer.h"

#ifndef VT_ABI_CXX_TAG
#error "VT_ABI_CXX_TAG must name this translation unit"
#endif
#define VT_ABI_CAT2_(a, b) a##b
#define VT_ABI_CAT_(a, b) VT_ABI_CAT2_(a, b)

extern "C" int VT_ABI_CAT_(vt_abi_cxx_, VT_ABI_CXX_TAG)(void);

extern "C" int VT_ABI_CAT_(vt_abi_cxx_, VT_ABI_CXX_TAG)(void) {
    vt_model_params mp;
    vt_model_params_init_v2(&mp, sizeof mp);
    if (mp.struct_size != sizeof(vt_model_params) || mp.quantize != VT_QUANT_NONE) return 1;
    if ((vt_abi_version() >> 16) != VT_ABI_MAJOR) return 2;
    vt_sampler *s = nullptr;
    if (vt_sampler_create(&s) != VT_OK) return 3;
    vt_sampler_destroy(s);
    return 0;
}
