// Every kind of constraint of vt_grammar.h as GBNF, then compiled for a
// vocabulary (compile.h).
#include "grammar/compile.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/grammar.h"
#include "grammar/json-schema-grammar.h"
#include "grammar/regex-grammar.h"

namespace vt::grammar {
namespace {

// A GBNF literal of UTF-8 text.
std::string gbnf_literal(std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c < 0x20 || c == 0x7F) {
            static const char *hex = "0123456789ABCDEF";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += char(c);
        }
    }
    return out + "\"";
}

std::string choice_gbnf(std::string_view source) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(source);
    } catch (const nlohmann::json::exception &e) {
        throw Error(VT_ERR_INVALID_ARGUMENT, std::string("choice: not JSON: ") + e.what());
    }
    if (!j.is_array() || j.empty()) throw Error(VT_ERR_INVALID_ARGUMENT, "choice: expected a non-empty JSON array of strings");
    std::string g = "root ::= ";
    for (size_t i = 0; i < j.size(); ++i) {
        if (!j[i].is_string()) throw Error(VT_ERR_INVALID_ARGUMENT, "choice: element " + std::to_string(i) + " is not a string");
        const std::string &s = j[i].get_ref<const std::string &>();
        if (s.empty()) throw Error(VT_ERR_INVALID_ARGUMENT, "choice: element " + std::to_string(i) + " is empty");
        g += (i ? " | " : "") + gbnf_literal(s);
    }
    return g + "\n";
}

} // namespace

std::string to_gbnf(Kind kind, std::string_view source) {
    switch (kind) {
    case Kind::gbnf: return std::string(source);
    case Kind::json_schema: return json_schema_to_gbnf(source);
    case Kind::json: return any_json_gbnf();
    case Kind::regex: {
        std::string rules;
        std::string start = regex_to_gbnf(source, "re", rules);
        return "root ::= " + start + "\n" + rules;
    }
    case Kind::choice: return choice_gbnf(source);
    }
    throw Error(VT_ERR_INVALID_ARGUMENT, "unknown grammar kind");
}

std::shared_ptr<const CompiledGrammar> compile(const Tokenizer &tok, Kind kind, std::string_view source) {
    auto g = compile_gbnf(to_gbnf(kind, source));
    return std::make_shared<const CompiledGrammar>(std::move(g), TokenVocab::of(tok));
}

} // namespace vt::grammar
