// Where tests find their external inputs. Models are located by one helper
// (examples/models/vt_models.py); tests/run.sh exports its answer as
// VT_TEST_MODEL. Shared test data lives in ../shared/data (VT_SHARED_DATA,
// set by meson). Absent inputs make the cases that need them skip loudly.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace vt::test {

// The default model (SmolLM2-135M-Instruct Q4_1), or an empty path when
// VT_TEST_MODEL is unset or names no file.
inline std::filesystem::path default_model() {
    const char *p = std::getenv("VT_TEST_MODEL");
    if (!p || !*p || !std::filesystem::exists(p)) return {};
    return p;
}

inline std::string default_model_hint() {
    return "VT_TEST_MODEL is unset or missing; run tests through tests/run.sh, which fetches the "
           "model with examples/models/vt_models.py";
}

inline std::filesystem::path shared_data() {
    if (const char *d = std::getenv("VT_SHARED_DATA")) return d;
    if (const char *r = std::getenv("VT_SOURCE_ROOT")) return std::filesystem::path(r) / ".." / "shared" / "data";
    return std::filesystem::path("..") / "shared" / "data";
}

} // namespace vt::test
