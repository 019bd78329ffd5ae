// libFuzzer target: the structured-output compilers that take text from
// users (vt_grammar_compile, vt-server's response_format and tools): GBNF,
// JSON Schema and regular expressions, each to GBNF as
// lib/grammar/compile.cpp's to_gbnf does (any JSON too), the GBNF parsed and
// lowered to byte-level rules, then a ByteMatcher walked over bytes in
// pieces. (compile.cpp itself ties in the vocabulary side, and with it all of
// libvt: left out, with choice lists, a JSON array through nlohmann.) The
// input is a kind byte,
// the source, and after the first NUL the bytes to match. Anything but a
// clean vt::Error (a crash, a sanitizer finding, another exception, work
// without bound) is a finding, and so is GBNF text a converter writes that
// the parser refuses, a refused piece that changes the matcher's state, or
// a piece accepted after the match was complete.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.h"
#include "grammar/grammar.h"
#include "grammar/json-schema-grammar.h"
#include "grammar/regex-grammar.h"

namespace {

enum class Kind { gbnf, json_schema, json, regex };

// As compile.cpp's to_gbnf.
std::string to_gbnf(Kind kind, std::string_view source) {
    switch (kind) {
    case Kind::gbnf: return std::string(source);
    case Kind::json_schema: return vt::grammar::json_schema_to_gbnf(source);
    case Kind::json: return vt::grammar::any_json_gbnf();
    case Kind::regex: break;
    }
    std::string rules;
    const std::string start = vt::grammar::regex_to_gbnf(source, "re", rules);
    return "root ::= " + start + "\n" + rules;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 1 << 14) return 0;
    const Kind kind = static_cast<Kind>(data[0] % 4);
    std::string_view rest(reinterpret_cast<const char *>(data + 1), size - 1);
    const size_t nul = rest.find('\0');
    const std::string_view source = rest.substr(0, nul);
    const std::string_view text = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
    std::string gbnf;
    try {
        gbnf = to_gbnf(kind, source);
    } catch (const vt::Error &) {
        return 0;  // a clean refusal of the source
    }
    std::shared_ptr<const vt::grammar::Grammar> g;
    try {
        g = vt::grammar::compile_gbnf(gbnf);
    } catch (const vt::Error &e) {
        // A GBNF source may be refused for anything; a converter's output
        // only for what its rules mean (an empty language, a size limit,
        // left recursion through a schema's $ref), never as GBNF text the
        // parser rejects ("GBNF line ...": the converter wrote it wrong).
        if (kind != Kind::gbnf && std::string_view(e.what()).substr(0, 4) == "GBNF") std::abort();
        return 0;
    }
    vt::grammar::ByteMatcher m(g);
    size_t at = 0, k = 0;
    while (at < text.size()) {
        const size_t n = 1 + static_cast<uint8_t>(text[k++ % text.size()]) % 8;
        const std::string_view piece = text.substr(at, n);
        const bool completed = m.is_completed();
        if (!m.accept(piece)) {
            if (m.accept(piece)) std::abort();  // a refusal leaves the state unchanged
            break;
        }
        if (completed) std::abort();  // nothing can follow a completed match
        at += n;
    }
    (void)m.is_accepting();
    m.reset();
    return 0;
}
