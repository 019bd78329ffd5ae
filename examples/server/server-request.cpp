#include "server-request.h"

#include <cfloat>
#include <cmath>
#include <memory>

#include "server-errors.h"

namespace vts {

using json = nlohmann::ordered_json;

uint64_t count_chars(const std::string &utf8) {
    uint64_t n = 0;
    for (unsigned char c : utf8) n += (c & 0xC0) != 0x80;
    return n;
}

namespace {

// Typed optional fields: absent or null -> nullopt; a wrong type -> 400.
const json *field(const json &body, const char *key) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return nullptr;
    return &*it;
}

std::optional<double> opt_number(const json &body, const char *key, double lo, double hi) {
    const json *v = field(body, key);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw bad_param(key, std::string("'") + key + "' must be a number");
    const double d = v->get<double>();
    if (!std::isfinite(d) || d < lo || d > hi)
        throw bad_param(key, std::string("'") + key + "' must be between " + dump_json(json(lo)) + " and " +
                                 dump_json(json(hi)));
    return d;
}

std::optional<int64_t> opt_int(const json &body, const char *key, int64_t lo, int64_t hi) {
    const json *v = field(body, key);
    if (!v) return std::nullopt;
    int64_t i;
    if (v->is_number_integer()) {
        if (v->is_number_unsigned() && v->get<uint64_t>() > (uint64_t)INT64_MAX)
            throw bad_param(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                                     std::to_string(hi));
        i = v->get<int64_t>();
    } else if (v->is_number_float() && std::isfinite(v->get<double>()) &&
               v->get<double>() == std::floor(v->get<double>())) {
        // 5.0 is 5 (as Python and vLLM take it); 2^64 and beyond arrive
        // here as floats, since they fit no integer type.
        const double d = v->get<double>();
        if (std::fabs(d) >= 9e18)
            throw bad_param(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                                     std::to_string(hi));
        i = (int64_t)d;
    } else {
        throw bad_param(key, std::string("'") + key + "' must be an integer");
    }
    if (i < lo || i > hi)
        throw bad_param(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " +
                                 std::to_string(hi));
    return i;
}

std::optional<bool> opt_bool(const json &body, const char *key) {
    const json *v = field(body, key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) throw bad_param(key, std::string("'") + key + "' must be a boolean");
    return v->get<bool>();
}

void add_chars(uint64_t &total, const std::string &s, const Guards &g, const char *param) {
    total += count_chars(s);
    if (g.max_prompt_chars && total > g.max_prompt_chars)
        throw ApiError(400,
                       "the prompt is longer than this server accepts (" + std::to_string(g.max_prompt_chars) +
                           " characters; see --max-prompt-chars)",
                       "invalid_request_error", param, "prompt_too_long");
}

// OpenAI content: a string, null, or a list of parts of which vt takes the
// text ones (joined by newlines, as vLLM does for text-only models).
json message_content(const json &content, const Guards &g, uint64_t &chars) {
    if (content.is_null()) return nullptr;
    if (content.is_string()) {
        add_chars(chars, content.get_ref<const std::string &>(), g, "messages");
        return content;
    }
    if (!content.is_array())
        throw bad_param("messages", "a message's 'content' must be a string, null or a list of parts");
    std::string text;
    for (const auto &part : content) {
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
            throw bad_param("messages", "a content part must be an object with a string 'type'");
        if (part["type"] != "text")
            throw bad_param("messages", "content parts of type '" + part["type"].get<std::string>() +
                                            "' are not supported (text only)");
        if (!part.contains("text") || !part["text"].is_string())
            throw bad_param("messages", "a text content part needs a string 'text'");
        if (!text.empty()) text += '\n';
        text += part["text"].get_ref<const std::string &>();
    }
    add_chars(chars, text, g, "messages");
    return text;
}

// Tool calls of an assistant turn carry their arguments as JSON text
// (OpenAI); templates expect the object (transformers' convention, which
// vLLM follows): arguments that parse as a JSON object are given as one.
void template_tool_calls(json &msg) {
    auto calls = msg.find("tool_calls");
    if (calls == msg.end() || calls->is_null()) return;
    if (!calls->is_array()) throw bad_param("messages", "a message's 'tool_calls' must be a list");
    for (auto &call : *calls) {
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
            throw bad_param("messages", "each tool call must be an object with a 'function' object");
        json &fn = call["function"];
        if (!fn.contains("arguments") || !fn["arguments"].is_string()) continue;
        json args = json::parse(fn["arguments"].get_ref<const std::string &>(), nullptr, false);
        if (args.is_object()) fn["arguments"] = std::move(args);
    }
}

void parse_messages(const json &body, GenRequest &r, const Guards &g) {
    auto it = body.find("messages");
    if (it == body.end()) throw bad_param("messages", "'messages' is required");
    if (!it->is_array()) throw bad_param("messages", "'messages' must be a list of message objects");
    if (it->empty()) throw bad_param("messages", "'messages' must not be empty");
    uint64_t chars = 0;
    r.messages = json::array();
    for (const auto &m : *it) {
        if (!m.is_object()) throw bad_param("messages", "each message must be an object");
        auto role = m.find("role");
        if (role == m.end() || !role->is_string())
            throw bad_param("messages", "each message needs a string 'role'");
        if (role->get_ref<const std::string &>().find('\0') != std::string::npos)
            throw bad_param("messages", "a message's 'role' must not hold NUL characters");
        json msg = m;  // keep name, tool_calls, tool_call_id, ... for the template
        // NOTE: as vLLM gives templates that take string content: a null
        // content (an assistant turn that only called tools) is "".
        json content = message_content(m.contains("content") ? m["content"] : json(nullptr), g, chars);
        msg["content"] = content.is_null() ? json("") : std::move(content);
        template_tool_calls(msg);
        r.messages.push_back(std::move(msg));
    }
    json extra = json::object();
    if (const json *tools = field(body, "tools")) {
        if (!tools->is_array()) throw bad_param("tools", "'tools' must be a list");
        extra["tools"] = *tools;
    }
    // OpenAI's reasoning_effort ("low" / "medium" / "high"), which gpt-oss's
    // template writes into its system message; chat_template_kwargs may
    // still override it.
    if (const json *effort = field(body, "reasoning_effort")) {
        if (!effort->is_string()) throw bad_param("reasoning_effort", "'reasoning_effort' must be a string");
        extra["reasoning_effort"] = *effort;
    }
    if (const json *kw = field(body, "chat_template_kwargs")) {
        if (!kw->is_object()) throw bad_param("chat_template_kwargs", "'chat_template_kwargs' must be an object");
        for (auto kv = kw->begin(); kv != kw->end(); ++kv) extra[kv.key()] = kv.value();
    }
    if (!extra.empty()) r.template_extra = std::move(extra);
    if (auto agp = opt_bool(body, "add_generation_prompt")) r.add_generation_prompt = *agp;
}

std::vector<vt_token> token_list(const json &arr, uint32_t n_vocab) {
    std::vector<vt_token> ids;
    ids.reserve(arr.size());
    for (const auto &t : arr) {
        if (!t.is_number_integer()) throw bad_param("prompt", "a token prompt must be a list of integers");
        const int64_t v = t.is_number_unsigned() && t.get<uint64_t>() > (uint64_t)INT64_MAX ? -1 : t.get<int64_t>();
        if (v < 0 || v >= (int64_t)n_vocab)
            throw bad_param("prompt", "token id " + dump_json(t) + " is outside the vocabulary (" +
                                          std::to_string(n_vocab) + " tokens)");
        ids.push_back((vt_token)v);
    }
    if (ids.empty()) throw bad_param("prompt", "a token prompt must not be empty");
    return ids;
}

void parse_prompt(const json &body, GenRequest &r, const Guards &g, uint32_t n_vocab) {
    auto it = body.find("prompt");
    if (it == body.end() || it->is_null()) throw bad_param("prompt", "'prompt' is required");
    const json &p = *it;
    uint64_t chars = 0;
    if (p.is_string()) {
        add_chars(chars, p.get_ref<const std::string &>(), g, "prompt");
        r.prompt_texts.push_back(p.get<std::string>());
        return;
    }
    if (!p.is_array() || p.empty())
        throw bad_param("prompt", "'prompt' must be a string, a list of strings, a list of token ids or a list "
                                  "of such lists");
    if (p[0].is_string()) {
        for (const auto &s : p) {
            if (!s.is_string()) throw bad_param("prompt", "a list of prompts must hold strings only");
            add_chars(chars, s.get_ref<const std::string &>(), g, "prompt");
            r.prompt_texts.push_back(s.get<std::string>());
        }
    } else if (p[0].is_array()) {
        for (const auto &ids : p) {
            if (!ids.is_array()) throw bad_param("prompt", "a list of token prompts must hold lists only");
            r.prompt_ids.push_back(token_list(ids, n_vocab));
        }
    } else {
        r.prompt_ids.push_back(token_list(p, n_vocab));
    }
}

void parse_stop(const json &body, GenRequest &r) {
    const json *stop = field(body, "stop");
    if (!stop) return;
    auto add = [&](const json &s) {
        if (!s.is_string()) throw bad_param("stop", "'stop' must be a string or a list of strings");
        const auto &str = s.get_ref<const std::string &>();
        if (str.find('\0') != std::string::npos) throw bad_param("stop", "a stop string must not hold NUL");
        if (!str.empty()) r.stop.push_back(str);  // an empty stop string stops nothing
    };
    if (stop->is_array()) {
        if (stop->size() > 16) throw bad_param("stop", "at most 16 stop strings");
        for (const auto &s : *stop) add(s);
    } else {
        add(*stop);
    }
}

void refuse_unsupported(const json &body, bool chat) {
    if (!chat && field(body, "suffix")) throw bad_param("suffix", "'suffix' is not supported");
}

// The output constraint, from the body or from a tool_choice that forces
// calls; never both.
void parse_constraints(const json &body, GenRequest &r, uint32_t n_vocab) {
    r.constraint = parse_constraint(body);
    r.logit_bias = parse_logit_bias(body, n_vocab);
    if (!r.chat) return;
    r.tools = parse_tool_choice(body);
    if (r.tools.constraint) {
        if (r.constraint)
            throw bad_param(r.constraint->param, "only one output constraint per request: tool_choice '" +
                                                     std::string(r.tools.mode == ToolMode::required ? "required"
                                                                                                    : "<function>") +
                                                     "' constrains the output already, and '" +
                                                     r.constraint->param + "' was given too");
        r.constraint = r.tools.constraint;
    }
}

} // namespace

