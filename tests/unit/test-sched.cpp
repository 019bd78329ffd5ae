// Continuous batching: budget splits (chunked prefill), the sequence cap,
// preemption of the newest running sequence and its recompute with prefix
// hits, requests that can never fit, cancellation from another thread, and
// a randomized run that checks every invariant and what the attention
// kernel would read. Expected block ids follow from the KV policy tested in
// test-kv.cpp (fresh ids in order, freed tail first, evicted from the head).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <thread>

#include "core/error.h"
#include "sched/scheduler.h"
#include "unit/sched-harness.h"

using namespace vt;
using namespace sched_harness;
using Ids = std::vector<BlockId>;
using Toks = std::vector<int32_t>;

namespace {

// Prompt (not decode) tokens of a step: every sequence scheduled for more
// than one token, or for one that is not its first sampled one.
uint32_t prefill_tokens(const SchedulerOutput &o, const std::vector<SeqId> &decodes) {
    uint32_t n = 0;
    for (const ScheduledSeq &q : o.seqs)
        if (std::find(decodes.begin(), decodes.end(), q.id) == decodes.end()) n += q.n_tokens;
    return n;
}

Toks prompt(size_t n, int32_t first) {
    Toks t(n);
    std::iota(t.begin(), t.end(), first);
    return t;
}

// Samples token 1000 + id for every sequence that needs logits; the ids in
// `stop` end there.
std::vector<FinishedSeq> finish_step(Scheduler &s, const SchedulerOutput &out, std::vector<SeqId> stop = {}) {
    std::vector<SampledToken> sampled;
    for (const ScheduledSeq &q : out.seqs)
        if (q.needs_logits)
            sampled.push_back({q.id, (int32_t)(1000 + q.id), std::find(stop.begin(), stop.end(), q.id) != stop.end()});
    return s.update(out, sampled);
}

void drain(Scheduler &s, KvCacheManager &kv) {
    for (int i = 0; i < 1000 && s.has_work(); ++i) finish_step(s, s.schedule());
    CHECK(!s.has_work());
    CHECK(kv.num_free_blocks() == kv.num_blocks());
    kv.check();
}

} // namespace

TEST_CASE("the token budget splits long prompts into chunks beside decodes", "[sched]") {
    KvCacheManager kv(kv_cfg(16));
    Scheduler s(kv, sched_cfg(8));
    s.add(1, prompt(20, 0), 3);
    s.add(2, prompt(6, 100), 3);

    SchedulerOutput o = s.schedule();  // seq 1 takes the whole budget
    REQUIRE(o.seqs.size() == 1);
    CHECK(o.seqs[0].id == 1);
    CHECK(o.seqs[0].start_pos == 0);
    CHECK(o.seqs[0].n_tokens == 8);
    CHECK(o.seqs[0].block_tables[0] == Ids{0, 1});
    CHECK(!o.seqs[0].needs_logits);
    CHECK(o.tokens == prompt(8, 0));
    CHECK(o.positions == prompt(8, 0));
    CHECK(finish_step(s, o).empty());
    s.check();

    o = s.schedule();
    REQUIRE(o.seqs.size() == 1);
    CHECK(o.seqs[0].start_pos == 8);
    CHECK(o.seqs[0].n_tokens == 8);
    CHECK(o.seqs[0].block_tables[0] == Ids{0, 1, 2, 3});
    CHECK(o.positions == prompt(8, 8));
    finish_step(s, o);

    o = s.schedule();  // seq 1's last 4 prompt tokens, seq 2's first 4
    REQUIRE(o.seqs.size() == 2);
    CHECK(o.seqs[0].id == 1);
    CHECK(o.seqs[0].n_tokens == 4);
    CHECK(o.seqs[0].block_tables[0] == Ids{0, 1, 2, 3, 4});
    CHECK(o.seqs[0].needs_logits);
    CHECK(o.seqs[1].id == 2);
    CHECK(o.seqs[1].offset == 4);
    CHECK(o.seqs[1].n_tokens == 4);
    CHECK(o.seqs[1].start_pos == 0);
    CHECK(o.seqs[1].block_tables[0] == Ids{5});
    CHECK(!o.seqs[1].needs_logits);
    CHECK(o.tokens == Toks{16, 17, 18, 19, 100, 101, 102, 103});
    CHECK(o.positions == Toks{16, 17, 18, 19, 0, 1, 2, 3});
    finish_step(s, o);
    CHECK(s.tokens(1)->back() == 1001);

    o = s.schedule();  // seq 1 decodes, seq 2 finishes its prompt
    REQUIRE(o.seqs.size() == 2);
    CHECK(o.seqs[0].n_tokens == 1);
    CHECK(o.seqs[0].start_pos == 20);
    CHECK(o.seqs[0].block_tables[0] == Ids{0, 1, 2, 3, 4, 6});
    CHECK(o.seqs[1].n_tokens == 2);
    CHECK(o.seqs[1].start_pos == 4);
    CHECK(o.seqs[1].block_tables[0] == Ids{5, 7});
    CHECK(o.seqs[1].needs_logits);
    CHECK(o.tokens == Toks{1001, 104, 105});
    CHECK(o.positions == Toks{20, 4, 5});
    finish_step(s, o);
    s.check();
    drain(s, kv);
}

