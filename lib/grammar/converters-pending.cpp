// Placeholder until the JSON Schema and regex converters land (branches
// jsonschema and regex): both refuse.
#include "core/error.h"
#include "grammar/json-schema-grammar.h"
#include "grammar/regex-grammar.h"

namespace vt::grammar {
std::string json_schema_to_gbnf(std::string_view) { throw Error(VT_ERR_UNSUPPORTED, "JSON Schema: not built yet"); }
std::string any_json_gbnf() { throw Error(VT_ERR_UNSUPPORTED, "JSON: not built yet"); }
std::string regex_to_gbnf(std::string_view, std::string_view, std::string &) {
    throw Error(VT_ERR_UNSUPPORTED, "regex: not built yet");
}
} // namespace vt::grammar
