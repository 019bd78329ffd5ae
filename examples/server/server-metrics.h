// Prometheus metrics of vt-server (text exposition format 0.0.4).
//
// Counted here: HTTP responses by status, time to first token and
// inter-token latency (histograms, measured where the engine hands out each
// token). The engine's own counters and gauges (requests running/waiting, KV
// blocks, prefix cache, tokens) are read from vt_context_stats when /metrics
// is scraped. Every method is thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "vt/vt.h"

namespace vts {

class Histogram {
public:
    explicit Histogram(std::vector<double> upper_bounds);
    void observe(double value);
    // Appends # HELP, # TYPE and the _bucket/_sum/_count lines of `name`.
    void render(std::string &out, const char *name, const char *help) const;

private:
    mutable std::mutex mu_;
    std::vector<double> bounds_;    // ascending; +Inf is implicit
    std::vector<uint64_t> counts_;  // per bucket (not cumulative), the last is +Inf
    double sum_ = 0;
    uint64_t count_ = 0;
};

class Metrics {
public:
    Metrics();
    void count_response(int http_status);
    void observe_ttft(double seconds) { ttft_.observe(seconds); }
    void observe_itl(double seconds) { itl_.observe(seconds); }
    // The whole exposition, with the engine's counters from `stats`.
    std::string render(const vt_engine_stats &stats) const;

private:
    mutable std::mutex mu_;
    std::map<int, uint64_t> responses_;  // HTTP status -> count
    Histogram ttft_;
    Histogram itl_;
};

} // namespace vts
