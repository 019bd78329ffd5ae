// What the example tools share about devices, through the public ABI only:
// the --device/--n-gpu-layers/--list-devices options, --list-devices output
// and the line saying where a model's weights went.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "vt/vt.h"

namespace vt_examples {

// One line per device: name, backend, type, memory, description.
inline int print_devices(std::FILE *out) {
    static const char *const kTypes[] = {"cpu", "gpu", "igpu", "other"};
    const size_t n = vt_device_count();
    for (size_t i = 0; i < n; ++i) {
        vt_device_info d{};
        d.struct_size = sizeof d;
        if (vt_device_get_info(i, &d) != VT_OK) {
            std::fprintf(stderr, "device %zu: %s\n", i, vt_last_error());
            return 1;
        }
        std::fprintf(out, "%-9s %-7s %-5s %7.1f GiB (%.1f GiB free)  %s\n", d.name, d.backend,
                     (unsigned)d.type < 4 ? kTypes[d.type] : "?", (double)d.memory_total / (1u << 30),
                     (double)d.memory_free / (1u << 30), d.description);
    }
    return 0;
}

// "tool: weights on vulkan0 (30 of 30 layers): 129.6 MiB uploaded in
// 0.21 s", for a model on a device that is not the CPU.
inline void print_placement(const char *tool, const vt_model *model) {
    vt_model_info info{};
    info.struct_size = sizeof info;
    if (vt_model_get_info(model, &info) != VT_OK) return;
    // Mixture of experts: where the weights are and what a token reads.
    if (info.n_expert)
        std::fprintf(stderr,
                     "%s: %u experts, %u per token; weights: %.1f MiB resident copies, %.1f MiB read from the file "
                     "mapping (%u expert tensors); a decode token reads %.1f MiB\n",
                     tool, info.n_expert, info.n_expert_used, (double)info.resident_weight_bytes / (1 << 20),
                     (double)info.mapped_weight_bytes / (1 << 20), info.n_expert_tensors_mapped,
                     (double)info.weight_bytes_per_token / (1 << 20));
    if (!info.device || info.uploaded_bytes == 0) return;
    std::fprintf(stderr, "%s: weights on %s (%u of %u layers): %.1f MiB uploaded in %.2f s\n", tool, info.device,
                 info.n_device_layers, info.n_layer, (double)info.uploaded_bytes / (1 << 20), info.upload_seconds);
}

// --weights-memory BYTES: vt_model_params.weights_memory_bytes.
inline void add_weights_memory_option(CLI::App &app, uint64_t &bytes) {
    app.add_option("--weights-memory", bytes,
                   "most bytes of weight copies in memory; experts past it are read from the file mapping "
                   "(0 = 3/4 of the memory available at load)")
        ->capture_default_str();
}

// --device NAME, --n-gpu-layers N (--ngl) and --list-devices, which prints
// the devices and exits (before required options are checked).
inline void add_device_options(CLI::App &app, std::string &device, int &n_gpu_layers) {
    app.add_option("--device", device, "device for the weights and compute (--list-devices), default cpu");
    app.add_option("--n-gpu-layers,--ngl", n_gpu_layers,
                   "with --device: layers it holds (the last ones; the rest run on the CPU), -1 = all")
        ->capture_default_str();
    app.add_flag_callback(
        "--list-devices",
        [] {
            const int rc = print_devices(stdout);
            if (rc == 0) throw CLI::Success();
            throw CLI::RuntimeError(rc);
        },
        "list the devices (name, backend, type, memory) and exit");
}

} // namespace vt_examples
