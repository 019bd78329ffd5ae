// Speculative decoding's bookkeeping: the n-gram proposer against vLLM's
// documented choices, the draft policy's cost fit and break-even batch, and
// the scheduler carrying drafts: a verification
// step's tokens and positions, the rejected tokens' KV given back, drafts
// cut to the request's limits, a rejected draft never served from the
// prefix cache (an accepted one is), and random traffic with drafts whose
// every sequence reads its own tokens' slots. With recurrent state: the
// checkpoint before a verification, the rollback and replay after a
// rejection, and random traffic whose every step starts from the state of
// exactly the tokens before it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

#include "sched/scheduler.h"
#include "unit/sched-harness.h"
#include "spec/draft-policy.h"
#include "spec/ngram.h"

using namespace vt;
using namespace sched_harness;
using Toks = std::vector<int32_t>;

namespace {

NgramConfig ngram(uint32_t min_n, uint32_t max_n, uint32_t k) { return {min_n, max_n, k}; }

// Runs seq's prompt through and samples `first`: it then decodes.
void prefill(Scheduler &s, SeqId id, int32_t first) {
    SchedulerOutput o = s.schedule();
    std::vector<SampledToken> t;
    for (const ScheduledSeq &q : o.seqs)
        if (q.needs_logits) t.push_back({q.id, q.id == id ? first : 0, false});
    s.update(o, t);
}

// The "model" of the random traffic cases: per sequence that needs logits,
// a token of an 8-token alphabet per verified row while they equal the
// draft's (favour_draft: the draft's token two times in three, else only by
// chance), appended to known; 1 in 25 last tokens stops.
std::vector<SampledToken> sample_step(const SchedulerOutput &o, std::map<SeqId, Toks> &known, std::mt19937 &rng,
                                      bool favour_draft, size_t &n_drafted, size_t &n_accepted) {
    std::vector<SampledToken> sampled;
    for (const ScheduledSeq &q : o.seqs) {
        if (!q.needs_logits) continue;
        for (uint32_t i = 0; i <= q.n_draft; ++i) {
            const int32_t drafted = i < q.n_draft ? o.tokens[q.offset + q.n_tokens - q.n_draft + i] : -1;
            const int32_t tok = favour_draft && drafted >= 0 && rng() % 3 != 0 ? drafted : (int32_t)(rng() % 8);
            known.at(q.id).push_back(tok);
            const bool last = i == q.n_draft || tok != drafted;
            sampled.push_back({q.id, tok, last && rng() % 25 == 0});
            if (last) break;
            ++n_accepted;
        }
        n_drafted += q.n_draft;
    }
    return sampled;
}

// Steps s to its end, every sampled token 0.
void drain(Scheduler &s) {
    for (int i = 0; i < 1000 && s.has_work(); ++i) {
        SchedulerOutput o = s.schedule();
        std::vector<SampledToken> sampled;
        for (const ScheduledSeq &q : o.seqs)
            if (q.needs_logits) sampled.push_back({q.id, 0, false});
        s.update(o, sampled);
    }
}

} // namespace

TEST_CASE("n-gram lookup proposes what followed the longest earlier match", "[spec]") {
    // vLLM's docstring example: [4, 2, 3] has no earlier match, [2, 3] has.
    CHECK(propose_ngram(Toks{1, 2, 3, 4, 2, 3}, ngram(2, 3, 4), 4) == Toks{4, 2, 3});
    CHECK(propose_ngram(Toks{1, 2, 3, 4, 2, 3}, ngram(2, 3, 2), 4) == Toks{4, 2});
    CHECK(propose_ngram(Toks{1, 2, 3, 4, 2, 3}, ngram(2, 3, 4), 1) == Toks{4});  // k_max
    // The longest match wins over a shorter, earlier one.
    CHECK(propose_ngram(Toks{9, 3, 7, 1, 2, 3, 8, 2, 3}, ngram(1, 2, 2), 9) == Toks{8, 2});
    // Among equally long matches, the earliest (vLLM's choice).
    CHECK(propose_ngram(Toks{5, 6, 1, 5, 6, 2, 5, 6}, ngram(2, 2, 1), 9) == Toks{1});
    // Too short a match, no match, nothing to draft.
    CHECK(propose_ngram(Toks{1, 2, 3, 4, 2, 3}, ngram(3, 3, 4), 4).empty());
    CHECK(propose_ngram(Toks{1, 2, 3, 4}, ngram(1, 2, 4), 4).empty());
    CHECK(propose_ngram(Toks{1, 2, 1, 2}, ngram(1, 2, 0), 4).empty());
    CHECK(propose_ngram(Toks{7}, ngram(1, 1, 3), 4).empty());
    // A run drafts itself: [7, 7] matches at 0, followed by 7, 7.
    CHECK(propose_ngram(Toks{7, 7, 7, 7}, ngram(2, 2, 5), 9) == Toks{7, 7});
}

