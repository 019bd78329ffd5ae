// libFuzzer target for the GGUF reader. Any vt::Error is an accepted outcome;
// any other exception, crash, sanitizer report or leak is a bug.
// Build and run: see tests/fuzz/meson.build.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "model/gguf.h"

namespace {

// Touches everything a caller may use after a successful parse, so the
// sanitizers check that every view and data pointer lies inside the input.
void exercise(const vt::GgufFile &g, const uint8_t *data, size_t size) {
    size_t sink = 0;
    for (const vt::GgufKV &kv : g.kvs()) {
        auto guarded = [&](auto f) {
            try {
                f();
            } catch (const vt::Error &) {
            }
        };
        guarded([&] { sink += vt::GgufFile::to_string(kv.value).size(); });
        guarded([&] { sink += g.get_uint(kv.key).value_or(0); });
        guarded([&] { sink += (size_t)g.get_int(kv.key).value_or(0); });
        guarded([&] { sink += g.get_float(kv.key).value_or(0) != 0; });
        guarded([&] { sink += g.get_bool(kv.key).value_or(false); });
        guarded([&] { sink += g.get_string(kv.key).value_or("").size(); });
        guarded([&] { sink += g.get_array(kv.key, kv.value.arr_type) != nullptr; });
        if (g.find(kv.key) != &kv) __builtin_trap();  // keys are unique
    }
    for (const vt::GgufTensorInfo &t : g.tensors()) {
        const uint8_t *p = static_cast<const uint8_t *>(t.data);
        if (t.nbytes == 0 || p < data || p + t.nbytes > data + size) __builtin_trap();
        sink += p[0] + p[t.nbytes - 1];
        if (g.find_tensor(t.name) != &t) __builtin_trap();
    }
    volatile size_t keep = sink;
    (void)keep;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    try {
        auto g = vt::GgufFile::parse(data, size);
        exercise(*g, data, size);
    } catch (const vt::Error &) {
    }
    return 0;
}
