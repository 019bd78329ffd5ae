// AVX2 dots of NVFP4, Q1_0 and Q2_0 with Q8_0 activations (built with
// -mavx2 -mfma -mf16c), in the canonical order of lowbit-scalar.cpp through
// lowbit-x86.h's drivers, bit-identical to it: 8 groups' exact integer sums
// in one vector (dot_ss8 per 32 elements, then one hadd tree).
#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/lowbit-x86.h"

namespace vt::quant {
namespace {
using namespace x86;

struct Nvfp4Avx2 {
    // p_k holds Q8_0 block k's two sub-blocks in its halves; two rounds of
    // hadd leave sub-block 2k in lane k and 2k + 1 in lane 4 + k.
    static inline __m256i isum8(const BlockNVFP4 &x0, const BlockNVFP4 &x1, const BlockQ8_0 *ya) {
        __m256i p[4];
        for (int k = 0; k < 4; ++k) p[k] = dot_ss8(nvfp4_values32((k < 2 ? x0 : x1).qs + 16 * (k % 2)), load256(ya[k].qs));
        return _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    }
};

template <class B, int QKB, __m256i (*Values32)(const uint8_t *)>
struct SignedAvx2 {
    static inline __m256i isum8(const B *x, const BlockQ8_0 *y, int64_t g) {
        constexpr int kPer = QKB / QK, kBytes = (int)sizeof(B::qs) / kPer;
        __m256i p[8];
        for (int k = 0; k < 8; ++k)
            p[k] = dot_ss8(Values32(x[(g + k) / kPer].qs + kBytes * ((g + k) % kPer)), load256(y[g + k].qs));
        return reduce8_epi32(p);
    }
};

} // namespace

void avx2_fill_lowbit(Kernels &k) {
    k.dot[(int)DType::NVFP4] = dot_nvfp4<Nvfp4Avx2>;
    k.dot[(int)DType::Q1_0] = dot_signed<BlockQ1_0, 128, SignedAvx2<BlockQ1_0, 128, q1_0_values32>, q1_0_values32>;
    k.dot[(int)DType::Q2_0] = dot_signed<BlockQ2_0, 64, SignedAvx2<BlockQ2_0, 64, q2_0_values32>, q2_0_values32>;
}

} // namespace vt::quant
