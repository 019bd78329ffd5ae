// Process-wide logging behind vt_log_set(). Default sink: stderr at WARN.
#pragma once

#include "vt/vt_common.h"

namespace vt {

void log_set(vt_log_callback callback, void *user_data, vt_log_level min_level);
bool log_enabled(vt_log_level level);
void log(vt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define VT_LOG_DEBUG(...) ::vt::log(VT_LOG_LEVEL_DEBUG, __VA_ARGS__)
#define VT_LOG_INFO(...) ::vt::log(VT_LOG_LEVEL_INFO, __VA_ARGS__)
#define VT_LOG_WARN(...) ::vt::log(VT_LOG_LEVEL_WARN, __VA_ARGS__)
#define VT_LOG_ERROR(...) ::vt::log(VT_LOG_LEVEL_ERROR, __VA_ARGS__)

} // namespace vt
