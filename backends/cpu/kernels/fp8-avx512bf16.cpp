// FP8_E4M3 weights times bf16 activations with vdpbf16ps, for CPUs with
// avx512bf16 and avx512vbmi (Zen 4 and 5, Sapphire Rapids and later; Cooper
// Lake has the first without the second, and keeps fp8-x86.h's kernels).
//
// An e4m3 value is exact in bf16 (3 mantissa bits of 7; exponents 2^-9 to
// 2^8, subnormals included, are bf16 normals), so a block's 64 bytes become
// two registers of 32 bf16 by byte lookups: the 7 magnitude bits index two
// 128-entry tables (vpermt2b) for the high and the low byte, the sign joins
// the high byte, and two more vpermt2b interleave the bytes in element
// order. Two vdpbf16ps multiply them with the activations (the products are
// exact in f32) and the block's scale multiplies their sum. Per (row, token)
// the order is this table's own (Kernels::fp8_dp), the dot's and the gemm's:
//     per block b:  s = dp(dp(0, w[0..31], x[0..31]), w[32..63], x[32..63])
//                   acc = fma(d_b, s, acc)
// then _mm512_reduce_add_ps(acc). Bf16 activations below 2^-126 count as
// zero (the instruction flushes them), as for BF16 weights.
//
// Where fp8-x86.h spends about 20 operations on a block (widening to f16,
// vcvtph2ps, six FMAs on f32 lanes), this is 5 byte permutes, 2 vdpbf16ps
// and one FMA (perf-matmul, weights in L2: decode 1.8x, prefill 2x).
//
// FP8_X16 (x16-layout.h, repacked at load) keeps one row per 32-bit lane
// instead: a 512-bit load holds 4 elements of 16 rows, the same lookups
// make two registers of one bf16 pair per row each, and a token's pair is
// broadcast against them (vdpbf16ps), so no (row, token) sum is reduced
// across lanes, the 16 rows' block scales are one load and one FMA, and the
// weights stream as one aligned sequence. Its order per (row, token): per
// block, one vdpbf16ps chain over the block's 32 pairs from zero, then
// acc = fma(d_b, chain, acc) (dot_fp8_chain, which the tests compare
// against).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/quant/blocks.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/simd-x86.h"
#include "cpu/kernels/gemm-pairs-x86.h"
#include "cpu/kernels/x16-layout.h"

