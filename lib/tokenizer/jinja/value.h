// The values a chat template computes with. They model the Python objects
// that Jinja (as transformers runs it) sees: JSON data plus Jinja's
// Undefined, namespaces and callables. Printing and comparing follow Python
// (str(1.0) is "1.0", str([1]) is "[1]", True == 1), because templates'
// output is checked byte for byte against transformers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace vt::jinja {

class Value;
using List = std::vector<Value>;

// Insertion-ordered like a Python dict; chat dicts are small, so a linear
// lookup beats hashing.
struct Dict {
    std::vector<std::pair<std::string, Value>> items;
    bool is_namespace = false;  // namespace(): the one object `set x.y` may change
    bool marked_keys = false;   // the keys are the caller's data (see Value::mask)
    uint32_t depth = 1;         // Value::depth(); a namespace's grows with what is set in it

    const Value *find(std::string_view key) const;
    void set(const std::string &key, Value v);
};

// Positional and keyword arguments of a call.
struct Args {
    std::vector<Value> pos;
    std::vector<std::pair<std::string, Value>> kw;

    // Argument `name` at position `index` (or by keyword); nullptr if absent.
    const Value *get(size_t index, std::string_view name) const;
};

struct Function {
    std::string name;
    std::function<Value(Args &)> call;
};

class Value {
public:
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Function };

    Value() = default;  // Undefined
    Value(std::nullptr_t) : kind_(Kind::None) {}
    Value(bool b) : kind_(Kind::Bool), i_(b) {}
    Value(int v) : kind_(Kind::Int), i_(v) {}
    Value(int64_t v) : kind_(Kind::Int), i_(v) {}
    Value(double v) : kind_(Kind::Float), f_(v) {}
    Value(std::string s) : kind_(Kind::String), s_(std::make_shared<std::string>(std::move(s))) {
        charge_value(s_->size());
    }
    Value(const char *s) : Value(std::string(s)) {}
    Value(List l) : kind_(Kind::List), list_(std::make_shared<List>(std::move(l))) {
        charge_value(list_->size() * sizeof(Value));
        depth_ = nested_depth(*list_);
    }
    Value(Dict d) : kind_(Kind::Dict), dict_(std::make_shared<Dict>(std::move(d))) { dict_->depth = nested_depth(*dict_); }
    Value(std::shared_ptr<Function> f) : kind_(Kind::Function), fn_(std::move(f)) {}

    // An Undefined that remembers the name it stands for, for error messages.
    static Value undefined(std::string name);
    // A str marked safe (Jinja's Markup, from |safe): `+` with a plain str
    // HTML-escapes the plain side, as markupsafe does even without autoescape.
    static Value markup(std::string s);
    // A Python tuple: a list that prints as (a, b) (dict items, literals).
    static Value tuple(List l);
    static Value from_json(const nlohmann::ordered_json &j);
    static Value from_json(const nlohmann::json &j);
    // Caller's data (message content, tools): every string and key in it
    // marked (see mask()).
    static Value from_json_marked(const nlohmann::ordered_json &j);
    // A str whose bytes are marked where mask[i] != 0 (mask empty, or the
    // same size as s).
    static Value marked(std::string s, std::string mask);

    Kind kind() const { return kind_; }
    bool is_undefined() const { return kind_ == Kind::Undefined; }
    bool is_none() const { return kind_ == Kind::None; }
    bool is_bool() const { return kind_ == Kind::Bool; }
    bool is_int() const { return kind_ == Kind::Int; }
    bool is_float() const { return kind_ == Kind::Float; }
    bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
    bool is_string() const { return kind_ == Kind::String; }
    bool is_list() const { return kind_ == Kind::List; }
    bool is_dict() const { return kind_ == Kind::Dict; }
    bool is_function() const { return kind_ == Kind::Function; }
    bool is_markup() const { return kind_ == Kind::String && markup_; }

    bool as_bool() const { return i_ != 0; }
    int64_t as_int() const { return i_; }              // Int or Bool
    double as_double() const { return kind_ == Kind::Float ? f_ : double(i_); }
    const std::string &str() const { return *s_; }     // String only
    const List &list() const { return *list_; }
    const Dict &dict() const { return *dict_; }
    Dict &mutable_dict() const { return *dict_; }      // namespaces only
    Function &function() const { return *fn_; }
    const std::string &undefined_name() const;

    // Marks ("taint") on the bytes of a str that came from the caller's
    // data rather than from the template's own text: one byte per byte,
    // nonzero where marked; nullptr when no byte is. A rendered chat
    // template is tokenized with special tokens recognised only in unmarked
    // text (vt_chat_template_tokenize). Values passed along keep their
    // marks; operations that build new strings carry them as far as
    // interpreter.cpp / taint.cpp say.
    const std::string *mask() const { return kind_ == Kind::String ? mask_.get() : nullptr; }
    // Whether any byte of this value, or of a string or key inside it, is marked.
    bool any_marked() const;
    // Whether every byte of a str is marked (false for an empty or unmarked str).
    bool all_marked() const;

    // Python's bool(x): empty containers, 0, None and Undefined are false.
    bool truthy() const;
    // Python's str(x) (Undefined prints as nothing, as Jinja's Undefined).
    std::string to_str() const;
    // Python's repr(x), as str() of a container prints its items.
    std::string repr() const;
    const char *type_name() const;

    // Iteration as in a for loop: list items, dict keys, string characters.
    List items_for_iteration() const;

    // Containers in containers: 0 for a scalar, 1 for a flat list or dict.
    // A Value nested deeper than kMaxDepth is refused when it is built
    // (VT_ERR_INVALID_ARGUMENT), so printing, comparing and destroying
    // values never recurse deeper than that.
    static constexpr uint32_t kMaxDepth = 512;
    uint32_t depth() const { return kind_ == Kind::Dict ? dict_->depth : depth_; }
    // For `set ns.attr = v`: a namespace's depth as it grows.
    void note_depth(uint32_t d) const;

