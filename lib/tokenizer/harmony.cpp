#include "tokenizer/harmony.h"

#include <nlohmann/json.hpp>

namespace vt::tok {

namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kEnds[] = {"<|end|>", "<|return|>", "<|call|>"};
// What the first header may begin with (after whitespace): the completion
// opens right after "<|start|>assistant".
constexpr std::string_view kHeaderOpeners[] = {"<|channel|>", "<|constrain|>", "<|message|>", "to="};
constexpr std::string_view kFunctions = "functions.";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

bool all_space(std::string_view s) {
    for (char c : s)
        if (!is_space(c)) return false;
    return true;
}

// The length of the longest suffix of s that is a proper prefix of marker.
size_t partial_suffix(std::string_view s, std::string_view marker) {
    const size_t longest = std::min(marker.size() - 1, s.size());
    for (size_t k = longest; k > 0; --k)
        if (s.substr(s.size() - k) == marker.substr(0, k)) return k;
    return 0;
}

// A header's word at p: up to whitespace, a marker or the end.
std::string_view word_at(std::string_view h, size_t p) {
    size_t e = p;
    while (e < h.size() && !is_space(h[e]) && h[e] != '<') ++e;
    return h.substr(p, e - p);
}

std::string_view header_channel(std::string_view h) {
    const size_t at = h.find(kChannel);
    return at == std::string_view::npos ? std::string_view() : word_at(h, at + kChannel.size());
}

// The recipient: "to=X" at the header's start or after whitespace.
std::string_view header_recipient(std::string_view h) {
    for (size_t at = h.find("to="); at != std::string_view::npos; at = h.find("to=", at + 1))
        if (at == 0 || is_space(h[at - 1]) || h[at - 1] == '>') return word_at(h, at + 3);
    return {};
}

using ordered_json = nlohmann::ordered_json;

std::string dump(const ordered_json &j) { return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace); }

ordered_json opt_json(const std::optional<std::string> &s) { return s ? ordered_json(*s) : ordered_json(nullptr); }

} // namespace

bool is_harmony_template(std::string_view src) {
    return src.find(kStart) != std::string_view::npos && src.find(kMessage) != std::string_view::npos &&
           src.find(kChannel) != std::string_view::npos;
}

void HarmonyParser::push(std::string_view text, std::vector<HarmonyDelta> &out) {
    if (state_ == State::done) return;
    buf_.append(text);
    step(out, false);
}

void HarmonyParser::finish(std::vector<HarmonyDelta> &out) {
    if (state_ == State::done) return;
    step(out, true);
    state_ = State::done;
    buf_.clear();
    junk_.clear();
}

void HarmonyParser::step(std::vector<HarmonyDelta> &out, bool at_end) {
    for (bool progress = true; progress;) {
        switch (state_) {
        case State::header: progress = step_header(out, at_end); break;
        case State::content: progress = step_content(out, at_end); break;
        case State::between: progress = step_between(out, at_end); break;
        case State::plain:
            emit_as(out, Target::content, buf_);
            buf_.clear();
            progress = false;
            break;
        case State::done: progress = false; break;
        }
    }
}

bool HarmonyParser::step_header(std::vector<HarmonyDelta> &out, bool at_end) {
    // Decided on the bytes so far in a way later bytes cannot undo, so that
    // every chunking of a stream reads the same.
    const size_t at = buf_.find(kMessage);
    bool plain = (at == std::string::npos ? buf_.size() : at) > kMaxHeader;
    if (first_ && !plain) {
        // Output that does not open with a header is not harmony at all.
        size_t p = 0;
        while (p < buf_.size() && is_space(buf_[p])) ++p;
        const std::string_view s = std::string_view(buf_).substr(p);
        // Whitespace alone, at the end, is text; a beginning of an opener
        // ("to", "<|chan") is a header cut off, as openai-harmony reads it.
        bool fits = false;
        if (s.empty()) {
            fits = !(at_end && !buf_.empty());
        } else {
            for (std::string_view opener : kHeaderOpeners)
                if (s.size() >= opener.size() ? s.substr(0, opener.size()) == opener : opener.substr(0, s.size()) == s)
                    fits = true;
        }
        plain = !fits;
    }
    if (plain) {
        state_ = State::plain;
        return true;
    }
    if (at != std::string::npos) {
        open_message(out, std::string_view(buf_).substr(0, at));
        buf_.erase(0, at + kMessage.size());
        state_ = State::content;
        first_ = false;
        return true;
    }
    // A header cut off by the end is dropped: its message never began.
    if (at_end) buf_.clear();
    return false;
}

