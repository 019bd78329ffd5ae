#include "server-engine.h"

#include <pthread.h>

#include <cstddef>
#include <cstdio>

#include "server-metrics.h"

namespace vts {

using Clock = std::chrono::steady_clock;

void Channel::push(TokenEvent &&ev) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        q_.push_back(std::move(ev));
    }
    cv_.notify_one();
}

bool Channel::wait(std::vector<TokenEvent> &out, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (q_.empty()) cv_.wait_for(lock, timeout, [&] { return !q_.empty(); });
    if (q_.empty()) return false;
    for (auto &ev : q_) out.push_back(std::move(ev));
    q_.clear();
    return true;
}

// One submitted request: the callback's user_data. Engine::pending_ holds
// it from just before vt_context_submit until its last event (or a failed
// submit).
struct Engine::Pending {
    Engine *engine;
    std::shared_ptr<Channel> channel;
    int choice;
    uint64_t id = 0;  // 0 until vt_context_submit returned (guarded by Engine::mu_)
    Clock::time_point submitted;
    Clock::time_point last_token;
    bool got_token = false;  // touched on the engine thread only
    bool finished = false;   // guarded by Engine::mu_
};

Engine::Engine(vt_context *ctx, Metrics *metrics) : ctx_(ctx), metrics_(metrics) {}

Engine::~Engine() { stop(); }

void Engine::start() {
    if (running_.exchange(true)) return;
    stop_ = false;
    thread_ = std::thread([this] { loop(); });
}

void Engine::stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    running_ = false;
}

void Engine::loop() {
    pthread_setname_np(pthread_self(), "vt-engine");  // tells it apart in top -H, perf, /proc
    int failures = 0;
    while (!stop_.load()) {
        size_t n = 0;
        // The wait lets an idle engine sleep in the library until a submit
        // or cancel arrives, and still notice stop_ within 50 ms.
        const vt_status s = vt_context_step(ctx_, 50, &n);
        if (s != VT_OK) {
            // The failed step already ended its requests with VT_FINISH_ERROR;
            // back off so that a persistent failure does not spin.
            std::fprintf(stderr, "vt-server: engine step failed: %s\n",
                         *vt_last_error() ? vt_last_error() : vt_status_str(s));
            std::this_thread::sleep_for(std::chrono::milliseconds(failures < 10 ? 10 : 500));
            ++failures;
        } else {
            failures = 0;
        }
    }
}

void Engine::on_output(const vt_request_output *out, void *user_data) {
    auto *p = static_cast<Pending *>(user_data);
    const auto now = Clock::now();
    TokenEvent ev;
    ev.choice = p->choice;
    ev.token = out->token;
    if (out->text_len) ev.text.assign(out->text, out->text_len);
    ev.logprob = out->logprob;
    if (out->n_top && out->top_tokens && out->top_logprobs) {
        ev.top.reserve(out->n_top);
        for (uint32_t i = 0; i < out->n_top; ++i) ev.top.emplace_back(out->top_tokens[i], out->top_logprobs[i]);
    }
    ev.finish = out->finish_reason;
    ev.status = out->status;
    ev.n_prompt = out->n_prompt_tokens;
    ev.n_output = out->n_output_tokens;
    ev.n_cached = out->n_cached_tokens;
    // is_prompt is ABI 1.8: read only from a library whose events carry it.
    ev.is_prompt = out->struct_size >= offsetof(vt_request_output, is_prompt) + sizeof(bool) && out->is_prompt;
    if (out->token >= 0 && !ev.is_prompt && p->engine->metrics_) {
        if (!p->got_token)
            p->engine->metrics_->observe_ttft(std::chrono::duration<double>(now - p->submitted).count());
        else
            p->engine->metrics_->observe_itl(std::chrono::duration<double>(now - p->last_token).count());
    }
    if (out->token >= 0 && !ev.is_prompt) {
        p->got_token = true;
        p->last_token = now;
    }
    const bool last = out->finish_reason != VT_FINISH_NONE;
    p->channel->push(std::move(ev));
    if (last) {
        // Dropping the engine's reference frees p unless submit() still
        // holds one (the request finished before vt_context_submit returned).
        std::shared_ptr<Pending> keep;
        Engine *e = p->engine;
        std::lock_guard<std::mutex> lock(e->mu_);
        p->finished = true;
        auto it = e->pending_.find(p);
        if (it != e->pending_.end()) {
            keep = std::move(it->second);
            e->pending_.erase(it);
        }
    }
}

vt_status Engine::submit(const std::vector<vt_token> &prompt, const SubmitParams &sp, vt_sampler *sampler,
                         std::shared_ptr<Channel> channel, int choice, uint64_t *id) {
    if (refuse_.load()) return VT_ERR_CANCELLED;
    std::vector<const char *> stops;
    for (const auto &s : sp.stop) stops.push_back(s.c_str());
    vt_request_params rp;
    vt_request_params_init(&rp);
    rp.prompt = prompt.data();
    rp.n_prompt = prompt.size();
    rp.max_tokens = sp.max_tokens;
    rp.sampler = sampler;
    rp.stop_strings = stops.empty() ? nullptr : stops.data();
    rp.n_stop_strings = stops.size();
    rp.ignore_eos = sp.ignore_eos;
    rp.logprobs = sp.logprobs;
    rp.top_logprobs = sp.top_logprobs;
    rp.prompt_logprobs = sp.prompt_logprobs;
    rp.prompt_top_logprobs = sp.prompt_top_logprobs;
    rp.render_special = sp.render_special;
    rp.stop_tokens = sp.stop_tokens.empty() ? nullptr : sp.stop_tokens.data();
    rp.n_stop_tokens = sp.stop_tokens.size();
    rp.lora = sp.lora;
    rp.lora_scale = sp.lora_scale;
    rp.callback = &Engine::on_output;

    // Registered before the submit: the engine thread may deliver (and
    // finish) the request before vt_context_submit returns here; the local
    // reference keeps p alive until then.
    auto p = std::make_shared<Pending>(Pending{this, std::move(channel), choice, 0, Clock::now(), {}});
    rp.user_data = p.get();
    {
        std::lock_guard<std::mutex> lock(mu_);
        pending_.emplace(p.get(), p);
    }
    uint64_t rid = 0;
    const vt_status s = vt_context_submit(ctx_, &rp, &rid);
    std::lock_guard<std::mutex> lock(mu_);
    if (s != VT_OK) {  // nothing queued: no callback will ever see p
        pending_.erase(p.get());
        return s;
    }
    *id = rid;
    p->id = rid;
    if (refuse_.load() && !p->finished) vt_context_cancel(ctx_, rid);  // cancel_all() ran meanwhile
    return VT_OK;
}

void Engine::cancel(uint64_t id) {
    if (id) vt_context_cancel(ctx_, id);
}

void Engine::cancel_all() {
    refuse_ = true;
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto &[raw, p] : pending_)
        if (p->id && !p->finished) vt_context_cancel(ctx_, p->id);
}

size_t Engine::n_in_flight() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_.size() + holds_.load();
}

vt_engine_stats Engine::stats() const {
    vt_engine_stats st{};
    st.struct_size = sizeof st;
    vt_context_stats(ctx_, &st);
    return st;
}

} // namespace vts