TEST_CASE("while sequences decode, a step's prompt tokens are capped (decode priority)", "[sched]") {
    // Budget 64; beside decodes at most max(6, 2 per decode) prompt tokens.
    KvCacheManager kv(kv_cfg(256));
    Scheduler s(kv, sched_cfg(64, 16, 0, 6, 2));
    s.add(1, prompt(20, 0), 100);
    s.add(2, prompt(30, 100), 100);

    // Nobody decodes yet: the prompts share the whole budget.
    SchedulerOutput o = s.schedule();
    REQUIRE(o.seqs.size() == 2);
    CHECK(o.seqs[0].n_tokens == 20);
    CHECK(o.seqs[1].n_tokens == 30);
    finish_step(s, o);

    // Two decodes: a new 40-token prompt gets max(6, 2 * 2) = 6 tokens a
    // step, not the 62 the budget has left.
    s.add(3, prompt(40, 200), 100);
    o = s.schedule();
    REQUIRE(o.seqs.size() == 3);
    CHECK(o.seqs[0].n_tokens == 1);
    CHECK(o.seqs[1].n_tokens == 1);
    CHECK(o.seqs[2].id == 3);
    CHECK(o.seqs[2].n_tokens == 6);
    CHECK(o.positions == Toks{20, 30, 0, 1, 2, 3, 4, 5});
    finish_step(s, o);

    // The cap is the step's, shared by a running chunk and admissions: seq
    // 3 continues (6 tokens), seq 4 waits.
    s.add(4, prompt(5, 300), 100);
    o = s.schedule();
    REQUIRE(o.seqs.size() == 3);
    CHECK(o.seqs[2].id == 3);
    CHECK(o.seqs[2].start_pos == 6);
    CHECK(o.seqs[2].n_tokens == 6);
    CHECK(prefill_tokens(o, {1, 2}) == 6);
    finish_step(s, o);
    s.check();

    // More decodes, a larger cap: 2 per decode. Seq 3's prompt, then seq
    // 4's and five one-token prompts run to their first token, every step
    // capped by the decodes it started with...
    for (SeqId id = 5; id <= 9; ++id) s.add(id, prompt(1, (int32_t)(400 + id)), 100);
    std::vector<SeqId> decodes = {1, 2};
    for (int step = 0; step < 30 && decodes.size() < 9; ++step) {
        o = s.schedule();
        CHECK(prefill_tokens(o, decodes) <= std::max<uint32_t>(6, 2 * (uint32_t)decodes.size()));
        for (const ScheduledSeq &q : o.seqs)
            if (q.needs_logits && !std::count(decodes.begin(), decodes.end(), q.id)) decodes.push_back(q.id);
        finish_step(s, o);
    }
    REQUIRE(decodes.size() == 9);
    // ...then with 9 decodes a 40-token prompt gets max(6, 2 * 9) = 18.
    s.add(10, prompt(40, 500), 100);
    o = s.schedule();
    REQUIRE(o.seqs.size() == 10);
    CHECK(prefill_tokens(o, decodes) == 18);
    CHECK(o.seqs.back().id == 10);
    CHECK(o.seqs.back().n_tokens == 18);
    for (size_t i = 0; i + 1 < o.seqs.size(); ++i) CHECK(o.seqs[i].n_tokens == 1);
    finish_step(s, o);
    s.check();
    drain(s, kv);
}

