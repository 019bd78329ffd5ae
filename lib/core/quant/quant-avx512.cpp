// AVX-512 kernels (F, BW, VL). This one source is compiled twice, into two
// archives: plain (-mavx512f -mavx512bw -mavx512vl) and with VT_QUANT_VNNI
// (+ -mavx512vnni), because GCC may turn madd+add into vpdpwssd on its own
// when VNNI is enabled, so VNNI-free kernels must come from a VNNI-free build.
#include "core/quant/blocks.h"
#include "core/quant/kernels.h"
#include "core/quant/simd-x86.h"

namespace vt::quant {
namespace {

} // namespace

#if defined(VT_QUANT_VNNI)
void fill_avx512vnni(Kernels &k) { k.isa = "avx512vnni"; }
#else
void fill_avx512(Kernels &k) { k.isa = "avx512"; }
#endif

} // namespace vt::quant
