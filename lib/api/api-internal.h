// Shared helpers of the extern "C" shims. Every public function body runs
// inside guard(), so no exception crosses the C boundary: vt::Error keeps its
// status, std::bad_alloc becomes VT_ERR_OUT_OF_MEMORY and anything else
// VT_ERR_INTERNAL; the message goes to the thread's vt_last_error().
#pragma once

#include <cstring>
#include <new>
#include <string>
#include <string_view>

#include "core/error.h"
#include "vt/vt.h"

namespace vt::api {

void set_last_error(std::string_view msg);
void clear_last_error();

// Sets the last error and returns status.
vt_status fail(vt_status status, std::string_view msg);
inline vt_status fail_arg(const char *msg) { return fail(VT_ERR_INVALID_ARGUMENT, msg); }

template <class F> vt_status guard(F &&f) noexcept {
    try {
        clear_last_error();
        f();
        return VT_OK;
    } catch (const vt::Error &e) {
        return fail(e.status(), e.what());
    } catch (const std::bad_alloc &) {
        return fail(VT_ERR_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception &e) {
        return fail(VT_ERR_INTERNAL, e.what());
    } catch (...) {
        return fail(VT_ERR_INTERNAL, "unknown internal error");
    }
}

// Copies a caller's params struct of any (older or newer) size over the
// defaults already in out; false when in->struct_size is unset.
template <class P> bool read_params(const P *in, P &out) {
    if (!in) return true;
    if (in->struct_size < sizeof(uint32_t)) return false;
    std::memcpy(&out, in, in->struct_size < sizeof out ? in->struct_size : sizeof out);
    out.struct_size = sizeof out;
    return true;
}

// Writes s into a caller buffer following the convention of vt_common.h.
vt_status copy_out(std::string_view s, char *buf, size_t buf_size, size_t *needed);

} // namespace vt::api