GenRequest parse_request(const json &body, bool chat, const Guards &g, uint32_t n_vocab) {
    if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
    GenRequest r;
    r.chat = chat;
    if (const json *m = field(body, "model")) {
        if (!m->is_string()) throw bad_param("model", "'model' must be a string");
        if (m->get_ref<const std::string &>().find('\0') != std::string::npos)
            throw bad_param("model", "'model' must not hold NUL characters");
        r.model = m->get<std::string>();
    }
    refuse_unsupported(body, chat);
    if (chat) parse_messages(body, r, g);
    else parse_prompt(body, r, g, n_vocab);
    parse_constraints(body, r, n_vocab);
    if (!chat)
        if (auto echo = opt_bool(body, "echo")) r.echo = *echo;
    if (auto pl = opt_int(body, "prompt_logprobs", 0, 20)) r.prompt_logprobs = (uint32_t)*pl;

    // max_completion_tokens replaces max_tokens in OpenAI's chat API. 0
    // scores the prompt without generating (lm-eval's loglikelihood requests
    // with echo, as vLLM allows).
    const bool scoring = !chat && (r.echo || r.prompt_logprobs);
    std::optional<int64_t> max_tokens = opt_int(body, "max_tokens", 0, UINT32_MAX);
    if (max_tokens && *max_tokens == 0 && !scoring)
        throw bad_param("max_tokens", chat ? "'max_tokens' must be at least 1"
                                           : "'max_tokens' must be at least 1 (0 only with 'echo' or 'prompt_logprobs')");
    const char *max_key = "max_tokens";
    if (chat) {
        if (auto mct = opt_int(body, "max_completion_tokens", 1, UINT32_MAX)) {
            max_tokens = mct;
            max_key = "max_completion_tokens";
        }
    }
    if (max_tokens && g.max_new_tokens && (uint64_t)*max_tokens > g.max_new_tokens)
        throw ApiError(400,
                       std::string("'") + max_key + "' is larger than this server allows (" +
                           std::to_string(g.max_new_tokens) + "; see --max-new-tokens)",
                       "invalid_request_error", max_key);
    if (max_tokens) r.max_tokens = (uint32_t)*max_tokens;
    else if (g.max_new_tokens) r.max_tokens = (uint32_t)g.max_new_tokens;

    if (auto n = opt_int(body, "n", 1, 128)) r.n = (int)*n;
    if (auto best_of = opt_int(body, "best_of", 1, 128); best_of && *best_of != r.n)
        throw bad_param("best_of", "'best_of' other than n is not supported");
    const size_t n_prompts = chat ? 1 : r.prompt_texts.size() + r.prompt_ids.size();
    if (n_prompts * (size_t)r.n > 256) throw bad_param("n", "at most 256 choices (prompts x n) per request");
    parse_stop(body, r);
    if (auto s = opt_bool(body, "stream")) r.stream = *s;
    if (r.stream && r.prompt_logprobs)
        throw bad_param("prompt_logprobs", "'prompt_logprobs' is not available when streaming");
    if (const json *so = field(body, "stream_options")) {
        if (!so->is_object()) throw bad_param("stream_options", "'stream_options' must be an object");
        if (auto iu = opt_bool(*so, "include_usage")) r.include_usage = *iu;
    }
    if (chat) {
        if (auto lp = opt_bool(body, "logprobs")) r.logprobs = *lp;
        if (auto top = opt_int(body, "top_logprobs", 0, 20)) {
            if (!r.logprobs) throw bad_param("top_logprobs", "'top_logprobs' needs 'logprobs': true");
            r.top_logprobs = (uint32_t)*top;
        }
    } else if (auto lp = opt_int(body, "logprobs", 0, 20)) {
        r.logprobs = true;
        r.top_logprobs = (uint32_t)*lp;
    }
    if (auto ie = opt_bool(body, "ignore_eos")) r.ignore_eos = *ie;
    if (const json *ls = field(body, "lora_scale")) {
        // Any finite scale: 0 computes as the base model, negative ones subtract the update.
        const double d = ls->is_number() ? ls->get<double>() : NAN;
        if (!std::isfinite(d) || std::fabs(d) > FLT_MAX)
            throw bad_param("lora_scale", "'lora_scale' must be a finite number");
        r.lora_scale = (float)d;
    }

    SamplingParams &s = r.sampling;
    if (auto v = opt_number(body, "temperature", 0.0, 2.0)) s.temperature = *v;
    if (auto v = opt_number(body, "top_p", 0.0, 1.0)) {
        if (*v <= 0.0) throw bad_param("top_p", "'top_p' must be greater than 0");
        s.top_p = *v;
    }
    if (auto v = opt_int(body, "top_k", -1, INT32_MAX)) s.top_k = (int)*v;
    if (auto v = opt_number(body, "min_p", 0.0, 1.0)) s.min_p = *v;
    if (auto v = opt_number(body, "presence_penalty", -2.0, 2.0)) s.presence_penalty = *v;
    if (auto v = opt_number(body, "frequency_penalty", -2.0, 2.0)) s.frequency_penalty = *v;
    if (auto v = opt_number(body, "repetition_penalty", 0.0, 10.0)) {
        if (*v <= 0.0) throw bad_param("repetition_penalty", "'repetition_penalty' must be greater than 0");
        s.repetition_penalty = *v;
    }
    if (auto v = opt_int(body, "seed", INT64_MIN, INT64_MAX)) {
        const uint64_t u = (uint64_t)*v;
        s.seed = (uint32_t)(u ^ (u >> 32));  // any 64-bit seed, folded into the RNG's 32 bits
    }
    return r;
}