TEST_CASE("sequences finish on a stop token, max_new_tokens or max_model_len", "[sched]") {
    KvCacheManager kv(kv_cfg(8));
    Scheduler s(kv, sched_cfg(64, 8, 10));
    s.add(1, prompt(4, 0), 100);  // stopped by the sampler
    s.add(2, prompt(4, 0), 2);    // by max_new_tokens
    s.add(3, prompt(8, 0), 100);  // by max_model_len (10 tokens)

    SchedulerOutput o = s.schedule();
    REQUIRE(o.seqs.size() == 3);
    CHECK(o.seqs[0].block_tables[0] == Ids{0});
    // Seq 2's prompt is all in its last block, which is never a hit; its
    // block duplicates seq 1's and is not cached.
    CHECK(o.seqs[1].block_tables[0] == Ids{1});
    CHECK(!kv.pool().is_cached(1));
    // Seq 3 hits block 0, which seq 1 fills in this very step.
    CHECK(o.seqs[2].start_pos == 4);
    CHECK(o.seqs[2].n_tokens == 4);
    CHECK(o.seqs[2].block_tables[0] == Ids{0, 2});
    CHECK(kv.prefix_hit_tokens() == 4);
    auto fin = finish_step(s, o, {1});
    REQUIRE(fin.size() == 1);
    CHECK(fin[0].id == 1);
    CHECK(fin[0].reason == FinishReason::stop);
    CHECK(s.tokens(1) == nullptr);
    CHECK(kv.pool().ref_count(0) == 1);  // still seq 3's

    o = s.schedule();
    REQUIRE(o.seqs.size() == 2);
    CHECK(o.seqs[0].block_tables[0] == Ids{1, 3});
    CHECK(o.seqs[1].block_tables[0] == Ids{0, 2, 4});
    fin = finish_step(s, o);
    REQUIRE(fin.size() == 2);
    CHECK(fin[0].id == 2);
    CHECK(fin[0].reason == FinishReason::length);
    CHECK(fin[1].id == 3);
    CHECK(fin[1].reason == FinishReason::length);
    CHECK(!s.has_work());
    CHECK(kv.num_free_blocks() == 8);
    kv.check();
}

TEST_CASE("max_num_seqs caps the running set", "[sched]") {
    KvCacheManager kv(kv_cfg(16));
    Scheduler s(kv, sched_cfg(64, 2));
    for (SeqId id = 1; id <= 3; ++id) s.add(id, prompt(3, 0), 2);
    SchedulerOutput o = s.schedule();
    REQUIRE(o.seqs.size() == 2);
    CHECK(o.seqs[0].block_tables[0] == Ids{0});
    CHECK(o.seqs[1].block_tables[0] == Ids{1});
    CHECK(s.num_waiting() == 1);
    finish_step(s, o);
    o = s.schedule();
    CHECK(o.seqs.size() == 2);  // still full
    CHECK(finish_step(s, o).size() == 2);
    o = s.schedule();
    REQUIRE(o.seqs.size() == 1);
    CHECK(o.seqs[0].id == 3);
    CHECK(o.seqs[0].block_tables[0] == Ids{2});
    finish_step(s, o);
    drain(s, kv);
}

