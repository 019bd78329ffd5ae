// Sampler chain (lib/sample): every stage on small hand-made logits with
// exact expected candidates, the dist draw against an independent mt19937
// (tests/unit comment below), chain-state errors and the no-allocation rule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <random>
#include <utility>
#include <vector>

#include "core/error.h"
#include "sample/sampler.h"

// Counts heap allocations of the whole test program, to check that sample()
// does not allocate after its first call.
static std::atomic<size_t> g_allocs{0};
void *operator new(size_t n) {
    ++g_allocs;
    if (void *p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void *operator new(size_t n, const std::nothrow_t &) noexcept {
    ++g_allocs;
    return std::malloc(n ? n : 1);
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }

using vt::Sampler;

namespace {

using Cands = std::vector<std::pair<int32_t, float>>;

Cands run(Sampler &s, const std::vector<float> &logits) {
    Cands out;
    for (const auto &c : s.apply(logits.data(), logits.size())) out.emplace_back(c.id, c.logit);
    return out;
}

std::vector<int32_t> ids(const Cands &c) {
    std::vector<int32_t> v;
    for (const auto &x : c) v.push_back(x.first);
    return v;
}

vt_status status_of(auto &&f) {
    try {
        f();
        return VT_OK;
    } catch (const vt::Error &e) {
        return e.status();
    }
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

} // namespace

TEST_CASE("empty chain passes every candidate through in id order", "[sampler]") {
    Sampler s;
    Cands c = run(s, {0.5f, -1.0f, 2.0f});
    REQUIRE(c == Cands{{0, 0.5f}, {1, -1.0f}, {2, 2.0f}});
}

TEST_CASE("greedy picks the argmax, ties to the lowest id", "[sampler]") {
    Sampler s;
    s.add_greedy();
    std::vector<float> l = {1.0f, 3.0f, 2.0f, 3.0f};
    REQUIRE(s.sample(l.data(), l.size()) == 1);
    std::vector<float> l2 = {-5.0f, -2.0f, -3.0f};
    REQUIRE(s.sample(l2.data(), l2.size()) == 1);
}

TEST_CASE("NaN logits count as -inf; all -inf rows are still sampled", "[sampler]") {
    Sampler g;
    g.add_greedy();
    std::vector<float> l = {kNaN, 1.0f, kNaN};
    REQUIRE(g.sample(l.data(), l.size()) == 1);
    std::vector<float> all = {-kInf, -kInf, -kInf};
    REQUIRE(g.sample(all.data(), all.size()) == 0);

    Sampler d;
    d.add_dist(7);
    for (int i = 0; i < 50; ++i) REQUIRE(d.sample(l.data(), l.size()) == 1);
    for (int i = 0; i < 50; ++i) {
        int32_t t = d.sample(all.data(), all.size());
        REQUIRE((t >= 0 && t < 3));
    }
    std::vector<float> pinf = {0.0f, kInf, 3.0f};
    for (int i = 0; i < 20; ++i) REQUIRE(d.sample(pinf.data(), pinf.size()) == 1);
}

TEST_CASE("penalties follow llama.cpp: repeat, frequency, presence", "[sampler]") {
    const std::vector<float> l = {2.0f, -1.0f, 0.5f, 1.0f, -2.0f};
    const std::vector<int32_t> hist = {0, 1, 0, 3};

    SECTION("window covering the whole history") {
        Sampler s;
        s.add_penalties(64, 2.0f, 0.5f, 0.25f);
        for (int32_t t : hist) s.accept(t);
        // 0: count 2: 2/2 - 2*0.5 - 0.25; 1: count 1: -1*2 - 0.5 - 0.25;
        // 3: count 1: 1/2 - 0.5 - 0.25; 2 and 4 untouched.
        REQUIRE(run(s, l) == Cands{{0, -0.25f}, {1, -2.75f}, {2, 0.5f}, {3, -0.25f}, {4, -2.0f}});
    }
    SECTION("last_n = 2 only sees the last two tokens (0 and 3)") {
        Sampler s;
        s.add_penalties(2, 2.0f, 0.5f, 0.25f);
        for (int32_t t : hist) s.accept(t);
        REQUIRE(run(s, l) == Cands{{0, 0.25f}, {1, -1.0f}, {2, 0.5f}, {3, -0.25f}, {4, -2.0f}});
    }
    SECTION("last_n = -1 keeps everything; 0 keeps nothing") {
        Sampler all, none;
        all.add_penalties(-1, 1.0f, 1.0f, 0.0f);
        none.add_penalties(0, 2.0f, 1.0f, 1.0f);
        for (int i = 0; i < 100; ++i) {
            all.accept(2);
            none.accept(2);
        }
        REQUIRE(run(all, l)[2].second == 0.5f - 100.0f);
        REQUIRE(run(none, l)[2].second == 0.5f);
    }
    SECTION("after a reordering stage the same values land on the same ids") {
        Sampler s;
        s.add_top_k(4);
        s.add_penalties(64, 2.0f, 0.5f, 0.25f);
        for (int32_t t : hist) s.accept(t);
        // top-k(4) sorts: 0 (2.0), 3 (1.0), 2 (0.5), 1 (-1.0); then penalties.
        REQUIRE(run(s, l) == Cands{{0, -0.25f}, {3, -0.25f}, {2, 0.5f}, {1, -2.75f}});
    }
    SECTION("tokens beyond the row and reset") {
        Sampler s;
        s.add_penalties(64, 2.0f, 0.0f, 0.0f);
        s.accept(1000);  // larger than this row: ignored
        s.accept(0);
        REQUIRE(run(s, l)[0].second == 1.0f);
        s.reset();
        REQUIRE(run(s, l)[0].second == 2.0f);
    }
    SECTION("repeat multiplies negative logits and zero") {
        Sampler s;
        s.add_penalties(8, 1.5f, 0.0f, 0.0f);
        s.accept(1);
        s.accept(4);
        Cands c = run(s, l);
        REQUIRE(c[1].second == -1.5f);
        REQUIRE(c[4].second == -3.0f);
    }
}

TEST_CASE("top-k keeps the k best in (logit desc, id asc) order", "[sampler]") {
    const std::vector<float> l = {0.1f, 0.5f, 0.3f, 0.5f, -1.0f};
    Sampler k2, k0, k10;
    k2.add_top_k(2);
    k0.add_top_k(0);
    k10.add_top_k(10);
    REQUIRE(run(k2, l) == Cands{{1, 0.5f}, {3, 0.5f}});
    REQUIRE(ids(run(k0, l)) == std::vector<int32_t>{0, 1, 2, 3, 4});
    REQUIRE(ids(run(k10, l)) == std::vector<int32_t>{0, 1, 2, 3, 4});
}

TEST_CASE("top-p keeps the smallest sorted prefix reaching p", "[sampler]") {
    // probabilities 0.1, 0.4, 0.2, 0.3
    const std::vector<float> l = {std::log(0.1f), std::log(0.4f), std::log(0.2f), std::log(0.3f)};
    auto top_p = [&](float p, size_t min_keep) {
        Sampler s;
        s.add_top_p(p, min_keep);
        return ids(run(s, l));
    };
    REQUIRE(top_p(0.5f, 1) == std::vector<int32_t>{1, 3});
    REQUIRE(top_p(0.35f, 1) == std::vector<int32_t>{1});
    REQUIRE(top_p(0.35f, 3) == std::vector<int32_t>{1, 3, 2});
    REQUIRE(top_p(0.95f, 1) == std::vector<int32_t>{1, 3, 2, 0});
    REQUIRE(top_p(0.0f, 1) == std::vector<int32_t>{1});
    REQUIRE(top_p(0.5f, 10) == std::vector<int32_t>{1, 3, 2, 0});
    REQUIRE(top_p(1.0f, 1) == std::vector<int32_t>{0, 1, 2, 3});  // off: order kept

    SECTION("a nucleus wider than the partially sorted prefix") {
        std::vector<float> flat(1000, 0.0f);
        Sampler s;
        s.add_top_p(0.5f, 1);
        Cands c = run(s, flat);
        REQUIRE(c.size() == 500);
        for (size_t i = 0; i < c.size(); ++i) REQUIRE(c[i].first == (int32_t)i);
    }
}

TEST_CASE("min-p keeps p * max probability and up, else the min_keep best", "[sampler]") {
    // keep logit >= 2 + log(p)
    const std::vector<float> l = {0.0f, 2.0f, 1.0f, 1.5f};
    auto min_p = [&](float p, size_t min_keep) {
        Sampler s;
        s.add_min_p(p, min_keep);
        return ids(run(s, l));
    };
    REQUIRE(min_p(0.5f, 1) == std::vector<int32_t>{1, 3});        // >= 1.307, order kept
    REQUIRE(min_p(0.3f, 1) == std::vector<int32_t>{1, 2, 3});     // >= 0.796
    REQUIRE(min_p(0.9f, 3) == std::vector<int32_t>{1, 3, 2});     // 1 passes: best 3, sorted
    REQUIRE(min_p(0.0f, 1) == std::vector<int32_t>{0, 1, 2, 3});  // off
    REQUIRE(min_p(0.01f, 1) == std::vector<int32_t>{0, 1, 2, 3});
}

TEST_CASE("temperature divides; t <= 0 keeps only the best", "[sampler]") {
    const std::vector<float> l = {1.0f, 2.0f, -4.0f, 2.0f};
    Sampler t2, t0, tn;
    t2.add_temp(2.0f);
    t0.add_temp(0.0f);
    tn.add_temp(-1.0f);
    REQUIRE(run(t2, l) == Cands{{0, 0.5f}, {1, 1.0f}, {2, -2.0f}, {3, 1.0f}});
    REQUIRE(run(t0, l) == Cands{{1, 2.0f}});
    REQUIRE(run(tn, l) == Cands{{1, 2.0f}});
}

TEST_CASE("the usual chain composes", "[sampler]") {
    const std::vector<float> l = {3.0f, 1.0f, 2.5f, -1.0f, 2.9f, 0.0f};
    Sampler s;
    s.add_penalties(64, 2.0f, 0.0f, 0.0f);
    s.add_top_k(4);
    s.add_top_p(1.0f, 1);
    s.add_min_p(0.2f, 1);  // >= max + log(0.2) = 2.9 - 1.609 = 1.29
    s.add_temp(0.5f);
    s.add_greedy();
    s.accept(0);  // 3.0 -> 1.5
    // penalties: {1.5, 1, 2.5, -1, 2.9, 0}; top-4: 4 (2.9), 2 (2.5), 0 (1.5), 1 (1.0);
    // min-p drops 1.0; temp doubles.
    REQUIRE(run(s, l) == Cands{{4, 5.8f}, {2, 5.0f}, {0, 3.0f}});
    REQUIRE(s.sample(l.data(), l.size()) == 4);
}

// Expected draws: u = (r >> 8) * 2^-24 over 5 equal weights gives id =
// ((r >> 8) * 5) >> 24 exactly, where r are the outputs of mt19937 seeded
// with 1234 (init_genrand). Computed with an independent Python mt19937.
TEST_CASE("dist draws are fixed by the seed and the documented arithmetic", "[sampler]") {
    const std::vector<int32_t> expect = {0, 2, 3, 4, 2, 3, 3, 3, 3, 4, 1, 0, 1, 0, 4, 4};
    const std::vector<float> flat(5, 0.25f);
    Sampler s;
    s.add_dist(1234);
    std::vector<int32_t> got;
    for (size_t i = 0; i < expect.size(); ++i) got.push_back(s.sample(flat.data(), flat.size()));
    REQUIRE(got == expect);

    SECTION("reset reseeds") {
        s.reset();
        std::vector<int32_t> again;
        for (size_t i = 0; i < expect.size(); ++i) again.push_back(s.sample(flat.data(), flat.size()));
        REQUIRE(again == expect);
    }
    SECTION("the draw walks the candidates in their post-chain order") {
        // top-k sorts (logit desc, id asc): ids 2, 4, 5, 6, 7 with equal logits.
        std::vector<float> l = {-9.0f, -9.0f, 1.0f, -9.0f, 1.0f, 1.0f, 1.0f, 1.0f};
        Sampler k;
        k.add_top_k(5);
        k.add_dist(1234);
        const int32_t map[5] = {2, 4, 5, 6, 7};
        for (int32_t e : expect) REQUIRE(k.sample(l.data(), l.size()) == map[e]);
    }
}

TEST_CASE("dist follows the softmax", "[sampler]") {
    const std::vector<float> l = {0.0f, std::log(3.0f), -kInf};
    Sampler s;
    s.add_dist(99);
    int counts[3] = {0, 0, 0};
    const int n = 20000;
    for (int i = 0; i < n; ++i) ++counts[s.sample(l.data(), l.size())];
    REQUIRE(counts[2] == 0);
    REQUIRE(counts[0] > n * 0.23);
    REQUIRE(counts[0] < n * 0.27);
}

TEST_CASE("chain rules and argument checks", "[sampler]") {
    Sampler s;
    std::vector<float> l = {1.0f, 2.0f};
    REQUIRE(status_of([&] { s.sample(l.data(), l.size()); }) == VT_ERR_INVALID_STATE);
    REQUIRE(status_of([&] { s.add_penalties(-2, 1.0f, 0, 0); }) == VT_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { s.add_penalties(8, 0.0f, 0, 0); }) == VT_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { s.add_penalties(8, kNaN, 0, 0); }) == VT_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { s.add_penalties(8, 1.0f, kInf, 0); }) == VT_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { s.add_top_p(1.5f, 1); }) == VT_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { s.add_top_p(kNaN, 1); }) == VT_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { s.add_min_p(-0.1f, 1); }) == VT_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { s.add_temp(kInf); }) == VT_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { s.accept(-1); }) == VT_ERR_INVALID_ARGUMENT);
    REQUIRE(s.n_stages() == 0);
    s.add_greedy();
    REQUIRE(status_of([&] { s.add_top_k(3); }) == VT_ERR_INVALID_STATE);
    REQUIRE(status_of([&] { s.add_dist(1); }) == VT_ERR_INVALID_STATE);
    REQUIRE(status_of([&] { s.sample(l.data(), 0); }) == VT_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of([&] { s.sample(nullptr, 2); }) == VT_ERR_INVALID_ARGUMENT);
    REQUIRE(s.n_stages() == 1);
}