TEST_CASE("the draft policy drafts while a draft token earns more than the step's average rate", "[spec]") {
    DraftPolicy p;
    CHECK(p.worth_drafting(64));  // nothing measured yet: draft, to measure
    // ... but for one step in kProbeEvery, whose other size makes a fit.
    uint32_t plain = 0;
    for (uint32_t i = 0; i < 2 * DraftPolicy::kProbeEvery; ++i) plain += p.draft_now(1) == DraftPolicy::Drafts::none;
    CHECK(plain == 2);
    double a = 0, b = 0;
    for (int i = 0; i < 20; ++i) p.observe_step(4, 0.008);  // no spread: still no fit
    CHECK(!p.cost(a, b));
    CHECK(p.worth_drafting(64));
    // Steps of n tokens take 4 ms + 1 ms n.
    for (int i = 0; i < 200; ++i) {
        const uint32_t n = 1 + (uint32_t)(i % 12);
        p.observe_step(n, 0.004 + 0.001 * n);
    }
    REQUIRE(p.cost(a, b));
    CHECK(a == Approx(0.004).margin(2e-4));
    CHECK(b == Approx(0.001).margin(5e-5));
    // Acceptance 0.6: worth it while 0.6 (4 + B) > B, i.e. B < 6.
    for (int i = 0; i < 100; ++i) p.observe_verification(5, 3);
    CHECK(p.acceptance() == Approx(0.6).margin(0.01));
    CHECK(p.worth_drafting(1));
    CHECK(p.worth_drafting(5));
    CHECK(!p.worth_drafting(7));
    CHECK(!p.worth_drafting(16));
    // Drafts that are always rejected are never worth their cost.
    for (int i = 0; i < 400; ++i) p.observe_verification(4, 0);
    CHECK(p.acceptance() < 0.01);
    CHECK(!p.worth_drafting(1));
    // Still, one step in kProbeEvery drafts for one request, to see whether
    // that changed.
    int probes = 0;
    for (uint32_t i = 0; i < 3 * DraftPolicy::kProbeEvery; ++i) {
        const DraftPolicy::Drafts d = p.draft_now(1);
        CHECK(d != DraftPolicy::Drafts::all);
        probes += d == DraftPolicy::Drafts::probe;
    }
    CHECK(probes == 3);
    CHECK(p.draft_now(5) == DraftPolicy::Drafts::none);
}

TEST_CASE("the draft policy counts what making a draft costs", "[spec]") {
    DraftPolicy p;
    for (int i = 0; i < 200; ++i) {
        const uint32_t n = 1 + (uint32_t)(i % 12);
        p.observe_step(n, 0.004 + 0.001 * n);  // a step: 4 ms + 1 ms a token
    }
    for (int i = 0; i < 100; ++i) p.observe_verification(5, 4);  // acceptance 0.8
    CHECK(p.draft_cost(4) == 0);  // no proposal seen: free
    // Free drafts pay while 0.8 (4 + B) > B: B < 16.
    CHECK(p.worth_drafting(15));
    CHECK(!p.worth_drafting(17));
    // A draft model: 8 ms + 1 ms a request for 4 tokens each, so D(n) =
    // 2 ms + 0.25 ms n per drafted position; drafting pays while
    // 0.8 (4 + B) > B + 2 + 0.25 B (in ms), i.e. B < 2.67.
    for (int i = 0; i < 200; ++i) {
        const uint32_t n = 1 + (uint32_t)(i % 8);
        p.observe_proposal(n, 4, 0.008 + 0.001 * n);
    }
    CHECK(p.draft_cost(4) == Approx(0.002 / 4 + 0.00025).margin(1e-5));
    CHECK(p.worth_drafting(1));
    CHECK(p.worth_drafting(2));
    CHECK(!p.worth_drafting(3));
    CHECK(!p.worth_drafting(8));
    // One proposal size only: the mean cost per request drafted for.
    DraftPolicy q;
    for (int i = 0; i < 20; ++i) q.observe_proposal(2, 4, 0.004);
    CHECK(q.draft_cost(2) == Approx(0.0005));
    CHECK(q.draft_cost(16) == Approx(0.0005));
}

