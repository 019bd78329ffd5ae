#include "lexer.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/error.h"
#include "text.h"

namespace vt::jinja {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Jinja reads templates with every \r\n or \r as \n and drops one trailing
// newline (keep_trailing_newline=False); doing it up front keeps the rest simple.
std::string normalize_newlines(std::string_view src) {
    std::string out;
    out.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
        if (src[i] == '\r') {
            out += '\n';
            if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
        } else {
            out += src[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string src) : src_(std::move(src)) {
        line_starts_.push_back(0);
        for (size_t k = 0; k < src_.size(); ++k)
            if (src_[k] == '\n') line_starts_.push_back(k + 1);
    }

    std::vector<Token> run() {
        size_t i = 0;
        bool line_starting = true;
        while (i < src_.size()) {
            size_t j = find_tag(i);
            if (j == std::string::npos) {
                emit(Token::Type::Text, src_.substr(i), i);
                break;
            }
            char kind = src_[j + 1];
            char sign = j + 2 < src_.size() && (src_[j + 2] == '-' || src_[j + 2] == '+') ? src_[j + 2] : 0;
            std::string text = src_.substr(i, j - i);
            if (sign == '-') {
                size_t e = text.size();
                while (e > 0 && is_ws(text[e - 1])) --e;
                text.resize(e);
            } else if (sign != '+' && kind != '{') {
                // lstrip_blocks: a block or comment tag preceded on its line by
                // whitespace only takes that whitespace away.
                size_t l_pos = text.rfind('\n');
                l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
                if ((l_pos > 0 || line_starting) && l_pos < text.size()) {
                    bool all_ws = true;
                    for (size_t k = l_pos; k < text.size(); ++k) all_ws = all_ws && is_ws(text[k]);
                    if (all_ws) text.resize(l_pos);
                }
            }
            if (!text.empty()) emit(Token::Type::Text, text, i);
            size_t body = j + 2 + (sign ? 1 : 0);
            if (kind == '#') {
                size_t e = src_.find("#}", body);
                if (e == std::string::npos) error(j, "unterminated comment");
                char end_sign = e > body && (src_[e - 1] == '-' || src_[e - 1] == '+') ? src_[e - 1] : 0;
                i = finish_tag(e + 2, end_sign, true, line_starting);
                continue;
            }
            if (kind == '%' && try_raw(j, body, i, line_starting)) continue;
            i = lex_tag(j, body, kind == '%', line_starting);
        }
        tokens_.push_back(Token{Token::Type::Eof, "", line_of(src_.size()), col_of(src_.size())});
        return std::move(tokens_);
    }

private:
    std::string src_;
    std::vector<Token> tokens_;
    std::vector<size_t> line_starts_;

    int line_of(size_t pos) const {
        return int(std::upper_bound(line_starts_.begin(), line_starts_.end(), pos) - line_starts_.begin());
    }
    int col_of(size_t pos) const { return int(pos - line_starts_[size_t(line_of(pos) - 1)]) + 1; }
    [[noreturn]] void error(size_t pos, const char *what) const {
        fail(VT_ERR_FORMAT, "chat template syntax error at line %d, column %d: %s", line_of(pos), col_of(pos), what);
    }
    void emit(Token::Type t, std::string v, size_t pos) {
        tokens_.push_back(Token{t, std::move(v), line_of(pos), col_of(pos)});
    }

    size_t find_tag(size_t from) const {
        for (size_t k = src_.find('{', from); k != std::string::npos; k = src_.find('{', k + 1)) {
            if (k + 1 < src_.size() && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#')) return k;
        }
        return std::string::npos;
    }

    // After a tag's closing delimiter at `after`: `-` eats following
    // whitespace, a plain block/comment end eats one newline (trim_blocks).
    size_t finish_tag(size_t after, char end_sign, bool trims_newline, bool &line_starting) {
        size_t k = after;
        if (end_sign == '-') {
            while (k < src_.size() && is_ws(src_[k])) ++k;
        } else if (end_sign != '+' && trims_newline && k < src_.size() && src_[k] == '\n') {
            ++k;
        }
        line_starting = k > 0 && src_[k - 1] == '\n';
        return k;
    }

    // {% raw %}...{% endraw %}: the body is text, not template.
    bool try_raw(size_t tag, size_t body, size_t &i, bool &line_starting) {
        size_t k = body;
        while (k < src_.size() && is_ws(src_[k])) ++k;
        if (src_.compare(k, 3, "raw") != 0) return false;
        k += 3;
        while (k < src_.size() && is_ws(src_[k])) ++k;
        char sign = 0;
        if (k < src_.size() && (src_[k] == '-' || src_[k] == '+')) sign = src_[k++];
        if (src_.compare(k, 2, "%}") != 0) return false;
        size_t start = finish_tag(k + 2, sign, true, line_starting);
        for (size_t e = src_.find("{%", start); e != std::string::npos; e = src_.find("{%", e + 1)) {
            size_t m = e + 2;
            char open_sign = m < src_.size() && (src_[m] == '-' || src_[m] == '+') ? src_[m++] : 0;
            while (m < src_.size() && is_ws(src_[m])) ++m;
            if (src_.compare(m, 6, "endraw") != 0) continue;
            m += 6;
            while (m < src_.size() && is_ws(src_[m])) ++m;
            char close_sign = 0;
            if (m < src_.size() && (src_[m] == '-' || src_[m] == '+')) close_sign = src_[m++];
            if (src_.compare(m, 2, "%}") != 0) continue;
            std::string text = src_.substr(start, e - start);
            if (open_sign == '-') {
                while (!text.empty() && is_ws(text.back())) text.pop_back();
            }
            if (!text.empty()) emit(Token::Type::Text, text, start);
            i = finish_tag(m + 2, close_sign, true, line_starting);
            return true;
        }
        error(tag, "missing endraw");
    }

    size_t lex_tag(size_t tag, size_t k, bool block, bool &line_starting) {
        emit(block ? Token::Type::BlockBegin : Token::Type::VarBegin, "", tag);
        const char *close = block ? "%}" : "}}";
        std::vector<char> balance;
        while (true) {
            while (k < src_.size() && is_ws(src_[k])) ++k;
            if (k >= src_.size()) error(tag, block ? "unterminated block tag" : "unterminated expression");
            if (balance.empty()) {
                char end_sign = 0;
                size_t at = k;
                if ((src_[k] == '-' || (block && src_[k] == '+')) && src_.compare(k + 1, 2, close) == 0) {
                    end_sign = src_[k];
                    at = k + 1;
                }
                if (src_.compare(at, 2, close) == 0) {
                    emit(block ? Token::Type::BlockEnd : Token::Type::VarEnd, "", k);
                    return finish_tag(at + 2, end_sign, block, line_starting);
                }
            }
            k = lex_one(k, balance);
        }
    }

    size_t lex_one(size_t k, std::vector<char> &balance) {
        char c = src_[k];
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            size_t e = k;
            while (e < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) ++e;
            emit(Token::Type::Name, src_.substr(k, e - k), k);
            return e;
        }
        if (std::isdigit(static_cast<unsigned char>(c))) return lex_number(k);
        if (c == '\'' || c == '"') return lex_string(k);
        static const char *const two[] = {"//", "**", "==", "!=", "<=", ">="};
        for (const char *op : two)
            if (src_.compare(k, 2, op) == 0) {
                emit(Token::Type::Op, op, k);
                return k + 2;
            }
        if (std::strchr("+-*/%~<>=.,:|()[]{}", c) == nullptr || c == '\0') error(k, "unexpected character");
        if (c == '(' || c == '[' || c == '{') balance.push_back(c);
        if (c == ')' || c == ']' || c == '}') {
            char open = c == ')' ? '(' : c == ']' ? '[' : '{';
            if (balance.empty() || balance.back() != open) error(k, "unbalanced bracket");
            balance.pop_back();
        }
        emit(Token::Type::Op, std::string(1, c), k);
        return k + 1;
    }

    size_t digits(size_t k) const {  // \d+(_\d+)*
        while (k < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[k])) ||
                                   (src_[k] == '_' && k + 1 < src_.size() &&
                                    std::isdigit(static_cast<unsigned char>(src_[k + 1])))))
            ++k;
        return k;
    }

    size_t lex_number(size_t k) {
        bool after_dot = k > 0 && src_[k - 1] == '.';  // foo.0.1 is attribute access
        size_t e = digits(k);
        bool is_float = false;
        if (!after_dot && e + 1 < src_.size() && src_[e] == '.' && std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
            e = digits(e + 1);
            is_float = true;
        }
        if (!after_dot && e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
            size_t x = e + 1;
            if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
            if (x < src_.size() && std::isdigit(static_cast<unsigned char>(src_[x]))) {
                e = digits(x);
                is_float = true;
            }
        }
        std::string text;
        for (size_t p = k; p < e; ++p)
            if (src_[p] != '_') text += src_[p];
        emit(is_float ? Token::Type::Float : Token::Type::Int, text, k);
        return e;
    }

    size_t lex_string(size_t k) {
        char q = src_[k];
        std::string out;
        size_t p = k + 1;
        while (true) {
            if (p >= src_.size()) error(k, "unterminated string");
            char c = src_[p];
            if (c == q) break;
            if (c != '\\' || p + 1 >= src_.size()) {
                out += c;
                ++p;
                continue;
            }
            char e = src_[p + 1];
            p += 2;
            switch (e) {
            case '\n': break;
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'v': out += '\v'; break;
            case 'x': case 'u': case 'U': {
                size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                if (p + n > src_.size()) error(p, "truncated escape");
                uint32_t cp = 0;
                for (size_t d = 0; d < n; ++d) {
                    char h = src_[p + d];
                    if (!std::isxdigit(static_cast<unsigned char>(h))) error(p, "bad escape");
                    cp = cp * 16 + uint32_t(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
                }
                if (cp > 0x10FFFF) error(p, "escape out of range");
                append_utf8(out, cp);
                p += n;
                break;
            }
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t cp = uint32_t(e - '0');
                    for (int d = 0; d < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++d)
                        cp = cp * 8 + uint32_t(src_[p++] - '0');
                    append_utf8(out, cp);
                } else {  // Python keeps unknown escapes verbatim
                    out += '\\';
                    out += e;
                }
            }
        }
        emit(Token::Type::String, out, k);
        return p + 1;
    }
};

} // namespace

std::vector<Token> tokenize(std::string_view src) { return Lexer(normalize_newlines(src)).run(); }

} // namespace vt::jinja
