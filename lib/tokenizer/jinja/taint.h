// Marks ("taint") on the bytes of strings that came from the caller's data
// (messages, tools, extra variables), carried through the operations that
// build new strings, so that a rendered chat template knows which of its
// bytes are the template's own text (Value::mask()).
//
// Carried byte for byte: output, concatenation (+, ~), repetition, indexing,
// slicing and iterating over a str, strip/lstrip/rstrip/trim, replace,
// join (filter without attribute=, and str.join), and upper/lower/title/
// capitalize where the length in bytes is unchanged. Any other filter or
// method on a value holding marked data (a container, a wholly marked str,
// or the tojson/string of anything marked) marks its whole result; on a str
// only partly marked it keeps the marks where they are byte-exact and
// otherwise drops them (e.g. format, %, indent of a template-built str whose
// arguments are marked: that text counts as the template's).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "value.h"

namespace vt::jinja {

// Text being written, with its marks.
struct MarkedText {
    std::string text;
    std::string mask;  // empty while no byte is marked, else text.size() bytes

    // s with mask m (nullptr: unmarked; else m->size() == s.size()).
    void append(std::string_view s, const std::string *m);
    void append(std::string_view s, bool marked);
    // A value as output writes it: a str with its marks, anything else as
    // str(v), wholly marked if anything in it is.
    void append(const Value &v);
    Value value() &&;
    // The marked byte ranges [begin, end), sorted and merged.
    std::vector<std::pair<size_t, size_t>> ranges() const;
};

// A copy of v with every string and key in it wholly marked.
Value mark_all(const Value &v);

// r, the result of a OP b for OP "+" or "~" (a string), with the operands' marks.
Value concat_marks(const Value &a, const Value &b, Value r);
// r, a string repeated n times (seq * n), with seq's marks.
Value repeat_marks(const Value &seq, Value r);
// The code points at `indices` of a marked str, as one str with their marks.
Value pick_code_points(const Value &s, const std::vector<size_t> &indices);
// Characters of a str as a for loop sees them, with their marks.
List marked_characters(const Value &s);

// r = v|name(a) (filter) or v.name(a) (method), given marks.
Value filter_marks(const std::string &name, const Value &v, const Args &a, Value r);
Value method_marks(const std::string &name, const Value &recv, const Args &a, Value r);

} // namespace vt::jinja