private:
    static void charge_value(size_t bytes);  // RenderBudget's accounting
    static uint32_t nested_depth(const List &l);
    static uint32_t nested_depth(const Dict &d);

    Kind kind_ = Kind::Undefined;
    bool markup_ = false;  // String: Markup
    bool tuple_ = false;   // List: tuple
    uint32_t depth_ = 0;  // List: see depth() (a Dict keeps its own)
    int64_t i_ = 0;
    double f_ = 0;
    std::shared_ptr<std::string> s_;  // String; also the name of an Undefined
    std::shared_ptr<const std::string> mask_;  // String: see mask()
    std::shared_ptr<List> list_;
    std::shared_ptr<Dict> dict_;
    std::shared_ptr<Function> fn_;
};

// The size bounds of the render running on this thread (RenderOptions'
// max_output_bytes and max_value_bytes): while one is in scope, every string
// and list Value built is charged to it, and check_size() refuses a string
// being built past max_output_bytes. Without one (parsing, the caller's
// context) nothing is counted.
class RenderBudget {
public:
    RenderBudget(size_t max_each, uint64_t max_total);
    ~RenderBudget();
    RenderBudget(const RenderBudget &) = delete;
    RenderBudget &operator=(const RenderBudget &) = delete;

    // Throws vt::Error(VT_ERR_INVALID_ARGUMENT) when a string or list of
    // `bytes` is over the bound of the render in scope, if any.
    static void check_size(size_t bytes);

private:
    friend class Value;
    size_t max_each_;
    uint64_t left_;
    RenderBudget *outer_;
};

// Python ==; numbers compare across int/float/bool.
bool equals(const Value &a, const Value &b);
// Python <; throws vt::Error for unorderable types.
bool less(const Value &a, const Value &b);

// Python float repr: shortest round-trip digits, "1.0", "1e+16", "inf".
std::string python_float_repr(double v);

struct JsonDumpOptions {
    int indent = -1;                      // < 0: one line
    std::string indent_str;               // set when indent was given as a string
    std::string item_sep, key_sep;        // empty: json.dumps defaults
    bool sort_keys = false;
    bool ensure_ascii = false;
};
// json.dumps as transformers' tojson filter calls it.
std::string json_dumps(const Value &v, const JsonDumpOptions &opt);

} // namespace vt::jinja
