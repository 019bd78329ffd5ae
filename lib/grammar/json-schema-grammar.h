// JSON Schema -> GBNF text (include/vt/vt_grammar.h, VT_GRAMMAR_JSON_SCHEMA
// and VT_GRAMMAR_JSON). The language is the one xgrammar 0.2.9 builds for
// the same schema with its defaults (any_whitespace=True, strict_mode=True):
// the oracle tests compare the two token for token.
#pragma once

#include <string>
#include <string_view>

namespace vt::grammar {

// A GBNF grammar (start rule `root`) of the JSON values valid against
// `schema` (JSON text). Throws vt::Error: VT_ERR_INVALID_ARGUMENT for
// malformed JSON or an invalid schema (the message says where),
// VT_ERR_UNSUPPORTED for a keyword that constrains values and is not
// implemented (named in the message).
std::string json_schema_to_gbnf(std::string_view schema);

// A GBNF grammar of a JSON object or array with no whitespace around it
// (xgrammar's builtin JSON grammar).
std::string any_json_gbnf();

} // namespace vt::grammar
