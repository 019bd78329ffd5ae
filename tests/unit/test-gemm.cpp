// Multi-token gemm tiles (Kernels::gemm): every output bit-identical to the
// same table's vec_dot, for every ISA the CPU has, over block counts that
// exercise each accumulator pass and tail, and row/token counts that leave
// edge tiles on both sides.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/random-blocks.h"
#include "core/quant.h"
#include "common/skip.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/repack.h"

using namespace vt;
using quant::Isa;
using quant::Kernels;

namespace {

using Bytes = std::vector<uint8_t>;

const DType kTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0,
                        DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K,
                        DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::MXFP4,
                        DType::IQ4_NL, DType::IQ4_XS, DType::NVFP4, DType::Q1_0, DType::Q2_0,
                        DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S,
                        DType::IQ1_S, DType::IQ1_M,
                        DType::FP8_E4M3, DType::TQ1_0, DType::TQ2_0};

// Row lengths: for block types every remainder of the 4-block loop plus a
// long row; for plain floats every tail of the 64/32/16/8-element steps.
std::vector<int64_t> row_lengths(DType t) {
    const int64_t be = dtype_info(t).block_elems;
    if (be > 1) return {be, 2 * be, 3 * be, 4 * be, 5 * be, 7 * be, 18 * be, 131 * be};
    return {1, 7, 8, 15, 16, 31, 32, 33, 63, 64, 65, 100, 577, 1033};
}

// Rows of type t, each padded to `stride` bytes (the pad is garbage).
Bytes random_weights(DType t, int64_t n, int64_t rows, size_t stride, std::mt19937 &rng) {
    Bytes all(stride * rows, 0xCD);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (int64_t r = 0; r < rows; ++r) {
        Bytes b(row_bytes(t, n));
        if (t == DType::F32 || t == DType::F16 || t == DType::BF16) {
            for (int64_t i = 0; i < n; ++i) {
                const float v = nd(rng);
                if (t == DType::F32) std::memcpy(&b[4 * i], &v, 4);
                else {
                    const uint16_t h = t == DType::F16 ? f32_to_fp16(v) : f32_to_bf16(v);
                    std::memcpy(&b[2 * i], &h, 2);
                }
            }
        } else {
            vt::test::randomize_blocks(t, b, rng);
        }
        std::memcpy(&all[r * stride], b.data(), b.size());
    }
    return all;
}

// Activation rows converted to vdt by the table's own quantizer (the
// engine's path), with outliers and an all-zero row among them.
Bytes random_acts(const Kernels &k, DType vdt, int64_t n, int64_t rows, size_t stride, std::mt19937 &rng) {
    Bytes all(stride * rows, 0xEF);
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> x(n);
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < n; ++i) {
            x[i] = nd(rng) * ((r % 3 == 1 && i % 37 == 0) ? 60.f : 0.7f);
            if (r == 2) x[i] = 0.f;
        }
        if (vdt == DType::F32) std::memcpy(&all[r * stride], x.data(), 4 * n);
        else {
            const QuantFn q = k.quant[(int)vdt] ? k.quant[(int)vdt]
                                                       : quant::kernels_for(Isa::scalar)->quant[(int)vdt];
            q(x.data(), &all[r * stride], n);
        }
    }
    return all;
}

// nt activation rows of type vdt as the f32 rows a gemm_f32_acts gemm
// reads: the same values (kernels.h).
std::vector<float> as_f32(DType vdt, const Bytes &a, size_t as, int64_t n, int64_t nt) {
    std::vector<float> af((size_t)(n * nt));
    for (int64_t t = 0; t < nt; ++t)
        quant::kernels_for(Isa::scalar)->dequant[(int)vdt](&a[t * as], &af[(size_t)(t * n)], n);
    return af;
}

} // namespace

