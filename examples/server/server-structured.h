// Structured output in vt-server: the constraint a request asks for (OpenAI's
// response_format, vLLM's structured_outputs and its older guided_* fields,
// or a tool_choice that forces calls), compiled through vt_grammar.h into
// grammars that a small LRU cache shares between requests, and OpenAI's
// logit_bias.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vt/vt.h"

namespace vts {

// What the output must be: `source` of `kind` for vt_grammar_compile.
struct Constraint {
    vt_grammar_kind kind = VT_GRAMMAR_JSON;
    std::string source;  // "" for VT_GRAMMAR_JSON
    std::string param;   // the request field it came from, named in errors
};

// The constraint of a request body, if any. Fields, all on either endpoint:
//   response_format  {"type": "text" | "json_object" | "json_schema",
//                     "json_schema": {"name", "schema", "strict"}}
//   structured_outputs  {"json": schema | "schema text", "regex": "..",
//                        "choice": [".."], "grammar": "GBNF", "json_object": true}
//   guided_json, guided_regex, guided_choice, guided_grammar (vLLM's older names)
// More than one constraint is a 400, as are fields of the wrong type.
// Throws ApiError.
std::optional<Constraint> parse_constraint(const nlohmann::ordered_json &body);

// OpenAI's logit_bias: {"<token id>": bias in [-100, 100]}; ids outside the
// vocabulary and other values are a 400. Throws ApiError.
std::vector<std::pair<vt_token, float>> parse_logit_bias(const nlohmann::ordered_json &body, uint32_t n_vocab);

using GrammarRef = std::shared_ptr<const vt_grammar>;

// Compiled grammars keyed by kind and source, least recently used evicted
// past `capacity`. A vt_grammar is immutable and thread-safe, so every
// request with the same constraint shares one; a sampler holds its own
// reference, so eviction never pulls one from under a running request.
// Thread-safe.
class GrammarCache {
public:
    GrammarCache(const vt_tokenizer *tok, size_t capacity) : tok_(tok), capacity_(capacity) {}

    // The grammar of c, compiled on first use. A source the compiler
    // refuses is a 400 naming c.param with vt_last_error()'s message.
    // Throws ApiError.
    GrammarRef get(const Constraint &c);

    // Prometheus lines: vt_grammar_cache_hits_total, vt_grammar_compiles_total
    // (successful ones) and vt_grammar_cache_entries.
    std::string render_metrics() const;

private:
    using Entry = std::pair<std::string, GrammarRef>;
    const vt_tokenizer *tok_;
    size_t capacity_;
    mutable std::mutex mu_;
    std::list<Entry> lru_;  // most recently used first
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
    uint64_t hits_ = 0;
    uint64_t compiles_ = 0;
};

} // namespace vts