TEST_CASE("sample does not allocate after the first call", "[sampler]") {
    std::vector<float> l(4096);
    for (size_t i = 0; i < l.size(); ++i) l[i] = std::sin((float)i) * 5.0f;
    Sampler s;
    s.add_penalties(64, 1.1f, 0.1f, 0.1f);
    s.add_top_k(100);
    s.add_top_p(0.9f, 1);
    s.add_min_p(0.05f, 1);
    s.add_temp(0.8f);
    s.add_dist(5);
    for (int i = 0; i < 70; ++i) s.accept(i * 7);
    s.sample(l.data(), l.size());
    size_t before = g_allocs.load();
    for (int i = 0; i < 20; ++i) {
        l[(size_t)i] += 1.0f;
        (void)s.sample(l.data(), l.size());
    }
    size_t after = g_allocs.load();
    REQUIRE(after == before);

    Sampler wide;  // a full sort (top-p without top-k) does not allocate either
    wide.add_top_p(0.99f, 1);
    wide.add_dist(5);
    wide.sample(l.data(), l.size());
    before = g_allocs.load();
    (void)wide.sample(l.data(), l.size());
    REQUIRE(g_allocs.load() == before);
}

namespace {

// The scan the vectorized one replaces: one element after the other, ties
// to the lower index, NaN as -inf.
size_t scalar_first_max(const float *row, size_t n) {
    size_t best = 0;
    float bv = row[0] == row[0] ? row[0] : -kInf;
    for (size_t i = 1; i < n; ++i)
        if (row[i] > bv) {
            best = i;
            bv = row[i];
        }
    return best;
}

// Rows with many exact ties (values on a 0.5 grid), signed zeros, and some
// NaN and infinite entries.
std::vector<float> tied_row(std::mt19937 &rng, size_t n, bool specials) {
    std::uniform_int_distribution<int> v(-40, 24);
    std::uniform_int_distribution<int> kind(0, 199);
    std::vector<float> row(n);
    for (float &x : row) {
        x = (float)v(rng) * 0.5f;
        if (x == 0.0f && kind(rng) % 2) x = -0.0f;
        if (!specials) continue;
        const int k = kind(rng);
        if (k == 0) x = kNaN;
        else if (k == 1) x = -kInf;
    }
    return row;
}

} // namespace

