// Logging of the Vulkan module. The module links its own static copy of
// lib/core, whose logger is not libvt's: lines go to the sink libvt handed
// over at vt_backend_init (vt_backend_host::log), formatted here.
#pragma once

#include <vulkan/vulkan.h>

#include "vt/vt_common.h"

namespace vt::vk {

// Sets the sink (nullptr: stderr for WARN and above). Called once, at init.
void log_set_host(void (*sink)(vt_log_level, const char *));
void log(vt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// "VK_ERROR_OUT_OF_DEVICE_MEMORY" and the like.
const char *result_name(VkResult r);

} // namespace vt::vk

#define VK_LOG_DEBUG(...) ::vt::vk::log(VT_LOG_LEVEL_DEBUG, __VA_ARGS__)
#define VK_LOG_INFO(...) ::vt::vk::log(VT_LOG_LEVEL_INFO, __VA_ARGS__)
#define VK_LOG_WARN(...) ::vt::vk::log(VT_LOG_LEVEL_WARN, __VA_ARGS__)
#define VK_LOG_ERROR(...) ::vt::vk::log(VT_LOG_LEVEL_ERROR, __VA_ARGS__)
