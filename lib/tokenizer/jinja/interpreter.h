// Walks the statement tree and writes the output. Scoping follows Jinja:
// every for-loop iteration and macro call gets a fresh scope, `if` does not,
// so `set` inside a loop is invisible after it (hence namespace()).
#pragma once

#include <string>

#include "ast.h"
#include "jinja.h"
#include "taint.h"
#include "value.h"

namespace vt::jinja {

// `variables` become the outermost scope, in front of the globals
// (raise_exception, strftime_now, namespace, dict, range).
// The output carries the marks of the variables' data (taint.h).
MarkedText render_body(const Body &body, const Dict &variables, const RenderOptions &opt);

} // namespace vt::jinja
