// The engine loop of vt-server: one thread steps the context, and each
// request's events go into the Channel of the HTTP request that submitted it.
//
//   connection thread                      engine thread
//   -----------------                      -------------
//   Engine::submit(prompt, ..., channel) -> vt_context_submit (thread-safe)
//                                          loop: vt_context_step(ctx, 50 ms)
//                                            -> on_output callback, per token:
//   Channel::wait() <------------------------   Channel::push(TokenEvent)
//   Engine::cancel(id) ------------------> vt_context_cancel (thread-safe)
//
// One HTTP request may run several engine requests (n > 1, a list of
// prompts): they share one Channel and tell their events apart by `choice`.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "vt/vt.h"

namespace vts {

class Metrics;

// One event of an engine request, copied out of vt_request_output.
struct TokenEvent {
    int choice = 0;
    vt_token token = -1;          // -1: the event carries no token
    std::string text;             // new text safe to show (stop strings held back by the engine)
    float logprob = 0.0f;
    std::vector<std::pair<vt_token, float>> top;  // top_logprobs, most likely first
    vt_finish_reason finish = VT_FINISH_NONE;
    vt_status status = VT_OK;
    uint32_t n_prompt = 0, n_output = 0, n_cached = 0;
    bool is_prompt = false;       // a prompt token's log-probabilities (prompt_logprobs), no text
};

// A queue of events from the engine thread to one connection thread.
class Channel {
public:
    void push(TokenEvent &&ev);
    // Moves every queued event into out (appending); waits up to `timeout`
    // for one when none is queued. Returns whether out grew.
    bool wait(std::vector<TokenEvent> &out, std::chrono::milliseconds timeout);

private:
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<TokenEvent> q_;
};

// What one engine request asks for, beyond its prompt and sampler.
struct SubmitParams {
    uint32_t max_tokens = 0;  // 0 = until max_model_len
    std::vector<std::string> stop;
    bool ignore_eos = false;
    bool logprobs = false;
    uint32_t top_logprobs = 0;
    bool prompt_logprobs = false;     // an is_prompt event per prompt token from the second on
    uint32_t prompt_top_logprobs = 0;
    bool render_special = false;          // control tokens in the text (harmony)
    std::vector<vt_token> stop_tokens;    // more ids that end the request, not shown
    const vt_lora *lora = nullptr;  // the adapter to compute with (NULL: the base model); the
    float lora_scale = 1.0f;        //   caller holds it until submit() returns, the engine after
};

class Engine {
public:
    // ctx must outlive the Engine; metrics may be NULL.
    Engine(vt_context *ctx, Metrics *metrics);
    ~Engine();  // stop()

    // Starts / stops the stepping thread. stop() joins it; requests still
    // running get no further events.
    void start();
    void stop();
    bool running() const { return running_.load(); }

    // Submits one request whose events go to `channel` tagged with `choice`.
    // The sampler is owned by the engine on success, by the caller on
    // failure. *id names it for cancel(). Thread-safe. Fails with
    // VT_ERR_CANCELLED once cancel_all() ran (the server is stopping).
    vt_status submit(const std::vector<vt_token> &prompt, const SubmitParams &p, vt_sampler *sampler,
                     std::shared_ptr<Channel> channel, int choice, uint64_t *id);
    // Ends a request (its last event comes with VT_FINISH_CANCELLED).
    // Unknown or finished ids are ignored. Thread-safe, never blocks on a step.
    void cancel(uint64_t id);
    // Cancels every request in flight and refuses new ones. Thread-safe.
    void cancel_all();

    // Counts toward n_in_flight() while it lives. An HTTP handler takes one
    // before it checks whether the server is draining and keeps it until its
    // response is written: the shutdown closes the listener once
    // n_in_flight() is 0, and httplib then ends every chunked response whose
    // writer has not started, so a request still being prepared (a grammar
    // compiling) when SIGTERM came, with nothing else in flight, got its 200
    // header and then a cut body.
    class Hold {
    public:
        Hold() = default;
        explicit Hold(std::atomic<size_t> *n) : n_(n) { n_->fetch_add(1); }
        Hold(Hold &&o) noexcept : n_(std::exchange(o.n_, nullptr)) {}
        Hold &operator=(Hold &&o) noexcept {
            if (this != &o) {
                release();
                n_ = std::exchange(o.n_, nullptr);
            }
            return *this;
        }
        ~Hold() { release(); }

    private:
        void release() {
            if (n_) n_->fetch_sub(1);
            n_ = nullptr;
        }
        std::atomic<size_t> *n_ = nullptr;
    };
    Hold hold() { return Hold(&holds_); }

    // Engine requests submitted and not yet finished, plus the live Holds.
    // Thread-safe.
    size_t n_in_flight() const;
    vt_engine_stats stats() const;

private:
    struct Pending;
    static void on_output(const vt_request_output *out, void *user_data);
    void loop();

    vt_context *ctx_;
    Metrics *metrics_;
    std::thread thread_;
    std::atomic<bool> running_{false};
    std::atomic<bool> stop_{false};
    std::atomic<bool> refuse_{false};  // cancel_all() ran
    // Live Holds. Sequentially consistent, as ServerState::draining: a
    // handler that counts itself and then finds draining false is seen by a
    // shutdown that sets draining and then reads the count.
    std::atomic<size_t> holds_{0};
    mutable std::mutex mu_;
    std::map<Pending *, std::shared_ptr<Pending>> pending_;  // submitted (or being submitted), not finished
};

} // namespace vts
