#include "core/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
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

// Spin this many rounds waiting for work before sleeping. A decode step on a
// small model takes well under a millisecond, so the next job usually
// arrives while the workers are still spinning.
constexpr int kSpinRounds = 1 << 14;

void relax(int &round) {
    if (++round < 64) {
        VT_CPU_RELAX();
    } else {
        // Oversubscribed machines (more threads than free cores) need the
        // core back, or a spinning thread starves the one it waits for.
        sched_yield();
    }
}

} // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
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
    int round = 0;
    while (done_.load(std::memory_order_acquire) != n_threads_ - 1) relax(round);
}

void ThreadPool::worker_main(int ith) {
    pthread_setname_np(pthread_self(), "vt-pool");  // tells the compute threads apart (top -H, perf)
    uint64_t seen = 0;
    for (;;) {
        uint64_t gen = job_gen_.load(std::memory_order_acquire);
        for (int i = 0, round = 0; gen == seen && i < kSpinRounds; ++i) {
            relax(round);
            gen = job_gen_.load(std::memory_order_acquire);
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
        done_.fetch_add(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::barrier() {
    if (n_threads_ == 1) return;
    uint64_t gen = barrier_gen_.load(std::memory_order_acquire);
    if (barrier_count_.fetch_add(1, std::memory_order_acq_rel) == n_threads_ - 1) {
        barrier_count_.store(0, std::memory_order_relaxed);
        barrier_gen_.fetch_add(1, std::memory_order_release);
        return;
    }
    int round = 0;
    while (barrier_gen_.load(std::memory_order_acquire) == gen) relax(round);
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
