#include "parser.h"

#include <cerrno>
#include <cstdlib>
#include <initializer_list>

#include "core/error.h"

namespace vt::jinja {

namespace {

constexpr int kMaxNesting = 200;  // expression and block depth: a hostile template can't blow the stack

using T = Token::Type;

class Parser {
public:
    explicit Parser(const std::vector<Token> &tokens) : toks_(tokens) {}

    Body parse_template() {
        std::string end;
        Body body = parse_body({}, end);
        if (cur().type != T::Eof) error(cur(), "unexpected tag");
        return body;
    }

private:
    const std::vector<Token> &toks_;
    size_t pos_ = 0;
    int depth_ = 0;

    struct DepthGuard {
        Parser &p;
        DepthGuard(Parser &parser, const Token &at) : p(parser) {
            if (++p.depth_ > kMaxNesting) p.error(at, "template nested too deeply");
        }
        ~DepthGuard() { --p.depth_; }
    };

    const Token &cur() const { return toks_[pos_]; }
    const Token &peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
    const Token &next() {
        const Token &t = toks_[pos_];
        if (pos_ + 1 < toks_.size()) ++pos_;
        return t;
    }
    [[noreturn]] void error(const Token &t, const std::string &what) const {
        fail(VT_ERR_FORMAT, "chat template syntax error at line %d, column %d: %s", t.line, t.col, what.c_str());
    }
    bool is_op(const char *op) const { return cur().type == T::Op && cur().value == op; }
    bool is_name(const char *name) const { return cur().type == T::Name && cur().value == name; }
    bool skip_op(const char *op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char *name) {
        if (!is_name(name)) return false;
        next();
        return true;
    }
    void expect_op(const char *op) {
        if (!skip_op(op)) error(cur(), std::string("expected '") + op + "'");
    }
    std::string expect_name() {
        if (cur().type != T::Name) error(cur(), "expected a name");
        return next().value;
    }
    void expect_block_end() {
        if (cur().type != T::BlockEnd) error(cur(), "expected end of block tag '%}'");
        next();
    }

    ExprPtr make(Expr::Kind k, const Token &at) {
        auto e = std::make_unique<Expr>();
        e->kind = k;
        e->line = at.line;
        e->col = at.col;
        return e;
    }
    StmtPtr make_stmt(Stmt::Kind k, const Token &at) {
        auto s = std::make_unique<Stmt>();
        s->kind = k;
        s->line = at.line;
        s->col = at.col;
        return s;
    }

    // ---- statements ----

    // Parses until a block tag whose keyword is in `ends` (consumed up to and
    // including the keyword; `end` receives it) or the end of input.
    Body parse_body(std::initializer_list<const char *> ends, std::string &end) {
        DepthGuard guard(*this, cur());
        Body body;
        while (true) {
            const Token &t = cur();
            if (t.type == T::Eof) {
                if (ends.size() != 0) error(t, std::string("missing '{% ") + *ends.begin() + " %}'");
                return body;
            }
            if (t.type == T::Text) {
                auto s = make_stmt(Stmt::Kind::Text, t);
                s->text = next().value;
                body.push_back(std::move(s));
            } else if (t.type == T::VarBegin) {
                next();
                auto s = make_stmt(Stmt::Kind::Output, t);
                s->expr = parse_tuple(true);
                if (cur().type != T::VarEnd) error(cur(), "expected '}}'");
                next();
                body.push_back(std::move(s));
            } else if (t.type == T::BlockBegin) {
                const Token &kw = peek();
                if (kw.type != T::Name) error(kw, "expected a statement keyword");
                for (const char *e : ends)
                    if (kw.value == e) {
                        next();
                        next();
                        end = e;
                        return body;
                    }
                next();
                body.push_back(parse_statement());
            } else {
                error(t, "unexpected token");
            }
        }
    }

    StmtPtr parse_statement() {
        const Token &kw = next();
        const std::string &k = kw.value;
        if (k == "if") return parse_if(kw);
        if (k == "for") return parse_for(kw);
        if (k == "set") return parse_set(kw);
        if (k == "macro") return parse_macro(kw);
        if (k == "call") return parse_call_block(kw);
        if (k == "break" || k == "continue") {
            auto s = make_stmt(k == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, kw);
            expect_block_end();
            return s;
        }
        if (k == "filter") return parse_filter_block(kw);
        if (k == "generation") {  // transformers' assistant-mask tag: renders its body
            auto s = make_stmt(Stmt::Kind::Scope, kw);
            expect_block_end();
            std::string end;
            s->body = parse_body({"endgeneration"}, end);
            expect_block_end();
            return s;
        }
        error(kw, "unsupported statement '" + k + "'");
    }

