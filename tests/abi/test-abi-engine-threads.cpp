// The serving engine under threads and failures, through the public ABI:
// four threads submit, cancel and read stats in a loop while one thread
// steps, and VT_DEBUG_FAIL_FORWARD (lib/engine/engine.h) makes every few
// forward passes fail, so that fail_all replaces the scheduler and the KV
// bookkeeping many times while the other threads call in. Every request must
// end exactly once (finished, cancelled or failed), the counts add up, and
// nothing hangs. Run under ASan and TSan (README, "Sanitizers") it also
// shows that no thread reaches state that fail_all frees or replaces.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/temp-file.h"
#include "common/vt-handles.h"
#include "vt/vt.h"

namespace {

using vt::test::ContextPtr;
using vt::test::ModelPtr;

constexpr int kClients = 4;
constexpr int kPerClient = 150;
constexpr int kOutstanding = 3;
constexpr const char *kFailEvery = "5";

// One request's events, written by the engine thread's callback and read by
// the test after the run.
struct Track {
    uint32_t max_tokens = 0;
    std::atomic<int> finals{0};
    std::atomic<int> tokens{0};
    std::atomic<int> reason{VT_FINISH_NONE};
    std::atomic<int> status{VT_OK};
    std::atomic<uint32_t> n_output{0};
};

void on_event(const vt_request_output *o, void *user) {
    Track &t = *static_cast<Track *>(user);
    if (o->token >= 0) ++t.tokens;
    if (o->finish_reason == VT_FINISH_NONE) return;
    t.reason = o->finish_reason;
    t.status = o->status;
    t.n_output = o->n_output_tokens;
    ++t.finals;
}

std::vector<vt_token> prompt_of(int i) {
    std::vector<vt_token> p;
    for (int k = 0; k < 3 + (i * 7) % 40; ++k) p.push_back((vt_token)(32 + (i * 31 + k * 17) % 90));
    return p;
}

} // namespace

