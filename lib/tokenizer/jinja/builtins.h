// The library a template calls into: filters (x|name), tests (x is name) and
// the methods of str, dict and list (x.name(...)), each with the semantics
// of Jinja 3.1 and Python 3 that transformers' rendering shows.
#pragma once

#include <memory>
#include <string>

#include "value.h"

namespace vt::jinja {

// x|name(args). Throws vt::Error for an unknown filter or bad arguments.
Value call_filter(const std::string &name, const Value &v, Args &args);

// x is name(args). Throws vt::Error for an unknown test.
bool call_test(const std::string &name, const Value &v, Args &args);

// x.name as a bound method of a str, dict or list; nullptr when there is none.
std::shared_ptr<Function> bound_method(const Value &obj, const std::string &name);

// obj.name and obj[key] as Jinja's sandbox resolves them: dict methods win
// over keys for `.`, keys win for `[]`; a miss is Undefined. Both throw for
// an Undefined `obj`, as Jinja's default Undefined does.
Value get_attr(const Value &obj, const std::string &name);
Value get_item(const Value &obj, const Value &key);

// Helpers shared by the three tables.
int64_t to_int_arg(const Value *v, int64_t fallback, const char *what);
std::string to_str_arg(const Value *v, const char *what);
// markupsafe.escape: & < > " ' as HTML entities.
std::string html_escape(const std::string &s);
// Python's str % args (the `%` operator and the format filter).
std::string percent_format(const std::string &fmt, const Value &args);

} // namespace vt::jinja
