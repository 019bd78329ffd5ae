// What the micro-benchmarks of tests/perf share: timing a bound graph on a
// CPU stream of the backend, and their "--name value" integer options.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "backend/backend.h"
#include "core/graph.h"

namespace vt::perf {

// The integer after "--name" on the command line, or def.
inline int arg(int argc, char **argv, const char *name, int def) {
    for (int i = 1; i + 1 < argc; ++i)
        if (!std::strcmp(argv[i], name)) return std::atoi(argv[i + 1]);
    return def;
}

struct Timing {
    double wall_median = 0;  // seconds per call
    double cpu = 0;          // process CPU seconds per call (all threads)
    bool ok = false;         // the graph ran
};

inline double cpu_seconds() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// `warmup` untimed runs of g on a new stream of `threads`, then `reps` timed.
inline Timing time_graph(const Graph &g, int threads, int warmup, int reps) {
    Timing t;
    StreamPtr stream = stream_create(cpu_device(), (uint32_t)threads);
    auto run = [&] { return stream->iface->graph_compute(stream.get(), g.nodes().data(), (int)g.nodes().size()); };
    for (int i = 0; i < warmup; ++i)
        if (run() != VT_OK) return t;
    std::vector<double> wall;
    const double c0 = cpu_seconds();
    for (int i = 0; i < reps; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        if (run() != VT_OK) return t;
        wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    t.cpu = (cpu_seconds() - c0) / reps;
    std::sort(wall.begin(), wall.end());
    t.wall_median = wall[wall.size() / 2];
    t.ok = true;
    return t;
}

} // namespace vt::perf