    StmtPtr parse_if(const Token &kw) {
        auto s = make_stmt(Stmt::Kind::If, kw);
        s->expr = parse_expression();
        expect_block_end();
        std::string end;
        s->body = parse_body({"elif", "else", "endif"}, end);
        if (end == "elif") {
            s->else_body.push_back(parse_if(toks_[pos_ - 1]));
            return s;  // the nested if consumed the endif
        }
        if (end == "else") {
            expect_block_end();
            s->else_body = parse_body({"endif"}, end);
        }
        expect_block_end();
        return s;
    }

    void parse_targets(Stmt &s) {
        bool paren = skip_op("(");
        s.targets.push_back(expect_name());
        while (skip_op(",")) {
            if (cur().type != T::Name) break;
            s.targets.push_back(expect_name());
        }
        if (paren) expect_op(")");
    }

    StmtPtr parse_for(const Token &kw) {
        auto s = make_stmt(Stmt::Kind::For, kw);
        parse_targets(*s);
        if (!skip_name("in")) error(cur(), "expected 'in'");
        s->expr = parse_tuple(false);
        if (skip_name("if")) s->filter = parse_expression();
        if (skip_name("recursive")) error(kw, "recursive loops are not supported");
        expect_block_end();
        std::string end;
        s->body = parse_body({"else", "endfor"}, end);
        if (end == "else") {
            expect_block_end();
            s->else_body = parse_body({"endfor"}, end);
        }
        expect_block_end();
        return s;
    }

    StmtPtr parse_set(const Token &kw) {
        auto s = make_stmt(Stmt::Kind::Set, kw);
        if (cur().type == T::Name && peek().type == T::Op && peek().value == ".") {
            auto obj = make(Expr::Kind::Name, cur());
            obj->name = next().value;
            next();
            s->target_obj = std::move(obj);
            s->text = expect_name();
        } else {
            parse_targets(*s);
        }
        if (cur().type == T::BlockEnd && !s->target_obj && s->targets.size() == 1) {
            next();
            s->kind = Stmt::Kind::SetBlock;
            std::string end;
            s->body = parse_body({"endset"}, end);
            expect_block_end();
            return s;
        }
        expect_op("=");
        s->expr = parse_tuple(true);
        expect_block_end();
        return s;
    }

    void parse_params(Stmt &s) {
        expect_op("(");
        while (!is_op(")")) {
            if (!s.params.empty()) expect_op(",");
            if (is_op(")")) break;
            MacroParam p;
            p.name = expect_name();
            if (skip_op("=")) p.default_value = parse_expression();
            s.params.push_back(std::move(p));
        }
        expect_op(")");
    }

    StmtPtr parse_macro(const Token &kw) {
        auto s = make_stmt(Stmt::Kind::Macro, kw);
        s->text = expect_name();
        parse_params(*s);
        expect_block_end();
        std::string end;
        s->body = parse_body({"endmacro"}, end);
        if (cur().type == T::Name) next();  // {% endmacro name %}
        expect_block_end();
        return s;
    }

    // {% filter name(args) | name2 %}body{% endfilter %}: the chain is parsed
    // as filters applied to a placeholder name the interpreter binds to the body.
    StmtPtr parse_filter_block(const Token &kw) {
        auto s = make_stmt(Stmt::Kind::FilterBlock, kw);
        auto placeholder = make(Expr::Kind::Name, kw);
        placeholder->name = kFilterBlockBody;
        ExprPtr e = std::move(placeholder);
        do {
            auto f = make(Expr::Kind::Filter, cur());
            f->name = expect_name();
            f->args.push_back(std::move(e));
            if (is_op("(")) parse_call_args(*f);
            e = std::move(f);
        } while (skip_op("|"));
        s->expr = std::move(e);
        expect_block_end();
        std::string end;
        s->body = parse_body({"endfilter"}, end);
        expect_block_end();
        return s;
    }

    StmtPtr parse_call_block(const Token &kw) {
        auto s = make_stmt(Stmt::Kind::CallBlock, kw);
        if (is_op("(")) parse_params(*s);
        s->expr = parse_expression();
        if (s->expr->kind != Expr::Kind::Call) error(kw, "expected a macro call");
        expect_block_end();
        std::string end;
        s->body = parse_body({"endcall"}, end);
        expect_block_end();
        return s;
    }

    // ---- expressions ----

    // An expression, or several separated by commas (a tuple).
    ExprPtr parse_tuple(bool with_condexpr) {
        const Token &at = cur();
        ExprPtr first = with_condexpr ? parse_expression() : parse_or();
        if (!is_op(",")) return first;
        auto t = make(Expr::Kind::Tuple, at);
        t->args.push_back(std::move(first));
        while (skip_op(",")) {
            if (cur().type == T::BlockEnd || cur().type == T::VarEnd || is_op(")")) break;
            t->args.push_back(with_condexpr ? parse_expression() : parse_or());
        }
        return t;
    }