TEST_CASE("the vectorized first maximum is the scalar scan's, ties and NaN included", "[sampler]") {
    std::mt19937 rng(7);
    for (size_t n : {1u, 2u, 15u, 16u, 17u, 63u, 64u, 65u, 1000u, 49152u}) {
        for (int rep = 0; rep < 20; ++rep) {
            std::vector<float> row = tied_row(rng, n, rep % 2 == 1);
            INFO("n " << n << " rep " << rep);
            REQUIRE(vt::first_max_index(row.data(), n) == scalar_first_max(row.data(), n));
            // The maximum once more, later: the first one still wins.
            const size_t at = scalar_first_max(row.data(), n);
            if (at + 1 < n) {
                row[n - 1] = row[at];
                REQUIRE(vt::first_max_index(row.data(), n) == at);
            }
        }
    }
    std::vector<float> all_nan(40, kNaN), all_ninf(40, -kInf), mixed(40, -kInf);
    mixed[3] = kNaN;
    REQUIRE(vt::first_max_index(all_nan.data(), all_nan.size()) == 0);
    REQUIRE(vt::first_max_index(all_ninf.data(), all_ninf.size()) == 0);
    REQUIRE(vt::first_max_index(mixed.data(), mixed.size()) == 0);
    std::vector<float> zeros(33, -0.0f);
    zeros[20] = 0.0f;  // +0 and -0 tie: the first one
    REQUIRE(vt::first_max_index(zeros.data(), zeros.size()) == 0);
    std::vector<float> inf_late(100, 3.0f);
    inf_late[77] = kInf;
    REQUIRE(vt::first_max_index(inf_late.data(), inf_late.size()) == 77);
}

