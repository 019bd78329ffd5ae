#include "interpreter.h"

#include <cmath>
#include <unordered_map>

#include "builtins.h"
#include "core/error.h"
#include "globals.h"
#include "taint.h"
#include "text.h"

namespace vt::jinja {

namespace {

constexpr int kMaxCallDepth = 64;  // macro recursion

// An error that already names its template position; outer nodes pass it on.
class LocatedError : public Error {
public:
    using Error::Error;
};

struct Scope;
using ScopePtr = std::shared_ptr<Scope>;

struct Scope {
    ScopePtr parent;
    std::unordered_map<std::string, Value> vars;

    const Value *lookup(const std::string &name) const {
        for (const Scope *s = this; s; s = s->parent.get()) {
            auto it = s->vars.find(name);
            if (it != s->vars.end()) return &it->second;
        }
        return nullptr;
    }
};

ScopePtr child_of(const ScopePtr &parent) {
    auto s = std::make_shared<Scope>();
    s->parent = parent;
    return s;
}

enum class Flow { Normal, Break, Continue };

// Whether v is, or holds (in lists, dicts, namespaces), the dict d. Only
// containers are walked, never deeper than Value::kMaxDepth.
bool holds(const Value &v, const Dict *d, uint32_t depth) {
    if (v.depth() == 0 || (v.is_list() && v.depth() == 1)) return false;  // no dict inside
    if (depth > Value::kMaxDepth) fail(VT_ERR_INVALID_ARGUMENT, "value nested too deeply");
    if (v.is_dict()) {
        if (&v.dict() == d) return true;
        for (const auto &kv : v.dict().items)
            if (holds(kv.second, d, depth + 1)) return true;
    } else if (v.is_list()) {
        for (const Value &x : v.list())
            if (holds(x, d, depth + 1)) return true;
    }
    return false;
}

[[noreturn]] void undefined_error(const Value &u) {
    fail(VT_ERR_INVALID_ARGUMENT, "%s", u.undefined_name().empty() ? "value is undefined" : u.undefined_name().c_str());
}

template <class Op>
Value checked(Op op, int64_t a, int64_t b) {
    int64_t r = 0;
    if (op(a, b, &r)) fail(VT_ERR_INVALID_ARGUMENT, "integer overflow");
    return Value(r);
}
bool add_overflow(int64_t a, int64_t b, int64_t *r) { return __builtin_add_overflow(a, b, r); }
bool sub_overflow(int64_t a, int64_t b, int64_t *r) { return __builtin_sub_overflow(a, b, r); }
bool mul_overflow(int64_t a, int64_t b, int64_t *r) { return __builtin_mul_overflow(a, b, r); }

Value arithmetic(const std::string &op, const Value &a, const Value &b) {
    if (op == "~") return Value(a.to_str() + b.to_str());
    if (a.is_undefined()) undefined_error(a);
    if (b.is_undefined()) undefined_error(b);
    bool nums = a.is_number() && b.is_number();
    bool ints = nums && !a.is_float() && !b.is_float();
    if (op == "+") {
        if (ints) return checked(add_overflow, a.as_int(), b.as_int());
        if (nums) return Value(a.as_double() + b.as_double());
        if (a.is_markup() || b.is_markup()) {
            if (a.is_string() && b.is_string())
                return Value::markup((a.is_markup() ? a.str() : html_escape(a.str())) +
                                     (b.is_markup() ? b.str() : html_escape(b.str())));
        }
        if (a.is_string() && b.is_string()) return Value(a.str() + b.str());
        if (a.is_list() && b.is_list()) {
            List l = a.list();
            l.insert(l.end(), b.list().begin(), b.list().end());
            return Value(std::move(l));
        }
        if (a.is_string())
            fail(VT_ERR_INVALID_ARGUMENT, "can only concatenate str (not \"%s\") to str", b.type_name());
    } else if (op == "-") {
        if (ints) return checked(sub_overflow, a.as_int(), b.as_int());
        if (nums) return Value(a.as_double() - b.as_double());
    } else if (op == "*") {
        if (ints) return checked(mul_overflow, a.as_int(), b.as_int());
        if (nums) return Value(a.as_double() * b.as_double());
        const Value &seq = a.is_number() ? b : a;
        const Value &n = a.is_number() ? a : b;
        if (n.is_number() && !n.is_float() && (seq.is_string() || seq.is_list())) {
            int64_t count = std::max<int64_t>(0, n.as_int());
            size_t unit = seq.is_string() ? seq.str().size() : seq.list().size();
            if (unit && uint64_t(count) > (uint64_t(1) << 26) / unit) fail(VT_ERR_INVALID_ARGUMENT, "repeated sequence too large");
            RenderBudget::check_size(size_t(count) * unit * (seq.is_string() ? 1 : sizeof(Value)));
            if (seq.is_string()) {
                std::string s;
                for (int64_t i = 0; i < count; ++i) s += seq.str();
                return Value(std::move(s));
            }
            List l;
            for (int64_t i = 0; i < count; ++i) l.insert(l.end(), seq.list().begin(), seq.list().end());
            return Value(std::move(l));
        }
    } else if (op == "/") {
        if (nums) {
            if (b.as_double() == 0) fail(VT_ERR_INVALID_ARGUMENT, "division by zero");
            return Value(a.as_double() / b.as_double());
        }
    } else if (op == "//" || op == "%") {
        if (op == "%" && a.is_string()) return Value(percent_format(a.str(), b));
        if (nums) {
            if (b.as_double() == 0) fail(VT_ERR_INVALID_ARGUMENT, "integer division or modulo by zero");
            if (ints) {  // Python floors toward negative infinity
                int64_t x = a.as_int(), y = b.as_int();
                if (x == INT64_MIN && y == -1) fail(VT_ERR_INVALID_ARGUMENT, "integer overflow");
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) {
                    q -= 1;
                    m += y;
                }
                return Value(op == "//" ? q : m);
            }
            double x = a.as_double(), y = b.as_double();
            if (op == "//") return Value(std::floor(x / y));
            double m = std::fmod(x, y);
            if (m != 0 && ((m < 0) != (y < 0))) m += y;
            return Value(m);
        }
    } else if (op == "**") {
        if (ints && b.as_int() >= 0) {
            int64_t base = a.as_int(), result = 1;
            for (int64_t e = b.as_int(); e > 0; --e) {
                if (__builtin_mul_overflow(result, base, &result)) fail(VT_ERR_INVALID_ARGUMENT, "integer overflow");
                if (result == 0 || result == 1) break;
            }
            return Value(result);
        }
        if (nums) return Value(std::pow(a.as_double(), b.as_double()));
    }
    fail(VT_ERR_INVALID_ARGUMENT, "unsupported operand type(s) for %s: '%s' and '%s'", op.c_str(), a.type_name(),
         b.type_name());
}

bool contains(const Value &seq, const Value &x) {
    Args a;
    a.pos.push_back(seq);
    return call_test("in", x, a);
}

bool compare(const std::string &op, const Value &a, const Value &b) {
    if (op == "==") return equals(a, b);
    if (op == "!=") return !equals(a, b);
    if (op == "<") return less(a, b);
    if (op == ">") return less(b, a);
    if (op == "<=") return less(a, b) || equals(a, b);
    if (op == ">=") return less(b, a) || equals(a, b);
    if (op == "in") return contains(b, a);
    return !contains(b, a);  // notin
}

// Python's slice.indices().
Value slice(const Value &obj, const Value &start_v, const Value &stop_v, const Value &step_v) {
    auto opt_int = [](const Value &v, const char *what) -> std::optional<int64_t> {
        if (v.is_undefined() || v.is_none()) return std::nullopt;
        if (!v.is_int() && !v.is_bool()) fail(VT_ERR_INVALID_ARGUMENT, "slice %s must be an integer or None", what);
        return v.as_int();
    };
    std::optional<int64_t> start = opt_int(start_v, "start"), stop = opt_int(stop_v, "stop"), step_o = opt_int(step_v, "step");
    int64_t step = step_o.value_or(1);
    if (step == 0) fail(VT_ERR_INVALID_ARGUMENT, "slice step cannot be zero");
    std::vector<uint32_t> cps;
    int64_t n;
    if (obj.is_string()) {
        cps = to_code_points(obj.str());
        n = int64_t(cps.size());
    } else if (obj.is_list()) {
        n = int64_t(obj.list().size());
    } else if (obj.is_undefined()) {
        undefined_error(obj);
    } else {
        fail(VT_ERR_INVALID_ARGUMENT, "'%s' object is not subscriptable", obj.type_name());
    }
    auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
        if (!v) return dflt;
        int64_t x = *v;
        if (x < 0) x = std::max<int64_t>(x + n, step < 0 ? -1 : 0);
        else x = std::min<int64_t>(x, step < 0 ? n - 1 : n);
        return x;
    };
    int64_t b = adjust(start, step < 0 ? n - 1 : 0), e = adjust(stop, step < 0 ? -1 : n);
    std::vector<size_t> idx;
    for (int64_t i = b; step > 0 ? i < e : i > e; i += step) idx.push_back(size_t(i));
    if (obj.is_string()) {
        if (obj.mask()) return pick_code_points(obj, idx);
        std::string out;
        for (size_t i : idx) append_utf8(out, cps[i]);
        return Value(std::move(out));
    }
    List out;
    for (size_t i : idx) out.push_back(obj.list()[i]);
    return Value(std::move(out));
}

