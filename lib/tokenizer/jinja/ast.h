// The parsed template. Expressions and statements are plain tagged structs:
// the interpreter switches on the kind, so the node set stays in one place.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "value.h"

namespace vt::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,   // literal
        Name,      // name
        List,      // args: items
        Tuple,     // args: items (a Python tuple; behaves as a list here)
        Dict,      // args: key, value, key, value, ...
        GetAttr,   // args[0].name
        GetItem,   // args[0][args[1]]
        Slice,     // args[0][args[1]:args[2]:args[3]] (null parts omitted)
        Call,      // args[0](args[1..], kwargs)
        Filter,    // args[0] | name(args[1..], kwargs)
        Test,      // args[0] is [not] name(args[1..], kwargs)
        Unary,     // name in {"-", "+", "not"}; args[0]
        Binary,    // args[0] name args[1]; name also "and", "or", "~"
        Compare,   // args[0] ops[0] args[1] ops[1] args[2] ... (chained)
        Cond,      // args[1] if args[0] else args[2] (args[2] may be null)
    };
    Kind kind;
    int line = 0, col = 0;
    Value literal;
    std::string name;
    bool negated = false;  // Test: `is not`
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    std::vector<std::string> ops;  // Compare
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// The name a filter block's chain reads its body from (not a valid identifier).
inline constexpr const char *kFilterBlockBody = "(filter body)";

struct MacroParam {
    std::string name;
    ExprPtr default_value;  // null: required
};

struct Stmt {
    enum class Kind {
        Text,        // text
        Output,      // {{ expr }}
        If,          // if expr: body else else_body (elif is a nested If)
        For,         // for targets in expr [if filter]: body else else_body
        Set,         // set targets = expr, or set target_obj.attr = expr
        SetBlock,    // set targets[0] %} body {% endset
        Macro,       // macro name(params): body
        CallBlock,   // call [(params)] expr: body is caller()
        Break,
        Continue,
        FilterBlock, // filter chain `expr` applied to the rendered body
        Scope,       // body only: {% generation %} and the like
    };
    Kind kind;
    int line = 0, col = 0;
    std::string text;
    ExprPtr expr;
    ExprPtr filter;
    std::vector<std::string> targets;
    ExprPtr target_obj;  // Set on a namespace attribute: target_obj.text = expr
    std::vector<MacroParam> params;
    Body body, else_body;
};

} // namespace vt::jinja