TEST_CASE("out of blocks, the newest running sequences are preempted and recomputed", "[sched]") {
    KvCacheManager kv(kv_cfg(5));
    Scheduler s(kv, sched_cfg(64));
    s.add(1, prompt(12, 0), 3);
    s.add(2, prompt(4, 100), 10);
    s.add(3, prompt(4, 200), 10);

    SchedulerOutput o = s.schedule();
    REQUIRE(o.seqs.size() == 3);
    CHECK(o.seqs[0].block_tables[0] == Ids{0, 1, 2});
    CHECK(o.seqs[1].block_tables[0] == Ids{3});
    CHECK(o.seqs[2].block_tables[0] == Ids{4});
    CHECK(kv.num_free_blocks() == 0);
    finish_step(s, o);

    // Seq 1 needs a 4th block: seq 3 (newest) gives its block up; then seq 2
    // needs one and, being the newest left, preempts itself.
    o = s.schedule();
    CHECK(o.preempted == std::vector<SeqId>{3, 2});
    REQUIRE(o.seqs.size() == 1);
    CHECK(o.seqs[0].id == 1);
    CHECK(o.seqs[0].block_tables[0] == Ids{0, 1, 2, 4});
    CHECK(s.running() == std::vector<SeqId>{1});
    CHECK(s.waiting() == std::deque<SeqId>{2, 3});  // the older victim first
    s.check();
    finish_step(s, o);

    // Seq 2 would hit its own freed block 3 but needs one more: it waits.
    o = s.schedule();
    REQUIRE(o.seqs.size() == 1);
    CHECK(o.preempted.empty());
    CHECK(s.num_waiting() == 2);
    auto fin = finish_step(s, o);
    REQUIRE(fin.size() == 1);  // seq 1 has its 3 tokens
    CHECK(fin[0].id == 1);

    // Readmitted: seq 2 recomputes only its generated token after a hit on
    // block 3; seq 3's block was evicted, so it recomputes everything.
    o = s.schedule();
    REQUIRE(o.seqs.size() == 2);
    CHECK(o.seqs[0].id == 2);
    CHECK(o.seqs[0].start_pos == 4);
    CHECK(o.seqs[0].n_tokens == 1);
    CHECK(o.seqs[0].block_tables[0] == Ids{3, 4});
    CHECK(o.seqs[0].needs_logits);
    CHECK(o.seqs[1].id == 3);
    CHECK(o.seqs[1].start_pos == 0);
    CHECK(o.seqs[1].n_tokens == 5);
    CHECK(o.seqs[1].block_tables[0] == Ids{2, 1});
    CHECK(o.tokens == Toks{1002, 200, 201, 202, 203, 1003});
    CHECK(kv.prefix_hit_tokens() == 4);
    s.check();
    finish_step(s, o);
    drain(s, kv);
}

TEST_CASE("a request that can never fit is a clear error", "[sched]") {
    KvCacheManager kv(kv_cfg(4));  // 16 tokens in all
    CHECK_THROWS_AS(Scheduler(kv, sched_cfg(8, 8, 17)), Error);
    try {
        Scheduler(kv, sched_cfg(8, 8, 17));
    } catch (const Error &e) {
        CHECK(e.status() == VT_ERR_INVALID_ARGUMENT);
        CHECK(std::string(e.what()).find("max_model_len 17 needs 5 KV blocks") != std::string::npos);
    }

    Scheduler s(kv, sched_cfg(8));
    CHECK(s.max_model_len() == 16);
    try {
        s.add(1, prompt(17, 0), 1);
        FAIL("a 17-token prompt was accepted by a 16-token cache");
    } catch (const Error &e) {
        CHECK(e.status() == VT_ERR_CONTEXT_FULL);
        CHECK(std::string(e.what()).find("can never fit") != std::string::npos);
    }
    CHECK(!s.has_work());
    CHECK_THROWS_AS(s.add(2, {}, 1), Error);
    CHECK_THROWS_AS(s.add(2, prompt(3, 0), 0), Error);

    // Exactly the whole cache fits; it ends by length after one token.
    s.add(2, prompt(16, 0), 100);
    CHECK_THROWS_AS(s.add(2, prompt(3, 0), 1), Error);  // duplicate id
    finish_step(s, s.schedule());
    SchedulerOutput o = s.schedule();
    REQUIRE(o.seqs.size() == 1);
    CHECK(o.seqs[0].block_tables[0] == Ids{0, 1, 2, 3});
    auto fin = finish_step(s, o);
    REQUIRE(fin.size() == 1);
    CHECK(fin[0].reason == FinishReason::length);
    CHECK(kv.num_free_blocks() == 4);
}

