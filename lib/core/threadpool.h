// A persistent pool of compute threads. run() executes one job on every
// thread (the caller is thread 0) and returns when all have finished; inside
// a job, barrier() synchronizes all threads. Workers spin briefly between
// jobs, then sleep, so a decode loop pays no thread start-up per step or op.
// Not reentrant: one run() at a time (the owning context is externally
// synchronized).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vt {

class ThreadPool {
public:
    using JobFn = void (*)(void *ctx, int ith, int nth);

    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    int size() const { return n_threads_; }

    // Runs fn(ctx, ith, nth) for ith in [0, nth) concurrently. fn must not throw.
    void run(JobFn fn, void *ctx);

    // All threads of the current job wait here until every one has arrived.
    void barrier();

private:
    void worker_main(int ith);

    int n_threads_;
    std::vector<std::thread> workers_;

    // Job hand-off: a new job bumps job_gen_; finished workers bump done_.
    JobFn job_fn_ = nullptr;
    void *job_ctx_ = nullptr;
    std::atomic<uint64_t> job_gen_{0};
    std::atomic<int> done_{0};
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<int> sleepers_{0};

    // Sense-reversing barrier state.
    alignas(64) std::atomic<int> barrier_count_{0};
    alignas(64) std::atomic<uint64_t> barrier_gen_{0};
};

// Number of threads to use by default (at least 1): the physical cores of
// the CPUs the process may run on (its affinity mask), at most its cgroup's
// CPU quota.
int default_thread_count();

// Work done once at load (repacking, quantizing weights), outside any pool:
// part(i) for i < n_parts, part 0 on the caller's thread and the others on
// threads of their own, or on the caller's where no thread can be had.
// Returns when all are done; part must not throw.
void run_load_parts(int n_parts, const std::function<void(int)> &part);
// Parts worth running for `work` (in the caller's unit: bytes, elements)
// where a thread pays off from `min_work` on: the hardware threads up to 8,
// or 1.
int load_parts_for(size_t work, size_t min_work);

} // namespace vt
