// --speculative-config as vLLM spells it, for the example tools (vt-server,
// vt-generate, vt-bench), through the public ABI only: a JSON object such as
//   {"method": "ngram", "num_speculative_tokens": 5,
//    "prompt_lookup_max": 4, "prompt_lookup_min": 2}
// into vt_context_params' speculative fields. vt implements the "ngram"
// method; any other method or key is refused by name, never ignored.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "vt/vt.h"

namespace vt_examples {

// Sets p's spec_* fields from text; returns "" or what is wrong with it.
// The numbers' ranges are vt_context_create's to check.
inline std::string parse_speculative_config(const std::string &text, vt_context_params &p) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return "--speculative-config is not valid JSON";
    if (!j.is_object()) return "--speculative-config must be a JSON object";
    std::string method;
    uint32_t k = 0, lookup_min = 0, lookup_max = 0;
    for (const auto &[key, v] : j.items()) {
        if (key == "method") {
            if (!v.is_string()) return "--speculative-config: \"method\" must be a string";
            method = v.get<std::string>();
            continue;
        }
        uint32_t *field = key == "num_speculative_tokens" ? &k
                          : key == "prompt_lookup_min"    ? &lookup_min
                          : key == "prompt_lookup_max"    ? &lookup_max
                                                          : nullptr;
        if (!field) return "--speculative-config: \"" + key + "\" is not supported (vt reads method, "
                           "num_speculative_tokens, prompt_lookup_min and prompt_lookup_max)";
        if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX)
            return "--speculative-config: \"" + key + "\" must be a non-negative integer";
        *field = v.get<uint32_t>();
    }
    if (method != "ngram")
        return method.empty() ? "--speculative-config: \"method\" is required (vt implements \"ngram\")"
                              : "--speculative-config: method \"" + method + "\" is not supported (vt implements \"ngram\")";
    if (k == 0) return "--speculative-config: \"num_speculative_tokens\" is required";
    p.spec_method = VT_SPEC_NGRAM;
    p.num_speculative_tokens = k;
    p.prompt_lookup_min = lookup_min;
    p.prompt_lookup_max = lookup_max;
    return "";
}

} // namespace vt_examples
