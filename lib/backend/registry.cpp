// Backends by name. Adding a backend = one line in kBackends.
#include <cstring>
#include <string>

#include "backend/backend-impl.h"
#include "core/error.h"

extern "C" vt_backend *vt_backend_cpu_create(const vt_backend_params *params);

namespace vt {
namespace {

struct BackendEntry {
    const char *name;
    vt_backend *(*create)(const vt_backend_params *params);
};

const BackendEntry kBackends[] = {
    {"cpu", vt_backend_cpu_create},
};

} // namespace

vt_backend *backend_create(const char *name, const vt_backend_params &params) {
    if (name == nullptr || *name == '\0') name = "cpu";
    std::string known;
    for (const BackendEntry &e : kBackends) {
        if (std::strcmp(e.name, name) == 0) {
            vt_backend *b = e.create(&params);
            if (!b) fail(VT_ERR_OUT_OF_MEMORY, "backend %s: creation failed", name);
            uint32_t version = b->iface->api_version;
            if (version != VT_BACKEND_API_VERSION) {
                backend_free(b);
                fail(VT_ERR_UNSUPPORTED, "backend %s: interface version %u, expected %u", name,
                     version, (unsigned)VT_BACKEND_API_VERSION);
            }
            return b;
        }
        known += known.empty() ? e.name : std::string(", ") + e.name;
    }
    fail(VT_ERR_NOT_FOUND, "no backend named '%s' (available: %s)", name, known.c_str());
}

void backend_free(vt_backend *backend) {
    if (!backend) return;
    backend->iface->free(backend->context);
    delete backend;
}

} // namespace vt
