// vt-server: an OpenAI-compatible HTTP server over libvt's serving engine
// (include/vt/vt_engine.h), through the public C ABI only.
//
//   vt-server -m model.gguf [--host 127.0.0.1] [--port 8080] [--kv-cache-memory 2GiB]
//             [--lora NAME=PATH ...] ...
//
// Threads: main (load, then httplib's accept loop), one engine thread that
// steps the context (server-engine.h), connection threads (one per open
// connection, server-conn.h: read the request within its deadlines, parse,
// tokenize, submit, then wait on their request's channel), and a signal
// thread: SIGTERM/SIGINT stop the accept loop, requests in flight get
// --grace-period seconds to finish and are cancelled after it, then the
// process exits 0.
#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "../common/devices.h"
#include "../common/speculative-config.h"
#include "server-conn.h"
#include "server-engine.h"
#include "server-errors.h"
#include "server-flags.h"
#include "server-lora.h"
#include "server-metrics.h"
#include "server-prompt.h"
#include "server-routes.h"
#include "server-structured.h"
#include "server-state.h"
#include "vt/vt.h"

namespace {

using namespace vts;

bool failed(vt_status s, const char *what) {
    if (s == VT_OK) return false;
    const char *msg = vt_last_error();
    std::fprintf(stderr, "vt-server: %s: %s\n", what, msg && *msg ? msg : vt_status_str(s));
    return true;
}

std::string base_name(const std::string &path) {
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Waits for SIGTERM/SIGINT (blocked in every thread, so only this one sees
// them) and runs the graceful shutdown: the first signal stops accepting
// and starts the grace period; its end, or a second signal, cancels what is
// still running.
class SignalWatcher {
public:
    SignalWatcher(ServerState &st, httplib::Server &svr) : st_(st), svr_(svr) {
        thread_ = std::thread([this] { run(); });
    }
    ~SignalWatcher() {
        quit_ = true;
        thread_.join();
    }

private:
    void run() {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        const timespec tick{0, 100 * 1000 * 1000};
        std::optional<std::chrono::steady_clock::time_point> deadline;
        bool stopped = false, cancelled = false;
        while (!quit_.load()) {
            const int sig = sigtimedwait(&set, nullptr, &tick);
            if (sig > 0 && !st_.draining.exchange(true)) {
                std::fprintf(stderr,
                             "vt-server: %s: new requests get 503; %zu requests in flight get %.0f s to finish\n",
                             sig == SIGTERM ? "SIGTERM" : "SIGINT", st_.engine->n_in_flight(),
                             st_.opts.grace_period_s);
                deadline = std::chrono::steady_clock::now() +
                           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(st_.opts.grace_period_s));
            } else if (sig > 0 && !cancelled) {
                std::fprintf(stderr, "vt-server: second signal: cancelling %zu requests\n",
                             st_.engine->n_in_flight());
                st_.engine->cancel_all();
                cancelled = true;
            }
            // The listening socket closes once nothing is in flight (new
            // requests meanwhile get 503): httplib's stop() also ends every
            // chunked response whose writer has not started yet, so stopping
            // at the signal could cut a stream that was just admitted.
            // stop() is a no-op before the accept loop runs: retry until it has.
            if (st_.draining.load() && !stopped && svr_.is_running() && st_.engine->n_in_flight() == 0) {
                svr_.stop();
                stopped = true;
            }
            if (deadline && !cancelled && std::chrono::steady_clock::now() >= *deadline) {
                const size_t n = st_.engine->n_in_flight();
                if (n) std::fprintf(stderr, "vt-server: grace period over: cancelling %zu requests\n", n);
                st_.engine->cancel_all();
                cancelled = true;
            }
        }
    }

    ServerState &st_;
    httplib::Server &svr_;
    std::atomic<bool> quit_{false};
    std::thread thread_;
};

int serve(ServerState &st) {
    const ServerOptions &o = st.opts;
    vt_model_params mp;
    vt_model_params_init_v2(&mp, sizeof mp);  // quantize is ABI 1.3
    vt_quant_type quantize = VT_QUANT_NONE;
    if (failed(vt_quant_type_from_name(o.quantize.c_str(), &quantize), "--quantize")) return 1;
    mp.quantize = quantize;
    mp.device = o.device.empty() ? nullptr : o.device.c_str();
    mp.n_gpu_layers = o.n_gpu_layers;
    mp.weights_memory_bytes = o.weights_memory;
    vt_model *mraw = nullptr;
    if (failed(vt_model_load(o.model.c_str(), &mp, &mraw), "cannot load the model")) return 1;
    std::unique_ptr<vt_model, void (*)(vt_model *)> model(mraw, vt_model_destroy);
    vt_examples::print_placement("vt-server", model.get());
    if (quantize != VT_QUANT_NONE) {
        vt_model_info info{};
        info.struct_size = sizeof info;
        if (failed(vt_model_get_info(model.get(), &info), "model info")) return 1;
        std::fprintf(stderr, "vt-server: quantized %u weights to %s at load (%u fallback, %u kept): %.1f MiB, %.2f s\n",
                     info.n_quantized, vt_quant_type_name(quantize), info.n_quantize_fallback, info.n_quantize_kept,
                     (double)info.quantized_bytes / (1 << 20), info.quantize_seconds);
    }
    // Before the context: a bad --lora ends the start before the KV pool is
    // allocated. Declared after the model, so its adapters go first.
    LoraRegistry loras(model.get(), st.model_name);
    for (const auto &[name, path] : o.loras) {
        try {
            loras.load(name, path);
        } catch (const ApiError &e) {
            std::fprintf(stderr, "vt-server: --lora %s=%s: %s\n", name.c_str(), path.c_str(), e.what());
            return 1;
        }
    }
    st.loras = &loras;
    const vt_tokenizer *tok = nullptr;
    if (failed(vt_model_tokenizer(model.get(), &tok), "no tokenizer")) return 1;
    st.n_vocab = vt_tokenizer_n_vocab(tok);

    vt_context_params cp;
    vt_context_params_init_v2(&cp, sizeof cp);  // the serving fields are ABI 1.2
    cp.n_threads = o.threads;
    if (o.n_batch) cp.n_batch = o.n_batch;
    cp.kv_cache_bytes = o.kv_cache_bytes;
    cp.kv_block_size = o.kv_block_size;
    cp.max_num_seqs = o.max_num_seqs;
    cp.max_model_len = o.max_model_len;
    cp.no_prefix_caching = o.no_prefix_caching;
    // A draft model loads as the model did (its device, its weights budget),
    // and lives as long as the context.
    std::unique_ptr<vt_model, void (*)(vt_model *)> draft(nullptr, vt_model_destroy);
    if (!o.speculative_config.empty()) {
        std::string draft_path;
        const std::string err = vt_examples::parse_speculative_config(o.speculative_config, cp, draft_path);
        if (!err.empty()) {
            std::fprintf(stderr, "vt-server: %s\n", err.c_str());
            return 1;
        }
        if (!draft_path.empty()) {
            vt_model *draw = nullptr;
            if (failed(vt_model_load(draft_path.c_str(), &mp, &draw), "cannot load the draft model")) return 1;
            draft.reset(draw);
            cp.draft_model = draft.get();
            std::fprintf(stderr, "vt-server: draft model %s, up to %u tokens a step (its KV cache beside the "
                         "model's, as many tokens)\n", draft_path.c_str(), cp.num_speculative_tokens);
        }
        if (cp.spec_method == VT_SPEC_MTP)
            std::fprintf(stderr, "vt-server: the model's multi-token-prediction layer drafts up to %u tokens a step "
                         "(its KV cache a layer of the pool)\n", cp.num_speculative_tokens);
    }
    vt_context *craw = nullptr;
    if (failed(vt_context_create(model.get(), &cp, &craw), "cannot create the context")) return 1;
    std::unique_ptr<vt_context, void (*)(vt_context *)> ctx(craw, vt_context_destroy);

    // An idle step allocates the KV pool now, so that a pool that does not
    // fit fails here rather than on the first request, and its size is logged.
    if (failed(vt_context_step(ctx.get(), 0, nullptr), "cannot allocate the KV cache")) return 1;

    Metrics metrics;
    Prompter prompter(model.get(), o.chat_template, o.chat_parse_special_in_content);
    if (!o.chat_template.empty() && !prompter.template_error().empty()) {
        std::fprintf(stderr, "vt-server: --chat-template: %s\n", prompter.template_error().c_str());
        return 1;
    }
    GrammarCache grammars(tok, 32);
    st.grammars = &grammars;
    Engine engine(ctx.get(), &metrics);
    st.engine = &engine;
    st.prompter = &prompter;
    st.metrics = &metrics;
    log_kv_pool_once(st);
    engine.start();

    httplib::Server svr;
    // Each open connection (a stream, a keep-alive client between requests,
    // one that has not sent its request yet) holds a thread, so threads
    // start per connection (server-conn.h): idle or slow connections cannot
    // hold the threads that others need. The default cap is far above any
    // running batch and below the descriptors a connection needs anyway.
    const size_t fd_limit = raise_fd_limit();
    const unsigned max_seqs = o.max_num_seqs ? o.max_num_seqs : 64;
    const size_t http_threads =
        o.http_threads ? o.http_threads
                       : std::max<size_t>(max_seqs + 16, std::min<size_t>(4096, fd_limit > 128 ? fd_limit - 64 : 64));
    svr.new_task_queue = [http_threads] {
        return new ConnectionPool(http_threads, std::chrono::seconds(10));
    };
    svr.set_keep_alive_timeout((time_t)o.keep_alive_timeout_s);
    // httplib's own timeout is per read (5 s): shorter deadlines shorten it,
    // so that a silent client is let go at about its deadline too.
    double read_timeout_s = 5.0;
    for (double d : {o.header_timeout_s, o.body_timeout_s})
        if (d > 0) read_timeout_s = std::min(read_timeout_s, d);
    svr.set_read_timeout((time_t)read_timeout_s, (time_t)((read_timeout_s - (time_t)read_timeout_s) * 1e6));
    set_read_deadlines(o.header_timeout_s, o.body_timeout_s);
    setup_routes(svr, st);
    // SO_REUSEADDR and not httplib's default SO_REUSEPORT: with that, a
    // second vt-server on the same port started without an error and took
    // half of the connections. (The listen backlog is raised in
    // server-conn.cpp's listen().)
    svr.set_socket_options([](socket_t sock) {
        const int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    if (!svr.bind_to_port(o.host.c_str(), o.port)) {
        std::fprintf(stderr, "vt-server: cannot listen on %s:%d\n", o.host.c_str(), o.port);
        engine.stop();
        return 1;
    }
    std::fprintf(stderr, "vt-server: serving '%s' on http://%s:%d (up to %zu connection threads, %zu open files)\n",
                 st.model_name.c_str(), o.host.c_str(), o.port, http_threads, fd_limit);
    {
        SignalWatcher watcher(st, svr);
        // Returns after stop() once every connection thread is done: the
        // requests in flight have finished or been cancelled.
        svr.listen_after_bind();
    }
    engine.stop();
    std::fprintf(stderr, "vt-server: stopped\n");
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    ServerState st;
    if (auto rc = parse_flags(argc, argv, st.opts)) return *rc;
    // Before any thread exists (the context's compute threads included), so
    // that every thread inherits the mask and only SignalWatcher takes them.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a client that left: write() fails instead

    st.model_name = st.opts.served_model_name.empty() ? base_name(st.opts.model) : st.opts.served_model_name;
    st.created = (int64_t)std::time(nullptr);
    try {
        return serve(st);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "vt-server: %s\n", e.what());
        return 1;
    }
}
