#include "server-metrics.h"

#include <algorithm>
#include <cstdio>

namespace vts {

namespace {

// Shortest round-trip text of a double, as Prometheus reads it.
std::string num(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    // Prefer the short form when it reads back the same.
    for (int prec = 1; prec < 17; ++prec) {
        char s[64];
        std::snprintf(s, sizeof s, "%.*g", prec, v);
        if (std::strtod(s, nullptr) == v) return s;
    }
    return buf;
}

void header(std::string &out, const char *name, const char *type, const char *help) {
    out += "# HELP ";
    out += name;
    out += ' ';
    out += help;
    out += "\n# TYPE ";
    out += name;
    out += ' ';
    out += type;
    out += '\n';
}

void sample(std::string &out, const char *name, double value) {
    out += name;
    out += ' ';
    out += num(value);
    out += '\n';
}

void metric(std::string &out, const char *name, const char *type, const char *help, double value) {
    header(out, name, type, help);
    sample(out, name, value);
}

} // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
    const size_t i = (size_t)(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
    std::lock_guard<std::mutex> lock(mu_);
    ++counts_[i];
    sum_ += value;
    ++count_;
}

void Histogram::render(std::string &out, const char *name, const char *help) const {
    std::lock_guard<std::mutex> lock(mu_);
    header(out, name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
        cumulative += counts_[i];
        out += name;
        out += "_bucket{le=\"";
        out += i < bounds_.size() ? num(bounds_[i]) : "+Inf";
        out += "\"} ";
        out += std::to_string(cumulative);
        out += '\n';
    }
    out += name;
    out += "_sum ";
    out += num(sum_);
    out += '\n';
    out += name;
    out += "_count ";
    out += std::to_string(count_);
    out += '\n';
}

Metrics::Metrics()
    // Buckets as vLLM's: first tokens wait for prefill and queueing, later
    // ones for one decode step of the whole batch.
    : ttft_({0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
             10.0, 20.0, 40.0, 80.0}),
      itl_({0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5,
            5.0, 10.0}) {}

void Metrics::count_response(int http_status) {
    std::lock_guard<std::mutex> lock(mu_);
    ++responses_[http_status];
}

std::string Metrics::render(const vt_engine_stats &st) const {
    std::string out;
    out.reserve(8192);
    header(out, "vt_requests_total", "counter", "HTTP responses to /v1/* requests, by status.");
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (const auto &[status, n] : responses_)
            out += "vt_requests_total{status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
    }
    ttft_.render(out, "vt_time_to_first_token_seconds",
                 "Time from submitting a request to its first generated token.");
    itl_.render(out, "vt_inter_token_latency_seconds", "Time between two generated tokens of a request.");
    metric(out, "vt_num_requests_running", "gauge", "Requests holding KV blocks.", st.n_running);
    metric(out, "vt_num_requests_waiting", "gauge", "Requests queued or preempted, waiting for KV blocks.",
           st.n_waiting);
    metric(out, "vt_kv_block_size", "gauge", "Tokens per KV block.", st.kv_block_size);
    metric(out, "vt_kv_blocks_total", "gauge", "KV blocks in the pool.", st.kv_blocks_total);
    metric(out, "vt_kv_blocks_used", "gauge", "KV blocks held by requests.", st.kv_blocks_used);
    metric(out, "vt_kv_blocks_cached", "gauge", "Free KV blocks still holding a cached prefix.",
           st.kv_blocks_cached);
    metric(out, "vt_kv_cache_bytes", "gauge", "Size of the KV block pool in bytes.", (double)st.kv_cache_bytes);
    metric(out, "vt_max_model_len", "gauge", "Most tokens per request (prompt + output).", st.max_model_len);
    metric(out, "vt_prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
           (double)st.prefix_query_tokens);
    metric(out, "vt_prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.",
           (double)st.prefix_hit_tokens);
    metric(out, "vt_prefix_cache_hit_rate", "gauge", "prefix_cache_hits_total / prefix_cache_queries_total.",
           st.prefix_query_tokens ? (double)st.prefix_hit_tokens / (double)st.prefix_query_tokens : 0.0);
    metric(out, "vt_prompt_tokens_total", "counter", "Prompt tokens computed (prefix-cache hits excluded).",
           (double)st.prompt_tokens);
    metric(out, "vt_generation_tokens_total", "counter", "Tokens generated.", (double)st.generated_tokens);
    metric(out, "vt_engine_steps_total", "counter", "Engine steps (forward passes).", (double)st.steps);
    metric(out, "vt_preemptions_total", "counter", "Requests preempted for lack of KV blocks.",
           (double)st.preemptions);
    metric(out, "vt_requests_finished_total", "counter", "Requests the engine finished (any reason).",
           (double)st.requests_finished);
    metric(out, "vt_tokens_per_second", "gauge", "Tokens computed per second over the last ~10 s.",
           st.tokens_per_second);
    metric(out, "vt_device_fallback_nodes_total", "counter",
           "Graph nodes the device could not run, computed on the CPU with copies.", (double)st.fallback_nodes);
    metric(out, "vt_device_fallback_bytes_total", "counter", "Bytes copied between the device and the CPU for them.",
           (double)st.fallback_bytes);
    metric(out, "vt_state_slots", "gauge", "Recurrent-layer state slots (requests running at once).", st.state_slots);
    metric(out, "vt_state_snapshots", "gauge", "Recurrent-state snapshots kept for the prefix cache.",
           st.state_snapshots);
    // Speculative decoding, under vLLM's names (vllm:spec_decode_*).
    metric(out, "vt_spec_decode_num_drafts_total", "counter", "Drafts verified (a request's step that carried one).",
           (double)st.spec_num_drafts);
    metric(out, "vt_spec_decode_num_draft_tokens_total", "counter", "Tokens the drafts proposed.",
           (double)st.spec_num_draft_tokens);
    metric(out, "vt_spec_decode_num_accepted_tokens_total", "counter", "Draft tokens accepted.",
           (double)st.spec_num_accepted_tokens);
    header(out, "vt_spec_decode_num_accepted_tokens_per_pos_total", "counter",
           "Draft tokens accepted, by their position in the draft.");
    for (uint32_t i = 0; i < VT_SPEC_MAX_TOKENS; ++i)
        out += "vt_spec_decode_num_accepted_tokens_per_pos_total{position=\"" + std::to_string(i) + "\"} " +
               std::to_string(st.spec_num_accepted_per_position[i]) + "\n";
    return out;
}

} // namespace vts
