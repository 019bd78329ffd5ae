// Weights in the CPU's own layouts: the CPU buffer type's prepare_weight.
#pragma once

#include <memory>

#include "backend/backend-impl.h"
#include "core/pages.h"

namespace vt::cpu {

// vt_buffer_type_i::prepare_weight (cpu-weights.cpp): an _X16 copy of t
// where this CPU's kernel table has a gemm for it.
vt_status prepare_weight(vt_buffer_type *buft, Tensor *t, vt_buffer **out);

// A CPU buffer over pages, which it frees (cpu-backend.cpp).
vt_buffer *wrap_pages(std::unique_ptr<PageBuffer> pages);

} // namespace vt::cpu