class Interpreter {
public:
    explicit Interpreter(const RenderOptions &opt) : opt_(opt) {}

    Flow exec(const Body &body, const ScopePtr &scope, MarkedText &out) {
        for (const StmtPtr &s : body) {
            Flow f;
            try {
                f = exec_one(*s, scope, out);
            } catch (const LocatedError &) {
                throw;
            } catch (const Error &e) {
                throw LocatedError(e.status(), locate(s->line, s->col, e.what()));
            } catch (const std::exception &e) {
                throw LocatedError(VT_ERR_INVALID_ARGUMENT, locate(s->line, s->col, e.what()));
            }
            if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
    }

private:
    const RenderOptions &opt_;
    uint64_t steps_ = 0;
    int call_depth_ = 0;

    static std::string locate(int line, int col, const char *what) {
        return strprintf("chat template error at line %d, column %d: %s", line, col, what);
    }

    void step() {
        if (++steps_ > opt_.max_steps) fail(VT_ERR_INVALID_ARGUMENT, "template exceeded %llu steps", (unsigned long long)opt_.max_steps);
    }

    void write(MarkedText &out, const Value &v) {
        out.append(v);
        check_size(out);
    }

    void write_text(MarkedText &out, const std::string &s) {
        out.append(s, nullptr);
        check_size(out);
    }

    void check_size(const MarkedText &out) {
        if (out.text.size() > opt_.max_output_bytes) fail(VT_ERR_INVALID_ARGUMENT, "template output exceeded %zu bytes", opt_.max_output_bytes);
    }

    static void assign(Scope &scope, const std::vector<std::string> &targets, const Value &v) {
        if (targets.size() == 1) {
            scope.vars[targets[0]] = v;
            return;
        }
        if (!v.is_list() && !v.is_string() && !v.is_dict())
            fail(VT_ERR_INVALID_ARGUMENT, "cannot unpack non-iterable %s object", v.type_name());
        List items = v.items_for_iteration();
        if (items.size() != targets.size())
            fail(VT_ERR_INVALID_ARGUMENT, "cannot unpack %zu values into %zu names", items.size(), targets.size());
        for (size_t i = 0; i < targets.size(); ++i) scope.vars[targets[i]] = items[i];
    }

    Flow exec_one(const Stmt &s, const ScopePtr &scope, MarkedText &out) {
        step();
        switch (s.kind) {
        case Stmt::Kind::Text: write_text(out, s.text); return Flow::Normal;
        case Stmt::Kind::Output: write(out, eval(*s.expr, scope)); return Flow::Normal;
        case Stmt::Kind::If:
            return exec(eval(*s.expr, scope).truthy() ? s.body : s.else_body, scope, out);
        case Stmt::Kind::For: return exec_for(s, scope, out);
        case Stmt::Kind::Set: {
            Value v = eval(*s.expr, scope);
            if (s.target_obj) {
                Value ns = eval(*s.target_obj, scope);
                if (!ns.is_dict() || !ns.dict().is_namespace)
                    fail(VT_ERR_INVALID_ARGUMENT, "can only assign attributes of a namespace");
                // A namespace inside itself would be a reference cycle (leaked,
                // and endless to print or compare); no template needs one.
                if (holds(v, &ns.dict(), 0))
                    fail(VT_ERR_UNSUPPORTED, "a namespace cannot hold itself");
                ns.note_depth(v.depth());
                ns.mutable_dict().set(s.text, std::move(v));
            } else {
                assign(*scope, s.targets, v);
            }
            return Flow::Normal;
        }
        case Stmt::Kind::SetBlock: {
            MarkedText text;
            exec(s.body, scope, text);
            scope->vars[s.targets[0]] = std::move(text).value();
            return Flow::Normal;
        }
        case Stmt::Kind::Macro: scope->vars[s.text] = make_macro(s, scope); return Flow::Normal;
        case Stmt::Kind::CallBlock: {
            const Expr &call = *s.expr;
            Value callee = eval(*call.args[0], scope);
            Args args = eval_args(call, scope);
            auto caller = std::make_shared<Function>();
            caller->name = "caller";
            caller->call = [this, &s, scope](Args &a) { return invoke_body(s, s.params, scope, a, "caller"); };
            args.kw.emplace_back("caller", Value(std::move(caller)));
            write(out, call_value(callee, args));
            return Flow::Normal;
        }
        case Stmt::Kind::Break: return Flow::Break;
        case Stmt::Kind::Continue: return Flow::Continue;
        case Stmt::Kind::FilterBlock: {
            ScopePtr inner = child_of(scope);
            MarkedText text;
            exec(s.body, inner, text);  // Jinja scopes a filter block's sets to it
            inner->vars[kFilterBlockBody] = std::move(text).value();
            write(out, eval(*s.expr, inner));
            return Flow::Normal;
        }
        case Stmt::Kind::Scope: return exec(s.body, scope, out);
        }
        return Flow::Normal;
    }

    Flow exec_for(const Stmt &s, const ScopePtr &scope, MarkedText &out) {
        Value iterable = eval(*s.expr, scope);
        // Characters of a marked str and keys of a marked dict keep their marks.
        List all = iterable.is_string() && iterable.mask() ? marked_characters(iterable)
                   : iterable.is_dict() && iterable.dict().marked_keys ? mark_all(iterable).items_for_iteration()
                                                                        : iterable.items_for_iteration();
        List items;
        if (s.filter) {
            for (const Value &item : all) {
                step();
                ScopePtr probe = child_of(scope);
                assign(*probe, s.targets, item);
                if (eval(*s.filter, probe).truthy()) items.push_back(item);
            }
        } else {
            items = std::move(all);
        }
        if (items.empty()) return exec(s.else_body, scope, out);
        const int64_t n = int64_t(items.size());
        for (int64_t i = 0; i < n; ++i) {
            step();
            ScopePtr iter = child_of(scope);
            assign(*iter, s.targets, items[size_t(i)]);
            Dict loop;
            loop.items = {
                {"index", Value(i + 1)}, {"index0", Value(i)}, {"revindex", Value(n - i)},
                {"revindex0", Value(n - i - 1)}, {"first", Value(i == 0)}, {"last", Value(i == n - 1)},
                {"length", Value(n)}, {"depth", Value(int64_t(1))}, {"depth0", Value(int64_t(0))},
                {"previtem", i > 0 ? items[size_t(i - 1)] : Value::undefined("there is no previous item")},
                {"nextitem", i + 1 < n ? items[size_t(i + 1)] : Value::undefined("there is no next item")},
            };
            auto cycle = std::make_shared<Function>();
            cycle->name = "cycle";
            cycle->call = [i](Args &a) -> Value {
                if (a.pos.empty()) fail(VT_ERR_INVALID_ARGUMENT, "no items for cycling given");
                return a.pos[size_t(i) % a.pos.size()];
            };
            loop.items.emplace_back("cycle", Value(std::move(cycle)));
            iter->vars["loop"] = Value(std::move(loop));
            if (exec(s.body, iter, out) == Flow::Break) break;
        }
        return Flow::Normal;
    }

    Value make_macro(const Stmt &s, const ScopePtr &scope) {
        auto f = std::make_shared<Function>();
        f->name = s.text;
        // The scope is held weakly: a macro stored in its own scope would otherwise keep it alive forever.
        std::weak_ptr<Scope> weak = scope;
        f->call = [this, &s, weak](Args &a) {
            ScopePtr def = weak.lock();
            if (!def) fail(VT_ERR_INVALID_ARGUMENT, "macro '%s' called outside its scope", s.text.c_str());
            return invoke_body(s, s.params, def, a, s.text.c_str());
        };
        return Value(std::move(f));
    }

    // Runs a macro or call-block body with its parameters bound; returns what it printed.
    Value invoke_body(const Stmt &s, const std::vector<MacroParam> &params, const ScopePtr &def, Args &a, const char *name) {
        if (++call_depth_ > kMaxCallDepth) {
            --call_depth_;
            fail(VT_ERR_INVALID_ARGUMENT, "maximum macro recursion depth (%d) exceeded", kMaxCallDepth);
        }
        struct Depth {
            int &d;
            ~Depth() { --d; }
        } depth{call_depth_};
        ScopePtr scope = child_of(def);
        if (a.pos.size() > params.size())
            fail(VT_ERR_INVALID_ARGUMENT, "macro '%s' takes not more than %zu argument(s)", name, params.size());
        for (size_t i = 0; i < a.pos.size(); ++i) scope->vars[params[i].name] = a.pos[i];
        for (auto &kv : a.kw) {
            bool known = kv.first == "caller";
            for (const MacroParam &p : params) known = known || p.name == kv.first;
            if (!known) fail(VT_ERR_INVALID_ARGUMENT, "macro '%s' takes no keyword argument '%s'", name, kv.first.c_str());
            scope->vars[kv.first] = kv.second;
        }
        for (const MacroParam &p : params) {
            if (scope->vars.count(p.name)) continue;
            scope->vars[p.name] = p.default_value ? eval(*p.default_value, scope)
                                                  : Value::undefined("parameter '" + p.name + "' was not provided");
        }
        MarkedText text;
        exec(s.body, scope, text);
        return std::move(text).value();
    }

    Args eval_args(const Expr &call, const ScopePtr &scope) {
        Args a;
        for (size_t i = 1; i < call.args.size(); ++i) a.pos.push_back(eval(*call.args[i], scope));
        for (auto &kv : call.kwargs) a.kw.emplace_back(kv.first, eval(*kv.second, scope));
        return a;
    }

    // A bound method of a str/list/dict: its result gets its marks from the
    // receiver (taint.h). Others pass through.
    static Value with_method_marks(const Value &obj, const std::string &name, Value m) {
        if (!m.is_function() || !(obj.is_string() || obj.is_list() || obj.is_dict())) return m;
        if (obj.is_dict() && obj.dict().is_namespace) return m;
        if (!obj.any_marked() && name != "join") return m;
        auto inner = std::make_shared<Function>(m.function());
        auto f = std::make_shared<Function>();
        f->name = inner->name;
        f->call = [obj, name, inner](Args &a) { return method_marks(name, obj, a, inner->call(a)); };
        return Value(std::move(f));
    }

    Value call_value(const Value &callee, Args &args) {
        step();
        if (callee.is_undefined()) undefined_error(callee);
        if (!callee.is_function()) fail(VT_ERR_INVALID_ARGUMENT, "'%s' object is not callable", callee.type_name());
        return callee.function().call(args);
    }

public:
    Value eval(const Expr &e, const ScopePtr &scope) {
        try {
            return eval_inner(e, scope);
        } catch (const LocatedError &) {
            throw;
        } catch (const Error &err) {
            throw LocatedError(err.status(), locate(e.line, e.col, err.what()));
        } catch (const std::exception &err) {
            throw LocatedError(VT_ERR_INVALID_ARGUMENT, locate(e.line, e.col, err.what()));
        }
    }

private:
    Value eval_inner(const Expr &e, const ScopePtr &scope) {
        switch (e.kind) {
        case Expr::Kind::Literal: return e.literal;
        case Expr::Kind::Name: {
            if (const Value *v = scope->lookup(e.name)) return *v;
            return Value::undefined("'" + e.name + "' is undefined");
        }
        case Expr::Kind::List:
        case Expr::Kind::Tuple: {
            List l;
            for (const ExprPtr &x : e.args) l.push_back(eval(*x, scope));
            return e.kind == Expr::Kind::Tuple ? Value::tuple(std::move(l)) : Value(std::move(l));
        }
        case Expr::Kind::Dict: {
            Dict d;
            for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
                Value k = eval(*e.args[i], scope);
                if (!k.is_string()) fail(VT_ERR_UNSUPPORTED, "dict keys must be strings");
                d.set(k.str(), eval(*e.args[i + 1], scope));
            }
            return Value(std::move(d));
        }
        case Expr::Kind::GetAttr: {
            Value obj = eval(*e.args[0], scope);
            return with_method_marks(obj, e.name, get_attr(obj, e.name));
        }
        case Expr::Kind::GetItem: {
            Value obj = eval(*e.args[0], scope), key = eval(*e.args[1], scope);
            Value r = get_item(obj, key);
            if (obj.is_string() && obj.mask() && r.is_string() && (key.is_int() || key.is_bool())) {
                int64_t i = key.as_int(), n = int64_t(code_point_count(obj.str()));
                return pick_code_points(obj, {size_t(i < 0 ? i + n : i)});  // in range: get_item gave a str
            }
            return key.is_string() ? with_method_marks(obj, key.str(), std::move(r)) : r;
        }
        case Expr::Kind::Slice: {
            Value obj = eval(*e.args[0], scope);
            Value parts[3];
            for (int k = 0; k < 3; ++k)
                if (e.args[size_t(k) + 1]) parts[k] = eval(*e.args[size_t(k) + 1], scope);
            return slice(obj, parts[0], parts[1], parts[2]);
        }
        case Expr::Kind::Call: {
            Value callee = eval(*e.args[0], scope);
            Args a = eval_args(e, scope);
            return call_value(callee, a);
        }
        case Expr::Kind::Filter: {
            Value v = eval(*e.args[0], scope);
            Args a = eval_args(e, scope);
            step();
            return filter_marks(e.name, v, a, call_filter(e.name, v, a));
        }
        case Expr::Kind::Test: {
            Value v = eval(*e.args[0], scope);
            Args a = eval_args(e, scope);
            return Value(call_test(e.name, v, a) != e.negated);
        }
        case Expr::Kind::Unary: {
            Value v = eval(*e.args[0], scope);
            if (e.name == "not") return Value(!v.truthy());
            if (v.is_undefined()) undefined_error(v);
            if (!v.is_number()) fail(VT_ERR_INVALID_ARGUMENT, "bad operand type for unary %s: '%s'", e.name.c_str(), v.type_name());
            if (e.name == "+") return v.is_bool() ? Value(v.as_int()) : v;
            if (v.is_float()) return Value(-v.as_double());
            if (v.as_int() == INT64_MIN) fail(VT_ERR_INVALID_ARGUMENT, "integer overflow");
            return Value(-v.as_int());
        }
        case Expr::Kind::Binary: {
            Value a = eval(*e.args[0], scope);
            if (e.name == "and") return a.truthy() ? eval(*e.args[1], scope) : a;
            if (e.name == "or") return a.truthy() ? a : eval(*e.args[1], scope);
            Value b = eval(*e.args[1], scope);
            Value r = arithmetic(e.name, a, b);
            if (!r.is_string()) return r;
            if (e.name == "+" || e.name == "~") return concat_marks(a, b, std::move(r));
            if (e.name == "*") return repeat_marks(a.is_string() ? a : b, std::move(r));
            return r;
        }
        case Expr::Kind::Compare: {
            Value left = eval(*e.args[0], scope);
            for (size_t i = 0; i < e.ops.size(); ++i) {
                Value right = eval(*e.args[i + 1], scope);
                if (!compare(e.ops[i], left, right)) return Value(false);
                left = std::move(right);
            }
            return Value(true);
        }
        case Expr::Kind::Cond:
            if (eval(*e.args[0], scope).truthy()) return eval(*e.args[1], scope);
            return e.args[2] ? eval(*e.args[2], scope) : Value::undefined("the condition was false and there is no else");
        }
        return Value();
    }
};

} // namespace

MarkedText render_body(const Body &body, const Dict &variables, const RenderOptions &opt) {
    auto globals = std::make_shared<Scope>();
    for (auto &kv : make_globals(opt).items) globals->vars[kv.first] = kv.second;
    ScopePtr root = child_of(globals);
    for (const auto &kv : variables.items) root->vars[kv.first] = kv.second;
    RenderBudget budget(opt.max_output_bytes, opt.max_value_bytes);
    Interpreter interp(opt);
    MarkedText out;
    interp.exec(body, root, out);
    return out;
}

} // namespace vt::jinja
