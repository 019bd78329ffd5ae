// Thread pool: every thread runs every job once, barriers order phases, and
// thousands of back-to-back jobs (a decode loop) neither lose nor repeat work.
#include <catch2/catch.hpp>

#include <atomic>
#include <vector>

#include "core/threadpool.h"

using namespace vt;

namespace {
struct PhaseJob {
    ThreadPool *pool;
    std::vector<int> *data;
    std::atomic<int> bad{0};
};

void phase_job(void *p, int ith, int nth) {
    auto *j = static_cast<PhaseJob *>(p);
    std::vector<int> &d = *j->data;
    // Phase 1: each thread writes its slice; phase 2: each reads the
    // neighbour's slice, which is only complete after the barrier.
    size_t n = d.size();
    for (size_t i = n * ith / nth; i < n * (ith + 1) / nth; ++i) d[i] = (int)i * 3;
    j->pool->barrier();
    int other = (ith + 1) % nth;
    for (size_t i = n * other / nth; i < n * (other + 1) / nth; ++i)
        if (d[i] != (int)i * 3) j->bad.fetch_add(1);
    j->pool->barrier();
}

void count_job(void *p, int, int) { static_cast<std::atomic<int> *>(p)->fetch_add(1); }
} // namespace

TEST_CASE("thread pool runs each job on every thread") {
    for (int n : {1, 2, 3, 8}) {
        ThreadPool pool(n);
        std::atomic<int> count{0};
        for (int i = 0; i < 2000; ++i) pool.run(count_job, &count);
        CHECK(count.load() == 2000 * n);
    }
}

TEST_CASE("thread pool barrier separates phases") {
    for (int n : {2, 4}) {
        ThreadPool pool(n);
        std::vector<int> data(10007);
        PhaseJob job{&pool, &data};
        for (int rep = 0; rep < 200; ++rep) {
            std::fill(data.begin(), data.end(), -1);
            pool.run(phase_job, &job);
        }
        CHECK(job.bad.load() == 0);
    }
}

TEST_CASE("default thread count is positive") { CHECK(default_thread_count() >= 1); }