TEST_CASE("a draft is verified in one step and its rejected tokens' KV goes back", "[spec]") {
    KvCacheManager kv(kv_cfg(16));
    Scheduler s(kv, sched_cfg(16));
    s.add(1, Toks{10, 11, 12, 13, 14, 15}, 20);
    prefill(s, 1, 16);  // 7 tokens known, 6 computed
    REQUIRE(s.set_draft(1, Toks{17, 18, 19, 20, 21}) == 5);

    SchedulerOutput o = s.schedule();
    REQUIRE(o.seqs.size() == 1);
    const ScheduledSeq &q = o.seqs[0];
    CHECK(q.n_tokens == 6);
    CHECK(q.n_draft == 5);
    CHECK(q.start_pos == 6);
    CHECK(q.needs_logits);
    CHECK(o.tokens == Toks{16, 17, 18, 19, 20, 21});
    CHECK(o.positions == Toks{6, 7, 8, 9, 10, 11});
    CHECK(q.block_tables[0].size() == 3);  // 12 positions
    s.check();

    // Two draft tokens accepted, then the model's own 30: KV stays for
    // positions 0..8 (through the second accepted token).
    std::vector<SampledToken> t = {{1, 17, false}, {1, 18, false}, {1, 30, false}};
    CHECK(s.update(o, t).empty());
    CHECK(*s.tokens(1) == Toks{10, 11, 12, 13, 14, 15, 16, 17, 18, 30});
    CHECK(kv.block_table(1).size() == 3);  // 9 computed tokens
    s.check();

    o = s.schedule();  // a plain decode of 30 at position 9
    REQUIRE(o.seqs.size() == 1);
    CHECK(o.tokens == Toks{30});
    CHECK(o.positions == Toks{9});
    CHECK(o.seqs[0].n_draft == 0);

    // Too many tokens for the draft, or one stopping early, is refused.
    std::vector<SampledToken> bad = {{1, 31, false}, {1, 32, false}};
    CHECK_THROWS(s.update(o, bad));
}

TEST_CASE("everything rejected: the decode goes on from the same place", "[spec]") {
    KvCacheManager kv(kv_cfg(16));
    Scheduler s(kv, sched_cfg(16));
    s.add(1, Toks{1, 2, 3}, 20);
    prefill(s, 1, 4);
    s.set_draft(1, Toks{5, 6, 7, 8, 9, 10});
    SchedulerOutput o = s.schedule();
    REQUIRE(o.seqs[0].block_tables[0].size() == 3);  // positions 3..9
    std::vector<SampledToken> t = {{1, 40, false}};
    s.update(o, t);
    CHECK(kv.block_table(1).size() == 1);  // 4 computed tokens
    CHECK(kv.num_free_blocks() == 15);
    s.check();
    o = s.schedule();
    CHECK(o.tokens == Toks{40});
    CHECK(o.positions == Toks{4});
}

TEST_CASE("drafts are cut to what the request may still generate", "[spec]") {
    KvCacheManager kv(kv_cfg(16));
    Scheduler s(kv, sched_cfg(16, 8, 12));
    s.add(1, Toks{1, 2, 3}, 4);  // at most 4 new tokens
    CHECK(s.set_draft(1, Toks{9}) == 0);  // not decoding yet
    prefill(s, 1, 4);  // 1 generated: 3 more, so a draft of 2
    s.add(2, Toks{1, 2, 3, 4, 5, 6, 7, 8}, 20);  // max_model_len 12: 4 new tokens
    CHECK(s.set_draft(1, Toks{5, 6, 7, 8}) == 2);
    std::vector<SampledToken> t;
    SchedulerOutput o = s.schedule();  // seq 1 verifies; seq 2 prefills and samples
    for (const ScheduledSeq &q : o.seqs) {
        if (q.id == 1) {
            CHECK(q.n_draft == 2);
            t.insert(t.end(), {{1, 5, false}, {1, 6, false}, {1, 7, false}});
        } else {
            t.push_back({2, 9, false});
        }
    }
    const std::vector<FinishedSeq> f = s.update(o, t);
    REQUIRE(f.size() == 1);  // seq 1 made its 4 tokens
    CHECK(f[0].id == 1);
    CHECK(f[0].reason == FinishReason::length);
    CHECK(s.set_draft(2, Toks{1, 2, 3, 4, 5}) == 2);  // 9 tokens of 12: 3 more
    s.check();
}

