// AVX2 row-lane tiles for the _X16 layouts of the 32-element block types
// (Q4_0, Q4_1, Q8_0), read in place: bit-identical to dot_legacy
// (legacy-x86.h) like the AVX-512 tiles of gemm-legacy-lanes-x86.h, with a
// 256-bit register holding 8 rows (half a group) x 4 weights. Include after
// gemm-x86.h.
//
// Two things differ from the AVX-512 tile, both for 16 registers and no
// vpdpbusd:
// - Nibble weights (0..15) against activations in -127..127 make vpmaddubsw
//   pairs of at most 3810 in size, so a block's 8 steps add up in int16
//   (at most 30480) and take one vpmaddwd per block and token, not 8.
// - The 8 f32 accumulators per token (block b goes to b % 8) stay in L1,
//   each read and written once per 8 blocks; the registers hold the step
//   sums of all tokens instead.
#pragma once

#include "core/quant/gemm-x86.h"

namespace vt::quant::x86 {
namespace {

static inline __m256i bcast32_256(const void *p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

// hsum's pairing over 8 accumulators, lane by lane (dot_legacy's final sum).
static inline __m256 hsum_order8(const __m256 a[8]) {
    return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6])),
                         _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7])));
}

template <class Ops>
struct LegacyLanes8 {
    using BW = typename Ops::BW;
    using BA = typename Ops::BA;
    using Acts = LegacyActs<Ops>;
    static constexpr int kTokens = 4;
    static constexpr int64_t kBlockElems = QK;
    static constexpr bool kNibbles = sizeof(BW::qs) == QK / 2;
    static constexpr size_t kPayload = 16 * sizeof(BW::qs), kBlock = 16 * sizeof(BW);
    static_assert(kNibbles || Ops::kOff < 0, "8-bit weights take the signed form (no vpdpbusd here)");

    // Block b's integer sums for rows 8h..8h+7 of the group and T tokens,
    // each from its correction (-kOff * sum(y)).
    template <int T>
    static inline void block_sums(const X16Loc &l, int h, const BA *const y[T], int64_t b, const int32_t *corr,
                                  int64_t nb, __m256i p[T]) {
        const __m256i ones = _mm256_set1_epi16(1);
        if constexpr (kNibbles) {
            const __m256i low4 = _mm256_set1_epi8(0x0F);
            __m256i s16[T];
            for (int t = 0; t < T; ++t) s16[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int u = 0; u < 4; ++u) { // low nibbles: step u, high: step u + 4
                const __m256i v = _mm256_loadu_si256((const __m256i *)(l.q + 64 * u + 32 * h));
                const __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
                for (int t = 0; t < T; ++t) {
                    s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(lo, bcast32_256(y[t][b].qs + 4 * u)));
                    s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(hi, bcast32_256(y[t][b].qs + 16 + 4 * u)));
                }
            }
            for (int t = 0; t < T; ++t)
                p[t] = _mm256_add_epi32(_mm256_madd_epi16(s16[t], ones), _mm256_set1_epi32(corr[t * nb + b]));
        } else {
            // Signed weights: |w| against y with w's sign (dot_ss8's form).
            for (int t = 0; t < T; ++t) p[t] = _mm256_set1_epi32(corr[t * nb + b]);
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) {
                const __m256i w = _mm256_loadu_si256((const __m256i *)(l.q + 64 * k + 32 * h));
                const __m256i aw = _mm256_sign_epi8(w, w);
                for (int t = 0; t < T; ++t) {
                    const __m256i ys = _mm256_sign_epi8(bcast32_256(y[t][b].qs + 4 * k), w);
                    p[t] = _mm256_add_epi32(p[t], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, ys), ones));
                }
            }
        }
    }

    // Halves h0..h0+H-1 of the group at pw (rows 8h..8h+7) x T tokens.
    template <int T, int H>
    static void halves(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int h0, float *out, size_t os) {
        const BA *y[T];
        for (int t = 0; t < T; ++t) y[t] = (const BA *)(acts.a + (t0 + t) * acts.as);
        const float *ad = acts.d + t0 * nb, *as = acts.s + t0 * nb;
        const int32_t *corr = acts.corr + t0 * nb;
        // Parked in L1 (see the top): 8 per token would not fit in registers.
        alignas(32) float acc[H][T][8][8] = {}, macc[H][T][Ops::kMin ? 8 : 1][8] = {};
        for (int64_t b = 0; b < nb; ++b) {
            const int j = (int)(b & 7);
            const X16Loc l = x16_locate<kBlock, kPayload>(pw, b, nb);
            for (int hh = 0; hh < H; ++hh) {
                const int h = h0 + hh;
                __m256i p[T];
                block_sums<T>(l, h, y, b, corr, nb, p);
                const __m256 wd = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(l.h + 16 * h)));
                for (int t = 0; t < T; ++t)
                    _mm256_store_ps(acc[hh][t][j],
                                    _mm256_fmadd_ps(_mm256_mul_ps(wd, _mm256_set1_ps(ad[t * nb + b])),
                                                    _mm256_cvtepi32_ps(p[t]), _mm256_load_ps(acc[hh][t][j])));
                if constexpr (Ops::kMin) {
                    const __m256 wm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(l.h + l.field + 16 * h)));
                    for (int t = 0; t < T; ++t)
                        _mm256_store_ps(macc[hh][t][j],
                                        _mm256_add_ps(_mm256_load_ps(macc[hh][t][j]),
                                                      _mm256_mul_ps(wm, _mm256_set1_ps(as[t * nb + b]))));
                }
            }
        }
        for (int hh = 0; hh < H; ++hh)
            for (int t = 0; t < T; ++t) {
                __m256 a[8];
                for (int j = 0; j < 8; ++j) a[j] = _mm256_load_ps(acc[hh][t][j]);
                __m256 s = hsum_order8(a);
                if constexpr (Ops::kMin) {
                    for (int j = 0; j < 8; ++j) a[j] = _mm256_load_ps(macc[hh][t][j]);
                    s = _mm256_add_ps(s, hsum_order8(a));
                }
                _mm256_storeu_ps(out + t * os + 8 * (h0 + hh), s);
            }
    }

    // A whole group (gemm_x16 passes nr = 16): decode takes both halves per
    // block (each weight line read once), tiles of tokens one half at a time.
    template <int T>
    static void tile(int64_t nb, const uint8_t *pw, const Acts &acts, int64_t t0, int, float *out, size_t os) {
        if constexpr (T == 1) {
            halves<1, 2>(nb, pw, acts, t0, 0, out, os);
        } else {
            halves<T, 1>(nb, pw, acts, t0, 0, out, os);
            halves<T, 1>(nb, pw, acts, t0, 1, out, os);
        }
    }
};

template <class Ops>
void gemm_legacy_x16_avx2(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt,
                          float *out, size_t os) {
    gemm_x16<LegacyLanes8<Ops>>(k, w, ws, nr, a, as, nt, out, os);
}

} // namespace
} // namespace vt::quant::x86
