// The fortified inline recv() of glibc's headers would clash with the
// definition below; nothing in this file needs it.
#undef _FORTIFY_SOURCE

#include "server-conn.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <system_error>

namespace vts {

// ---- Read deadlines --------------------------------------------------------
//
// How: vt-server defines recv() itself. httplib is Debian's shared library
// (libcpp-httplib.so), whose reads of requests all go through recv() after
// a poll(); an executable's definition of a symbol comes first in the
// dynamic linker's lookup, so those calls land here (ELF interposition, as
// malloc replacements work). Each connection runs on one ConnectionPool
// thread from start to end, so a thread-local clock follows its requests:
// the first recv() of a request starts the head's deadline, the routes move
// it on (request_head_read/_body_read/_done), and a recv() past the
// deadline fails with ETIMEDOUT, which httplib treats as a broken read (a
// 400 that the error handler turns into 408, then the connection closes).
// The alternatives were worse: httplib's Server::process_and_close_socket
// is private and sees only the socket, its read timeout restarts with every
// byte, and a watchdog would have to learn each connection's socket from
// outside httplib. The check costs a clock read per recv(), and threads
// other than the pool's (none of vt's own code calls recv()) pass through.

namespace {

enum class Phase : unsigned char { off, between, head, body, handling };

struct ReadClock {
    Phase phase;
    bool expired;
    const char *what;  // what missed its deadline
    std::chrono::steady_clock::time_point deadline;
    int fd;  // the connection's socket, as its last recv() saw it (-1: none yet)
};

// Plain data: no thread-local constructor runs inside recv().
thread_local ReadClock tl_clock{Phase::off, false, nullptr, {}, -1};

std::atomic<int64_t> g_header_ms{0}, g_body_ms{0};

void arm(ReadClock &c, Phase phase, int64_t ms) {
    c.phase = phase;
    c.deadline = ms > 0 ? std::chrono::steady_clock::now() + std::chrono::milliseconds(ms)
                        : std::chrono::steady_clock::time_point::max();
}

} // namespace

void set_read_deadlines(double header_s, double body_s) {
    g_header_ms = (int64_t)(header_s * 1000.0);
    g_body_ms = (int64_t)(body_s * 1000.0);
}

void request_head_read(bool has_body) {
    ReadClock &c = tl_clock;
    if (c.phase == Phase::off || c.expired) return;
    if (has_body) arm(c, Phase::body, g_body_ms.load());
    else c.phase = Phase::handling;
}

void request_body_read() {
    ReadClock &c = tl_clock;
    if (c.phase != Phase::off && !c.expired) c.phase = Phase::handling;
}

void request_done() {
    ReadClock &c = tl_clock;
    if (c.phase != Phase::off && !c.expired) c.phase = Phase::between;
}

const char *request_timed_out() {
    ReadClock &c = tl_clock;
    // A client that went silent fails httplib's per-read timeout before any
    // recv() here sees the deadline: past it, that is a timeout too.
    if (!c.expired && (c.phase == Phase::head || c.phase == Phase::body) &&
        std::chrono::steady_clock::now() >= c.deadline) {
        c.expired = true;
        c.what = c.phase == Phase::head ? "the request head" : "the request body";
    }
    return c.expired ? c.what : nullptr;
}

void request_broken() {
    ReadClock &c = tl_clock;
    if (c.phase == Phase::off || c.expired) return;
    c.expired = true;
    c.what = "the request body";
}

bool client_hung_up() {
    const int fd = tl_clock.fd;
    if (tl_clock.phase == Phase::off || fd < 0) return false;
    pollfd p{fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// A connection thread's state around one connection.
static void connection_begin() { tl_clock = ReadClock{Phase::between, false, nullptr, {}, -1}; }
static void connection_end() { tl_clock.phase = Phase::off; }

// ---- ConnectionPool --------------------------------------------------------

ConnectionPool::ConnectionPool(size_t max_threads, std::chrono::milliseconds idle_exit)
    : max_threads_(max_threads ? max_threads : 1), idle_exit_(idle_exit) {}

ConnectionPool::~ConnectionPool() { shutdown(); }

std::vector<std::thread> ConnectionPool::take_finished_locked() {
    std::vector<std::thread> done;
    for (const auto &id : finished_) {
        auto it = threads_.find(id);
        if (it == threads_.end()) continue;
        done.push_back(std::move(it->second));
        threads_.erase(it);
    }
    finished_.clear();
    return done;
}

void ConnectionPool::spawn_locked() {
    try {
        std::thread t([this] { work(); });
        const auto id = t.get_id();
        threads_.emplace(id, std::move(t));
    } catch (const std::system_error &e) {
        // Out of threads (a pids limit, memory): the connection waits for
        // a running thread instead.
        if (!warned_full_)
            std::fprintf(stderr, "vt-server: cannot start a connection thread (%s): %zu running\n", e.what(),
                         threads_.size());
        warned_full_ = true;
    }
}

void ConnectionPool::enqueue(std::function<void()> fn) {
    std::vector<std::thread> done;
    {
        std::lock_guard<std::mutex> lock(mu_);
        done = take_finished_locked();
        jobs_.push_back(std::move(fn));
        if (jobs_.size() > idle_) {
            if (threads_.size() - finished_.size() < max_threads_) {
                spawn_locked();
            } else if (!warned_full_) {
                std::fprintf(stderr,
                             "vt-server: all %zu connection threads are busy: new connections wait "
                             "(see --http-threads)\n",
                             max_threads_);
                warned_full_ = true;
            }
        }
    }
    work_cv_.notify_one();
    for (auto &t : done) t.join();  // exited already: returns at once
}

void ConnectionPool::work() {
    pthread_setname_np(pthread_self(), "vt-conn");
    // The cores belong to the engine's step thread and its pool. A stream's
    // thread wakes for every token, and as a normal thread its wake-up
    // preempted the running engine thread at once (measured at c16: about
    // one preemption of the step thread per token, each holding up the
    // whole step while it builds and sends a chunk). SCHED_BATCH threads
    // never preempt on wake-up: they run when a core is free (the pool's
    // spin-waits yield) or at the next tick. Same nice level, so they keep
    // their CPU share. Best effort: a refusal leaves a normal thread.
    sched_param sp{};
    sp.sched_priority = 0;
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        ++idle_;
        const bool got = work_cv_.wait_for(lock, idle_exit_, [this] { return !jobs_.empty() || stop_; });
        --idle_;
        if (jobs_.empty()) {
            if (stop_ || !got) break;
            continue;
        }
        std::function<void()> fn = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        connection_begin();
        fn();  // httplib's: serves the connection, then closes it
        connection_end();
        lock.lock();
    }
    finished_.push_back(std::this_thread::get_id());
    done_cv_.notify_all();
}

void ConnectionPool::shutdown() {
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_ && threads_.empty()) return;
    stop_ = true;
    work_cv_.notify_all();
    // Queued connections still run (each thread drains the queue first).
    done_cv_.wait(lock, [this] { return finished_.size() >= threads_.size(); });
    std::vector<std::thread> done = take_finished_locked();
    lock.unlock();
    for (auto &t : done) t.join();
}

size_t raise_fd_limit() {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rlimit want = rl;
        want.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &want) == 0) rl = want;
    }
    return rl.rlim_cur == RLIM_INFINITY ? (size_t)1 << 20 : (size_t)rl.rlim_cur;
}

} // namespace vts

