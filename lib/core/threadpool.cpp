#include "core/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/futex.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VT_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define VT_CPU_RELAX() asm volatile("yield")
#else
#define VT_CPU_RELAX() ((void)0)
#endif

namespace vt {
namespace {

using Clock = std::chrono::steady_clock;

// Waiting threads (at a barrier, at run()'s end, a worker between jobs)
// first spin on their core (pause), then sleep on a futex until woken.
//
// They never sched_yield: with any other runnable process on the machine (a
// nice 19 busy loop will do) a yield hands the core to it for a scheduler
// slice (milliseconds), while the wait was for a few microseconds of the
// other thread's work; measured, a Q4_1 SmolLM2 decode fell to 0.35-0.68x of
// llama.cpp's from 1.3x when this pool yielded after 64 pauses. A sleeper
// woken by a futex instead preempts a lower-priority process at once.
//
// Spinning long is what a machine short of cores cannot afford (more
// runnable threads than CPUs: the thread waited for is descheduled, and the
// spin burns this thread's share). So the spin budget adapts per thread:
// halved after each wait that outlasted it, grown by 1/32 after each that
// did not, it settles near the 96th percentile of this thread's waits,
// capped; waits on descheduled threads, common on a loaded machine, push it
// down to kMinSpinNs, and rare ones (a preemption now and then) cost one
// halving. A pool with more threads than the CPUs it may use starts there
// and stays there (as libgomp throttles its spin count).
constexpr int64_t kMinSpinNs = 2'000;        // about the 64 pauses this pool used to spin
constexpr int64_t kBarrierSpinNs = 200'000;  // most a barrier or run()'s end spins: far above a node's imbalance
constexpr int64_t kJobSpinNs = 1'000'000;    // most a worker spins between jobs: the host code between decode steps
// How long a pool with more threads than CPUs yields after its spin, before
// it sleeps.
constexpr int64_t kOversubYieldNs = 200'000;
// Pauses between clock reads (a pause is ~20-50 ns, steady_clock's vDSO read
// about as much): a wait this short never reads the clock at all.
constexpr int kClockEvery = 16;

// The adaptive spin budget of one kind of wait on one thread.
struct SpinBudget {
    int64_t ns;
    void update(bool timed_out, int64_t max_ns) {
        ns = timed_out ? ns / 2 : ns + ns / 32 + 64;
        ns = std::clamp(ns, kMinSpinNs, std::max(kMinSpinNs, max_ns));
    }
};
thread_local SpinBudget t_barrier_budget{kBarrierSpinNs};

// Spins (pause) for up to budget_ns: spin() is false once the budget is spent.
class SpinWait {
public:
    explicit SpinWait(int64_t budget_ns) : budget_(budget_ns) {}

    bool spin() {
        VT_CPU_RELAX();
        if (++round_ % kClockEvery == 0) {
            const Clock::time_point now = Clock::now();
            if (round_ == kClockEvery) start_ = now;
            else if (now - start_ >= budget_) return false;
        }
        return true;
    }

private:
    std::chrono::nanoseconds budget_;
    int round_ = 0;
    Clock::time_point start_{};
};

// Sleeps while word holds `seen` (it may return early: callers re-check),
// and wakes every sleeper of word.
void futex_wait(std::atomic<uint32_t> &word, uint32_t seen) {
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
#else
    (void)word, (void)seen;
    sched_yield();
#endif
}
void futex_wake_all(std::atomic<uint32_t> &word) {
#if defined(__linux__)
    syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
#else
    (void)word;
#endif
}

// Waits until word no longer holds `seen`: spins within the thread's budget,
// then sleeps counted in `sleepers` (whoever changes word wakes it when that
// count is not zero; the seq_cst pair orders the count against the change).
void wait_change(std::atomic<uint32_t> &word, uint32_t seen, std::atomic<int> &sleepers, SpinBudget &budget,
                 int64_t max_ns) {
    if (word.load(std::memory_order_acquire) != seen) return;
    SpinWait w(budget.ns);
    bool timed_out = false;
    while (word.load(std::memory_order_acquire) == seen) {
        if (w.spin()) continue;
        timed_out = true;
        // A pool with more threads than CPUs (max_ns at the minimum) yields
        // for a while first: the thread it waits for is most likely on this
        // core's run queue, and a yield hands the core to it for far less
        // than a futex sleep and wake-up costs (measured, -t 4 on 2 cores:
        // decode at 0.6x with sleeping alone).
        if (max_ns <= kMinSpinNs) {
            const Clock::time_point until = Clock::now() + std::chrono::nanoseconds(kOversubYieldNs);
            while (word.load(std::memory_order_acquire) == seen && Clock::now() < until) sched_yield();
            if (word.load(std::memory_order_acquire) != seen) break;
        }
        sleepers.fetch_add(1, std::memory_order_seq_cst);
        while (word.load(std::memory_order_seq_cst) == seen) futex_wait(word, seen);
        sleepers.fetch_sub(1, std::memory_order_seq_cst);
        break;
    }
    budget.update(timed_out, max_ns);
}

// CPUs this process may run on: the affinity mask, at most the cgroup quota.
int usable_cpus();

} // namespace

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(n_threads < 1 ? 1 : n_threads), spin_max_ns_(n_threads_ > usable_cpus() ? kMinSpinNs : kBarrierSpinNs) {
    workers_.reserve((size_t)n_threads_ - 1);
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back(&ThreadPool::worker_main, this, i);
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_.store(true);
        job_gen_.fetch_add(1);
    }
    cv_.notify_all();
    for (auto &t : workers_) t.join();
}

