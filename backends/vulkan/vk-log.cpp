#include "vk-log.h"

#include <cstdarg>
#include <cstdio>

namespace vt::vk {

namespace {
void (*g_sink)(vt_log_level, const char *) = nullptr;
}

void log_set_host(void (*sink)(vt_log_level, const char *)) { g_sink = sink; }

void log(vt_log_level level, const char *fmt, ...) {
    char buf[1024];
    std::va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (g_sink) g_sink(level, buf);
    else if (level >= VT_LOG_LEVEL_WARN) std::fprintf(stderr, "vulkan: %s\n", buf);
}

const char *result_name(VkResult r) {
    switch (r) {
#define VK_RESULT_NAME_(x) \
    case x: return #x;
    VK_RESULT_NAME_(VK_SUCCESS)
    VK_RESULT_NAME_(VK_NOT_READY)
    VK_RESULT_NAME_(VK_TIMEOUT)
    VK_RESULT_NAME_(VK_INCOMPLETE)
    VK_RESULT_NAME_(VK_ERROR_OUT_OF_HOST_MEMORY)
    VK_RESULT_NAME_(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    VK_RESULT_NAME_(VK_ERROR_INITIALIZATION_FAILED)
    VK_RESULT_NAME_(VK_ERROR_DEVICE_LOST)
    VK_RESULT_NAME_(VK_ERROR_MEMORY_MAP_FAILED)
    VK_RESULT_NAME_(VK_ERROR_LAYER_NOT_PRESENT)
    VK_RESULT_NAME_(VK_ERROR_EXTENSION_NOT_PRESENT)
    VK_RESULT_NAME_(VK_ERROR_FEATURE_NOT_PRESENT)
    VK_RESULT_NAME_(VK_ERROR_INCOMPATIBLE_DRIVER)
    VK_RESULT_NAME_(VK_ERROR_TOO_MANY_OBJECTS)
    VK_RESULT_NAME_(VK_ERROR_FORMAT_NOT_SUPPORTED)
    VK_RESULT_NAME_(VK_ERROR_FRAGMENTED_POOL)
    VK_RESULT_NAME_(VK_ERROR_OUT_OF_POOL_MEMORY)
#undef VK_RESULT_NAME_
    default: return "VkResult (other)";
    }
}

} // namespace vt::vk
