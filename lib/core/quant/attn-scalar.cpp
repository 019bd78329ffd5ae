// Scalar reference of the attention products (core/quant.h): one FMA chain
// per output in index order, which the SIMD tables reproduce lane by lane.
#include <cmath>

#include "core/quant.h"

namespace vt::ref {

void attn_scores(const float *qf, int64_t nq, int64_t hd, const uint16_t *const *kt, const int64_t *nk,
                 int64_t n_runs, size_t kts, float *sc, size_t scs) {
    int64_t c = 0;
    for (int64_t r = 0; r < n_runs; ++r)
        for (int64_t j = 0; j < nk[r]; ++j, ++c)
            for (int64_t i = 0; i < nq; ++i) {
                float s = 0.f;
                for (int64_t d = 0; d < hd; ++d) s = std::fma(qf[i * hd + d], fp16_to_f32(kt[r][d * kts + j]), s);
                sc[i * scs + c] = s;
            }
}

void attn_values(const float *pf, size_t ps, int64_t nq, int64_t n_keys, const uint16_t *v, size_t vs, int64_t hd,
                 float *const *out, bool accumulate) {
    for (int64_t i = 0; i < nq; ++i)
        for (int64_t d = 0; d < hd; ++d) {
            float o = accumulate ? out[i][d] : 0.f;
            for (int64_t j = 0; j < n_keys; ++j) o = std::fma(pf[i * ps + j], fp16_to_f32(v[j * vs + d]), o);
            out[i][d] = o;
        }
}
} // namespace vt::ref