void ThreadPool::run(JobFn fn, void *ctx) {
    if (n_threads_ == 1) {
        fn(ctx, 0, 1);
        return;
    }
    job_fn_ = fn;
    job_ctx_ = ctx;
    done_.store(0, std::memory_order_relaxed);
    {
        // The lock orders the generation bump against a worker that is about
        // to sleep, so no wake-up is lost.
        std::lock_guard<std::mutex> lock(mu_);
        job_gen_.fetch_add(1, std::memory_order_release);
    }
    if (sleepers_.load(std::memory_order_acquire) > 0) cv_.notify_all();
    fn(ctx, 0, n_threads_);
    // Until the last worker is done: each finishing worker changes done_.
    const uint32_t all = (uint32_t)n_threads_ - 1;
    for (uint32_t d; (d = done_.load(std::memory_order_acquire)) != all;)
        wait_change(done_, d, done_sleepers_, t_barrier_budget, spin_max_ns_);
}

void ThreadPool::worker_main(int ith) {
    pthread_setname_np(pthread_self(), "vt-pool");  // tells the compute threads apart (top -H, perf)
    uint64_t seen = 0;
    // Between jobs a worker spins, so that the next decode step finds it on
    // its core, then sleeps: an idle pool costs no CPU after kJobSpinNs.
    SpinBudget budget{kJobSpinNs};
    const int64_t max_ns = spin_max_ns_ == kMinSpinNs ? kMinSpinNs : kJobSpinNs;
    for (;;) {
        uint64_t gen = job_gen_.load(std::memory_order_acquire);
        if (gen == seen) {
            SpinWait w(budget.ns);
            while (gen == seen && w.spin()) gen = job_gen_.load(std::memory_order_acquire);
            budget.update(gen == seen, max_ns);
        }
        if (gen == seen) {
            std::unique_lock<std::mutex> lock(mu_);
            sleepers_.fetch_add(1);
            cv_.wait(lock, [&] { return job_gen_.load(std::memory_order_acquire) != seen; });
            sleepers_.fetch_sub(1);
            gen = job_gen_.load(std::memory_order_acquire);
        }
        seen = gen;
        if (stop_.load()) return;
        job_fn_(job_ctx_, ith, n_threads_);
        done_.fetch_add(1, std::memory_order_seq_cst);
        if (done_sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(done_);
    }
}

void ThreadPool::barrier() {
    if (n_threads_ == 1) return;
    const uint32_t gen = barrier_gen_.load(std::memory_order_acquire);
    if (barrier_count_.fetch_add(1, std::memory_order_acq_rel) == n_threads_ - 1) {
        barrier_count_.store(0, std::memory_order_relaxed);
        barrier_gen_.fetch_add(1, std::memory_order_seq_cst);
        if (barrier_sleepers_.load(std::memory_order_seq_cst) > 0) futex_wake_all(barrier_gen_);
        return;
    }
    wait_change(barrier_gen_, gen, barrier_sleepers_, t_barrier_budget, spin_max_ns_);
}

namespace {
// CPUs the cgroup's CPU quota allows, rounded up (v2 cpu.max "quota period",
// v1 cfs_quota_us / cfs_period_us); 0 when there is no quota. A container
// given 2 CPUs on a 64-core host sees all 64 in /proc/cpuinfo and in its
// affinity mask, but gets 2 CPUs' time: more threads only wait at barriers.
int cgroup_cpu_quota() {
    std::ifstream cg("/proc/self/cgroup");
    std::string line;
    int best = 0;
    auto take = [&](long long quota, long long period) {
        if (quota <= 0 || period <= 0) return;
        const int n = (int)((quota + period - 1) / period);
        if (best == 0 || n < best) best = n;
    };
    while (std::getline(cg, line)) {
        // "0::/path" (v2) or "N:cpu,cpuacct:/path" (v1).
        const size_t a = line.find(':'), b = line.find(':', a + 1);
        if (a == std::string::npos || b == std::string::npos) continue;
        const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        if (controllers.empty()) {
            std::ifstream f("/sys/fs/cgroup" + path + "/cpu.max");
            std::string quota;
            long long period = 0;
            if (f >> quota >> period && quota != "max") take(std::atoll(quota.c_str()), period);
        } else if (("," + controllers + ",").find(",cpu,") != std::string::npos) {
            long long quota = 0, period = 0;
            for (const char *dir : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
                std::ifstream q(std::string(dir) + path + "/cpu.cfs_quota_us"), p(std::string(dir) + path + "/cpu.cfs_period_us");
                if (q >> quota && p >> period) {
                    take(quota, period);
                    break;
                }
            }
        }
    }
    return best;
}

int usable_cpus() {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) > 0)
        n = n > 0 ? std::min<long>(n, CPU_COUNT(&allowed)) : CPU_COUNT(&allowed);
    const int quota = cgroup_cpu_quota();
    if (quota > 0 && n > quota) n = quota;
    return n < 1 ? 1 : (int)n;
}
} // namespace

