// The architecture table: the only place that maps a name to an
// architecture. Adding one = a file in lib/models/ + one line here.
#include <cstring>

#include "core/error.h"
#include "model/model.h"

namespace vt {

std::unique_ptr<Architecture> make_llama_architecture();
std::unique_ptr<Architecture> make_qwen2_architecture();
std::unique_ptr<Architecture> make_qwen3_architecture();
std::unique_ptr<Architecture> make_gemma3_architecture();

namespace {
struct ArchEntry {
    const char *name;
    std::unique_ptr<Architecture> (*make)();
};

const ArchEntry kArchitectures[] = {
    {"llama", make_llama_architecture},
    {"qwen2", make_qwen2_architecture},
    {"qwen3", make_qwen3_architecture},
    {"gemma3", make_gemma3_architecture},
};
} // namespace

std::unique_ptr<Architecture> make_architecture(const std::string &name) {
    std::string known;
    for (const ArchEntry &e : kArchitectures) {
        if (name == e.name) return e.make();
        known += known.empty() ? e.name : std::string(", ") + e.name;
    }
    fail(VT_ERR_UNSUPPORTED, "unsupported model architecture '%s' (supported: %s)", name.c_str(), known.c_str());
}

} // namespace vt
