// The logprobs parts of vt-server's answers (ResponseBuilder, declared in
// server-response.h): chat's logprobs.content entries, the completions
// API's legacy logprobs object (tokens, token_logprobs, top_logprobs,
// text_offset) with the echoed prompt's tokens first, and vLLM's
// prompt_logprobs list.
#include <cmath>
#include <string>

#include "server-prompt.h"
#include "server-response.h"

namespace vts {

using json = nlohmann::json;

namespace {

json bytes_of(const std::string &s) {
    json b = json::array();
    for (unsigned char c : s) b.push_back((int)c);
    return b;
}

// JSON has no infinity: a banned token's -inf is written as vLLM and
// OpenAI write it.
double finite(float lp) { return std::isfinite(lp) ? (double)lp : -9999.0; }

} // namespace

json ResponseBuilder::top_object(vt_token chosen, float logprob, const std::vector<std::pair<vt_token, float>> &top,
                                 uint32_t n) const {
    json obj = json::object();
    bool has_chosen = false;
    for (size_t i = 0; i < top.size() && i < n; ++i) {
        obj[prompter_.piece(top[i].first)] = finite(top[i].second);
        has_chosen |= top[i].first == chosen;
    }
    // OpenAI: "the logprob of the sampled token is always returned", so up
    // to logprobs + 1 entries.
    if (!has_chosen) obj[prompter_.piece(chosen)] = finite(logprob);
    return obj;
}

json ResponseBuilder::add_logprobs(ChoiceState &c, const TokenEvent &ev, size_t text_offset) {
    if (!o_.logprobs || ev.token < 0) return nullptr;
    // The end-of-generation token that stopped the request is not output.
    if (!o_.ignore_eos && ev.finish == VT_FINISH_STOP && vt_token_is_eog(prompter_.tokenizer(), ev.token))
        return nullptr;
    const std::string piece = prompter_.piece(ev.token);
    if (o_.chat) {
        json top = json::array();
        for (const auto &[t, lp] : ev.top) {
            const std::string p = prompter_.piece(t);
            top.push_back({{"token", p}, {"logprob", finite(lp)}, {"bytes", bytes_of(p)}});
        }
        json entry = {{"token", piece}, {"logprob", finite(ev.logprob)}, {"bytes", bytes_of(piece)}, {"top_logprobs", top}};
        c.chat_logprobs.push_back(entry);
        return entry;
    }
    json top = top_object(ev.token, ev.logprob, ev.top, o_.top_logprobs);
    c.tokens.push_back(piece);
    c.token_logprobs.push_back(finite(ev.logprob));
    c.top_logprobs.push_back(top);
    c.text_offset.push_back(text_offset);
    return {{"tokens", {piece}}, {"token_logprobs", {finite(ev.logprob)}}, {"top_logprobs", {top}},
            {"text_offset", {text_offset}}};
}

json ResponseBuilder::echo_logprobs(const ChoiceState &c) const {
    const PromptInfo &p = prompts_[(size_t)c.prompt];
    json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(),
         text_offset = json::array();
    size_t offset = 0;
    for (size_t i = 0; i < p.ids.size(); ++i) {
        const std::string piece = prompter_.piece(p.ids[i]);
        tokens.push_back(piece);
        text_offset.push_back(offset);
        offset += piece.size();
        // The first token is conditioned on nothing: null, as OpenAI and vLLM.
        if (i == 0 || i - 1 >= c.prompt_lp.size()) {
            token_logprobs.push_back(nullptr);
            top_logprobs.push_back(nullptr);
            continue;
        }
        const PromptLogprob &e = c.prompt_lp[i - 1];
        token_logprobs.push_back(finite(e.logprob));
        top_logprobs.push_back(top_object(e.token, e.logprob, e.top, o_.top_logprobs));
    }
    return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs},
            {"text_offset", text_offset}};
}

json ResponseBuilder::choice_logprobs(const ChoiceState &c) const {
    if (!o_.logprobs) return nullptr;
    if (o_.chat) return {{"content", c.chat_logprobs}};
    json lp = {{"tokens", json::array()},
               {"token_logprobs", json::array()},
               {"top_logprobs", json::array()},
               {"text_offset", json::array()}};
    if (o_.echo) lp = echo_logprobs(c);
    for (const auto &v : c.tokens) lp["tokens"].push_back(v);
    for (const auto &v : c.token_logprobs) lp["token_logprobs"].push_back(v);
    for (const auto &v : c.top_logprobs) lp["top_logprobs"].push_back(v);
    for (const auto &v : c.text_offset) lp["text_offset"].push_back(v);
    return lp;
}

json ResponseBuilder::vllm_prompt_logprobs(const ChoiceState &c) const {
    json out = json::array({nullptr});
    const uint32_t n = o_.prompt_logprobs.value_or(0);
    for (const PromptLogprob &e : c.prompt_lp) {
        json d = json::object();
        // rank: 1 for the most likely token. The engine reports the top
        // entries only, so a prompt token outside them has no rank (null).
        json rank = nullptr;
        for (size_t k = 0; k < e.top.size(); ++k)
            if (e.top[k].first == e.token) rank = k + 1;
        d[std::to_string(e.token)] = {{"logprob", finite(e.logprob)}, {"rank", rank},
                                      {"decoded_token", prompter_.piece(e.token)}};
        for (size_t k = 0; k < e.top.size() && k < n; ++k) {
            const auto &[t, lp] = e.top[k];
            if (t == e.token) continue;
            d[std::to_string(t)] = {{"logprob", finite(lp)}, {"rank", k + 1}, {"decoded_token", prompter_.piece(t)}};
        }
        out.push_back(std::move(d));
    }
    return out;
}

} // namespace vts
