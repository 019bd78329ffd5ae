// The functions every template can call: Jinja's range and the globals
// transformers adds (raise_exception, strftime_now, namespace, dict).
#pragma once

#include "jinja.h"
#include "value.h"

namespace vt::jinja {

Dict make_globals(const RenderOptions &opt);

} // namespace vt::jinja