TEST_CASE("gemm tiles match the vec_dot of their table bit for bit", "[gemm]") {
    std::mt19937 rng(1234);
    int checked = 0;
    for (int i = 0; i < quant::kIsaCount; ++i) {
        const Kernels *k = quant::kernels_for((Isa)i);
        if (!k) continue;
        for (DType t : kTypes) {
            const quant::GemmFn gemm = k->gemm[(int)t];
            if (!gemm) continue;
            const VecDotFn dot = k->dot[(int)t];
            REQUIRE(dot);
            const DType vdt = vec_dot_type(t);
            for (int64_t n : row_lengths(t)) {
                // (rows, tokens): full tiles only, edges only, both, for
                // the 4 x 4 tiles and the 16 x 8 ones (Q6_K).
                const int64_t shapes[][2] = {{1, 1}, {4, 4}, {3, 2}, {9, 7}, {8, 13}, {16, 8}, {37, 19}};
                for (const auto &sh : shapes) {
                    const int64_t nr = sh[0], nt = sh[1];
                    INFO(std::string(k->isa) + " " + dtype_name(t) + " n=" + std::to_string(n) +
                         " rows=" + std::to_string(nr) + " tokens=" + std::to_string(nt));
                    const size_t ws = row_bytes(t, n) + 6, as = row_bytes(vdt, n) + 10;
                    const Bytes w = random_weights(t, n, nr, ws, rng);
                    const Bytes a = random_acts(*k, vdt, n, nt, as, rng);
                    const size_t os = (size_t)nr + 3;
                    std::vector<float> out(os * nt, -7.f);
                    if (k->gemm_f32_acts[(int)t]) { // the same values, as f32 (kernels.h)
                        const std::vector<float> af = as_f32(vdt, a, as, n, nt);
                        gemm(n, w.data(), ws, nr, af.data(), 4 * n, nt, out.data(), os);
                    } else {
                        gemm(n, w.data(), ws, nr, a.data(), as, nt, out.data(), os);
                    }
                    int bad = 0;
                    for (int64_t tk = 0; tk < nt; ++tk)
                        for (int64_t r = 0; r < nr; ++r) {
                            const float want = dot(n, &w[r * ws], &a[tk * as]);
                            const float got = out[tk * os + r];
                            if (std::memcmp(&want, &got, 4) != 0) {
                                if (bad++ == 0) FAIL_CHECK("row " << r << " token " << tk << ": gemm " << got
                                                                  << " vec_dot " << want);
                            }
                        }
                    CHECK(bad == 0);
                    // Padding columns of out are never written.
                    for (int64_t tk = 0; tk < nt; ++tk)
                        for (size_t r = (size_t)nr; r < os; ++r) REQUIRE(out[tk * os + r] == -7.f);
                    ++checked;
                }
            }
        }
    }
    if (checked == 0) VT_SKIP("no ISA table of this CPU has gemm tiles; nothing checked");
}

// The row dot an _X16 gemm must match: the table's dot for the base type,
// but for F16_X16, BF16_X16 and FP8_X16 their own orders (kernels.h).
static float x16_reference(const Kernels &k, DType base, int64_t n, const uint8_t *w, const uint8_t *a) {
    const uint16_t *w16 = (const uint16_t *)w, *a16 = (const uint16_t *)a;
    if (base == DType::F16) return quant::dot_f16_pairs(n, w16, a16);
#if defined(__x86_64__)
    if (base == DType::BF16 && k.bf16_chain) return quant::dot_bf16_chain(n, w16, a16);
    if (base == DType::FP8_E4M3) return quant::dot_fp8_chain(n, w, a16);  // only tables with vdpbf16ps have FP8_X16
#endif
    if (base == DType::BF16) return quant::dot_bf16_pairs(n, w16, a16);
    return k.dot[(int)base](n, w, a);
}

