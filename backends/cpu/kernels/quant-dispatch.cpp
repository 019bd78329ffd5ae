// Run-time selection of the CPU kernels (kernels.h).
//
// The tables are built once, on first use, by a thread-safe function-local
// static: scalar first, then each ISA the CPU supports layered on a copy of
// the one below. A kernel of an ISA is only ever reachable through a table
// whose CPU features were checked with __builtin_cpu_supports (which also
// checks that the OS saves the YMM/ZMM state).
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cpu/kernels/kernels.h"

namespace vt {
namespace quant {

namespace {
template <uint16_t (*To)(float), float (*From)(uint16_t)>
void round_scalar(const float *x, float *out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = From(To(x[i]));
}
} // namespace

void fill_scalar(Kernels &k) {
    k.isa = "scalar";
#define VT_DTYPE_SCALAR_(name, id, be, bb)              \
    k.dot[id] = ref::row_kernels(DType::name).dot;      \
    k.dequant[id] = ref::row_kernels(DType::name).dequant; \
    k.quant[id] = ref::row_kernels(DType::name).quant;
    VT_DTYPE_LIST(VT_DTYPE_SCALAR_)
#undef VT_DTYPE_SCALAR_
    k.attn_scores = ref::attn_scores;
    k.attn_values = ref::attn_values;
    k.softmax = ref::softmax_row;
    k.swiglu = ref::swiglu_row;
    k.round[(int)DType::F16] = round_scalar<f32_to_fp16, fp16_to_f32>;
    k.round[(int)DType::BF16] = round_scalar<f32_to_bf16, bf16_to_f32>;
}

namespace {

#if defined(__x86_64__)
// CPUID.1:ECX bit 29. Clang up to 15 has no "f16c" in __builtin_cpu_supports;
// the OS-saves-YMM part is covered by the "avx2" check it goes with.
bool cpu_has_f16c() {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29));
}
#endif

struct Tables {
    Kernels k[kIsaCount];
    bool ok[kIsaCount] = {};
};

const Tables &tables() {
    static const Tables t = [] {
        Tables t;
        fill_scalar(t.k[0]);
        t.ok[0] = true;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        __builtin_cpu_init();
        const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
        const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("bmi2");
        const bool vnni = avx512 && __builtin_cpu_supports("avx512vnni");
        if (avx2) {
            t.k[1] = t.k[0];
            fill_avx2(t.k[1]);
            fill_gemm_avx2(t.k[1]);
            t.ok[1] = true;
        }
        if (avx512) {
            t.k[2] = t.k[1];
            fill_avx512(t.k[2]);
            fill_gemm_avx512(t.k[2]);
            t.ok[2] = true;
        }
        if (vnni) {
            t.k[3] = t.k[2];
            fill_avx512vnni(t.k[3]);
            fill_gemm_avx512vnni(t.k[3]);
            t.ok[3] = true;
        }
        if (avx512 && __builtin_cpu_supports("avx512bf16")) {
            const bool vbmi = __builtin_cpu_supports("avx512vbmi");
            for (int i = 2; i < kIsaCount; ++i)
                if (t.ok[i]) {
                    fill_avx512bf16(t.k[i]);
                    fill_gemm_avx512bf16(t.k[i]);
                    if (vbmi) fill_fp8_avx512bf16(t.k[i]);
                }
        }
#endif
        return t;
    }();
    return t;
}

// The highest ISA allowed by $VT_CPU_ISA (unset or unknown: no cap).
int isa_cap() {
    const char *e = std::getenv("VT_CPU_ISA");
    if (!e) return kIsaCount - 1;
    static const char *names[kIsaCount] = {"scalar", "avx2", "avx512", "avx512vnni"};
    for (int i = 0; i < kIsaCount; ++i)
        if (std::strcmp(e, names[i]) == 0) return i;
    return kIsaCount - 1;
}

const Kernels &require(const Kernels &k, DType t, bool ok, const char *what) {
    if (!ok) throw std::invalid_argument(std::string("quant: no ") + what + " for type " +
                                         std::to_string((uint32_t)t));
    return k;
}

inline bool slot_ok(DType t) { return (uint32_t)t < (uint32_t)kX16Slot0; } // type slots, not layouts

} // namespace

const Kernels *kernels_for(Isa isa) {
    const int i = (int)isa;
    if (i < 0 || i >= kIsaCount) return nullptr;
    const Tables &t = tables();
    return t.ok[i] ? &t.k[i] : nullptr;
}

const Kernels &active_kernels() {
    static const Kernels *k = [] {
        const Tables &t = tables();
        int i = isa_cap();
        while (!t.ok[i]) --i;
        return &t.k[i];
    }();
    return *k;
}

} // namespace quant

void dequantize_row(DType t, const void *src, float *dst, int64_t n) {
    const quant::Kernels &k = quant::active_kernels();
    quant::require(k, t, quant::slot_ok(t) && k.dequant[(int)t], "dequantizer").dequant[(int)t](src, dst, n);
}

void quantize_row(DType t, const float *src, void *dst, int64_t n) {
    const quant::Kernels &k = quant::active_kernels();
    quant::require(k, t, quant::slot_ok(t) && k.quant[(int)t], "quantizer").quant[(int)t](src, dst, n);
}

VecDotFn vec_dot_fn(DType t) {
    return quant::slot_ok(t) ? quant::active_kernels().dot[(int)t] : nullptr;
}

const char *cpu_kernel_isa() { return quant::active_kernels().isa; }

} // namespace vt