vt_sampler *make_sampler(const SamplingParams &p, uint32_t seed, const vt_grammar *grammar,
                         const std::vector<std::pair<vt_token, float>> &logit_bias) {
    vt_sampler *raw = nullptr;
    if (vt_sampler_create(&raw) != VT_OK) throw ApiError(500, "cannot create a sampler", "server_error");
    std::unique_ptr<vt_sampler, void (*)(vt_sampler *)> s(raw, vt_sampler_destroy);
    auto check = [](vt_status st) {
        if (st != VT_OK) {
            const char *m = vt_last_error();
            throw ApiError(400, std::string("bad sampling parameters: ") + (m && *m ? m : vt_status_str(st)));
        }
    };
    if (grammar) check(vt_sampler_add_grammar(s.get(), grammar));
    if (!logit_bias.empty()) {
        std::vector<vt_token> ids;
        std::vector<float> bias;
        for (const auto &[t, b] : logit_bias) {
            ids.push_back(t);
            bias.push_back(b);
        }
        check(vt_sampler_add_logit_bias(s.get(), ids.data(), bias.data(), ids.size()));
    }
    if (p.presence_penalty != 0.0 || p.frequency_penalty != 0.0 || p.repetition_penalty != 1.0)
        check(vt_sampler_add_penalties(s.get(), -1, (float)p.repetition_penalty, (float)p.frequency_penalty,
                                       (float)p.presence_penalty));
    if (p.temperature <= 0.0) {
        check(vt_sampler_add_greedy(s.get()));
    } else {
        if (p.top_k > 0) check(vt_sampler_add_top_k(s.get(), p.top_k));
        if (p.top_p < 1.0) check(vt_sampler_add_top_p(s.get(), (float)p.top_p, 1));
        if (p.min_p > 0.0) check(vt_sampler_add_min_p(s.get(), (float)p.min_p, 1));
        check(vt_sampler_add_temp(s.get(), (float)p.temperature));
        check(vt_sampler_add_dist(s.get(), seed));
    }
    return s.release();
}

} // namespace vts
