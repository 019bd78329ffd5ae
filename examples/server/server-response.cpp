#include "server-response.h"

#include <chrono>
#include <new>
#include <random>

#include "server-errors.h"
#include "server-prompt.h"

namespace vts {

using json = nlohmann::json;

namespace {

// "chatcmpl-" / "cmpl-" and 24 random hex digits, as OpenAI's ids look.
std::string make_id(const char *prefix) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static const char hex[] = "0123456789abcdef";
    std::string id = prefix;
    for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
    return id;
}

const char *finish_name(vt_finish_reason f) {
    switch (f) {
    case VT_FINISH_STOP: return "stop";
    case VT_FINISH_LENGTH: return "length";
    case VT_FINISH_CANCELLED: return "abort";  // only seen when the server cancels (shutdown)
    case VT_FINISH_ERROR: return "error";
    default: return nullptr;
    }
}

} // namespace

std::string sse(const json &j) { return "data: " + dump_json(j) + "\n\n"; }

ResponseBuilder::ResponseBuilder(ResponseOptions opts, std::vector<PromptInfo> prompts, int n_per_prompt,
                                 const Prompter &prompter)
    : o_(std::move(opts)), prompts_(std::move(prompts)), id_(make_id(o_.chat ? "chatcmpl-" : "cmpl-")),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      prompter_(prompter), choices_(prompts_.size() * (size_t)n_per_prompt) {
    for (const auto &p : prompts_) prompt_tokens_ += p.ids.size();
    for (size_t i = 0; i < choices_.size(); ++i) {
        choices_[i].index = (int)i;
        choices_[i].prompt = (int)(i / (size_t)n_per_prompt);
        vt_harmony_parser *hp = nullptr;
        if (o_.harmony && o_.stream) {
            if (vt_harmony_parser_create(&hp) != VT_OK) throw std::bad_alloc();
            choices_[i].harmony.reset(hp, vt_harmony_parser_destroy);
        }
    }
}

json ResponseBuilder::chunk(json choices) const {
    json j = {{"id", id_},
              {"object", o_.chat ? "chat.completion.chunk" : "text_completion"},
              {"created", created_},
              {"model", o_.model},
              {"choices", std::move(choices)}};
    if (o_.include_usage) j["usage"] = nullptr;  // OpenAI: null on every chunk but the last
    return j;
}

json ResponseBuilder::usage() const {
    uint64_t completion = 0;
    for (const auto &c : choices_) completion += c.n_output;
    return {{"prompt_tokens", prompt_tokens_},
            {"completion_tokens", completion},
            {"total_tokens", prompt_tokens_ + completion}};
}

const char *ResponseBuilder::finish_reason(const ChoiceState &c) const {
    // max_tokens 0: the token generated to end the request is not output.
    if (o_.score_only && (c.finish == VT_FINISH_STOP || c.finish == VT_FINISH_LENGTH)) return "length";
    // As OpenAI and vLLM: a forced named function ends with "stop".
    if (c.tool_out && !c.tool_out->calls.empty() && c.finish == VT_FINISH_STOP && o_.tools.mode != ToolMode::named)
        return "tool_calls";
    return finish_name(c.finish);
}

std::string ResponseBuilder::delta_chunk(const ChoiceState &c, json delta, json lp) const {
    return sse(chunk(json::array({{{"index", c.index},
                                   {"delta", std::move(delta)},
                                   {"logprobs", lp.is_null() ? json(nullptr) : json{{"content", {std::move(lp)}}}},
                                   {"finish_reason", nullptr}}})));
}

