// vt-server's connections against slow and idle clients: connection threads
// that grow with the connections, and deadlines for reading a request.
//
// httplib (0.11) serves each connection on one thread of its task queue for
// the connection's whole life, and its only read timeout is per recv(): a
// client that sends a byte every few seconds keeps a thread forever, and a
// fixed pool of N threads lets N idle or slow connections stall everyone
// else. Here:
//   - ConnectionPool starts a thread per connection, up to a cap (the fd
//     limit, raised at start, bounds connections anyway); idle threads exit.
//   - Every request must be read within deadlines: its head within
//     --header-timeout seconds of its first byte, its body within
//     --body-timeout of the head's end. A connection that misses one gets
//     408 and is closed. Writing the response (a stream, a long generation)
//     has no deadline: only reading the request does.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace vts {

// A thread per queued connection, started on demand up to max_threads
// (beyond it connections wait in a queue, as with httplib's ThreadPool);
// a thread with no connection for idle_exit exits.
class ConnectionPool : public httplib::TaskQueue {
public:
    ConnectionPool(size_t max_threads, std::chrono::milliseconds idle_exit);
    ~ConnectionPool() override;
    ConnectionPool(const ConnectionPool &) = delete;
    ConnectionPool &operator=(const ConnectionPool &) = delete;

    void enqueue(std::function<void()> fn) override;
    // Runs what is queued, then joins every thread (httplib calls it once
    // the accept loop has ended).
    void shutdown() override;

private:
    void work();
    void spawn_locked();
    std::vector<std::thread> take_finished_locked();

    const size_t max_threads_;
    const std::chrono::milliseconds idle_exit_;
    std::mutex mu_;
    std::condition_variable work_cv_, done_cv_;
    std::deque<std::function<void()>> jobs_;
    std::unordered_map<std::thread::id, std::thread> threads_;
    std::vector<std::thread::id> finished_;  // exited, to be joined
    size_t idle_ = 0;
    bool stop_ = false;
    bool warned_full_ = false;
};

// The read deadlines of every connection (seconds; 0: none). Set once
// before the server listens.
void set_read_deadlines(double header_s, double body_s);

// Where the request on this connection thread stands; called by the routes.
// The head was read (the pre-routing handler): the body's deadline starts,
// or, without a body, reading is over.
void request_head_read(bool has_body);
// The body was read: no deadline while the handler runs and responds.
void request_body_read();
// The response was written (httplib's logger): the next byte received
// starts the next request's head deadline.
void request_done();
// This connection missed a deadline ("the request head" / "the request
// body"), or nullptr. Once missed, every later read on it fails, so it
// closes after its 408.
const char *request_timed_out();
// The body was not read to its end (the client sent less than its length,
// or paused past httplib's per-read timeout): the connection is out of
// step, so every later read on it fails and it closes after the answer
// (the rest of the body, arriving late, would be parsed as a next request).
void request_broken();
// Whether the client of this connection thread's request hung up (its
// socket reads EOF or fails): a handler that computes a whole answer before
// writing anything watches it to cancel work nobody will read.
bool client_hung_up();

// Raises the soft RLIMIT_NOFILE to the hard limit (each connection is a
// descriptor); returns the soft limit in force.
size_t raise_fd_limit();

} // namespace vts