int default_thread_count() {
    // Physical cores the process may run on: distinct (package, core id)
    // pairs of the CPUs in its affinity mask (taskset, a cpuset cgroup).
    // Hyper-threads share the vector units and memory port, so using them
    // slows matmuls down.
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    const bool have_mask = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
    std::set<std::pair<std::string, std::string>> cores;
    std::ifstream in("/proc/cpuinfo");
    std::string line, phys;
    long cpu = -1;
    while (std::getline(in, line)) {
        auto val = [&] { auto p = line.find(':'); return p == std::string::npos ? std::string() : line.substr(p + 1); };
        if (line.rfind("processor", 0) == 0) cpu = std::atol(val().c_str());
        else if (line.rfind("physical id", 0) == 0) phys = val();
        else if (line.rfind("core id", 0) == 0) {
            if (!have_mask || (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed))) cores.insert({phys, val()});
        }
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (have_mask && CPU_COUNT(&allowed) > 0) online = std::min<long>(online, CPU_COUNT(&allowed));
    int n = cores.empty() ? (int)online : (int)cores.size();
    if (online > 0 && n > online) n = (int)online;
    const int quota = cgroup_cpu_quota();
    if (quota > 0 && n > quota) n = quota;
    return n < 1 ? 1 : n;
}

void run_load_parts(int n_parts, const std::function<void(int)> &part) {
    std::vector<std::thread> threads;
    threads.reserve(n_parts > 1 ? (size_t)(n_parts - 1) : 0);
    for (int i = 1; i < n_parts; ++i) {
        try {
            threads.emplace_back(part, i);
        } catch (const std::system_error &) {
            part(i);  // no thread to be had: do it here
        }
    }
    part(0);
    for (auto &t : threads) t.join();
}

int load_parts_for(size_t work, size_t min_work) {
    if (work < min_work) return 1;  // a thread costs more than the work
    const unsigned hw = std::thread::hardware_concurrency();
    return (int)std::min(hw ? hw : 1u, 8u);
}

} // namespace vt
