// --speculative-config as vLLM spells it, for the example tools (vt-server,
// vt-generate, vt-bench), through the public ABI only: a JSON object such as
//   {"method": "ngram", "num_speculative_tokens": 5,
//    "prompt_lookup_max": 4, "prompt_lookup_min": 2}
//   {"method": "suffix", "num_speculative_tokens": 16,
//    "suffix_decoding_max_tree_depth": 24, "suffix_decoding_max_cached_requests": 10000,
//    "suffix_decoding_max_spec_factor": 1.0, "suffix_decoding_min_token_prob": 0.1}
//   {"method": "draft_model", "model": "draft.gguf", "num_speculative_tokens": 4}
//     (as in vLLM, "model" alone implies "draft_model")
//   {"method": "mtp", "num_speculative_tokens": 2}  (the model's own
//     multi-token-prediction layer)
// into vt_context_params' speculative fields; a draft model's path goes to
// draft_model, for the tool to load as it loads its model. vt implements the
// "ngram", "suffix", "draft_model" and "mtp" methods; any other method or key, or a
// key of another method, is refused by name, never ignored. Without
// num_speculative_tokens, suffix drafts up to VT_SPEC_MAX_TOKENS (vLLM's
// default is the tree depth, 24).
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>

#include "vt/vt.h"

namespace vt_examples {

// Sets out's spec_* (and suffix_*) fields from text, and draft_model to the
// draft model's path ("" for the other methods); returns "" or what is wrong
// with it, leaving both as they were. The numbers' ranges are
// vt_context_create's to check.
inline std::string parse_speculative_config(const std::string &text, vt_context_params &out,
                                            std::string &draft_model) {
    vt_context_params p = out;
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return "--speculative-config is not valid JSON";
    if (!j.is_object()) return "--speculative-config must be a JSON object";
    const char *const methods = "vt implements \"ngram\", \"suffix\", \"draft_model\" and \"mtp\"";
    if (j.contains("model") && !j["model"].is_string())
        return "--speculative-config: \"model\" must be a string (the draft model's path)";
    std::string method = j.contains("model") ? "draft_model" : "";
    if (j.contains("method")) {
        if (!j["method"].is_string())
            return std::string("--speculative-config: \"method\" must be a string (") + methods + ")";
        method = j["method"].get<std::string>();
    }
    if (method.empty())
        return std::string("--speculative-config: \"method\" is required, a string (") + methods + ")";
    if (method != "ngram" && method != "suffix" && method != "draft_model" && method != "mtp")
        return "--speculative-config: method \"" + method + "\" is not supported (" + methods + ")";
    const bool suffix = method == "suffix", draft = method == "draft_model", mtp = method == "mtp";
    if (draft && !j.contains("model")) return "--speculative-config: method \"draft_model\" needs \"model\", its path";
    uint32_t k = 0;
    for (const auto &[key, v] : j.items()) {
        if (key == "method" || (draft && key == "model")) continue;
        const bool ngram = !suffix && !draft && !mtp;
        uint32_t *count = key == "num_speculative_tokens"                        ? &k
                          : ngram && key == "prompt_lookup_min"                   ? &p.prompt_lookup_min
                          : ngram && key == "prompt_lookup_max"                   ? &p.prompt_lookup_max
                          : suffix && key == "suffix_decoding_max_tree_depth"     ? &p.suffix_max_tree_depth
                          : suffix && key == "suffix_decoding_max_cached_requests" ? &p.suffix_max_cached_requests
                                                                                  : nullptr;
        float *real = suffix && key == "suffix_decoding_max_spec_factor" ? &p.suffix_max_spec_factor
                      : suffix && key == "suffix_decoding_min_token_prob" ? &p.suffix_min_token_prob
                                                                          : nullptr;
        if (real) {
            if (!v.is_number()) return "--speculative-config: \"" + key + "\" must be a number";
            const double d = v.get<double>();
            if (!std::isfinite(d) || std::fabs(d) > 1e30) return "--speculative-config: \"" + key + "\" is out of range";
            *real = (float)d;
            continue;
        }
        if (!count)
            return "--speculative-config: \"" + key + "\" is not supported with method \"" + method + "\" (vt reads " +
                   (suffix  ? "num_speculative_tokens and suffix_decoding_max_tree_depth, _max_cached_requests, "
                              "_max_spec_factor and _min_token_prob)"
                    : draft ? "model and num_speculative_tokens)"
                    : mtp   ? "num_speculative_tokens)"
                            : "num_speculative_tokens, prompt_lookup_min and prompt_lookup_max)");
        if (!v.is_number_unsigned() || v.get<uint64_t>() > UINT32_MAX)
            return "--speculative-config: \"" + key + "\" must be a non-negative integer";
        *count = v.get<uint32_t>();
    }
    if (k == 0 && !suffix) return "--speculative-config: \"num_speculative_tokens\" is required";
    if (draft && j["model"].get<std::string>().empty()) return "--speculative-config: \"model\" is empty";
    p.spec_method = suffix ? VT_SPEC_SUFFIX : draft ? VT_SPEC_DRAFT_MODEL : mtp ? VT_SPEC_MTP : VT_SPEC_NGRAM;
    p.num_speculative_tokens = k ? k : VT_SPEC_MAX_TOKENS;
    out = p;
    draft_model = draft ? j["model"].get<std::string>() : std::string();
    return "";
}

} // namespace vt_examples