// See "Read deadlines" above. recvfrom() with no address is recv() (POSIX),
// and is not interposed.
extern "C" ssize_t recv(int fd, void *buf, size_t len, int flags) {
    vts::ReadClock &c = vts::tl_clock;
    if (c.phase != vts::Phase::off) c.fd = fd;
    if (c.phase != vts::Phase::off && !(flags & MSG_PEEK)) {
        if (c.phase == vts::Phase::between) vts::arm(c, vts::Phase::head, vts::g_header_ms.load());
        if (!c.expired && (c.phase == vts::Phase::head || c.phase == vts::Phase::body) &&
            std::chrono::steady_clock::now() > c.deadline) {
            c.expired = true;
            c.what = c.phase == vts::Phase::head ? "the request head" : "the request body";
        }
        if (c.expired) {
            errno = ETIMEDOUT;
            return -1;
        }
    }
    return recvfrom(fd, buf, len, flags, nullptr, nullptr);
}

// httplib 0.11 listens with a backlog of 5: a burst of connections (a
// thousand clients at once) overflows it, and each dropped SYN costs its
// client a retransmission, 1 s and more. The kernel caps the backlog at
// net.core.somaxconn. There is no libc alias of listen() to call.
extern "C" int listen(int fd, int backlog) {
    return (int)syscall(SYS_listen, fd, backlog < 4096 ? 4096 : backlog);
}
