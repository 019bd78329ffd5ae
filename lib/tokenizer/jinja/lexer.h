// Template text -> tokens, with Jinja's whitespace control as transformers
// configures it (trim_blocks=True, lstrip_blocks=True) plus the `-`/`+`
// markers on tags.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vt::jinja {

struct Token {
    enum class Type {
        Text,        // literal template text (whitespace control applied)
        VarBegin,    // {{
        VarEnd,      // }}
        BlockBegin,  // {%
        BlockEnd,    // %}
        Name,
        String,      // value already unescaped
        Int,
        Float,
        Op,          // operators and punctuation: + - ( ) [ ] . , | == ...
        Eof,
    };
    Type type;
    std::string value;
    int line = 1, col = 1;
};

// Throws vt::Error(VT_ERR_FORMAT) naming line and column on malformed input.
std::vector<Token> tokenize(std::string_view src);

} // namespace vt::jinja