TEST_CASE("update() checks the sampled tokens against the step", "[sched]") {
    KvCacheManager kv(kv_cfg(4));
    Scheduler s(kv, sched_cfg(8));
    s.add(1, prompt(3, 0), 4);
    SchedulerOutput o = s.schedule();
    CHECK_THROWS_AS(s.update(o, {}), Error);
    SampledToken wrong{2, 5, false};
    CHECK_THROWS_AS(s.update(o, std::span(&wrong, 1)), Error);
}

TEST_CASE("cancellation from another thread frees blocks at the next step", "[sched]") {
    KvCacheManager kv(kv_cfg(8));
    Scheduler s(kv, sched_cfg(64, 2));
    s.add(1, prompt(8, 0), 10);
    s.add(2, prompt(5, 100), 10);
    s.add(3, prompt(4, 200), 10);  // waits: the cap is 2
    SchedulerOutput o = s.schedule();
    REQUIRE(o.seqs.size() == 2);
    finish_step(s, o);
    CHECK(kv.num_free_blocks() == 4);

    std::thread t([&] {
        s.cancel(1);
        s.cancel(99);  // unknown: ignored
        s.cancel(3);
    });
    t.join();
    CHECK(kv.num_free_blocks() == 4);  // nothing happens until the next step
    o = s.schedule();
    CHECK(o.cancelled == std::vector<SeqId>{1, 3});
    REQUIRE(o.seqs.size() == 1);
    CHECK(o.seqs[0].id == 2);
    CHECK(kv.num_free_blocks() == 6);
    CHECK(s.tokens(1) == nullptr);
    CHECK(s.num_waiting() == 0);
    s.check();
    finish_step(s, o);
    s.cancel(1);  // again: ignored
    CHECK(s.schedule().cancelled.empty());
    s.cancel(2);
    s.schedule();
    CHECK(!s.has_work());
    CHECK(kv.num_free_blocks() == 8);
}

TEST_CASE("cancelling while the engine steps leaves nothing behind", "[sched][threads]") {
    KvCacheManager kv(kv_cfg(16));
    Scheduler s(kv, sched_cfg(16, 4));
    for (SeqId id = 0; id < 32; ++id) s.add(id, prompt(3 + id % 9, (int32_t)id), 6);
    std::thread t([&] {
        for (SeqId id = 0; id < 32; id += 2) {
            s.cancel(id);
            std::this_thread::yield();
        }
    });
    for (int i = 0; i < 10000 && (s.has_work() || t.joinable()); ++i) {
        finish_step(s, s.schedule());
        s.check();
        if (i == 50) t.join();
    }
    if (t.joinable()) t.join();
    drain(s, kv);
}