    ExprPtr parse_expression() {
        DepthGuard guard(*this, cur());
        ExprPtr e = parse_or();
        while (is_name("if")) {
            const Token &at = next();
            auto c = make(Expr::Kind::Cond, at);
            c->args.push_back(parse_or());
            c->args.push_back(std::move(e));
            c->args.push_back(skip_name("else") ? parse_expression() : nullptr);
            e = std::move(c);
        }
        return e;
    }

    ExprPtr binary(const Token &at, const std::string &op, ExprPtr l, ExprPtr r) {
        auto b = make(Expr::Kind::Binary, at);
        b->name = op;
        b->args.push_back(std::move(l));
        b->args.push_back(std::move(r));
        return b;
    }

    ExprPtr parse_or() {
        ExprPtr e = parse_and();
        while (is_name("or")) {
            const Token &at = next();
            e = binary(at, "or", std::move(e), parse_and());
        }
        return e;
    }

    ExprPtr parse_and() {
        ExprPtr e = parse_not();
        while (is_name("and")) {
            const Token &at = next();
            e = binary(at, "and", std::move(e), parse_not());
        }
        return e;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            DepthGuard guard(*this, cur());
            const Token &at = next();
            auto u = make(Expr::Kind::Unary, at);
            u->name = "not";
            u->args.push_back(parse_not());
            return u;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const Token &at = cur();
        ExprPtr first = parse_math1();
        ExprPtr cmp;
        while (true) {
            std::string op;
            if (cur().type == T::Op && (cur().value == "==" || cur().value == "!=" || cur().value == "<" ||
                                        cur().value == ">" || cur().value == "<=" || cur().value == ">=")) {
                op = next().value;
            } else if (is_name("in")) {
                next();
                op = "in";
            } else if (is_name("not") && peek().type == T::Name && peek().value == "in") {
                next();
                next();
                op = "notin";
            } else {
                break;
            }
            if (!cmp) {
                cmp = make(Expr::Kind::Compare, at);
                cmp->args.push_back(std::move(first));
            }
            cmp->ops.push_back(op);
            cmp->args.push_back(parse_math1());
        }
        return cmp ? std::move(cmp) : std::move(first);
    }

    ExprPtr parse_math1() {
        ExprPtr e = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Token &at = next();
            e = binary(at, at.value, std::move(e), parse_concat());
        }
        return e;
    }

    ExprPtr parse_concat() {
        ExprPtr e = parse_math2();
        while (is_op("~")) {
            const Token &at = next();
            e = binary(at, "~", std::move(e), parse_math2());
        }
        return e;
    }

    ExprPtr parse_math2() {
        ExprPtr e = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token &at = next();
            e = binary(at, at.value, std::move(e), parse_pow());
        }
        return e;
    }

    ExprPtr parse_pow() {
        ExprPtr e = parse_unary(true);
        while (is_op("**")) {
            const Token &at = next();
            e = binary(at, "**", std::move(e), parse_unary(true));
        }
        return e;
    }

