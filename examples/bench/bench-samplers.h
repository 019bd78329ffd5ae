// The sampler chains the batched benchmarks measure (vt-batched-bench
// --sampler, vt-sample-bench): greedy; topk (top_k 40, top_p 0.9, temp 0.7,
// dist, OpenAI-style defaults); penalty (topk after repetition 1.1,
// frequency and presence 0.2); topp (top_p 0.9, temp 0.7, dist, no top_k);
// temp (temp 1.0, dist: the server's default chain).
#pragma once

#include <cstdio>
#include <string>

#include "vt/vt.h"

namespace vt_examples {

inline bool is_bench_sampler(const std::string &kind) {
    return kind == "greedy" || kind == "topk" || kind == "penalty" || kind == "topp" || kind == "temp";
}

// A new chain of that kind seeded with seed, or null (the error printed
// with prog's name) on failure or an unknown kind.
inline vt_sampler *make_bench_sampler(const char *prog, const std::string &kind, uint32_t seed) {
    auto failed = [prog](vt_status st, const char *what) {
        if (st == VT_OK) return false;
        const char *msg = vt_last_error();
        std::fprintf(stderr, "%s: %s: %s\n", prog, what, msg && *msg ? msg : vt_status_str(st));
        return true;
    };
    if (!is_bench_sampler(kind)) {
        std::fprintf(stderr, "%s: unknown sampler %s\n", prog, kind.c_str());
        return nullptr;
    }
    vt_sampler *s = nullptr;
    if (failed(vt_sampler_create(&s), "vt_sampler_create")) return nullptr;
    bool bad = false;
    auto add = [&](vt_status st) { bad = bad || failed(st, "vt_sampler_add"); };
    if (kind == "greedy") {
        add(vt_sampler_add_greedy(s));
    } else if (kind == "topp") {
        add(vt_sampler_add_top_p(s, 0.9f, 1));
        add(vt_sampler_add_temp(s, 0.7f));
        add(vt_sampler_add_dist(s, seed));
    } else if (kind == "temp") {
        add(vt_sampler_add_temp(s, 1.0f));
        add(vt_sampler_add_dist(s, seed));
    } else {
        if (kind == "penalty") add(vt_sampler_add_penalties(s, -1, 1.1f, 0.2f, 0.2f));
        add(vt_sampler_add_top_k(s, 40));
        add(vt_sampler_add_top_p(s, 0.9f, 1));
        add(vt_sampler_add_temp(s, 0.7f));
        add(vt_sampler_add_dist(s, seed));
    }
    if (bad) {
        vt_sampler_destroy(s);
        return nullptr;
    }
    return s;
}

} // namespace vt_examples
