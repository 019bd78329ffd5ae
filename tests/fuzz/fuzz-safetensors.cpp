// libFuzzer target for the safetensors reader (model/safetensors.h): the
// header JSON, offsets and shapes of any input. Any vt::Error is an accepted
// outcome; any other exception, crash, sanitizer report or leak is a bug.
// Build and run: see tests/fuzz/meson.build.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "model/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    try {
        auto f = vt::SafetensorsFile::parse(data, size);
        size_t sink = 0;
        // Every tensor must lie inside the input: touch its first and last byte.
        for (const vt::SafetensorsTensor &t : f->tensors()) {
            const uint8_t *p = static_cast<const uint8_t *>(t.data);
            if (t.nbytes == 0 || p < data || p + t.nbytes > data + size) __builtin_trap();
            sink += p[0] + p[t.nbytes - 1];
        }
        volatile size_t keep = sink;
        (void)keep;
    } catch (const vt::Error &) {
    }
    return 0;
}
