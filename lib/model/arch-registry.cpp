// The architecture table: the only place that maps a name to an
// architecture. Adding one = a file in lib/models/ + one line here.
#include <cstring>

#include "core/error.h"
#include "model/model.h"

namespace vt {

std::unique_ptr<Architecture> make_llama_architecture();

namespace {
struct ArchEntry {
    const char *name;
    std::unique_ptr<Architecture> (*make)();
};

const ArchEntry kArchitectures[] = {
    {"llama", make_llama_architecture},
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
