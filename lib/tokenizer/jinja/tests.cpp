// Jinja's built-in tests (jinja2/tests.py, 3.1): `x is name(args)`.
#include <cmath>
#include <unordered_map>

#include "builtins.h"
#include "core/error.h"
#include "text.h"

namespace vt::jinja {

namespace {

using TestFn = bool (*)(const Value &v, Args &a);

const Value &operand(const Args &a, const char *test) {
    const Value *o = a.get(0, "other");
    if (!o) fail(VT_ERR_INVALID_ARGUMENT, "test '%s' needs an argument", test);
    return *o;
}

bool t_defined(const Value &v, Args &) { return !v.is_undefined(); }
bool t_undefined(const Value &v, Args &) { return v.is_undefined(); }
bool t_none(const Value &v, Args &) { return v.is_none(); }
bool t_boolean(const Value &v, Args &) { return v.is_bool(); }
bool t_true(const Value &v, Args &) { return v.is_bool() && v.as_bool(); }
bool t_false(const Value &v, Args &) { return v.is_bool() && !v.as_bool(); }
bool t_integer(const Value &v, Args &) { return v.is_int(); }
bool t_float(const Value &v, Args &) { return v.is_float(); }
bool t_number(const Value &v, Args &) { return v.is_number(); }
bool t_string(const Value &v, Args &) { return v.is_string(); }
bool t_mapping(const Value &v, Args &) { return v.is_dict() && !v.dict().is_namespace; }
// Undefined iterates as empty and has a length, so Jinja calls it both.
bool t_iterable(const Value &v, Args &) { return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict(); }
bool t_sequence(const Value &v, Args &a) { return t_iterable(v, a) && !(v.is_dict() && v.dict().is_namespace); }
bool t_callable(const Value &v, Args &) { return v.is_function(); }
bool t_lower(const Value &v, Args &) { return v.is_string() && py_lower(v.str()) == v.str(); }
bool t_upper(const Value &v, Args &) { return v.is_string() && py_upper(v.str()) == v.str(); }

int64_t int_of(const Value &v, const char *test) {
    if (v.is_int() || v.is_bool()) return v.as_int();
    if (v.is_float() && v.as_double() == std::trunc(v.as_double())) return int64_t(v.as_double());
    fail(VT_ERR_INVALID_ARGUMENT, "test '%s' needs an integer, got %s", test, v.type_name());
}
bool t_odd(const Value &v, Args &) { return int_of(v, "odd") % 2 != 0; }
bool t_even(const Value &v, Args &) { return int_of(v, "even") % 2 == 0; }
bool t_divisibleby(const Value &v, Args &a) {
    int64_t d = int_of(operand(a, "divisibleby"), "divisibleby");
    if (d == 0) fail(VT_ERR_INVALID_ARGUMENT, "integer division or modulo by zero");
    return int_of(v, "divisibleby") % d == 0;
}

bool t_eq(const Value &v, Args &a) { return equals(v, operand(a, "eq")); }
bool t_ne(const Value &v, Args &a) { return !equals(v, operand(a, "ne")); }
bool t_lt(const Value &v, Args &a) { return less(v, operand(a, "lt")); }
bool t_gt(const Value &v, Args &a) { return less(operand(a, "gt"), v); }
bool t_le(const Value &v, Args &a) { return !less(operand(a, "le"), v); }
bool t_ge(const Value &v, Args &a) { return !less(v, operand(a, "ge")); }
bool t_sameas(const Value &v, Args &a) {
    const Value &o = operand(a, "sameas");
    if (v.kind() != o.kind()) return false;
    if (v.is_none() || v.is_bool() || v.is_int()) return equals(v, o);
    if (v.is_list()) return &v.list() == &o.list();
    if (v.is_dict()) return &v.dict() == &o.dict();
    return false;
}

bool t_in(const Value &v, Args &a) {
    const Value &seq = operand(a, "in");
    if (seq.is_string()) {
        if (!v.is_string()) fail(VT_ERR_INVALID_ARGUMENT, "'in <string>' requires string as left operand");
        return seq.str().find(v.str()) != std::string::npos;
    }
    if (seq.is_dict()) return v.is_string() && seq.dict().find(v.str()) != nullptr;
    if (seq.is_list()) {
        for (const Value &x : seq.list())
            if (equals(x, v)) return true;
        return false;
    }
    if (seq.is_undefined()) return false;
    fail(VT_ERR_INVALID_ARGUMENT, "argument of type '%s' is not iterable", seq.type_name());
}

const std::unordered_map<std::string, TestFn> &tests() {
    static const std::unordered_map<std::string, TestFn> table = {
        {"defined", t_defined}, {"undefined", t_undefined}, {"none", t_none}, {"boolean", t_boolean},
        {"true", t_true}, {"false", t_false}, {"integer", t_integer}, {"float", t_float},
        {"number", t_number}, {"string", t_string}, {"mapping", t_mapping}, {"iterable", t_iterable},
        {"sequence", t_sequence}, {"callable", t_callable}, {"lower", t_lower}, {"upper", t_upper},
        {"odd", t_odd}, {"even", t_even}, {"divisibleby", t_divisibleby},
        {"eq", t_eq}, {"equalto", t_eq}, {"==", t_eq}, {"ne", t_ne}, {"!=", t_ne},
        {"lt", t_lt}, {"lessthan", t_lt}, {"<", t_lt}, {"gt", t_gt}, {"greaterthan", t_gt}, {">", t_gt},
        {"le", t_le}, {"<=", t_le}, {"ge", t_ge}, {">=", t_ge}, {"sameas", t_sameas}, {"in", t_in},
    };
    return table;
}

} // namespace

bool call_test(const std::string &name, const Value &v, Args &args) {
    auto it = tests().find(name);
    if (it == tests().end()) fail(VT_ERR_UNSUPPORTED, "no test named '%s'", name.c_str());
    return it->second(v, args);
}

} // namespace vt::jinja
