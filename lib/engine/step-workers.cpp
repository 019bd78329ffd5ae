#include "engine/step-workers.h"

namespace vt {

StepWorkers::StepWorkers(int n_helpers) {
    for (int i = 0; i < n_helpers; ++i) threads_.emplace_back(&StepWorkers::helper_main, this);
}

StepWorkers::~StepWorkers() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : threads_) t.join();
}

void StepWorkers::run(size_t n, JobFn fn, void *ctx) {
    {
        std::lock_guard<std::mutex> lk(mu_);
        fn_ = fn;
        ctx_ = ctx;
        n_ = n;
        next_ = 0;
    }
    if (n > 1) wake_.notify_all();
    std::unique_lock<std::mutex> lk(mu_);
    while (next_ < n_) {
        const size_t i = next_++;
        lk.unlock();
        fn(ctx, i);
        lk.lock();
    }
    idle_.wait(lk, [&] { return running_ == 0; });
    n_ = next_ = 0;  // a helper waking from here on finds nothing
    fn_ = nullptr;
    ctx_ = nullptr;
}

void StepWorkers::helper_main() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
        wake_.wait(lk, [&] { return stop_ || next_ < n_; });
        if (stop_) return;
        const size_t i = next_++;
        ++running_;
        JobFn fn = fn_;
        void *ctx = ctx_;
        lk.unlock();
        fn(ctx, i);
        lk.lock();
        if (--running_ == 0) idle_.notify_one();
    }
}

} // namespace vt
