#include "engine/request-output.h"

#include <algorithm>
#include <cmath>

namespace vt {

void OwnedEvent::fix_pointers() {
    out.text = text.data();
    out.text_len = text.size();
    out.n_top = (uint32_t)top_tokens.size();
    out.top_tokens = top_tokens.empty() ? nullptr : top_tokens.data();
    out.top_logprobs = top_logprobs.empty() ? nullptr : top_logprobs.data();
}

RequestText::RequestText(const Tokenizer &tok, const RequestSpec &spec)
    : stops_(spec.stop_strings), detok_(tok, spec.render_special) {
    // The prompt's last tokens are context, so that the first generated token
    // decodes as it does after them (a leading space, a split character).
    const size_t n = std::min(spec.prompt.size(), tok::DecodeStream::kMaxContext);
    detok_.reset(spec.prompt.data() + spec.prompt.size() - n, n);
}

size_t RequestText::partial_stop_suffix() const {
    size_t best = 0;
    for (const std::string &s : stops_) {
        const size_t max_len = std::min(s.size() - 1, held_.size());
        for (size_t len = max_len; len > best; --len)
            if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
                best = len;
                break;
            }
    }
    return best;
}

bool RequestText::push(int32_t token, std::string &shown) {
    detok_.push(token, held_);
    if (stops_.empty()) {
        shown += held_;
        held_.clear();
        return false;
    }
    // Every occurrence of a stop string starts in held_: shown text never
    // ends in a prefix of one. The earliest match wins.
    size_t at = std::string::npos;
    for (const std::string &s : stops_) at = std::min(at, held_.find(s));
    if (at != std::string::npos) {
        shown.append(held_, 0, at);
        held_.clear();
        return true;
    }
    const size_t keep = partial_stop_suffix();
    shown.append(held_, 0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return false;
}

void RequestText::flush(std::string &shown) {
    detok_.finish(held_);
    shown += held_;
    held_.clear();
}

void token_logprobs(const float *logits, size_t n_vocab, int32_t token, uint32_t top_n, float &logprob,
                    std::vector<int32_t> &top_tokens, std::vector<float> &top_logprobs) {
    float mx = -INFINITY;
    for (size_t i = 0; i < n_vocab; ++i)
        if (logits[i] > mx) mx = logits[i];
    double sum = 0.0;
    for (size_t i = 0; i < n_vocab; ++i) sum += std::exp((double)logits[i] - mx);
    const double log_z = mx + std::log(sum);
    logprob = (float)((double)logits[token] - log_z);
    top_tokens.clear();
    top_logprobs.clear();
    if (top_n == 0) return;
    std::vector<int32_t> ids;
    ids.reserve(top_n + 1);
    // Keep the best top_n seen so far in a small sorted list (top_n <= 20).
    auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
    for (size_t i = 0; i < n_vocab; ++i) {
        const int32_t id = (int32_t)i;
        if (ids.size() == top_n && !better(id, ids.back())) continue;
        ids.insert(std::upper_bound(ids.begin(), ids.end(), id, better), id);
        if (ids.size() > top_n) ids.pop_back();
    }
    for (int32_t id : ids) {
        top_tokens.push_back(id);
        top_logprobs.push_back((float)((double)logits[id] - log_z));
    }
}

} // namespace vt