TEST_CASE("engine threads: submit and cancel from 4 threads while forward passes fail", "[tiny]") {
    static vt::test::TempFile file(vt::test::tiny_llama_gguf());
    vt_model *mp = nullptr;
    REQUIRE(vt_model_load(file.path.string().c_str(), nullptr, &mp) == VT_OK);
    ModelPtr m(mp);
    vt_context_params cp;
    vt_context_params_init_v2(&cp, sizeof cp);
    cp.n_threads = 1;
    cp.n_batch = 64;
    cp.kv_cache_bytes = 1 << 20;  // small: preemption too
    cp.max_num_seqs = 8;
    vt_context *cptr = nullptr;
    REQUIRE(vt_context_create(m.get(), &cp, &cptr) == VT_OK);
    ContextPtr c(cptr);

    // The engine reads the variable when it is made (the first step), before
    // any other thread runs; unset again so nothing else inherits it.
    REQUIRE(setenv("VT_DEBUG_FAIL_FORWARD", kFailEvery, 1) == 0);
    const vt_status first = vt_context_step(c.get(), 0, nullptr);
    unsetenv("VT_DEBUG_FAIL_FORWARD");
    REQUIRE(first == VT_OK);

    vt_engine_stats s0{};
    s0.struct_size = sizeof s0;
    REQUIRE(vt_context_stats(c.get(), &s0) == VT_OK);
    REQUIRE(s0.max_model_len > 0);
    const std::vector<vt_token> too_long(s0.max_model_len, 65);
    std::atomic<long> refused{0};

    std::vector<std::unique_ptr<Track>> tracks(kClients * kPerClient);
    for (auto &t : tracks) t = std::make_unique<Track>();
    std::atomic<bool> stop{false};
    std::atomic<int> failed_steps{0}, other_errors{0}, submit_errors{0};
    std::string other_error;
    std::mutex other_error_mu;

    std::thread engine([&] {
        while (!stop.load()) {
            const vt_status st = vt_context_step(c.get(), 2, nullptr);
            if (st == VT_OK) continue;
            if (st == VT_ERR_INTERNAL && std::strstr(vt_last_error(), "injected forward failure")) {
                ++failed_steps;
            } else {
                ++other_errors;
                std::lock_guard<std::mutex> lk(other_error_mu);
                other_error = vt_last_error();
            }
        }
    });

    std::vector<std::thread> clients;
    for (int t = 0; t < kClients; ++t)
        clients.emplace_back([&, t] {
            std::vector<uint64_t> mine;
            for (int i = 0; i < kPerClient; ++i) {
                const int k = t * kPerClient + i;
                // At most kOutstanding of ours unended: a failed pass ends
                // every request the engine holds, and a burst of all of them
                // would leave fail_all nothing to do after the first.
                const auto wait_until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                for (;;) {
                    int open = 0;
                    for (int j = t * kPerClient; j < k; ++j) open += tracks[j]->finals.load() == 0;
                    if (open < kOutstanding || std::chrono::steady_clock::now() > wait_until) break;
                    // Meanwhile, a prompt one token too long: refused by
                    // submit itself (VT_ERR_CONTEXT_FULL), which reads the
                    // engine's max_model_len while fail_all may be running.
                    vt_request_params p;
                    vt_request_params_init(&p);
                    p.prompt = too_long.data();
                    p.n_prompt = too_long.size();
                    uint64_t id = 0;
                    if (vt_context_submit(c.get(), &p, &id) == VT_ERR_CONTEXT_FULL && id == 0) ++refused;
                    else ++submit_errors;
                    std::this_thread::yield();
                }
                Track &tr = *tracks[k];
                tr.max_tokens = 1 + (uint32_t)(k * 5) % 12;
                const std::vector<vt_token> prompt = prompt_of(k);
                vt_request_params p;
                vt_request_params_init(&p);
                p.prompt = prompt.data();
                p.n_prompt = prompt.size();
                p.max_tokens = tr.max_tokens;
                p.ignore_eos = true;
                p.callback = on_event;
                p.user_data = &tr;
                uint64_t id = 0;
                if (vt_context_submit(c.get(), &p, &id) != VT_OK) {
                    ++submit_errors;
                    continue;
                }
                mine.push_back(id);
                // Cancel some: just submitted (maybe still in the inbox), an
                // earlier one (maybe running, maybe long finished), and ids
                // that are not ours or do not exist.
                if (i % 3 == 0) vt_context_cancel(c.get(), id);
                if (i % 5 == 1) vt_context_cancel(c.get(), mine[mine.size() / 2]);
                if (i % 7 == 2) vt_context_cancel(c.get(), id + 1);
                vt_engine_stats s{};
                s.struct_size = sizeof s;
                vt_context_stats(c.get(), &s);
            }
        });
    for (std::thread &t : clients) t.join();

    auto all_ended = [&] {
        for (auto &t : tracks)
            if (t->finals.load() == 0) return false;
        return true;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!all_ended() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // Idle steps after the last request: nothing more may arrive.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
    engine.join();

    INFO("unexpected step error: " << other_error);
    CHECK(other_errors == 0);
    CHECK(submit_errors == 0);
    REQUIRE(all_ended());  // no hang: every request ended
    int n_length = 0, n_cancelled = 0, n_error = 0, bad = 0;
    for (auto &tp : tracks) {
        const Track &t = *tp;
        if (t.finals != 1) ++bad;  // exactly one final event
        switch (t.reason.load()) {
        case VT_FINISH_LENGTH:
            ++n_length;
            if (t.status != VT_OK || t.n_output != t.max_tokens || t.tokens != (int)t.max_tokens) ++bad;
            break;
        case VT_FINISH_CANCELLED:
            ++n_cancelled;
            if (t.status != VT_OK || t.tokens > (int)t.max_tokens) ++bad;
            break;
        case VT_FINISH_ERROR:
            ++n_error;
            if (t.status != VT_ERR_INTERNAL || t.tokens >= (int)t.max_tokens) ++bad;
            break;
        default:
            ++bad;  // ignore_eos: no stop
        }
    }
    CHECK(refused > 0);
    INFO("length " << n_length << ", cancelled " << n_cancelled << ", error " << n_error << ", failed steps "
                   << failed_steps << ", refused " << refused);
    CHECK(bad == 0);
    CHECK(n_length + n_cancelled + n_error == kClients * kPerClient);
    // fail_all ran many times and each kind of ending happened.
    CHECK(failed_steps >= 10);
    CHECK(n_error >= failed_steps);
    CHECK(n_length > 0);
    CHECK(n_cancelled > 0);

    vt_engine_stats s{};
    s.struct_size = sizeof s;
    REQUIRE(vt_context_stats(c.get(), &s) == VT_OK);
    CHECK(s.requests_finished == (uint64_t)(kClients * kPerClient));
    CHECK(s.n_running == 0);
    CHECK(s.n_waiting == 0);
    CHECK(s.kv_blocks_used == 0);
}
