// Helper threads for the per-sequence work of an engine step (sampling,
// stop checks, detokenization). run() hands out jobs one at a time to the
// calling thread and to whichever helpers are awake; it waits only for jobs
// a helper has taken, never for a helper to wake up. So on an oversubscribed
// machine a step is never slower than doing every job on the caller: a
// helper the scheduler wakes late finds no job left and sleeps again.
// Helpers sleep between steps (no spinning) and leave the cores to the
// forward pass's pool. One run() at a time (the engine thread's).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace vt {

class StepWorkers {
public:
    using JobFn = void (*)(void *ctx, size_t i);

    explicit StepWorkers(int n_helpers);
    ~StepWorkers();
    StepWorkers(const StepWorkers &) = delete;
    StepWorkers &operator=(const StepWorkers &) = delete;

    int n_helpers() const { return (int)threads_.size(); }

    // fn(ctx, i) once for every i < n, on this thread and the helpers;
    // returns when all have returned. fn must not throw.
    void run(size_t n, JobFn fn, void *ctx);

private:
    void helper_main();

    std::mutex mu_;
    std::condition_variable wake_;  // helpers: a job is there, or stop
    std::condition_variable idle_;  // run(): the helpers' jobs are done
    JobFn fn_ = nullptr;
    void *ctx_ = nullptr;
    size_t n_ = 0, next_ = 0;  // jobs of the current run; next_ >= n_: none left
    size_t running_ = 0;       // taken by helpers, not finished
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

} // namespace vt