TEST_CASE("random traffic keeps every invariant and every read slot right", "[sched][stress]") {
    // Without and with decode priority (a cap of max(3, 1 per decode)),
    // which fills the pool slower: it gets fewer blocks, to preempt too.
    const bool capped = GENERATE(false, true);
    CAPTURE(capped);
    const uint32_t num_blocks = capped ? 16 : 24;
    KvCacheManager kv(kv_cfg(num_blocks));
    Scheduler s(kv, sched_cfg(16, 6, 40, capped ? 3 : 0, capped ? 1 : 0));
    std::vector<SeqId> decodes;  // sampled in the last step and still running: they decode next
    std::mt19937 rng(42);
    std::vector<uint64_t> slots(num_blocks * kBlock, 0);  // what the runner would have written
    std::map<SeqId, Toks> known;  // our copy of every live sequence's tokens
    SeqId next_id = 0;
    size_t n_preempted = 0, n_cancelled = 0, n_finished = 0;

    for (int step = 0; step < 3000; ++step) {
        if (step < 2500 && rng() % 3 == 0) {
            // Prompts share stems so that prefix hits happen.
            Toks p;
            size_t n = 1 + rng() % 30;
            int32_t stem = (int32_t)(rng() % 4);
            for (size_t i = 0; i < n; ++i) p.push_back(i < 12 ? stem * 100 + (int32_t)i : (int32_t)(rng() % 1000));
            known[next_id] = p;
            s.add(next_id++, p, 1 + rng() % 12);
        }
        if (!known.empty() && rng() % 10 == 0) {
            auto it = known.begin();
            std::advance(it, rng() % known.size());
            s.cancel(it->first);
        }

        SchedulerOutput o = s.schedule();
        s.check();
        n_preempted += o.preempted.size();
        for (SeqId id : o.cancelled) {
            REQUIRE(known.erase(id) == 1);
            ++n_cancelled;
        }
        REQUIRE(o.num_tokens() <= 16);
        REQUIRE(o.seqs.size() <= 6);
        // Every decode that was not cancelled or preempted runs (the budget
        // covers max_num_seqs), and with the cap, prompts stay under it.
        for (SeqId id : decodes) {
            if (std::count(o.cancelled.begin(), o.cancelled.end(), id) ||
                std::count(o.preempted.begin(), o.preempted.end(), id))
                continue;
            auto q = std::find_if(o.seqs.begin(), o.seqs.end(), [&](const ScheduledSeq &x) { return x.id == id; });
            REQUIRE(q != o.seqs.end());
            REQUIRE(q->n_tokens == 1);
        }
        std::vector<SeqId> live;  // decodes the step's cancels left: the scheduler's count
        for (SeqId id : decodes)
            if (!std::count(o.cancelled.begin(), o.cancelled.end(), id)) live.push_back(id);
        if (capped && !live.empty())
            REQUIRE(prefill_tokens(o, live) <= std::max<uint32_t>(3, (uint32_t)live.size()));
        // Write every scheduled token's slot first (the runner's contract),
        // then check that each sequence would read its own prefix.
        for (const ScheduledSeq &q : o.seqs) {
            const Toks &t = known.at(q.id);
            REQUIRE(*s.tokens(q.id) == t);
            REQUIRE(q.block_tables[0].size() == (q.start_pos + q.n_tokens + kBlock - 1) / kBlock);
            REQUIRE(q.needs_logits == (q.start_pos + q.n_tokens == t.size()));
            for (uint32_t i = 0; i < q.n_tokens; ++i) {
                REQUIRE(o.tokens[q.offset + i] == t[q.start_pos + i]);
                REQUIRE(o.positions[q.offset + i] == (int32_t)(q.start_pos + i));
                slots[(size_t)kv_slot(q.block_tables[0], q.start_pos + i, kBlock)] = prefix_print(t, q.start_pos + i);
            }
        }
        for (const ScheduledSeq &q : o.seqs) {
            const Toks &t = known.at(q.id);
            for (uint32_t p = 0; p < q.start_pos + q.n_tokens; ++p)
                REQUIRE(slots[(size_t)kv_slot(q.block_tables[0], p, kBlock)] == prefix_print(t, p));
        }

        std::vector<SampledToken> sampled;
        for (const ScheduledSeq &q : o.seqs)
            if (q.needs_logits) {
                int32_t tok = (int32_t)(rng() % 1000);
                known.at(q.id).push_back(tok);
                sampled.push_back({q.id, tok, rng() % 20 == 0});
            }
        decodes.clear();
        for (const SampledToken &t : sampled) decodes.push_back(t.id);
        for (const FinishedSeq &f : s.update(o, sampled)) {
            REQUIRE(known.erase(f.id) == 1);
            decodes.erase(std::find(decodes.begin(), decodes.end(), f.id));
            ++n_finished;
        }
        s.check();
        REQUIRE(s.num_running() + s.num_waiting() == known.size());
    }
    drain(s, kv);
    CHECK(s.num_running() + s.num_waiting() == 0);
    // The run exercised what it is meant to.
    CHECK(n_preempted > 0);
    CHECK(n_cancelled > 0);
    CHECK(n_finished > 0);
    CHECK(kv.prefix_hit_tokens() > 0);
}
