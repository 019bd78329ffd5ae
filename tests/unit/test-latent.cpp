// DeepSeek MLA's latent cache: the pool a latent layer gets (PagedKv: a K
// pool and no V; the engine's byte budget at one row per token; likewise a
// recurrent layer with no state beside its conv tail, LFM2's) and
// Op::ATTN_PAGED's latent mode (src2 and src4 null: values are the first dv
// dimensions of each cached K row), against a double reference, bit for bit
// across threads, steps and batches.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "common/gguf-writer.h"
#include "common/temp-file.h"
#include "engine/engine.h"
#include "model/model.h"
#include "unit/ops-harness.h"
#include "runner/paged-kv.h"

namespace {

// ---- the pool and its bytes ---------------------------------------------------

// A tiny Llama of five layers whose cache spec is then rewritten to mix the
// kinds (no forward pass runs: the pool and the engine's sizing only read
// the spec).
std::unique_ptr<Model> mixed_model() {
    vt::test::TinyLlama o;
    o.n_layer = 5;
    vt::test::TempFile f(vt::test::tiny_llama_gguf(o));
    std::unique_ptr<Model> m = Model::load(f.path.string(), true, nullptr);
    m->cache_layers = {{CacheKind::full_attention, 0, 128},
                       {CacheKind::latent, 0, 40},
                       {CacheKind::sliding_window, 8, 128},
                       {CacheKind::latent, 0, 40},
                       {CacheKind::full_attention, 0, 128}};
    return m;
}

TEST_CASE("PagedKv: a latent layer gets a K pool and no V pool", "[latent]") {
    const std::unique_ptr<Model> m = mixed_model();
    const uint32_t bs = 16;
    // Groups: full attention (layers 0, 4), latent (1, 3), sliding (2).
    PagedKv kv(*m, {10, 6, 3}, bs);
    REQUIRE(kv.groups().size() == 3);
    CHECK(kv.groups()[1].kind == CacheKind::latent);
    CHECK(kv.layer_group(1) == 1);
    CHECK(kv.layer_group(3) == 1);
    CHECK(kv.layer_group(2) == 2);
    // Bytes: K and V rows of 128 f16 for full and sliding layers, one row
    // of 40 for a latent one.
    const uint64_t want = 10ull * bs * 2 * (2 * 128 * 2) + 6ull * bs * 2 * (40 * 2) + 3ull * bs * (2 * 128 * 2);
    CHECK(kv.bytes() == want);
    for (uint32_t l : {1u, 3u}) {
        const Tensor &k = kv.k()[l], &v = kv.v()[l];
        CHECK(k.ne[0] == bs);
        CHECK(k.ne[1] == 40);
        CHECK(k.ne[2] == 6);
        CHECK(k.data != nullptr);
        CHECK(v.nelements() == 0);
        CHECK(v.data == nullptr);
        CHECK(v.buffer == nullptr);
    }
    CHECK(kv.v()[0].ne[0] == 128);
    CHECK(kv.v()[2].ne[1] == 3 * bs);
    // The pools lie back to back in one buffer of exactly bytes(): none
    // overlaps and none spills past what the budget counted.
    std::vector<std::pair<const uint8_t *, size_t>> spans;
    for (uint32_t l = 0; l < 5; ++l) {
        spans.push_back({static_cast<const uint8_t *>(kv.k()[l].data), kv.k()[l].nbytes()});
        if (kv.v()[l].data) spans.push_back({static_cast<const uint8_t *>(kv.v()[l].data), kv.v()[l].nbytes()});
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 0; i + 1 < spans.size(); ++i) CHECK(spans[i].first + spans[i].second == spans[i + 1].first);
    CHECK((uint64_t)(spans.back().first + spans.back().second - spans.front().first) == want);
}

TEST_CASE("PagedKv: a recurrent layer whose slot is the conv tail only has no state pool", "[latent]") {
    // LFM2's short conv keeps (kernel - 1) * n_embd floats and no state:
    // its V tensor has no elements and no data (as a latent layer's), takes
    // no room in the buffer, and copy_slots copies the tail alone.
    const std::unique_ptr<Model> m = mixed_model();
    m->cache_layers = {{CacheKind::full_attention, 0, 128},
                       {CacheKind::recurrent, 0, 0, 12, 0},
                       {CacheKind::recurrent, 0, 0, 6, 10},
                       {CacheKind::full_attention, 0, 128},
                       {CacheKind::recurrent, 0, 0, 8, 0}};
    const uint32_t bs = 16, n_slots = 3;
    PagedKv kv(*m, {4}, bs, n_slots);
    const uint64_t want = 4ull * bs * 2 * (2 * 128 * 2) + n_slots * 4ull * (12 + 6 + 10 + 8);
    CHECK(kv.bytes() == want);
    for (uint32_t l : {1u, 4u}) {
        CHECK(kv.layer_group(l) == PagedKv::kNoGroup);
        CHECK(kv.k()[l].data != nullptr);
        CHECK(kv.v()[l].nelements() == 0);
        CHECK(kv.v()[l].data == nullptr);
        CHECK(kv.v()[l].buffer == nullptr);
    }
    CHECK(kv.v()[2].data != nullptr);
    // The pools with data hold exactly bytes() and none overlaps (the slot
    // pools' sizes are no multiple of the buffer's alignment: gaps between).
    std::vector<std::pair<const uint8_t *, size_t>> spans;
    uint64_t total = 0;
    for (uint32_t l = 0; l < 5; ++l)
        for (const Tensor *t : {&kv.k()[l], &kv.v()[l]})
            if (t->data) {
                spans.push_back({static_cast<const uint8_t *>(t->data), t->nbytes()});
                total += t->nbytes();
            }
    CHECK(total == want);
    std::sort(spans.begin(), spans.end());
    for (size_t i = 0; i + 1 < spans.size(); ++i) CHECK(spans[i].first + spans[i].second <= spans[i + 1].first);
    // A snapshot copy: slot 0 to slot 2 in every recurrent layer, slot 1 untouched.
    for (uint32_t l : {1u, 2u, 4u})
        for (Tensor *t : {&kv.k()[l], &kv.v()[l]})
            for (int64_t i = 0; i < t->ne[0] * t->ne[1]; ++i) static_cast<float *>(t->data)[i] = (float)(l * 1000 + i);
    const StateCopy copy{0, 2};
    kv.copy_slots({&copy, 1});
    for (uint32_t l : {1u, 2u, 4u})
        for (const Tensor *t : {&kv.k()[l], &kv.v()[l]}) {
            const float *d = static_cast<const float *>(t->data);
            for (int64_t i = 0; i < t->ne[0]; ++i) {
                CHECK(d[2 * t->ne[0] + i] == d[i]);
                CHECK(d[t->ne[0] + i] == (float)(l * 1000 + t->ne[0] + i));
            }
        }
}

TEST_CASE("the engine sizes a pool with latent layers at one row per token", "[latent]") {
    const std::unique_ptr<Model> m = mixed_model();
    Context ctx(*m, "cpu", 1, 64);
    EngineConfig cfg;
    cfg.kv_cache_bytes = 1 << 20;
    cfg.max_num_seqs = 2;
    Engine e(ctx, cfg);
    vt_engine_stats st{};
    st.struct_size = sizeof st;
    e.stats(st);
    // The sliding group takes what 2 sequences of 256 positions touch: 2 *
    // 16 blocks of 16 tokens * 512 bytes = 256 KiB. The rest, 768 KiB, goes
    // to the windowless groups alike, a block of both costing 16 * (2 * 512
    // + 2 * 80) = 18944 bytes: 41 blocks each (a latent row counted as K
    // and V would make it 21504 bytes, 36 blocks).
    CHECK(st.kv_blocks_total == 32 + 2 * 41);
    CHECK(st.kv_cache_bytes == 32ull * 16 * 512 + 41ull * 18944);
    CHECK(st.kv_cache_bytes <= cfg.kv_cache_bytes);
}

// ---- ATTN_PAGED, latent mode --------------------------------------------------

// Runs b's step in latent mode with dv values per head (b's head_dim is dk;
// its v and v0 go unused), the K pool starting as b.k0; checks that the
// step's slots then hold f16(k) and every other slot is as it was.
std::vector<float> run_latent(const PagedBatch &b, int64_t dv, int32_t window) {
    const int64_t kv_row = b.sh.kv_row();
    const std::vector<uint16_t> k_start = k_convert(b.k0, kv_row, b.bs, true), no_v;
    std::vector<uint16_t> kc = k_start, vc;
    Tensor kct;
    tensor_init(kct, DType::F16, b.bs, kv_row, b.n_slots / b.bs, 1, kc.data(), "k_pool");
    const std::vector<float> got =
        run_attn_node(b, &b.index, kc, vc, k_start, no_v, [&](Graph &g, Tensor *q, Tensor *k, Tensor *, Tensor *it) {
            return g.op<Op::ATTN_PAGED>(DType::F32, {dv, b.sh.n_head, b.n_tok}, {q, k, nullptr, &kct, nullptr, it, nullptr},
                                        {b.scale, window, (int32_t)b.n_slots});
        });
    std::vector<uint16_t> k_exp = b.k0;
    for (int64_t t = 0; t < b.n_tok; ++t) {
        const size_t slot = (size_t)b.index[(size_t)(3 * t)];
        std::copy_n(&b.k_full[slot * kv_row], kv_row, &k_exp[slot * kv_row]);
    }
    CHECK(k_convert(kc, kv_row, b.bs, false) == k_exp);
    return got;
}

// The reference: values are the K rows' first dv dimensions of each head.
AttnRef latent_ref(const PagedBatch &b, int64_t dv, int32_t window, bool q_f16) {
    const int64_t kv_row = b.sh.kv_row();
    const KvAt k_at = [&](int64_t t, int64_t j, int64_t e) { return b.k_full[(size_t)(b.slot(t, j) * kv_row + e)]; };
    return attention_reference(
        b, window, q_f16, [&](int64_t t) { return (int64_t)b.index[(size_t)(3 * t + 1)]; }, k_at, k_at,
        [&](const AttnTerms &a) { return attn_tol(a, b.sh.head_dim, q_f16); }, dv);
}

void check_latent(const AttnShape &sh, int64_t dv, int64_t bs, int32_t window, const std::vector<SeqCase> &seqs,
                  std::mt19937 &rng) {
    int64_t blocks = 0;
    for (const SeqCase &s : seqs) blocks += (s.n_past + s.n_tok + bs - 1) / bs;
    const PagedBatch b = make_paged_batch(sh, blocks + 3, bs, seqs, rng);
    const std::vector<float> got = run_latent(b, dv, window);
    for (bool q_f16 : {false, true}) {
        const AttnRef r = latent_ref(b, dv, window, q_f16);
        check_close(got, r.out, r.tol, q_f16 ? "latent (q rounded to f16)" : "latent (exact math)");
    }
}

TEST_CASE("ATTN_PAGED latent mode: many sequences through their block tables", "[ops][latent]") {
    // Decode, a chunk after a cached prefix and a fresh prompt of 17 (two
    // runs) in one batch; blocks shuffled over the pool, every slot no table
    // reaches NaN. Heads in groups of 4 to 16 over 1 or 2 latent heads.
    std::mt19937 rng(576);
    const std::vector<SeqCase> mixed = {{37, 1}, {20, 3}, {0, 17}};
    for (const auto &[dk, dv] : {std::pair<int64_t, int64_t>{24, 16}, {576, 512}})
        for (const AttnShape &sh : {AttnShape{4, 1, dk}, AttnShape{8, 2, dk}, AttnShape{16, 1, dk}})
            for (int64_t bs : {16, 4}) {
                INFO("dk " << dk << ", dv " << dv << ", heads " << sh.n_head << "/" << sh.n_head_kv << ", block "
                           << bs);
                check_latent(sh, dv, bs, 0, mixed, rng);
            }
}

TEST_CASE("ATTN_PAGED latent mode: decode of few sequences, all threads on one unit", "[ops][latent]") {
    // Fewer units (sequences x KV heads) than the 3 threads of run_both: the
    // threads split each unit; their bits must be those of 1 thread.
    std::mt19937 rng(512);
    for (const AttnShape &sh : {AttnShape{16, 1, 576}, AttnShape{4, 2, 576}}) {
        INFO("heads " << sh.n_head << "/" << sh.n_head_kv);
        check_latent(sh, 512, 16, 0, {{70, 1}}, rng);
        check_latent(sh, 512, 16, 0, {{3, 1}, {33, 1}}, rng);
    }
    check_latent(AttnShape{16, 1, 24}, 16, 4, 0, {{50, 1}}, rng);  // dv under one vector: threads idle
    check_latent(AttnShape{16, 1, 24}, 20, 4, 0, {{0, 1}}, rng);   // the first position
}

TEST_CASE("ATTN_PAGED latent mode: a sliding window", "[ops][latent]") {
    std::mt19937 rng(8);
    check_latent(AttnShape{8, 2, 24}, 16, 4, 5, {{37, 1}, {20, 3}, {0, 17}}, rng);
    check_latent(AttnShape{16, 1, 576}, 512, 16, 20, {{45, 1}}, rng);
}

TEST_CASE("ATTN_PAGED latent mode: a token's output does not depend on its step or its batch", "[ops][latent]") {
    // One sequence of 21 tokens (blocks 2, 0), DeepSeek's decode shape: 16
    // heads over one latent head of 576, values 512. Alone in one step, in
    // steps of 1, 4, 16, with another sequence (blocks 3, 1) sharing steps,
    // and its last token decoded alone (2 threads on one unit) or beside the
    // other's (a unit each): the same bits every time.
    std::mt19937 rng(21);
    const int64_t n_head = 16, dk = 576, dv = 512, bs = 16, n_blocks = 4, n_all = 21, n_other_max = 8;
    const int64_t Q = dk * n_head, n_slots = n_blocks * bs;
    const std::vector<float> q = normal((size_t)(Q * (n_all + n_other_max)), rng),
                             k = normal((size_t)(dk * (n_all + n_other_max)), rng);
    const float scale = 1.0f / std::sqrt((float)dk);
    const std::vector<int32_t> table = {2, 0}, other = {3, 1};
    // steps[i] of the sequence's tokens in step i, after others[i] of the other's.
    auto run = [&](const std::vector<int64_t> &steps, const std::vector<int64_t> &others) {
        std::vector<uint16_t> kc((size_t)(dk * n_slots), kNaN16);
        Tensor kct;
        tensor_init(kct, DType::F16, bs, dk, n_blocks, 1, kc.data(), "k_pool");
        std::vector<float> out;
        int64_t past = 0, other_past = 0;
        for (size_t si = 0; si < steps.size(); ++si) {
            const int64_t extra = others[si], nt = steps[si] + extra;
            std::vector<int32_t> index((size_t)(3 * nt));
            const int32_t at_other = (int32_t)index.size();
            index.insert(index.end(), other.begin(), other.end());
            const int32_t at = (int32_t)index.size();
            index.insert(index.end(), table.begin(), table.end());
            std::vector<float> qs, ks;
            for (int64_t i = 0; i < nt; ++i) {
                const bool mine = i >= extra;
                const int64_t pos = mine ? past + i - extra : other_past + i, src = mine ? pos : n_all + pos;
                const std::vector<int32_t> &tb = mine ? table : other;
                index[(size_t)(3 * i)] = (int32_t)(tb[(size_t)(pos / bs)] * bs + pos % bs);
                index[(size_t)(3 * i + 1)] = (int32_t)(pos + 1);
                index[(size_t)(3 * i + 2)] = mine ? at : at_other;
                qs.insert(qs.end(), q.begin() + src * Q, q.begin() + (src + 1) * Q);
                ks.insert(ks.end(), k.begin() + src * dk, k.begin() + (src + 1) * dk);
            }
            Graph g;
            Tensor *qt = g.input(DType::F32, {dk, n_head, nt}), *kt = g.input(DType::F32, {dk, 1, nt}),
                   *it = g.input(DType::I32, {(int64_t)index.size()});
            Tensor *y = g.op<Op::ATTN_PAGED>(DType::F32, {dv, n_head, nt}, {qt, kt, nullptr, &kct, nullptr, it, nullptr},
                                             {scale, 0, (int32_t)n_slots});
            g.mark_output(y);
            REQUIRE(supports(g.nodes()[0]));
            Bound bound(g);
            put(qt, qs);
            put(kt, ks);
            put(it, index);
            REQUIRE(compute(2, g) == VT_OK);
            const std::vector<float> o = get(y);
            out.insert(out.end(), o.begin() + extra * dv * n_head, o.end());
            past += steps[si];
            other_past += extra;
        }
        return out;
    };
    const std::vector<float> one = run({n_all}, {0});
    REQUIRE(one.size() == (size_t)(n_all * n_head * dv));
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> ways = {
        {{1, 4, 16}, {0, 0, 0}}, {{n_all}, {7}}, {{20, 1}, {0, 0}}, {{20, 1}, {3, 1}}, {{1, 4, 16}, {2, 0, 6}}};
    for (const auto &[steps, others] : ways) {
        const std::vector<float> got = run(steps, others);
        REQUIRE(got.size() == one.size());
        CHECK(same_bits(one.data(), got.data(), one.size() * sizeof(float)));
    }
}

TEST_CASE("ATTN_PAGED latent mode: supports_op", "[ops][latent]") {
    std::vector<uint16_t> kc(16 * 64 * 2);
    Tensor kct, vct;
    tensor_init(kct, DType::F16, 16, 64, 2, 1, kc.data());
    tensor_init(vct, DType::F16, 64, 32, 1, 1, kc.data());
    auto node_ok = [&](int64_t dv, bool v_new, Tensor *v_pool, DType pool_type) {
        Graph g;
        Tensor *q = g.input(DType::F32, {64, 4, 2}), *k = g.input(DType::F32, {64, 1, 2}),
               *ix = g.input(DType::I32, {8});
        Tensor *v = v_new ? g.input(DType::F32, {64, 1, 2}) : nullptr;
        g.op<Op::ATTN_PAGED>(DType::F32, {dv, 4, 2}, {q, k, v, &kct, v_pool, ix, nullptr}, {0.125f, 0, 32});
        kct.type = pool_type;
        const bool ok = supports(g.nodes()[0]);
        kct.type = DType::F16;
        return ok;
    };
    CHECK(node_ok(48, false, nullptr, DType::F16));
    CHECK(node_ok(64, false, nullptr, DType::F16));
    CHECK_FALSE(node_ok(65, false, nullptr, DType::F16));  // dv > dk
    CHECK_FALSE(node_ok(48, false, &vct, DType::F16));     // a V pool without new values: neither mode
    CHECK_FALSE(node_ok(64, true, nullptr, DType::F16));   // new values without a V pool
    CHECK_FALSE(node_ok(48, false, nullptr, DType::F32));  // an f32 pool
}

} // namespace