TEST_CASE("_X16 layouts: repacking round-trips and their gemm matches the base type's vec_dot (F16, BF16, FP8: their own orders) bit for bit",
          "[gemm]") {
    std::mt19937 rng(99);
    int checked = 0;
    for (DType base : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::MXFP4, DType::IQ4_NL,
                       DType::IQ4_XS, DType::NVFP4, DType::Q1_0, DType::Q2_0, DType::TQ1_0, DType::TQ2_0, DType::Q4_K, DType::Q6_K,
                       DType::FP8_E4M3, DType::F16, DType::BF16}) {
        const int x16 = quant::x16_slot(base);
        const DType vdt = vec_dot_type(base);
        const int64_t be = quant::x16_block_elems(base);
        REQUIRE(x16 >= quant::kX16Slot0);
        const std::vector<int64_t> lengths =
            dtype_info(base).block_elems == 1 ? std::vector<int64_t>{32, 64, 96, 608} : row_lengths(base);
        for (int64_t n : lengths) {
            for (int64_t nr : {16, 48, 80}) { // 1, 3 and 4 + 1 groups
                const size_t row = row_bytes(base, n), ws = row + 6;
                const Bytes w = random_weights(base, n, nr, ws, rng);
                Bytes packed(row * nr);
                quant::repack_x16(base, w.data(), ws, packed.data(), n, nr);
                Bytes one(row);
                for (int64_t r = 0; r < nr; ++r) {
                    INFO(dtype_name(base) << " n=" << n << " rows=" << nr << " row " << r);
                    quant::unpack_row_x16(base, &packed[(r / 16) * 16 * row], n, (int)(r % 16), 0, n / be, one.data());
                    REQUIRE(std::memcmp(one.data(), &w[r * ws], row) == 0);
                }
                for (int i = 0; i < quant::kIsaCount; ++i) {
                    const Kernels *k = quant::kernels_for((Isa)i);
                    if (!k || !k->gemm[x16]) continue;
                    const size_t as = row_bytes(vdt, n) + 10;
                    for (int64_t nt : {1, 2, 3, 4, 7, 13}) { // decode, each tile width, tiles plus edges
                        INFO(std::string(k->isa) + " " + dtype_name(base) + "_X16 n=" + std::to_string(n) +
                             " rows=" + std::to_string(nr) + " tokens=" + std::to_string(nt));
                        const Bytes a = random_acts(*k, vdt, n, nt, as, rng);
                        const size_t os = (size_t)nr + 2;
                        std::vector<float> out(os * nt, -7.f);
                        if (k->gemm_f32_acts[x16]) { // the same values, as f32 (kernels.h)
                            const std::vector<float> af = as_f32(vdt, a, as, n, nt);
                            k->gemm[x16](n, packed.data(), row, nr, af.data(), 4 * n, nt, out.data(), os);
                        } else {
                            k->gemm[x16](n, packed.data(), row, nr, a.data(), as, nt, out.data(), os);
                        }
                        int bad = 0;
                        for (int64_t t = 0; t < nt; ++t)
                            for (int64_t r = 0; r < nr; ++r) {
                                const float want = x16_reference(*k, base, n, &w[r * ws], &a[t * as]);
                                if (std::memcmp(&want, &out[t * os + r], 4) != 0 && bad++ == 0)
                                    FAIL_CHECK("row " << r << " token " << t << ": gemm " << out[t * os + r]
                                                      << " vec_dot " << want);
                            }
                        CHECK(bad == 0);
                        for (int64_t t = 0; t < nt; ++t) CHECK(out[t * os + nr] == -7.f); // nothing past the rows
                        ++checked;
                    }
                }
            }
        }
    }
    if (checked == 0) VT_SKIP("no ISA table of this CPU has the _X16 kernels; only repacking checked");
}

TEST_CASE("Q5_0_X16 and Q5_1_X16 hold each row's fifth bits sliced by step (x16-layout.h)", "[gemm]") {
    // The kernels read the layout, not the GGUF block: byte i of a row's
    // first payload dword holds the fifth bit of element 4k + i (qh's bit
    // 4k + i) as its bit k. The round trip above cannot see a different
    // order that both repack and unpack agree on; this pins the one the
    // tiles assume.
    std::mt19937 rng(7);
    for (DType base : {DType::Q5_0, DType::Q5_1}) {
        const int64_t n = 64; // two blocks: a pair, both payloads first
        const size_t row = row_bytes(base, n), qh_at = base == DType::Q5_0 ? 2 : 4, block = row / 2;
        const Bytes w = random_weights(base, n, 16, row, rng);
        Bytes packed(row * 16);
        quant::repack_x16(base, w.data(), row, packed.data(), n, 16);
        for (int b = 0; b < 2; ++b)
            for (int r = 0; r < 16; ++r) {
                uint32_t qh, got;
                std::memcpy(&qh, &w[r * row + b * block + qh_at], 4);
                std::memcpy(&got, &packed[b * 16 * (block - qh_at) + 4 * r], 4);
                for (int k = 0; k < 8; ++k)
                    for (int i = 0; i < 4; ++i) {
                        INFO(dtype_name(base) << " block " << b << " row " << r << " step " << k << " byte " << i);
                        REQUIRE(((got >> (8 * i + k)) & 1) == ((qh >> (4 * k + i)) & 1));
                    }
            }
    }
}

