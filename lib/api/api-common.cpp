// Versions, status strings, last error and logging.
#include "api/api-internal.h"
#include "core/log.h"

namespace {
thread_local std::string t_last_error;
}

namespace vt::api {

void set_last_error(std::string_view msg) {
    try {
        t_last_error.assign(msg);
    } catch (...) {
        t_last_error.clear();  // out of memory: an empty message beats a throw
    }
}

void clear_last_error() { t_last_error.clear(); }

vt_status fail(vt_status status, std::string_view msg) {
    set_last_error(msg);
    return status;
}

vt_status copy_out(std::string_view s, char *buf, size_t buf_size, size_t *needed) {
    if (needed) *needed = s.size();
    if (buf == nullptr && buf_size != 0) return fail_arg("buf is NULL but buf_size > 0");
    if (buf_size == 0) return s.empty() ? VT_OK : fail(VT_ERR_BUFFER_TOO_SMALL, "buffer too small");
    size_t n = s.size() < buf_size - 1 ? s.size() : buf_size - 1;
    std::memcpy(buf, s.data(), n);
    buf[n] = '\0';
    if (n < s.size()) return fail(VT_ERR_BUFFER_TOO_SMALL, "buffer too small");
    return VT_OK;
}

} // namespace vt::api

extern "C" {

VT_API const char *vt_status_str(vt_status status) {
    switch (status) {
#define VT_STATUS_CASE_(name, value, desc) \
    case name: return desc;
        VT_STATUS_LIST(VT_STATUS_CASE_)
#undef VT_STATUS_CASE_
    }
    return "unknown status";
}

VT_API const char *vt_last_error(void) { return t_last_error.c_str(); }

VT_API uint32_t vt_abi_version(void) { return VT_ABI_VERSION; }

VT_API const char *vt_version(void) { return VT_VERSION_STRING; }

VT_API void vt_log_set(vt_log_callback callback, void *user_data, vt_log_level min_level) {
    vt::log_set(callback, user_data, min_level);
}

} // extern "C"