namespace vt::quant {
namespace {
using namespace x86;

// The bf16 bits of the e4m3 magnitude v (7 bits: exponent, mantissa).
constexpr uint16_t e4m3_bf16(int v) {
    const int e = v >> 3, m = v & 7;
    if (e != 0) return (uint16_t)((e - 7 + 127) << 7 | m << 4);
    if (m == 0) return 0;
    const int top = m >= 4 ? 2 : m >= 2 ? 1 : 0;  // m 2^-9 = 1.f 2^(top - 9)
    return (uint16_t)((top - 9 + 127) << 7 | (m - (1 << top)) << (7 - top));
}

// The bf16 bits of the e4m3 byte q (what ToBf16 computes, one at a time).
constexpr uint16_t bf16_of(uint8_t q) { return (uint16_t)(e4m3_bf16(q & 0x7F) | (q & 0x80) << 8); }

struct Tables {
    alignas(64) uint8_t hi[128];
    alignas(64) uint8_t lo[128];
    alignas(64) uint8_t first[64];   // bytes of bf16 elements 0..31: lo[j], hi[j]
    alignas(64) uint8_t second[64];  // elements 32..63
    alignas(64) uint8_t pair01[64];  // FP8_X16: each dword's bytes 0, 1 (a row's elements 4u, 4u + 1) as bf16
    alignas(64) uint8_t pair23[64];  // bytes 2, 3
};

constexpr Tables make_tables() {
    Tables t{};
    for (int v = 0; v < 128; ++v) {
        t.hi[v] = (uint8_t)(e4m3_bf16(v) >> 8);
        t.lo[v] = (uint8_t)(e4m3_bf16(v) & 0xFF);
    }
    for (int j = 0; j < 32; ++j) {  // vpermt2b: index bit 6 picks the second source (hi)
        t.first[2 * j] = (uint8_t)j;
        t.first[2 * j + 1] = (uint8_t)(64 + j);
        t.second[2 * j] = (uint8_t)(32 + j);
        t.second[2 * j + 1] = (uint8_t)(96 + j);
    }
    for (int r = 0; r < 16; ++r)  // lane r: lo, hi of byte 4r + e, then of 4r + e + 1
        for (int e = 0; e < 2; ++e) {
            t.pair01[4 * r + 2 * e] = (uint8_t)(4 * r + e);
            t.pair01[4 * r + 2 * e + 1] = (uint8_t)(64 + 4 * r + e);
            t.pair23[4 * r + 2 * e] = (uint8_t)(4 * r + 2 + e);
            t.pair23[4 * r + 2 * e + 1] = (uint8_t)(64 + 4 * r + 2 + e);
        }
    return t;
}
constexpr Tables kTables = make_tables();
static_assert(e4m3_bf16(0x7E) == 0x43E0);  // 448, the largest finite e4m3
static_assert(e4m3_bf16(0x01) == 0x3B00);  // 2^-9, the smallest subnormal

// The conversion's constants, held in registers across a loop. Row-major
// blocks interleave the bytes into elements 0..31 and 32..63 (first,
// second); FP8_X16 into each row's pairs (pair01, pair23).
struct ToBf16 {
    __m512i hi0, hi1, lo0, lo1, first, second, sign;
    explicit ToBf16(bool x16 = false)
        : hi0(_mm512_load_si512(kTables.hi)), hi1(_mm512_load_si512(kTables.hi + 64)),
          lo0(_mm512_load_si512(kTables.lo)), lo1(_mm512_load_si512(kTables.lo + 64)),
          first(_mm512_load_si512(x16 ? kTables.pair01 : kTables.first)),
          second(_mm512_load_si512(x16 ? kTables.pair23 : kTables.second)), sign(_mm512_set1_epi8((char)0x80)) {}
    // 64 e4m3 bytes as two registers of 32 bf16 (see above).
    inline void operator()(const uint8_t *q, __m512i &w0, __m512i &w1) const {
        const __m512i b = _mm512_loadu_si512(q);
        const __m512i lo = _mm512_permutex2var_epi8(lo0, b, lo1);  // index bit 7, the sign, is ignored
        const __m512i hi = _mm512_ternarylogic_epi32(_mm512_permutex2var_epi8(hi0, b, hi1), b, sign, 0xF8);  // hi | (b & 0x80)
        w0 = _mm512_permutex2var_epi8(lo, first, hi);
        w1 = _mm512_permutex2var_epi8(lo, second, hi);
    }
};

static inline float block_scale(const uint8_t *block) {
    float d;  // rows start at any 2-byte offset in tests: no aligned float read
    std::memcpy(&d, block, 4);
    return d;
}

// A tile's weights: converted from the blocks where they are used (the dot,
// the gemm below 4 tokens), or read from rows converted once into bf16 (the
// gemm: each converted value serves every token of the tile).
struct FromBlocks {
    const uint8_t *w;
    size_t ws;
    const ToBf16 &cv;
    void get(int r, int64_t b, __m512i &w0, __m512i &w1) const {
        cv(((const BlockFP8 *)(w + r * ws))[b].q, w0, w1);
    }
    float d(int r, int64_t b) const { return block_scale((const uint8_t *)&((const BlockFP8 *)(w + r * ws))[b]); }
};
struct FromConverted {
    const uint16_t *h0;  // row r's bf16 values at h0 + r * hs
    const float *d0;     // row r's block scales at d0 + r * ds
    int64_t hs, ds;
    void get(int r, int64_t b, __m512i &w0, __m512i &w1) const {
        w0 = _mm512_loadu_si512(h0 + r * hs + 64 * b);
        w1 = _mm512_loadu_si512(h0 + r * hs + 64 * b + 32);
    }
    float d(int r, int64_t b) const { return d0[r * ds + b]; }
};

// out[t * os + r] for R rows and T bf16 activation rows of a (stride in
// bytes), nb blocks each, in the order above.
template <int R, int T, class W>
static inline void tile(const W &wt, int64_t nb, const uint8_t *a, size_t as, float *out, size_t os) {
    __m512 acc[R][T];
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
        __m512i w0[R], w1[R];
        __m512 d[R];
        for (int r = 0; r < R; ++r) {
            wt.get(r, b, w0[r], w1[r]);
            d[r] = _mm512_set1_ps(wt.d(r, b));
        }
        for (int t = 0; t < T; ++t) {
            const uint16_t *x = (const uint16_t *)(a + t * as) + 64 * b;
            const __m512bh x0 = (__m512bh)_mm512_loadu_si512(x), x1 = (__m512bh)_mm512_loadu_si512(x + 32);
            for (int r = 0; r < R; ++r) {
                const __m512 s = _mm512_dpbf16_ps(_mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)w0[r], x0),
                                                  (__m512bh)w1[r], x1);
                acc[r][t] = _mm512_fmadd_ps(d[r], s, acc[r][t]);
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) out[t * os + r] = _mm512_reduce_add_ps(acc[r][t]);
}

float fp8_dot_dp(int64_t n, const void *w, const void *a) {
    const ToBf16 cv;
    float out;
    tile<1, 1>(FromBlocks{(const uint8_t *)w, 0, cv}, n / 64, (const uint8_t *)a, 0, &out, 0);
    return out;
}

// kernels.h's GemmFn: below 4 tokens each row streams from its blocks as
// in the dot; else each group of R rows is converted once per block of
// tokens into bf16 (a thread's buffer, 2 bytes a weight where f32 would take
// 4) and R x T tiles read it with the tokens.
template <int R, int T>
void fp8_gemm_dp(int64_t k, const void *wv, size_t ws, int64_t nr, const void *av, size_t as, int64_t nt, float *out,
                 size_t os) {
    constexpr int64_t kTokenBlock = 48, kConvertMinTokens = 4;
    const uint8_t *w = (const uint8_t *)wv, *a = (const uint8_t *)av;
    const int64_t nb = k / 64;
    const ToBf16 cv;
    if (nt < kConvertMinTokens) {
        for (int64_t r = 0; r < nr; ++r)
            for (int64_t t = 0; t < nt; ++t)
                tile<1, 1>(FromBlocks{w + r * ws, 0, cv}, nb, a + t * as, as, out + t * os + r, os);
        return;
    }
    thread_local std::vector<Line> buf;
    uint16_t *h0 = (uint16_t *)scratch(buf, (size_t)R * (2 * (size_t)k + 4 * (size_t)nb));
    float *d0 = (float *)(h0 + R * k);  // k is a multiple of 64: d0 stays 4-byte aligned
    for (int64_t t0 = 0; t0 < nt; t0 += kTokenBlock) {
        const int64_t t1 = std::min(nt, t0 + kTokenBlock);
        for (int64_t r = 0; r < nr; r += R) {
            const int rows = (int)std::min<int64_t>(R, nr - r);
            for (int i = 0; i < rows; ++i) {
                const FromBlocks src{w + (r + i) * ws, 0, cv};
                for (int64_t b = 0; b < nb; ++b) {
                    __m512i w0, w1;
                    src.get(0, b, w0, w1);
                    _mm512_storeu_si512(h0 + i * k + 64 * b, w0);
                    _mm512_storeu_si512(h0 + i * k + 64 * b + 32, w1);
                    d0[i * nb + b] = src.d(0, b);
                }
            }
            if (rows == R) {
                const FromConverted cw{h0, d0, k, nb};
                int64_t t = t0;
                for (; t + T <= t1; t += T) tile<R, T>(cw, nb, a + t * as, as, out + t * os + r, os);
                for (; t < t1; ++t) tile<R, 1>(cw, nb, a + t * as, as, out + t * os + r, os);
            } else {  // the slice's last rows
                for (int i = 0; i < rows; ++i) {
                    const FromConverted one{h0 + i * k, d0 + i * nb, k, nb};
                    for (int64_t t = t0; t < t1; ++t) tile<1, 1>(one, nb, a + t * as, as, out + t * os + r + i, os);
                }
            }
        }
    }
}

// FP8_X16's tile for gemm-pairs-x86.h's driver (which hands it the row's
// bf16 pair count np = 32 per block): G groups of 16 rows x T tokens,
// out[t * os + 16 g + r]; y[t]: token t's bf16 pairs as dwords. The decode
// takes several groups at a time, which share each token's broadcasts
// (perf-matmul 64 x 8192, 1 thread, weights in L2: 1 group 26 GB/s, 2
// groups 35, 4 groups 37.6); more tokens take one group and 8 tokens (the
// registers: a chain and an accumulator per group and token).
template <int MaxGroups, int MaxTokens>
struct Fp8Pairs {
    static constexpr int kGroups = MaxGroups, kTokens = MaxTokens;
    template <int G, int T>
    static void run(int64_t np, const uint8_t *w, size_t gs, const uint32_t *const *y, float *out, size_t os) {
        const int64_t nb = np / 32;
        const ToBf16 cv(true);
        __m512 acc[G][T];
        for (int g = 0; g < G; ++g)
            for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const X16At at = x16_at(sizeof(BlockFP8), 64, b, nb, 4);
            __m512 chain[G][T];
            for (int g = 0; g < G; ++g)
                for (int t = 0; t < T; ++t) chain[g][t] = _mm512_setzero_ps();
            for (int u = 0; u < 16; ++u) {  // elements 4u..4u+3 of the block: pairs 2u, 2u + 1
                __m512i p0[G], p1[G];
                if constexpr (T <= 2)
                    for (int g = 0; g < G; ++g)
                        _mm_prefetch((const char *)(w + g * gs + at.q + 64 * u + kPairPrefetchBytes), _MM_HINT_T0);
                for (int g = 0; g < G; ++g) cv(w + g * gs + at.q + 64 * u, p0[g], p1[g]);
                for (int t = 0; t < T; ++t) {
                    const __m512bh y0 = (__m512bh)_mm512_set1_epi32((int)y[t][32 * b + 2 * u]);
                    const __m512bh y1 = (__m512bh)_mm512_set1_epi32((int)y[t][32 * b + 2 * u + 1]);
                    for (int g = 0; g < G; ++g)
                        chain[g][t] = _mm512_dpbf16_ps(_mm512_dpbf16_ps(chain[g][t], (__m512bh)p0[g], y0),
                                                       (__m512bh)p1[g], y1);
                }
            }
            for (int g = 0; g < G; ++g) {
                const __m512 d = _mm512_loadu_ps(w + g * gs + at.h);  // the 16 rows' scales
                for (int t = 0; t < T; ++t) acc[g][t] = _mm512_fmadd_ps(d, chain[g][t], acc[g][t]);
            }
        }
        for (int t = 0; t < T; ++t)
            for (int g = 0; g < G; ++g) _mm512_storeu_ps(out + t * os + 16 * g, acc[g][t]);
    }
};