TEST_CASE("a rejected draft's KV is never served from the prefix cache, an accepted one is", "[spec]") {
    KvCacheManager kv(kv_cfg(32));
    Scheduler s(kv, sched_cfg(32));
    s.add(1, Toks{1, 2, 3}, 20);
    prefill(s, 1, 4);  // block 0 holds 1 2 3 | 4 to come
    s.set_draft(1, Toks{5, 6, 7, 8, 9});  // would fill block 0 and block 1
    SchedulerOutput o = s.schedule();
    std::vector<SampledToken> t = {{1, 50, false}};  // all rejected
    s.update(o, t);
    s.check();
    // A prompt made of the draft's tokens must not hit the blocks they
    // went into; the block the step filled with known tokens (1 2 3 4) may.
    PrefixHit hit = kv.find_prefix(Toks{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
    CHECK(hit.num_tokens == 4);

    o = s.schedule();  // 50 at position 4
    t = {{1, 51, false}};
    s.update(o, t);
    s.set_draft(1, Toks{52, 53, 54});
    o = s.schedule();  // 51 52 53 54 at positions 5..8: accepted whole, then 55
    CHECK(o.seqs[0].n_draft == 3);
    t = {{1, 52, false}, {1, 53, false}, {1, 54, false}, {1, 55, false}};
    s.update(o, t);
    s.check();
    // Blocks 0 (1 2 3 4) and 1 (50 51 52 53) are known and full: both are
    // cached once the next step's allocation covers them.
    o = s.schedule();
    CHECK(o.positions == Toks{9});
    hit = kv.find_prefix(Toks{1, 2, 3, 4, 50, 51, 52, 53, 54, 99});
    CHECK(hit.num_tokens == 8);
}

TEST_CASE("random traffic with drafts reads every sequence's own slots", "[spec][stress]") {
    const uint32_t num_blocks = 24;
    KvCacheManager kv(kv_cfg(num_blocks));
    Scheduler s(kv, sched_cfg(16, 6, 40));
    std::mt19937 rng(7);
    std::vector<uint64_t> slots(num_blocks * kBlock, 0);
    std::map<SeqId, Toks> known;
    SeqId next_id = 0;
    size_t n_drafted = 0, n_accepted = 0, n_preempted = 0;
    for (int step = 0; step < 3000; ++step) {
        if (step < 2500 && rng() % 3 == 0) {
            Toks p;
            const size_t n = 1 + rng() % 20;
            for (size_t i = 0; i < n; ++i) p.push_back((int32_t)(rng() % 8));  // small alphabet: n-grams recur
            known[next_id] = p;
            s.add(next_id++, p, 1 + rng() % 16);
        }
        SchedulerOutput o = s.schedule();
        s.check();
        n_preempted += o.preempted.size();
        REQUIRE(o.num_tokens() <= 16);
        for (const ScheduledSeq &q : o.seqs) {
            const Toks &t = known.at(q.id);
            REQUIRE(q.block_tables[0].size() == (q.start_pos + q.n_tokens + kBlock - 1) / kBlock);
            // The known tokens, then the draft's, slot by slot (a draft
            // slot holds what its tokens would make: the known prefix and
            // the draft so far).
            Toks seen(t.begin(), t.begin() + q.start_pos);
            for (uint32_t i = 0; i < q.n_tokens; ++i) {
                const int32_t tok = o.tokens[q.offset + i];
                if (i < q.n_tokens - q.n_draft) REQUIRE(tok == t[q.start_pos + i]);
                REQUIRE(o.positions[q.offset + i] == (int32_t)(q.start_pos + i));
                seen.push_back(tok);
                slots[(size_t)kv_slot(q.block_tables[0], q.start_pos + i, kBlock)] = prefix_print(seen, seen.size() - 1);
            }
        }
        for (const ScheduledSeq &q : o.seqs) {
            Toks seen(known.at(q.id).begin(), known.at(q.id).begin() + q.start_pos);
            for (uint32_t i = 0; i < q.n_tokens; ++i) seen.push_back(o.tokens[q.offset + i]);
            for (uint32_t p = 0; p < q.start_pos + q.n_tokens; ++p)
                REQUIRE(slots[(size_t)kv_slot(q.block_tables[0], p, kBlock)] == prefix_print(seen, p));
        }
        // The "model" samples tokens of the small alphabet; a draft token is
        // kept while it equals what was sampled.
        const std::vector<SampledToken> sampled = sample_step(o, known, rng, false, n_drafted, n_accepted);
        for (const FinishedSeq &f : s.update(o, sampled)) REQUIRE(known.erase(f.id) == 1);
        s.check();
        for (auto &[id, t] : known) {
            REQUIRE(*s.tokens(id) == t);
            s.set_draft(id, propose_ngram(t, ngram(1, 3, 4), 4));
        }
    }
    drain(s);
    CHECK(!s.has_work());
    CHECK(kv.num_free_blocks() == kv.num_blocks());
    kv.check();
    CHECK(n_drafted > 1000);
    CHECK(n_accepted > 100);
    CHECK(n_preempted > 0);
}

namespace {

// A pool with recurrent state slots: live, snapshots and checkpoints.
KvCacheConfig state_cfg(uint32_t num_blocks, uint32_t slots, uint32_t snapshots) {
    KvCacheConfig c = kv_cfg(num_blocks);
    c.state_slots = slots;
    c.state_snapshots = snapshots;
    c.state_checkpoints = true;
    return c;
}

} // namespace

TEST_CASE("recurrent state: a verification checkpoints it, a rejection rolls it back and replays the kept tokens",
          "[spec]") {
    KvCacheConfig cfg = state_cfg(16, 2, 0);
    cfg.prefix_caching = false;
    KvCacheManager kv(cfg);
    Scheduler s(kv, sched_cfg(16));
    s.add(1, Toks{10, 11, 12, 13, 14, 15}, 20);
    prefill(s, 1, 16);
    const int32_t live = kv.state_slot(1), ckpt = 2 + live;  // checkpoints follow the live slots
    REQUIRE(s.set_draft(1, Toks{17, 18, 19}) == 3);
    SchedulerOutput o = s.schedule();
    REQUIRE(o.seqs.size() == 1);
    CHECK(o.seqs[0].n_replay == 0);
    CHECK(o.tokens == Toks{16, 17, 18, 19});
    REQUIRE(o.state_restores.size() == 1);  // the state at position 6, set aside before the pass
    CHECK(o.state_restores[0].src == live);
    CHECK(o.state_restores[0].dst == ckpt);

    // One draft token kept, then the model's 30: the state went through 18
    // and 19 too, so it goes back to position 6, and the next step computes
    // 16 and 17 again before 30 (their KV stays).
    std::vector<SampledToken> t = {{1, 17, false}, {1, 30, false}};
    CHECK(s.update(o, t).empty());
    CHECK(kv.block_table(1).size() == 2);  // 8 computed tokens
    s.check();
    REQUIRE(s.set_draft(1, Toks{31, 32}) == 2);  // it still decodes: it may draft again
    o = s.schedule();
    REQUIRE(o.seqs.size() == 1);
    const ScheduledSeq &q = o.seqs[0];
    CHECK(q.start_pos == 6);
    CHECK(q.n_replay == 2);
    CHECK(q.n_draft == 2);
    CHECK(q.needs_logits);
    CHECK(o.tokens == Toks{16, 17, 30, 31, 32});
    CHECK(o.positions == Toks{6, 7, 8, 9, 10});
    // The rollback; the checkpoint then already holds the state at 6.
    REQUIRE(o.state_restores.size() == 1);
    CHECK(o.state_restores[0].src == ckpt);
    CHECK(o.state_restores[0].dst == live);

    // All accepted: nothing rolls back, nothing replays.
    t = {{1, 31, false}, {1, 32, false}, {1, 33, false}};
    CHECK(s.update(o, t).empty());
    s.check();
    o = s.schedule();
    CHECK(o.tokens == Toks{33});
    CHECK(o.positions == Toks{11});
    CHECK(o.seqs[0].n_replay == 0);
    CHECK(o.state_restores.empty());
}

TEST_CASE("recurrent state: no drafts without checkpoints; a sequence that stops at a draft token leaves no "
          "rollback behind", "[spec]") {
    KvCacheConfig cfg = state_cfg(16, 2, 0);
    cfg.state_checkpoints = false;
    {
        KvCacheManager kv(cfg);
        Scheduler s(kv, sched_cfg(16));
        s.add(1, Toks{1, 2, 3}, 20);
        prefill(s, 1, 4);
        CHECK(s.set_draft(1, Toks{5, 6}) == 0);
    }
    cfg.state_checkpoints = true;
    KvCacheManager kv(cfg);
    Scheduler s(kv, sched_cfg(16));
    s.add(1, Toks{1, 2, 3}, 20);
    prefill(s, 1, 4);
    REQUIRE(s.set_draft(1, Toks{5, 6}) == 2);
    SchedulerOutput o = s.schedule();
    // Stopped at its first draft token: it leaves, and its queued rollback
    // with it (the slot's next owner starts from its own state).
    std::vector<SampledToken> t = {{1, 5, true}};
    CHECK(s.update(o, t).size() == 1);
    s.add(2, Toks{7, 8}, 20);
    o = s.schedule();
    REQUIRE(o.seqs.size() == 1);
    CHECK(o.seqs[0].start_pos == 0);
    CHECK(o.state_restores.empty());
}

TEST_CASE("random traffic with drafts on recurrent state reads the state of exactly the tokens before each step",
          "[spec][stress]") {
    const uint32_t num_blocks = 18, n_live = 5, n_snap = 10;
    KvCacheManager kv(state_cfg(num_blocks, n_live, n_snap));
    Scheduler s(kv, sched_cfg(16, 6, 40));
    std::mt19937 rng(11);
    // What each state slot has absorbed: the print of the tokens before its
    // position, or 0 for nothing known (a fresh sequence never reads it).
    std::vector<uint64_t> states(2 * n_live + n_snap, 0);
    std::map<SeqId, Toks> known;
    const std::vector<Toks> prompts = {{1, 2, 3, 4, 5, 6, 7, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 3}, {5, 5, 5, 5, 6}};
    SeqId next_id = 0;
    size_t n_drafted = 0, n_accepted = 0, n_preempted = 0, n_replayed = 0, n_restored = 0;
    auto copy = [&](const std::vector<StateCopy> &copies) {
        for (const StateCopy &c : copies) states.at((size_t)c.dst) = states.at((size_t)c.src);
    };
    for (int step = 0; step < 3000; ++step) {
        if (step < 2500 && rng() % 3 == 0) {
            Toks p = prompts[rng() % prompts.size()];  // shared prompts: prefix hits on snapshots
            for (size_t i = rng() % 6; i > 0; --i) p.push_back((int32_t)(rng() % 8));
            known[next_id] = p;
            s.add(next_id++, p, 1 + rng() % 16);
        }
        SchedulerOutput o = s.schedule();
        s.check();
        n_preempted += o.preempted.size();
        n_restored += o.state_restores.size();
        REQUIRE(o.num_tokens() <= 16);
        copy(o.state_restores);
        for (const ScheduledSeq &q : o.seqs) {
            const Toks &t = known.at(q.id);
            REQUIRE(q.state_slot >= 0);
            for (uint32_t i = 0; i < q.n_tokens - q.n_draft; ++i) REQUIRE(o.tokens[q.offset + i] == t[q.start_pos + i]);
            if (q.start_pos > 0) REQUIRE(states[(size_t)q.state_slot] == prefix_print(t, q.start_pos - 1));
            Toks seen(t.begin(), t.begin() + q.start_pos);
            for (uint32_t i = 0; i < q.n_tokens; ++i) seen.push_back(o.tokens[q.offset + i]);
            states[(size_t)q.state_slot] = prefix_print(seen, seen.size() - 1);
            n_replayed += q.n_replay;
        }
        copy(o.state_saves);
        // Mostly the draft's token: long accepted runs as well as rejections.
        const std::vector<SampledToken> sampled = sample_step(o, known, rng, true, n_drafted, n_accepted);
        for (const FinishedSeq &f : s.update(o, sampled)) REQUIRE(known.erase(f.id) == 1);
        s.check();
        for (auto &[id, t] : known) {
            REQUIRE(*s.tokens(id) == t);
            if (rng() % 4) s.set_draft(id, propose_ngram(t, ngram(1, 3, 4), 4));
        }
    }
    drain(s);
    CHECK(!s.has_work());
    CHECK(kv.num_free_state_slots() == n_live);
    kv.check();
    CHECK(n_drafted > 1000);
    CHECK(n_accepted > 300);
    CHECK(n_replayed > 300);
    CHECK(n_restored > 300);
    CHECK(n_preempted > 0);
}