std::string ResponseBuilder::chat_chunks(ChoiceState &c, const TokenEvent &ev, const json &lp) {
    std::string out;
    const std::string &text = o_.score_only ? std::string() : ev.text;
    if (!c.role_sent) {
        c.role_sent = true;
        out += delta_chunk(c, {{"role", "assistant"}, {"content", ""}}, nullptr);
    }
    if (o_.harmony) return out + harmony_chunks(c, ev, lp);
    const ToolMode mode = o_.tools.mode;
    if (mode == ToolMode::named) {
        // The call's head (id, name) first, then its arguments as they come.
        if (c.call_id.empty() && (!text.empty() || !lp.is_null() || ev.finish != VT_FINISH_NONE)) {
            c.call_id = c.tool_out ? c.tool_out->calls[0].id : make_call_id(o_.tool_format);
            ToolCall head{c.call_id, o_.tools.function, ""};
            out += delta_chunk(c, {{"tool_calls", json::array({tool_call_json(head, 0)})}}, nullptr);
        }
        if (!text.empty() || !lp.is_null())
            out += delta_chunk(c, {{"tool_calls", json::array({{{"index", 0}, {"function", {{"arguments", text}}}}})}},
                               lp);
    } else {
        std::string delta;
        if (mode == ToolMode::none) {
            delta = text;
        } else {
            // Text that may begin a call is held back until the output ends.
            const size_t k = releasable_content(o_.tools, o_.tool_format, c.text);
            if (k > c.sent) {
                delta = c.text.substr(c.sent, k - c.sent);
                c.sent = k;
            }
        }
        if (!delta.empty() || !lp.is_null()) out += delta_chunk(c, {{"content", delta}}, lp);
    }
    if (ev.finish == VT_FINISH_NONE) return out;
    if (c.tool_out && mode != ToolMode::named) {
        const ToolOutput &to = *c.tool_out;
        if (to.content && to.content->size() > c.sent) {
            out += delta_chunk(c, {{"content", to.content->substr(c.sent)}}, nullptr);
            c.sent = to.content->size();
        }
        for (size_t i = 0; i < to.calls.size(); ++i)
            out += delta_chunk(c, {{"tool_calls", json::array({tool_call_json(to.calls[i], (int)i)})}}, nullptr);
    }
    out += sse(chunk(json::array({{{"index", c.index},
                                   {"delta", json::object()},
                                   {"logprobs", nullptr},
                                   {"finish_reason", finish_reason(c)}}})));
    return out;
}

std::string ResponseBuilder::harmony_chunks(ChoiceState &c, const TokenEvent &ev, json lp) {
    std::string out;
    const bool end = ev.finish != VT_FINISH_NONE;
    const std::string &text = o_.score_only ? std::string() : ev.text;
    std::string buf(text.size() * 2 + 256, '\0');
    size_t needed = 0;
    vt_status s = vt_harmony_parser_push(c.harmony.get(), text.data(), text.size(), end);
    if (s == VT_OK) s = vt_harmony_parser_take(c.harmony.get(), buf.data(), buf.size(), &needed);
    if (s == VT_ERR_BUFFER_TOO_SMALL) {
        buf.resize(needed + 1);
        s = vt_harmony_parser_take(c.harmony.get(), buf.data(), buf.size(), &needed);
    }
    buf.resize(s == VT_OK ? needed : 0);
    const json deltas = buf.empty() ? json::array() : json::parse(buf, nullptr, /*allow_exceptions=*/false);
    for (const auto &d : deltas.is_array() ? deltas : json::array()) {
        json delta;
        if (d.contains("content")) {
            delta = {{"content", d["content"]}};
        } else if (d.contains("reasoning_content")) {
            delta = {{"reasoning_content", d["reasoning_content"]}};
        } else if (d.contains("tool_call")) {
            const json &tc = d["tool_call"];
            const int i = tc.value("index", 0);
            json call;
            if (tc.contains("name")) {
                c.call_ids.push_back(make_call_id(o_.tool_format));
                call = tool_call_json({c.call_ids.back(), tc["name"].get<std::string>(), ""}, i);
            } else {
                call = {{"index", i}, {"function", {{"arguments", tc["arguments"]}}}};
            }
            delta = {{"tool_calls", json::array({std::move(call)})}};
        } else {
            continue;
        }
        out += delta_chunk(c, std::move(delta), lp);
        lp = nullptr;  // a token's logprobs go with the first delta it made
    }
    if (!lp.is_null()) out += delta_chunk(c, {{"content", ""}}, lp);
    if (!end) return out;
    out += sse(chunk(json::array({{{"index", c.index},
                                   {"delta", json::object()},
                                   {"logprobs", nullptr},
                                   {"finish_reason", finish_reason(c)}}})));
    return out;
}

std::string ResponseBuilder::completion_chunks(ChoiceState &c, const TokenEvent &ev, const json &lp) {
    std::string out;
    if (o_.echo && !c.echoed) {
        c.echoed = true;
        out += sse(chunk(json::array({{{"index", c.index},
                                       {"text", prompts_[(size_t)c.prompt].text},
                                       {"logprobs", o_.logprobs ? echo_logprobs(c) : json(nullptr)},
                                       {"finish_reason", nullptr}}})));
    }
    const std::string &text = o_.score_only ? std::string() : ev.text;
    if (!text.empty() || !lp.is_null() || ev.finish != VT_FINISH_NONE)
        out += sse(chunk(json::array({{{"index", c.index},
                                       {"text", text},
                                       {"logprobs", lp},
                                       {"finish_reason", ev.finish != VT_FINISH_NONE ? json(finish_reason(c))
                                                                                     : json(nullptr)}}})));
    return out;
}