// kernels.h's GemmFn for FP8_X16 (whole groups of 16 rows, any nt).
void fp8_x16_gemm(int64_t k, const void *w, size_t ws, int64_t nr, const void *a, size_t as, int64_t nt, float *out,
                  size_t os) {
    if (nt == 1) return gemm_pairs_x16<Fp8Pairs<4, 1>>(k, w, ws, nr, a, as, nt, out, os);
    if (nt <= 3) return gemm_pairs_x16<Fp8Pairs<2, 3>>(k, w, ws, nr, a, as, nt, out, os);
    gemm_pairs_x16<Fp8Pairs<1, 8>>(k, w, ws, nr, a, as, nt, out, os);
}

} // namespace

float dot_fp8_chain(int64_t k, const void *w, const uint16_t *a) {
    const BlockFP8 *x = (const BlockFP8 *)w;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < k / 64; ++b) {
        __m512 chain = _mm512_setzero_ps();
        for (int p = 0; p < 32; ++p) {
            uint32_t wp, ap;
            const uint16_t pair[2] = {bf16_of(x[b].q[2 * p]), bf16_of(x[b].q[2 * p + 1])};
            std::memcpy(&wp, pair, 4);
            std::memcpy(&ap, a + 64 * b + 2 * p, 4);
            chain = _mm512_dpbf16_ps(chain, (__m512bh)_mm512_set1_epi32((int)wp), (__m512bh)_mm512_set1_epi32((int)ap));
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(block_scale((const uint8_t *)&x[b])), chain, acc);
    }
    return _mm512_cvtss_f32(acc);
}

void fill_fp8_avx512bf16(Kernels &k) {
    k.dot[(int)DType::FP8_E4M3] = fp8_dot_dp;
    k.gemm[(int)DType::FP8_E4M3] = fp8_gemm_dp<2, 6>;
    k.gemm_f32_acts[(int)DType::FP8_E4M3] = false;  // bf16 rows, as the dot reads them
    k.gemm[x16_slot(DType::FP8_E4M3)] = fp8_x16_gemm;
    k.fp8_dp = true;
}

} // namespace vt::quant
