// Streams: a graph's nodes recorded into one command buffer, submitted,
// waited on (vk-stream.cpp).
#pragma once

#include "backend/backend-impl.h"

namespace vt::vk {

struct Device;

// A stream on d, or nullptr (logged).
vt_stream *stream_create(Device &d);

} // namespace vt::vk