bool HarmonyParser::step_content(std::vector<HarmonyDelta> &out, bool at_end) {
    size_t at = std::string::npos, len = 0;
    for (std::string_view end : kEnds) {
        const size_t p = buf_.find(end);
        if (p < at) at = p, len = end.size();
    }
    if (at != std::string::npos) {
        emit(out, std::string_view(buf_).substr(0, at));
        buf_.erase(0, at + len);
        state_ = State::between;
        return true;
    }
    size_t hold = 0;
    if (!at_end)
        for (std::string_view end : kEnds) hold = std::max(hold, partial_suffix(buf_, end));
    emit(out, std::string_view(buf_).substr(0, buf_.size() - hold));
    buf_.erase(0, buf_.size() - hold);
    return false;
}

bool HarmonyParser::step_between(std::vector<HarmonyDelta> &out, bool at_end) {
    const size_t at = buf_.find(kStart);
    const size_t junk_end = at != std::string::npos ? at : buf_.size() - (at_end ? 0 : partial_suffix(buf_, kStart));
    // Whitespace between messages is dropped; anything else is shown as
    // content (the model left the format), with the whitespace held before it.
    junk_.append(buf_, 0, junk_end);
    buf_.erase(0, junk_end);
    if (junk_shown_ || !all_space(junk_)) {
        emit_as(out, Target::content, junk_);
        junk_.clear();
        junk_shown_ = true;
    }
    if (at == std::string::npos) return false;
    junk_.clear();
    junk_shown_ = false;
    buf_.erase(0, kStart.size());
    state_ = State::header;
    return true;
}

void HarmonyParser::open_message(std::vector<HarmonyDelta> &out, std::string_view header) {
    const std::string_view recipient = header_recipient(header);
    if (recipient.substr(0, kFunctions.size()) == kFunctions) {
        target_ = Target::call;
        result_.calls.push_back({std::string(recipient.substr(kFunctions.size())), ""});
        out.push_back({HarmonyDelta::Kind::call_begin, (int)result_.calls.size() - 1, result_.calls.back().name});
        return;
    }
    target_ = header_channel(header) == "analysis" || !recipient.empty() ? Target::reasoning : Target::content;
    std::optional<std::string> &field = target_ == Target::reasoning ? result_.reasoning : result_.content;
    if (!field) field.emplace();
}

void HarmonyParser::emit(std::vector<HarmonyDelta> &out, std::string_view text) { emit_as(out, target_, text); }

void HarmonyParser::emit_as(std::vector<HarmonyDelta> &out, Target target, std::string_view text) {
    HarmonyDelta::Kind kind;
    int call = -1;
    switch (target) {
    case Target::call:
        kind = HarmonyDelta::Kind::call_arguments;
        call = (int)result_.calls.size() - 1;
        result_.calls.back().arguments.append(text);
        break;
    case Target::reasoning:
        kind = HarmonyDelta::Kind::reasoning;
        if (!result_.reasoning) result_.reasoning.emplace();
        result_.reasoning->append(text);
        break;
    default:
        kind = HarmonyDelta::Kind::content;
        if (!result_.content) result_.content.emplace();
        result_.content->append(text);
        break;
    }
    if (text.empty()) return;
    if (!out.empty() && out.back().kind == kind && out.back().call == call) out.back().text.append(text);
    else out.push_back({kind, call, std::string(text)});
}

HarmonyResult parse_harmony(std::string_view text) {
    HarmonyParser p;
    std::vector<HarmonyDelta> deltas;
    p.push(text, deltas);
    p.finish(deltas);
    return p.result();
}

std::string harmony_result_to_json(const HarmonyResult &r) {
    ordered_json calls = ordered_json::array();
    for (const ToolCall &c : r.calls) calls.push_back({{"name", c.name}, {"arguments", c.arguments}});
    return dump({{"content", opt_json(r.content)},
                 {"reasoning_content", opt_json(r.reasoning)},
                 {"tool_calls", std::move(calls)}});
}

std::string harmony_deltas_to_json(const std::vector<HarmonyDelta> &deltas) {
    ordered_json arr = ordered_json::array();
    for (const HarmonyDelta &d : deltas) {
        switch (d.kind) {
        case HarmonyDelta::Kind::reasoning: arr.push_back({{"reasoning_content", d.text}}); break;
        case HarmonyDelta::Kind::content: arr.push_back({{"content", d.text}}); break;
        case HarmonyDelta::Kind::call_begin:
            arr.push_back({{"tool_call", {{"index", d.call}, {"name", d.text}}}});
            break;
        case HarmonyDelta::Kind::call_arguments:
            arr.push_back({{"tool_call", {{"index", d.call}, {"arguments", d.text}}}});
            break;
        }
    }
    return dump(arr);
}

} // namespace vt::tok
