// Constraints of every kind (vt_grammar_kind) compiled for a vocabulary.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "grammar/token-matcher.h"

namespace vt::grammar {

enum class Kind { gbnf = 0, json_schema = 1, json = 2, regex = 3, choice = 4 };

// The constraint as GBNF (start rule `root`). Throws vt::Error as
// vt_grammar_compile documents.
std::string to_gbnf(Kind kind, std::string_view source);

std::shared_ptr<const CompiledGrammar> compile(const Tokenizer &tok, Kind kind, std::string_view source);

} // namespace vt::grammar
