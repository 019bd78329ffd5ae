// vt_device.h: the device list of lib/backend behind the C ABI.
#include <cstddef>
#include <cstring>

#include "api/api-internal.h"
#include "backend/backend.h"
#include "vt/vt_device.h"

using vt::api::fail_arg;
using vt::api::guard;

namespace {
// The 1.4 struct: every field a caller must have room for.
constexpr size_t kDeviceInfoSize = offsetof(vt_device_info, memory_free) + sizeof(uint64_t);
} // namespace

VT_API size_t vt_device_count(void) {
    size_t n = 1;  // the CPU, even if the modules cannot be looked at
    guard([&] { n = vt::devices().size(); });
    return n;
}

VT_API vt_status vt_device_get_info(size_t index, vt_device_info *info) {
    if (!info) return fail_arg("vt_device_get_info: info must not be NULL");
    if (info->struct_size < kDeviceInfoSize) return fail_arg("vt_device_get_info: set info->struct_size");
    return guard([&] {
        const std::vector<vt_device *> &list = vt::devices();
        if (index >= list.size())
            vt::fail(VT_ERR_NOT_FOUND, "no device %zu (there are %zu)", index, list.size());
        const vt_device_props p = vt::device_props(list[index]);
        vt_device_info full{};
        full.struct_size = info->struct_size;
        full.name = p.name;
        full.backend = vt::device_backend(list[index]);
        full.description = p.description;
        full.type = p.type;
        full.memory_total = p.memory_total;
        full.memory_free = p.memory_free;
        std::memcpy(info, &full, info->struct_size < sizeof full ? info->struct_size : sizeof full);
    });
}