TEST_CASE("attention products of every table equal the scalar reference bit for bit", "[gemm]") {
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.f, 1.f);
    const Kernels *ref = quant::kernels_for(Isa::scalar);
    REQUIRE(ref);
    REQUIRE(ref->attn_scores);
    int checked = 0;
    for (int64_t hd : {64, 20, 128}) {
        for (int64_t n_keys : {1, 15, 16, 37, 64, 150})
        for (int64_t nq : {1, 3, 4, 6, 13}) {  // decode groups (several key vectors at once) and prefill runs
            const int64_t kts = n_keys + 5, vs = hd + 3;
            std::vector<float> qf((size_t)(nq * hd)), pf((size_t)(nq * n_keys));
            for (float &x : qf) x = fp16_to_f32(f32_to_fp16(nd(rng)));
            for (float &x : pf) x = fp16_to_f32(f32_to_fp16(std::fabs(nd(rng)) / (float)n_keys));
            std::vector<uint16_t> kt((size_t)(hd * kts)), v((size_t)(n_keys * vs));
            for (uint16_t &x : kt) x = f32_to_fp16(nd(rng));
            for (uint16_t &x : v) x = f32_to_fp16(nd(rng));
            auto scores = [&](const Kernels &k) {
                std::vector<float> sc((size_t)(nq * (n_keys + 1)), -7.f);
                // In runs of 16, 16, 1, 16, 16 and 5 keys cycling (a paged
                // cache's blocks, some short; a few queries take 4 runs at once).
                std::vector<const uint16_t *> runs;
                std::vector<int64_t> nk;
                const int64_t sizes[6] = {16, 16, 1, 16, 16, 5};
                for (int64_t j = 0, r = 0; j < n_keys; ++r) {
                    const int64_t n = std::min(sizes[r % 6], n_keys - j);
                    runs.push_back(kt.data() + j);
                    nk.push_back(n);
                    j += n;
                }
                k.attn_scores(qf.data(), nq, hd, runs.data(), nk.data(), (int64_t)runs.size(), (size_t)kts, sc.data(),
                              (size_t)(n_keys + 1));
                return sc;
            };
            auto values = [&](const Kernels &k) {
                std::vector<float> out((size_t)(nq * (hd + 1)), -7.f);
                std::vector<float *> rows((size_t)nq);
                for (int64_t i = 0; i < nq; ++i) rows[(size_t)i] = &out[(size_t)(i * (hd + 1))];
                k.attn_values(pf.data(), (size_t)n_keys, nq, n_keys, v.data(), (size_t)vs, hd, rows.data(), false);
                return out;
            };
            // The same product in two runs of keys, the second accumulating:
            // a paged cache's blocks must give the bits of one call.
            auto values_split = [&](const Kernels &k, int64_t cut) {
                std::vector<float> out((size_t)(nq * (hd + 1)), -7.f);
                std::vector<float *> rows((size_t)nq);
                for (int64_t i = 0; i < nq; ++i) rows[(size_t)i] = &out[(size_t)(i * (hd + 1))];
                k.attn_values(pf.data(), (size_t)n_keys, nq, cut, v.data(), (size_t)vs, hd, rows.data(), false);
                k.attn_values(pf.data() + cut, (size_t)n_keys, nq, n_keys - cut, v.data() + cut * vs, (size_t)vs, hd,
                              rows.data(), true);
                return out;
            };
            const std::vector<float> want_s = scores(*ref), want_v = values(*ref);
            for (int i = 0; i < quant::kIsaCount; ++i) {
                const Kernels *k = quant::kernels_for((Isa)i);
                if (!k) continue;
                INFO(std::string(k->isa) + " hd=" + std::to_string(hd) + " keys=" + std::to_string(n_keys) + " split");
                const std::vector<float> got = values_split(*k, n_keys / 2);
                CHECK(std::memcmp(got.data(), want_v.data(), got.size() * 4) == 0);
            }
            for (int i = 1; i < quant::kIsaCount; ++i) {
                const Kernels *k = quant::kernels_for((Isa)i);
                if (!k) continue;
                INFO(std::string(k->isa) + " hd=" + std::to_string(hd) + " keys=" + std::to_string(n_keys) + " nq=" + std::to_string(nq));
                const std::vector<float> got_s = scores(*k), got_v = values(*k);
                CHECK(std::memcmp(got_s.data(), want_s.data(), got_s.size() * 4) == 0);
                CHECK(std::memcmp(got_v.data(), want_v.data(), got_v.size() * 4) == 0);
                ++checked;
            }
        }
    }
    if (checked == 0) VT_SKIP("this CPU has no SIMD table; only the scalar attention kernels ran");
}