std::string ResponseBuilder::consume(const std::vector<TokenEvent> &events) {
    std::string out;
    for (const TokenEvent &ev : events) {
        if (ev.choice < 0 || ev.choice >= (int)choices_.size()) continue;
        ChoiceState &c = choices_[(size_t)ev.choice];
        if (c.finish != VT_FINISH_NONE) continue;  // nothing comes after the last event
        if (ev.is_prompt) {
            c.prompt_lp.push_back({ev.token, ev.logprob, ev.top});
            continue;
        }
        json lp = nullptr;
        if (!o_.score_only) {
            const size_t offset = c.text.size() + (o_.echo ? prompts_[(size_t)c.prompt].text.size() : 0);
            c.text += ev.text;
            c.n_output = ev.n_output;
            lp = add_logprobs(c, ev, offset);
        }
        if (ev.finish != VT_FINISH_NONE) {
            c.finish = ev.finish;
            c.status = ev.status;
            ++n_finished_;
            if (o_.harmony && ev.finish != VT_FINISH_ERROR) {
                c.tool_out = parse_harmony_output(c.text);
            } else if (o_.chat && o_.tools.mode != ToolMode::none && ev.finish != VT_FINISH_ERROR) {
                c.tool_out = parse_tool_output(o_.tools, o_.tool_format, c.text);
                if (!c.call_id.empty() && !c.tool_out->calls.empty()) c.tool_out->calls[0].id = c.call_id;
            }
        }
        if (!o_.stream || ev.finish == VT_FINISH_ERROR) continue;
        out += o_.chat ? chat_chunks(c, ev, lp) : completion_chunks(c, ev, lp);
    }
    return out;
}

bool ResponseBuilder::failed(vt_status *status) const {
    for (const auto &c : choices_)
        if (c.finish == VT_FINISH_ERROR) {
            if (status) *status = c.status;
            return true;
        }
    return false;
}

json ResponseBuilder::message(const ChoiceState &c) const {
    json m = {{"role", "assistant"}};
    if (o_.harmony) {
        // As vLLM answers for gpt-oss: the final channel, the analysis, the calls.
        const bool ok = c.tool_out.has_value();
        m["content"] = ok ? (c.tool_out->content ? json(*c.tool_out->content) : json(nullptr)) : json(c.text);
        m["reasoning_content"] = ok && c.tool_out->reasoning ? json(*c.tool_out->reasoning) : json(nullptr);
        if (ok && !c.tool_out->calls.empty()) {
            json calls = json::array();
            for (const auto &call : c.tool_out->calls) calls.push_back(tool_call_json(call));
            m["tool_calls"] = std::move(calls);
        }
        return m;
    }
    if (c.tool_out && !c.tool_out->calls.empty()) {
        m["content"] = c.tool_out->content ? json(*c.tool_out->content) : json(nullptr);
        json calls = json::array();
        for (const auto &call : c.tool_out->calls) calls.push_back(tool_call_json(call));
        m["tool_calls"] = std::move(calls);
    } else {
        m["content"] = c.text;
    }
    return m;
}

std::string ResponseBuilder::final_text() const {
    if (o_.stream) {
        std::string out;
        if (o_.include_usage) {
            json j = chunk(json::array());
            j["usage"] = usage();
            out += sse(j);
        }
        out += "data: [DONE]\n\n";
        return out;
    }
    json choices = json::array();
    for (const auto &c : choices_) {
        json ch = {{"index", c.index}, {"logprobs", choice_logprobs(c)}, {"finish_reason", finish_reason(c)}};
        if (o_.chat) {
            ch["message"] = message(c);
        } else {
            ch["text"] = o_.echo ? prompts_[(size_t)c.prompt].text + c.text : c.text;
            if (o_.prompt_logprobs) ch["prompt_logprobs"] = vllm_prompt_logprobs(c);
        }
        choices.push_back(std::move(ch));
    }
    json j = {{"id", id_},
              {"object", o_.chat ? "chat.completion" : "text_completion"},
              {"created", created_},
              {"model", o_.model},
              {"choices", std::move(choices)},
              {"usage", usage()}};
    // vLLM's chat answer carries the (one) prompt's logprobs at the top.
    if (o_.chat && o_.prompt_logprobs && !choices_.empty()) j["prompt_logprobs"] = vllm_prompt_logprobs(choices_[0]);
    return dump_json(j);
}

std::string ResponseBuilder::error_text(int http_status, const std::string &message) const {
    const json body = error_body(ApiError(http_status, message, "server_error"));
    if (!o_.stream) return dump_json(body);
    return sse(body) + "data: [DONE]\n\n";
}

} // namespace vts
