#include "core/log.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace vt {
namespace {

struct Sink {
    std::mutex mu;  // guards callback/user_data; the level is read lock-free
    vt_log_callback callback = nullptr;
    void *user_data = nullptr;
    std::atomic<int> min_level{VT_LOG_LEVEL_WARN};
};

Sink &sink() {
    static Sink s;
    return s;
}

const char *level_name(vt_log_level l) {
    switch (l) {
    case VT_LOG_LEVEL_DEBUG: return "debug";
    case VT_LOG_LEVEL_INFO: return "info";
    case VT_LOG_LEVEL_WARN: return "warn";
    case VT_LOG_LEVEL_ERROR: return "error";
    default: return "log";
    }
}

} // namespace

void log_set(vt_log_callback callback, void *user_data, vt_log_level min_level) {
    Sink &s = sink();
    std::lock_guard<std::mutex> lock(s.mu);
    s.callback = callback;
    s.user_data = user_data;
    s.min_level = (int)min_level;
}

bool log_enabled(vt_log_level level) { return (int)level >= sink().min_level.load(std::memory_order_relaxed); }

void log(vt_log_level level, const char *fmt, ...) {
    if (!log_enabled(level)) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1;
    Sink &s = sink();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.callback) {
        s.callback(level, buf, len, s.user_data);
    } else {
        std::fprintf(stderr, "vt %s: %.*s\n", level_name(level), (int)len, buf);
    }
}

} // namespace vt
