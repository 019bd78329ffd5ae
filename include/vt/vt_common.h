/* vt_common.h - versions, status codes, errors and logging of the vt C ABI.
 *
 * Conventions of every vt header (the project's design notes, summarised here):
 *  - Functions return vt_status; results go to out-params. On failure
 *    vt_last_error() holds a message for the calling thread.
 *  - Params structs begin with uint32_t struct_size and are filled with
 *    defaults by their vt_<x>_params_init(&p); new fields only ever go last.
 *    The call a program writes fills exactly the struct it was compiled
 *    against, so a field set afterwards is never dropped: once a struct has
 *    grown, vt_<x>_params_init is a macro passing sizeof *p to the sized
 *    entry point vt_<x>_params_init_v2(p, size), which fills every field
 *    that fits in `size` bytes. The exported vt_<x>_params_init symbol keeps
 *    writing the struct of the release that published it, forever, for the
 *    binaries that linked it (call it as (vt_<x>_params_init)(p)).
 *  - Strings are UTF-8 with explicit lengths. Functions that fill a caller
 *    buffer always report the size they need (without the NUL) in *needed and
 *    return VT_ERR_BUFFER_TOO_SMALL when it does not fit; the buffer then holds
 *    a NUL-terminated prefix when buf_size > 0.
 *  - No C++ exception, abort or exit crosses this boundary on any input.
 */
#ifndef VT_COMMON_H
#define VT_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_version.h"

#if defined(_WIN32) && defined(VT_BUILDING_LIBRARY)
#define VT_API __declspec(dllexport)
#elif defined(_WIN32)
#define VT_API __declspec(dllimport)
#elif defined(VT_BUILDING_LIBRARY)
#define VT_API __attribute__((visibility("default")))
#else
#define VT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes: X(name, value, description). VT_OK is 0, errors are negative. */
#define VT_STATUS_LIST(X)                                                      \
    X(VT_OK, 0, "ok")                                                          \
    X(VT_ERR_INVALID_ARGUMENT, -1, "invalid argument")                         \
    X(VT_ERR_IO, -2, "input/output error")                                     \
    X(VT_ERR_FORMAT, -3, "malformed or corrupt file")                          \
    X(VT_ERR_UNSUPPORTED, -4, "unsupported feature")                           \
    X(VT_ERR_OUT_OF_MEMORY, -5, "out of memory")                               \
    X(VT_ERR_CANCELLED, -6, "cancelled")                                       \
    X(VT_ERR_CONTEXT_FULL, -7, "context window is full")                       \
    X(VT_ERR_BUFFER_TOO_SMALL, -8, "buffer too small")                         \
    X(VT_ERR_INVALID_UTF8, -9, "invalid UTF-8")                                \
    X(VT_ERR_NOT_FOUND, -10, "not found")                                      \
    X(VT_ERR_INVALID_STATE, -11, "invalid state")                              \
    X(VT_ERR_INTERNAL, -12, "internal error")

typedef enum vt_status {
#define VT_STATUS_ENUM_(name, value, desc) name = value,
    VT_STATUS_LIST(VT_STATUS_ENUM_)
#undef VT_STATUS_ENUM_
} vt_status;

/* Static description of a status ("invalid argument"); never NULL.
 * Thread-safe. */
VT_API const char *vt_status_str(vt_status status);

/* Message of the last failed vt call on this thread, or "" if none.
 * The pointer stays valid until the next vt call on this thread. */
VT_API const char *vt_last_error(void);

/* ABI version of the loaded library: (major << 16) | minor. A caller built
 * against VT_ABI_VERSION is compatible when the majors are equal and the
 * library's minor is >= the header's. Thread-safe. */
VT_API uint32_t vt_abi_version(void);

/* Library version string ("0.1.0"), static. Thread-safe. */
VT_API const char *vt_version(void);

/* Log levels, lowest to highest. */
typedef enum vt_log_level {
    VT_LOG_LEVEL_DEBUG = 0,
    VT_LOG_LEVEL_INFO = 1,
    VT_LOG_LEVEL_WARN = 2,
    VT_LOG_LEVEL_ERROR = 3,
    VT_LOG_LEVEL_NONE = 4
} vt_log_level;

/* Receives one log message (UTF-8, `len` bytes, no trailing newline). May be
 * called from any vt thread; must be thread-safe itself. */
typedef void (*vt_log_callback)(vt_log_level level, const char *msg, size_t len,
                                void *user_data);

/* Installs the process-wide log sink and its minimum level. callback NULL
 * selects the default sink, stderr; VT_LOG_LEVEL_NONE silences logging.
 * Without any call the sink is stderr at VT_LOG_LEVEL_WARN. Thread-safe. */
VT_API void vt_log_set(vt_log_callback callback, void *user_data,
                       vt_log_level min_level);

#ifdef __cplusplus
}
#endif

#endif /* VT_COMMON_H */
