#include "server-response.h"

#include <chrono>
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

json bytes_of(const std::string &s) {
    json b = json::array();
    for (unsigned char c : s) b.push_back((int)c);
    return b;
}

} // namespace

std::string sse(const json &j) { return "data: " + dump_json(j) + "\n\n"; }

ResponseBuilder::ResponseBuilder(bool chat, bool stream, bool include_usage, bool logprobs, bool ignore_eos,
                                 std::string model, int n_choices, uint64_t prompt_tokens,
                                 const Prompter &prompter)
    : chat_(chat), stream_(stream), include_usage_(include_usage), logprobs_(logprobs), ignore_eos_(ignore_eos),
      id_(make_id(chat ? "chatcmpl-" : "cmpl-")), model_(std::move(model)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(
                   std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      prompt_tokens_(prompt_tokens), prompter_(prompter), choices_((size_t)n_choices) {
    for (int i = 0; i < n_choices; ++i) choices_[(size_t)i].index = i;
}

json ResponseBuilder::chunk(json choices) const {
    json j = {{"id", id_},
              {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
              {"created", created_},
              {"model", model_},
              {"choices", std::move(choices)}};
    if (include_usage_) j["usage"] = nullptr;  // OpenAI: null on every chunk but the last
    return j;
}

json ResponseBuilder::usage() const {
    uint64_t completion = 0;
    for (const auto &c : choices_) completion += c.n_output;
    return {{"prompt_tokens", prompt_tokens_},
            {"completion_tokens", completion},
            {"total_tokens", prompt_tokens_ + completion}};
}

json ResponseBuilder::add_logprobs(ChoiceState &c, const TokenEvent &ev, size_t text_offset) {
    if (!logprobs_ || ev.token < 0) return nullptr;
    // The end-of-generation token that stopped the request is not output.
    if (!ignore_eos_ && ev.finish == VT_FINISH_STOP && vt_token_is_eog(prompter_.tokenizer(), ev.token))
        return nullptr;
    const std::string piece = prompter_.piece(ev.token);
    if (chat_) {
        json top = json::array();
        for (const auto &[t, lp] : ev.top) {
            const std::string p = prompter_.piece(t);
            top.push_back({{"token", p}, {"logprob", lp}, {"bytes", bytes_of(p)}});
        }
        json entry = {{"token", piece}, {"logprob", ev.logprob}, {"bytes", bytes_of(piece)}, {"top_logprobs", top}};
        c.chat_logprobs.push_back(entry);
        return entry;
    }
    json top = json::object();
    for (const auto &[t, lp] : ev.top) top[prompter_.piece(t)] = lp;
    c.tokens.push_back(piece);
    c.token_logprobs.push_back(ev.logprob);
    c.top_logprobs.push_back(top);
    c.text_offset.push_back(text_offset);
    return {{"tokens", {piece}}, {"token_logprobs", {ev.logprob}}, {"top_logprobs", {top}},
            {"text_offset", {text_offset}}};
}

std::string ResponseBuilder::consume(const std::vector<TokenEvent> &events) {
    std::string out;
    for (const TokenEvent &ev : events) {
        if (ev.choice < 0 || ev.choice >= (int)choices_.size()) continue;
        ChoiceState &c = choices_[(size_t)ev.choice];
        if (c.finish != VT_FINISH_NONE) continue;  // nothing comes after the last event
        const size_t offset = c.text.size();
        c.text += ev.text;
        c.n_output = ev.n_output;
        json lp = add_logprobs(c, ev, offset);
        if (ev.finish != VT_FINISH_NONE) {
            c.finish = ev.finish;
            c.status = ev.status;
            ++n_finished_;
        }
        if (!stream_ || ev.finish == VT_FINISH_ERROR) continue;
        if (chat_) {
            if (!c.role_sent) {
                c.role_sent = true;
                out += sse(chunk(json::array({{{"index", c.index},
                                               {"delta", {{"role", "assistant"}, {"content", ""}}},
                                               {"logprobs", nullptr},
                                               {"finish_reason", nullptr}}})));
            }
            if (!ev.text.empty() || !lp.is_null())
                out += sse(chunk(json::array({{{"index", c.index},
                                               {"delta", {{"content", ev.text}}},
                                               {"logprobs", lp.is_null() ? json(nullptr) : json{{"content", {lp}}}},
                                               {"finish_reason", nullptr}}})));
            if (ev.finish != VT_FINISH_NONE)
                out += sse(chunk(json::array({{{"index", c.index},
                                               {"delta", json::object()},
                                               {"logprobs", nullptr},
                                               {"finish_reason", finish_name(ev.finish)}}})));
        } else {
            const bool has_text = !ev.text.empty() || !lp.is_null();
            if (has_text || ev.finish != VT_FINISH_NONE)
                out += sse(chunk(json::array({{{"index", c.index},
                                               {"text", ev.text},
                                               {"logprobs", lp},
                                               {"finish_reason", ev.finish != VT_FINISH_NONE
                                                                     ? json(finish_name(ev.finish))
                                                                     : json(nullptr)}}})));
        }
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

json ResponseBuilder::choice_logprobs(const ChoiceState &c) const {
    if (!logprobs_) return nullptr;
    if (chat_) return {{"content", c.chat_logprobs}};
    return {{"tokens", c.tokens},
            {"token_logprobs", c.token_logprobs},
            {"top_logprobs", c.top_logprobs},
            {"text_offset", c.text_offset}};
}

std::string ResponseBuilder::final_text() const {
    if (stream_) {
        std::string out;
        if (include_usage_) {
            json j = chunk(json::array());
            j["usage"] = usage();
            out += sse(j);
        }
        out += "data: [DONE]\n\n";
        return out;
    }
    json choices = json::array();
    for (const auto &c : choices_) {
        json ch = {{"index", c.index}, {"logprobs", choice_logprobs(c)}, {"finish_reason", finish_name(c.finish)}};
        if (chat_) ch["message"] = {{"role", "assistant"}, {"content", c.text}};
        else ch["text"] = c.text;
        choices.push_back(std::move(ch));
    }
    json j = {{"id", id_},
              {"object", chat_ ? "chat.completion" : "text_completion"},
              {"created", created_},
              {"model", model_},
              {"choices", std::move(choices)},
              {"usage", usage()}};
    return dump_json(j);
}

std::string ResponseBuilder::error_text(int http_status, const std::string &message) const {
    const json body = error_body(ApiError(http_status, message, "server_error"));
    if (!stream_) return dump_json(body);
    return sse(body) + "data: [DONE]\n\n";
}

} // namespace vts
