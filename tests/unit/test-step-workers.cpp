// StepWorkers (lib/engine/step-workers.h): every job of a run runs exactly
// once, run() returns only after all of them, with any number of helpers,
// over thousands of back-to-back runs (a decode loop), and helpers do take
// jobs when there is time for them to.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "engine/step-workers.h"

using vt::StepWorkers;

namespace {

struct Counts {
    std::vector<std::atomic<int>> hits;
    std::atomic<int> on_caller{0}, on_helpers{0};
    std::thread::id caller;
    int sleep_us = 0;
    explicit Counts(size_t n) : hits(n) {}
};

void count_job(void *p, size_t i) {
    auto *c = static_cast<Counts *>(p);
    if (c->sleep_us) std::this_thread::sleep_for(std::chrono::microseconds(c->sleep_us));
    c->hits[i].fetch_add(1);
    (std::this_thread::get_id() == c->caller ? c->on_caller : c->on_helpers).fetch_add(1);
}

} // namespace

TEST_CASE("step workers run every job once, and run() waits for all", "[step-workers]") {
    for (int helpers : {0, 1, 3}) {
        StepWorkers w(helpers);
        REQUIRE(w.n_helpers() == helpers);
        for (int rep = 0; rep < 2000; ++rep) {
            const size_t n = (size_t)(rep % 70);
            Counts c(n);
            c.caller = std::this_thread::get_id();
            w.run(n, count_job, &c);
            // Every count final as run() returns: nothing still running.
            for (size_t i = 0; i < n; ++i) REQUIRE(c.hits[i].load() == 1);
            REQUIRE(c.on_caller.load() + c.on_helpers.load() == (int)n);
            if (helpers == 0) REQUIRE(c.on_helpers.load() == 0);
        }
    }
}

TEST_CASE("step workers share slow jobs with the helpers", "[step-workers]") {
    StepWorkers w(1);
    Counts c(64);
    c.caller = std::this_thread::get_id();
    c.sleep_us = 2000;  // 128 ms of jobs: the helper wakes long before the end
    w.run(c.hits.size(), count_job, &c);
    for (auto &h : c.hits) REQUIRE(h.load() == 1);
    REQUIRE(c.on_helpers.load() > 0);
    REQUIRE(c.on_caller.load() > 0);
}
