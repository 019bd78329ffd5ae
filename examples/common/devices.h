// What the example tools share about devices, through the public ABI only:
// --list-devices output and the line saying where a model's weights went.
#pragma once

#include <cstdio>

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
    if (vt_model_get_info(model, &info) != VT_OK || !info.device || info.uploaded_bytes == 0) return;
    std::fprintf(stderr, "%s: weights on %s (%u of %u layers): %.1f MiB uploaded in %.2f s\n", tool, info.device,
                 info.n_device_layers, info.n_layer, (double)info.uploaded_bytes / (1 << 20), info.upload_seconds);
}

} // namespace vt_examples
