// Tokens -> statement tree, following Jinja's grammar and operator
// precedence (parse_condexpr .. parse_unary in jinja2/parser.py).
#pragma once

#include <vector>

#include "ast.h"
#include "lexer.h"

namespace vt::jinja {

// Throws vt::Error(VT_ERR_FORMAT) naming line and column on a syntax error.
Body parse(const std::vector<Token> &tokens);

} // namespace vt::jinja
