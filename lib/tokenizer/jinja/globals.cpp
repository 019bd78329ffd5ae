#include "globals.h"

#include <chrono>

#include "core/error.h"

namespace vt::jinja {

namespace {

constexpr int64_t kMaxRange = 100000;  // Jinja's sandbox refuses longer ranges

Value function(std::string name, std::function<Value(Args &)> call) {
    auto f = std::make_shared<Function>();
    f->name = std::move(name);
    f->call = std::move(call);
    return Value(std::move(f));
}

Value raise_exception(Args &a) {
    const Value *msg = a.get(0, "message");
    fail(VT_ERR_INVALID_ARGUMENT, "%s", msg ? msg->to_str().c_str() : "raise_exception() called");
}

// dict(mapping_or_pairs, **kw) and namespace(...) build the same way.
Dict build_dict(Args &a, const char *who) {
    Dict d;
    for (const Value &p : a.pos) {
        if (p.is_dict()) {
            for (const auto &kv : p.dict().items) d.set(kv.first, kv.second);
        } else if (p.is_list()) {
            for (const Value &pair : p.list()) {
                if (!pair.is_list() || pair.list().size() != 2 || !pair.list()[0].is_string())
                    fail(VT_ERR_INVALID_ARGUMENT, "%s(): expected (key, value) pairs", who);
                d.set(pair.list()[0].str(), pair.list()[1]);
            }
        } else {
            fail(VT_ERR_INVALID_ARGUMENT, "%s(): '%s' object is not a mapping", who, p.type_name());
        }
    }
    for (auto &kv : a.kw) d.set(kv.first, kv.second);
    return d;
}

Value range(Args &a) {
    auto arg = [&](size_t i) {
        const Value &v = a.pos[i];
        if (!v.is_int() && !v.is_bool()) fail(VT_ERR_INVALID_ARGUMENT, "range() arguments must be integers");
        return v.as_int();
    };
    if (a.pos.empty() || a.pos.size() > 3) fail(VT_ERR_INVALID_ARGUMENT, "range expected 1 to 3 arguments");
    int64_t start = 0, stop, step = 1;
    if (a.pos.size() == 1) {
        stop = arg(0);
    } else {
        start = arg(0);
        stop = arg(1);
        if (a.pos.size() == 3) step = arg(2);
    }
    if (step == 0) fail(VT_ERR_INVALID_ARGUMENT, "range() arg 3 must not be zero");
    List out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
        if (int64_t(out.size()) >= kMaxRange)
            fail(VT_ERR_INVALID_ARGUMENT, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%lld).",
                 (long long)kMaxRange);
        out.emplace_back(i);
        if (__builtin_add_overflow(i, step, &i)) break;  // past INT64's end: past stop too (found by fuzz-chat-template)
    }
    return Value(std::move(out));
}

} // namespace

Dict make_globals(const RenderOptions &opt) {
    Dict g;
    g.set("raise_exception", function("raise_exception", raise_exception));
    g.set("range", function("range", range));
    g.set("dict", function("dict", [](Args &a) { return Value(build_dict(a, "dict")); }));
    g.set("namespace", function("namespace", [](Args &a) {
        Dict d = build_dict(a, "namespace");
        for (auto &kv : d.items)
            if (!kv.first.empty() && kv.first[0] == '_')
                fail(VT_ERR_INVALID_ARGUMENT, "chat templates cannot store underscore-prefixed attributes on a namespace");
        d.is_namespace = true;
        return Value(std::move(d));
    }));
    std::optional<std::tm> fixed = opt.now;
    g.set("strftime_now", function("strftime_now", [fixed](Args &a) {
        const Value *fmt = a.get(0, "format");
        if (!fmt || !fmt->is_string()) fail(VT_ERR_INVALID_ARGUMENT, "strftime_now() needs a format string");
        std::tm tm{};
        if (fixed) {
            tm = *fixed;
        } else {
            std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
            localtime_r(&t, &tm);
        }
        char buf[512];
        size_t n = fmt->str().empty() ? 0 : std::strftime(buf, sizeof buf, fmt->str().c_str(), &tm);
        if (n == 0 && !fmt->str().empty()) fail(VT_ERR_INVALID_ARGUMENT, "strftime_now(): result too long or empty");
        return Value(std::string(buf, n));
    }));
    return g;
}

} // namespace vt::jinja
