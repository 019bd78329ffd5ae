#include "server-structured.h"

#include <cmath>

#include "server-errors.h"

namespace vts {

using json = nlohmann::ordered_json;

namespace {

const json *field(const json &obj, const char *key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

// A JSON Schema given as an object (or a boolean schema), or as its JSON
// text (vLLM accepts both for guided_json and structured_outputs.json).
Constraint schema_constraint(const json &v, const std::string &param) {
    if (v.is_string()) return {VT_GRAMMAR_JSON_SCHEMA, v.get<std::string>(), param};
    if (v.is_object() || v.is_boolean()) return {VT_GRAMMAR_JSON_SCHEMA, dump_json(v), param};
    throw bad_param(param, "'" + param + "' must be a JSON Schema (an object, or its JSON text)");
}

Constraint string_constraint(const json &v, vt_grammar_kind kind, const std::string &param) {
    if (!v.is_string()) throw bad_param(param, "'" + param + "' must be a string");
    return {kind, v.get<std::string>(), param};
}

Constraint choice_constraint(const json &v, const std::string &param) {
    if (!v.is_array()) throw bad_param(param, "'" + param + "' must be a list of strings");
    for (const auto &s : v)
        if (!s.is_string()) throw bad_param(param, "'" + param + "' must be a list of strings");
    return {VT_GRAMMAR_CHOICE, dump_json(v), param};
}

std::optional<Constraint> from_response_format(const json &rf) {
    if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string())
        throw bad_param("response_format", "'response_format' must be an object with a string 'type'");
    const std::string type = rf["type"].get<std::string>();
    if (type == "text") return std::nullopt;
    if (type == "json_object") return Constraint{VT_GRAMMAR_JSON, "", "response_format"};
    if (type == "json_schema") {
        const json *js = field(rf, "json_schema");
        if (!js || !js->is_object())
            throw bad_param("response_format", "'response_format.json_schema' must be an object with a 'schema'");
        const json *schema = field(*js, "schema");
        if (!schema) throw bad_param("response_format", "'response_format.json_schema.schema' is required");
        if (!schema->is_object() && !schema->is_boolean())
            throw bad_param("response_format", "'response_format.json_schema.schema' must be a JSON Schema object");
        // strict: vt always enforces the schema; false asks for nothing less.
        return schema_constraint(*schema, "response_format");
    }
    throw bad_param("response_format", "'response_format.type' must be 'text', 'json_object' or 'json_schema' (not '" +
                                           type + "')");
}

// vLLM's structured_outputs object: one constraint plus options vt has no
// use for (its backends' switches), which are accepted and ignored.
std::optional<Constraint> from_structured_outputs(const json &so) {
    const std::string p = "structured_outputs";
    if (!so.is_object()) throw bad_param(p, "'structured_outputs' must be an object");
    std::optional<Constraint> c;
    int n = 0;
    if (const json *v = field(so, "json")) ++n, c = schema_constraint(*v, p);
    if (const json *v = field(so, "regex")) ++n, c = string_constraint(*v, VT_GRAMMAR_REGEX, p);
    if (const json *v = field(so, "choice")) ++n, c = choice_constraint(*v, p);
    if (const json *v = field(so, "grammar")) ++n, c = string_constraint(*v, VT_GRAMMAR_GBNF, p);
    if (const json *v = field(so, "json_object")) {
        if (!v->is_boolean()) throw bad_param(p, "'structured_outputs.json_object' must be a boolean");
        if (v->get<bool>()) ++n, c = Constraint{VT_GRAMMAR_JSON, "", p};
    }
    if (field(so, "structural_tag")) throw bad_param(p, "'structured_outputs.structural_tag' is not supported");
    if (n > 1)
        throw bad_param(p, "'structured_outputs' may hold only one of json, regex, choice, grammar and json_object");
    return c;
}

} // namespace

std::optional<Constraint> parse_constraint(const json &body) {
    std::vector<Constraint> found;
    if (const json *rf = field(body, "response_format"))
        if (auto c = from_response_format(*rf)) found.push_back(std::move(*c));
    if (const json *so = field(body, "structured_outputs"))
        if (auto c = from_structured_outputs(*so)) found.push_back(std::move(*c));
    if (const json *v = field(body, "guided_json")) found.push_back(schema_constraint(*v, "guided_json"));
    if (const json *v = field(body, "guided_regex")) found.push_back(string_constraint(*v, VT_GRAMMAR_REGEX, "guided_regex"));
    if (const json *v = field(body, "guided_choice")) found.push_back(choice_constraint(*v, "guided_choice"));
    if (const json *v = field(body, "guided_grammar"))
        found.push_back(string_constraint(*v, VT_GRAMMAR_GBNF, "guided_grammar"));
    if (found.empty()) return std::nullopt;
    if (found.size() > 1)
        throw bad_param(found[1].param, "only one output constraint per request: '" + found[0].param + "' and '" +
                                            found[1].param + "' were both given");
    return std::move(found[0]);
}

std::vector<std::pair<vt_token, float>> parse_logit_bias(const json &body, uint32_t n_vocab) {
    std::vector<std::pair<vt_token, float>> out;
    const json *lb = field(body, "logit_bias");
    if (!lb) return out;
    if (!lb->is_object())
        throw bad_param("logit_bias", "'logit_bias' must be an object mapping token ids to biases");
    for (auto it = lb->begin(); it != lb->end(); ++it) {
        const std::string &key = it.key();
        size_t used = 0;
        long long id = -1;
        try {
            id = std::stoll(key, &used);
        } catch (const std::exception &) {
            used = 0;
        }
        if (key.empty() || used != key.size() || id < 0 || id >= (long long)n_vocab)
            throw bad_param("logit_bias", "'logit_bias' key '" + key + "' is not a token id of the vocabulary (0.." +
                                              std::to_string(n_vocab - 1) + ")");
        const double b = it->is_number() ? it->get<double>() : NAN;
        if (!std::isfinite(b) || b < -100.0 || b > 100.0)
            throw bad_param("logit_bias", "'logit_bias' values must be numbers between -100 and 100");
        out.emplace_back((vt_token)id, (float)b);
    }
    return out;
}

GrammarRef GrammarCache::get(const Constraint &c) {
    const std::string key = std::to_string((int)c.kind) + '\n' + c.source;
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = index_.find(key);
        if (it != index_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second);
            ++hits_;
            return it->second->second;
        }
    }
    // Compiled outside the lock: other requests keep using the cache. Two
    // requests racing on one new source both compile; one result is kept.
    vt_grammar *raw = nullptr;
    const vt_status s = vt_grammar_compile(tok_, c.kind, c.source.data(), c.source.size(), &raw);
    if (s != VT_OK) {
        const char *m = vt_last_error();
        const std::string why = m && *m ? m : vt_status_str(s);
        if (s == VT_ERR_OUT_OF_MEMORY) throw ApiError(503, "out of memory compiling the constraint: " + why, "server_error");
        if (s == VT_ERR_INTERNAL) throw ApiError(500, "cannot compile the constraint: " + why, "server_error");
        throw bad_param(c.param, "invalid '" + c.param + "': " + why);
    }
    GrammarRef g(raw, vt_grammar_destroy);
    std::lock_guard<std::mutex> lock(mu_);
    ++compiles_;
    auto it = index_.find(key);
    if (it != index_.end()) return it->second->second;
    lru_.emplace_front(key, g);
    index_[key] = lru_.begin();
    while (lru_.size() > capacity_) {
        index_.erase(lru_.back().first);
        lru_.pop_back();
    }
    return g;
}

std::string GrammarCache::render_metrics() const {
    std::lock_guard<std::mutex> lock(mu_);
    return "# HELP vt_grammar_cache_hits_total Output constraints served from the compiled-grammar cache.\n"
           "# TYPE vt_grammar_cache_hits_total counter\n"
           "vt_grammar_cache_hits_total " + std::to_string(hits_) + "\n"
           "# HELP vt_grammar_compiles_total Output constraints compiled (the cache missed).\n"
           "# TYPE vt_grammar_compiles_total counter\n"
           "vt_grammar_compiles_total " + std::to_string(compiles_) + "\n"
           "# HELP vt_grammar_cache_entries Compiled grammars in the cache.\n"
           "# TYPE vt_grammar_cache_entries gauge\n"
           "vt_grammar_cache_entries " + std::to_string(lru_.size()) + "\n";
}

} // namespace vts