    ExprPtr parse_unary(bool with_filter) {
        DepthGuard guard(*this, cur());
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            const Token &at = next();
            e = make(Expr::Kind::Unary, at);
            e->name = at.value;
            e->args.push_back(parse_unary(false));
        } else {
            e = parse_primary();
        }
        e = parse_postfix(std::move(e));
        if (with_filter) e = parse_filter_expr(std::move(e));
        return e;
    }

    ExprPtr parse_primary() {
        const Token &t = cur();
        switch (t.type) {
        case T::Name: {
            next();
            auto e = make(Expr::Kind::Literal, t);
            if (t.value == "true" || t.value == "True") e->literal = Value(true);
            else if (t.value == "false" || t.value == "False") e->literal = Value(false);
            else if (t.value == "none" || t.value == "None") e->literal = Value(nullptr);
            else {
                e->kind = Expr::Kind::Name;
                e->name = t.value;
            }
            return e;
        }
        case T::String: {
            std::string s;
            while (cur().type == T::String) s += next().value;  // adjacent literals concatenate
            auto e = make(Expr::Kind::Literal, t);
            e->literal = Value(std::move(s));
            return e;
        }
        case T::Int: {
            next();
            auto e = make(Expr::Kind::Literal, t);
            errno = 0;
            long long v = std::strtoll(t.value.c_str(), nullptr, 10);
            if (errno == ERANGE) error(t, "integer literal out of range");
            e->literal = Value(int64_t(v));
            return e;
        }
        case T::Float: {
            next();
            auto e = make(Expr::Kind::Literal, t);
            e->literal = Value(std::strtod(t.value.c_str(), nullptr));
            return e;
        }
        case T::Op:
            if (t.value == "(") {
                next();
                if (skip_op(")")) return make(Expr::Kind::Tuple, t);
                ExprPtr e = parse_tuple(true);
                expect_op(")");
                return e;
            }
            if (t.value == "[") {
                next();
                auto e = make(Expr::Kind::List, t);
                while (!is_op("]")) {
                    if (!e->args.empty()) expect_op(",");
                    if (is_op("]")) break;
                    e->args.push_back(parse_expression());
                }
                expect_op("]");
                return e;
            }
            if (t.value == "{") {
                next();
                auto e = make(Expr::Kind::Dict, t);
                while (!is_op("}")) {
                    if (!e->args.empty()) expect_op(",");
                    if (is_op("}")) break;
                    e->args.push_back(parse_expression());
                    expect_op(":");
                    e->args.push_back(parse_expression());
                }
                expect_op("}");
                return e;
            }
            break;
        default: break;
        }
        error(t, "unexpected token in expression");
    }

    ExprPtr parse_postfix(ExprPtr e) {
        while (true) {
            const Token &t = cur();
            if (is_op(".")) {
                next();
                if (cur().type == T::Int) {  // foo.0 is foo[0]
                    auto g = make(Expr::Kind::GetItem, t);
                    auto idx = make(Expr::Kind::Literal, cur());
                    idx->literal = Value(int64_t(std::strtoll(next().value.c_str(), nullptr, 10)));
                    g->args.push_back(std::move(e));
                    g->args.push_back(std::move(idx));
                    e = std::move(g);
                    continue;
                }
                auto g = make(Expr::Kind::GetAttr, t);
                g->name = expect_name();
                g->args.push_back(std::move(e));
                e = std::move(g);
            } else if (is_op("[")) {
                next();
                e = parse_subscript(t, std::move(e));
            } else if (is_op("(")) {
                auto c = make(Expr::Kind::Call, t);
                c->args.push_back(std::move(e));
                parse_call_args(*c);
                e = std::move(c);
            } else {
                return e;
            }
        }
    }

    ExprPtr parse_subscript(const Token &at, ExprPtr obj) {
        ExprPtr parts[3];
        bool slice = false;
        for (int k = 0; k < 3; ++k) {
            if (!is_op(":") && !is_op("]")) parts[k] = parse_expression();
            if (k < 2 && skip_op(":")) {
                slice = true;
                continue;
            }
            break;
        }
        expect_op("]");
        if (!slice) {
            if (!parts[0]) error(at, "expected a subscript");
            auto g = make(Expr::Kind::GetItem, at);
            g->args.push_back(std::move(obj));
            g->args.push_back(std::move(parts[0]));
            return g;
        }
        auto s = make(Expr::Kind::Slice, at);
        s->args.push_back(std::move(obj));
        for (auto &p : parts) s->args.push_back(std::move(p));
        return s;
    }

    // (a, b, key=c): positional before keyword, as Python requires.
    void parse_call_args(Expr &call) {
        expect_op("(");
        bool first = true;
        while (!is_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (is_op(")")) break;
            if (cur().type == T::Name && peek().type == T::Op && peek().value == "=") {
                std::string key = next().value;
                next();
                call.kwargs.emplace_back(key, parse_expression());
            } else {
                if (!call.kwargs.empty()) error(cur(), "positional argument after keyword argument");
                call.args.push_back(parse_expression());
            }
        }
        expect_op(")");
    }

    ExprPtr parse_filter_expr(ExprPtr e) {
        while (true) {
            if (is_op("|")) {
                const Token &at = next();
                auto f = make(Expr::Kind::Filter, at);
                f->name = expect_name();
                f->args.push_back(std::move(e));
                if (is_op("(")) parse_call_args(*f);
                e = std::move(f);
            } else if (is_name("is")) {
                const Token &at = next();
                auto t = make(Expr::Kind::Test, at);
                t->negated = skip_name("not");
                t->name = expect_name();
                t->args.push_back(std::move(e));
                if (is_op("(")) {
                    parse_call_args(*t);
                } else if ((cur().type == T::Name && !is_name("else") && !is_name("or") && !is_name("and")) ||
                           cur().type == T::String || cur().type == T::Int || cur().type == T::Float ||
                           is_op("(") || is_op("[") || is_op("{")) {
                    if (is_name("is")) error(cur(), "cannot chain multiple tests with 'is'");
                    t->args.push_back(parse_postfix(parse_primary()));
                }
                e = std::move(t);
            } else if (is_op("(")) {
                auto c = make(Expr::Kind::Call, cur());
                c->args.push_back(std::move(e));
                parse_call_args(*c);
                e = std::move(c);
            } else {
                return e;
            }
        }
    }
};

} // namespace

Body parse(const std::vector<Token> &tokens) { return Parser(tokens).parse_template(); }

} // namespace vt::jinja