namespace {

// Two chains of the same stages, the second led by temp(1), which changes
// nothing but keeps it on the full candidate-list path; `build` adds the
// stages. Both sample the same rows and accept what they draw.
template <typename Build>
void same_tokens_both_paths(Build build, size_t n_vocab, int steps, bool specials) {
    Sampler fast, full;
    full.add_temp(1.0f);
    build(fast);
    build(full);
    std::mt19937 rng(11);
    for (int step = 0; step < steps; ++step) {
        std::vector<float> row = tied_row(rng, n_vocab, specials);
        const int32_t a = fast.sample(row.data(), row.size());
        const int32_t b = full.sample(row.data(), row.size());
        INFO("step " << step);
        REQUIRE(a == b);
        fast.accept(a);
        full.accept(b);
    }
}

} // namespace

TEST_CASE("the top-k and greedy shortcuts pick the full path's tokens", "[sampler]") {
    const size_t n = 49152;  // SmolLM2's vocabulary: the shortcut applies up to k = 192
    for (bool specials : {false, true}) {
        INFO("NaN and -inf entries: " << specials);
        same_tokens_both_paths([](Sampler &s) { s.add_greedy(); }, n, 20, specials);
        same_tokens_both_paths(
            [](Sampler &s) {
                s.add_penalties(-1, 1.3f, 0.5f, 0.5f);
                s.add_greedy();
            },
            n, 30, specials);
        same_tokens_both_paths(
            [](Sampler &s) {
                s.add_top_k(40);
                s.add_top_p(0.9f, 1);
                s.add_temp(0.7f);
                s.add_dist(3);
            },
            n, 40, specials);
        const int32_t bias_ids[] = {5, 17, 40000};
        const float bias[] = {30.0f, -kInf, 2.0f};
        same_tokens_both_paths(
            [&](Sampler &s) {
                s.add_logit_bias(bias_ids, bias, 3);
                s.add_penalties(64, 1.1f, 0.2f, 0.2f);
                s.add_top_k(192);
                s.add_min_p(0.05f, 1);
                s.add_temp(1.5f);
                s.add_dist(9);
            },
            n, 40, specials);
        // k = 1 and a top-k chain ending in greedy.
        same_tokens_both_paths(
            [](Sampler &s) {
                s.add_top_k(1);
                s.add_dist(1);
            },
            n, 10, specials);
        same_tokens_both_paths(
            [](Sampler &s) {
                s.add_top_k(10);
                s.add_greedy();
            },
            n, 10, specials);
    }
    // Fewer finite values than k: the -inf ties go to the full path.
    std::vector<float> sparse(n, -kInf);
    sparse[100] = 1.0f;
    sparse[30000] = 2.0f;
    Sampler a, b;
    b.add_temp(1.0f);
    for (Sampler *s : {&a, &b}) {
        s->add_top_k(5);
        s->add_greedy();
    }
    REQUIRE(a.apply(sparse.data(), n).size() == 5);
    REQUIRE(a.sample(sparse.data(), n) == 30000);
    REQUIRE(b.sample(sparse.data(), n) == 30000);
}

