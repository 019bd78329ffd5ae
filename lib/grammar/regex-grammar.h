// Regular expression -> GBNF rules (VT_GRAMMAR_REGEX, and JSON Schema's
// `pattern`). The syntax and language are those of xgrammar 0.2.9's regex
// converter (ECMAScript-like), which the oracle tests compare against.
#pragma once

#include <string>
#include <string_view>

namespace vt::grammar {

// Appends to `rules` GBNF rules whose start rule matches exactly the
// strings `pattern` matches (whole string, as if anchored) and returns that
// rule's name. Every rule name it adds starts with `prefix`. Throws
// vt::Error: VT_ERR_INVALID_ARGUMENT for a malformed pattern (the message
// gives the offset), VT_ERR_UNSUPPORTED for a construct that is not regular
// or not implemented (backreferences, lookaround), named in the message.
std::string regex_to_gbnf(std::string_view pattern, std::string_view prefix,
                          std::string &rules);

} // namespace vt::grammar