TEST_CASE("top-p over a whole vocabulary keeps the fully sorted walk's nucleus", "[sampler]") {
    // The reference: every candidate sorted, the mass summed in id order,
    // the walk down the sorted list (the stage's definition, above).
    auto reference = [](const std::vector<float> &row, float p, size_t min_keep) {
        Cands c;
        float max = -kInf;
        for (size_t i = 0; i < row.size(); ++i) {
            const float l = row[i] == row[i] ? row[i] : -kInf;
            c.emplace_back((int32_t)i, l);
            max = std::max(max, l);
        }
        auto w = [&](float l) {
            const float d = l - max;
            return d == d ? std::exp(d) : 1.0f;
        };
        double sum = 0.0;
        for (const auto &x : c) sum += w(x.second);
        std::sort(c.begin(), c.end(), [](auto &a, auto &b) {
            return a.second > b.second || (a.second == b.second && a.first < b.first);
        });
        double cum = 0.0;
        for (size_t i = 0; i < c.size(); ++i) {
            cum += w(c[i].second);
            if (cum >= (double)p * sum && i + 1 >= min_keep) {
                c.resize(i + 1);
                break;
            }
        }
        return c;
    };
    std::mt19937 rng(5);
    const size_t n = 49152;
    for (int rep = 0; rep < 12; ++rep) {
        // Flat rows (a wide nucleus), peaked ones, and rows spread over more
        // than the 64 logits the buckets cover.
        std::vector<float> row = tied_row(rng, n, rep % 3 == 2);
        const float spread = rep % 4 == 0 ? 0.1f : rep % 4 == 1 ? 1.0f : rep % 4 == 2 ? 4.0f : 9.0f;
        for (float &x : row) x *= spread;
        for (float p : {0.0f, 0.3f, 0.9f, 0.99f}) {
            for (size_t min_keep : {(size_t)1, (size_t)3000}) {
                Sampler s;
                s.add_top_p(p, min_keep);
                INFO("rep " << rep << " p " << p << " min_keep " << min_keep);
                const Cands got = run(s, row);
                REQUIRE(got == reference(row, p, min_keep));
            }
        }
    }
}
