#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "grammar/token-matcher.h"

namespace vt {

namespace {

// The one order of the whole file: higher logit first, then lower id. It is a
// strict total order on distinct ids (NaN never reaches it), so every sort
// and partial sort below has a unique result on every standard library.
inline bool better(const SamplerCandidate &x, const SamplerCandidate &y) {
    return x.logit > y.logit || (x.logit == y.logit && x.id < y.id);
}

// exp(l - max) with the inf - inf cases defined: equal infinities weigh 1
// (all -inf rows are uniform; +inf logits share the mass).
inline float rel_exp(float l, float max) {
    float d = l - max;
    return d == d ? std::exp(d) : 1.0f;
}

// llama.cpp's top-p sorts a bucketed prefix first; we partial-sort this many
// and only sort the rest when the nucleus is wider.
constexpr size_t kTopPPrefix = 256;

} // namespace

// ---- building the chain ------------------------------------------------------

Sampler::Sampler(const Sampler &o)
    : stages_(o.stages_),
      matcher_(o.matcher_ ? std::make_shared<grammar::TokenMatcher>(*o.matcher_) : nullptr),
      final_(o.final_), seed_(o.seed_), rng_(o.rng_) {}

void Sampler::check_open() const {
    if (final_ != Final::none)
        fail(VT_ERR_INVALID_STATE, "sampler: no stage may follow a final stage (greedy/dist)");
}

void Sampler::add_penalties(int32_t last_n, float repeat, float freq, float present) {
    check_open();
    if (last_n < -1) fail(VT_ERR_INVALID_ARGUMENT, "penalties: last_n must be >= -1, got %d", last_n);
    if (!(repeat > 0.0f) || !std::isfinite(repeat))
        fail(VT_ERR_INVALID_ARGUMENT, "penalties: repeat must be a finite value > 0, got %g", repeat);
    if (!std::isfinite(freq) || !std::isfinite(present))
        fail(VT_ERR_INVALID_ARGUMENT, "penalties: freq and present must be finite");
    Stage s{};
    s.kind = Kind::penalties;
    s.n = last_n;
    s.a = repeat;
    s.b = freq;
    s.c = present;
    stages_.push_back(std::move(s));
}

void Sampler::add_top_k(int32_t k) {
    check_open();
    Stage s{};
    s.kind = Kind::top_k;
    s.n = k;
    stages_.push_back(std::move(s));
}

void Sampler::add_top_p(float p, size_t min_keep) {
    check_open();
    if (!(p >= 0.0f && p <= 1.0f)) fail(VT_ERR_INVALID_ARGUMENT, "top_p: p must be in [0, 1], got %g", p);
    Stage s{};
    s.kind = Kind::top_p;
    s.a = p;
    s.min_keep = min_keep;
    stages_.push_back(std::move(s));
}

void Sampler::add_min_p(float p, size_t min_keep) {
    check_open();
    if (!(p >= 0.0f && p <= 1.0f)) fail(VT_ERR_INVALID_ARGUMENT, "min_p: p must be in [0, 1], got %g", p);
    Stage s{};
    s.kind = Kind::min_p;
    s.a = p;
    s.min_keep = min_keep;
    stages_.push_back(std::move(s));
}

void Sampler::add_temp(float t) {
    check_open();
    if (!std::isfinite(t)) fail(VT_ERR_INVALID_ARGUMENT, "temp: t must be finite, got %g", t);
    Stage s{};
    s.kind = Kind::temp;
    s.a = t;
    stages_.push_back(std::move(s));
}

void Sampler::add_logit_bias(const int32_t *tokens, const float *bias, size_t n) {
    check_open();
    if (n && (!tokens || !bias)) fail(VT_ERR_INVALID_ARGUMENT, "logit_bias: tokens and bias must not be NULL");
    Stage s{};
    s.kind = Kind::logit_bias;
    for (size_t i = 0; i < n; ++i) {
        if (tokens[i] < 0) fail(VT_ERR_INVALID_ARGUMENT, "logit_bias: token %d is negative", tokens[i]);
        if (std::isnan(bias[i]) || bias[i] == std::numeric_limits<float>::infinity())
            fail(VT_ERR_INVALID_ARGUMENT, "logit_bias: the bias of token %d is NaN or +inf", tokens[i]);
        s.bias.push_back({tokens[i], bias[i]});
    }
    // A token listed twice gets both biases.
    std::sort(s.bias.begin(), s.bias.end(), [](auto &a, auto &b) { return a.first < b.first; });
    size_t j = 0;
    for (size_t i = 0; i < s.bias.size(); ++i) {
        if (j && s.bias[j - 1].first == s.bias[i].first) {
            s.bias[j - 1].second += s.bias[i].second;
        } else {
            s.bias[j++] = s.bias[i];
        }
    }
    s.bias.resize(j);
    stages_.push_back(std::move(s));
}

void Sampler::add_grammar(std::shared_ptr<const grammar::CompiledGrammar> g) {
    check_open();
    if (!g) fail(VT_ERR_INVALID_ARGUMENT, "grammar: NULL");
    if (matcher_) fail(VT_ERR_INVALID_STATE, "grammar: the chain already has a grammar stage");
    matcher_ = std::make_shared<grammar::TokenMatcher>(std::move(g));
    Stage s{};
    s.kind = Kind::grammar;
    stages_.push_back(std::move(s));
}

void Sampler::add_greedy() {
    check_open();
    final_ = Final::greedy;
}

void Sampler::add_dist(uint32_t seed) {
    check_open();
    final_ = Final::dist;
    seed_ = seed;
    rng_.seed(seed);
}

// ---- history ------------------------------------------------------------------

void Sampler::accept(int32_t token) {
    if (token < 0) fail(VT_ERR_INVALID_ARGUMENT, "sampler accept: token %d is negative", token);
    if (matcher_ && !matcher_->accept(token))
        fail(VT_ERR_INVALID_ARGUMENT, "sampler accept: the grammar does not allow token %d here", token);
    for (Stage &s : stages_) {
        if (s.kind != Kind::penalties || s.n == 0) continue;
        History &h = s.hist;
        if (s.n > 0) {
            size_t cap = (size_t)s.n;
            if (h.ring.size() < cap) {
                h.ring.push_back(token);
            } else {
                int32_t old = h.ring[h.head];
                auto it = h.counts.find(old);
                if (--it->second == 0) h.counts.erase(it);
                h.ring[h.head] = token;
                h.head = (h.head + 1) % cap;
            }
        }
        ++h.counts[token];
    }
}

void Sampler::reset() {
    for (Stage &s : stages_) {
        s.hist.ring.clear();
        s.hist.head = 0;
        s.hist.counts.clear();
    }
    if (matcher_) matcher_->reset();
    if (final_ == Final::dist) rng_.seed(seed_);
}

bool Sampler::grammar_completed() const { return matcher_ && matcher_->is_completed(); }

// ---- stages -------------------------------------------------------------------

// llama.cpp llama_sampler_penalties_apply: for each token seen in the window,
// logit <= 0 ? logit *= repeat : logit /= repeat, then
// logit -= count * freq + (count > 0) * present.
void Sampler::run_penalties(Stage &s) {
    const float repeat = s.a, freq = s.b, present = s.c;
    if (s.n == 0 || (repeat == 1.0f && freq == 0.0f && present == 0.0f)) return;
    const auto &counts = s.hist.counts;
    if (counts.empty()) return;
    auto penalize = [&](SamplerCandidate &c, int32_t count) {
        c.logit = c.logit <= 0.0f ? c.logit * repeat : c.logit / repeat;
        c.logit -= (float)count * freq + (count > 0 ? present : 0.0f);
    };
    if (identity_) {
        // Candidates still are the full row in id order: index directly.
        for (const auto &[tok, count] : counts)
            if ((size_t)tok < n_) penalize(cands_[(size_t)tok], count);
    } else {
        for (size_t i = 0; i < n_; ++i) {
            auto it = counts.find(cands_[i].id);
            if (it != counts.end()) penalize(cands_[i], it->second);
        }
    }
    sorted_ = false;
}

void Sampler::sort_prefix(size_t m) {
    m = std::min(m, n_);
    if (sorted_) return;
    if (m == n_) {
        std::sort(cands_.begin(), cands_.begin() + (ptrdiff_t)n_, better);
        sorted_ = true;
    } else {
        std::partial_sort(cands_.begin(), cands_.begin() + (ptrdiff_t)m,
                          cands_.begin() + (ptrdiff_t)n_, better);
    }
    identity_ = false;
}

// Keep the k best (k <= 0: all). When k >= n nothing changes, not even order.
void Sampler::run_top_k(int32_t k) {
    if (k <= 0 || (size_t)k >= n_) return;
    sort_prefix((size_t)k);
    n_ = (size_t)k;
    sorted_ = true;
}

// llama.cpp top-p: the shortest prefix of the sorted candidates whose
// probability mass reaches p, but at least min_keep. Probabilities are those
// of the softmax over the current candidates. Leaves the survivors sorted.
void Sampler::run_top_p(float p, size_t min_keep) {
    if (p >= 1.0f || n_ == 0) return;
    float max = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < n_; ++i) max = std::max(max, cands_[i].logit);
    double sum = 0.0;
    for (size_t i = 0; i < n_; ++i) sum += rel_exp(cands_[i].logit, max);
    const double target = (double)p * sum;

    size_t m = sorted_ ? n_ : std::min(n_, kTopPPrefix);
    sort_prefix(m);
    double cum = 0.0;
    size_t keep = n_;
    for (size_t i = 0; i < n_; ++i) {
        if (i == m) {
            // The nucleus is wider than the sorted prefix: sort the rest
            // (the prefix already holds the m best, in order).
            std::sort(cands_.begin() + (ptrdiff_t)m, cands_.begin() + (ptrdiff_t)n_, better);
            m = n_;
        }
        cum += rel_exp(cands_[i].logit, max);
        if (cum >= target && i + 1 >= min_keep) {
            keep = i + 1;
            break;
        }
    }
    // Either we broke inside the sorted prefix, or the walk reached the end
    // (rounding, or min_keep > n) after sorting everything: sorted either way.
    n_ = keep;
    sorted_ = true;
}

// llama.cpp min-p: keep tokens with logit >= max + log(p), i.e. probability
// >= p * max probability, in their current order; if fewer than min_keep
// pass, keep the min_keep best (sorted).
void Sampler::run_min_p(float p, size_t min_keep) {
    if (p <= 0.0f || n_ == 0) return;
    float max = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < n_; ++i) max = std::max(max, cands_[i].logit);
    const float min_logit = max + std::log(p);
    size_t pass = 0;
    for (size_t i = 0; i < n_; ++i) pass += cands_[i].logit >= min_logit;
    if (pass == n_) return;
    if (pass >= min_keep) {
        size_t j = 0;
        for (size_t i = 0; i < n_; ++i)
            if (cands_[i].logit >= min_logit) cands_[j++] = cands_[i];
        n_ = j;  // a stable filter: a sorted list stays sorted
        identity_ = false;
    } else {
        sort_prefix(min_keep);
        n_ = std::min(min_keep, n_);
        sorted_ = true;
    }
}

// llama.cpp temperature: divide by t; t <= 0 keeps only the best candidate.
void Sampler::run_temp(float t) {
    if (n_ == 0) return;
    if (t <= 0.0f) {
        size_t i = argmax();
        cands_[0] = cands_[i];
        n_ = 1;
        sorted_ = true;
        identity_ = false;
        return;
    }
    if (t == 1.0f) return;
    for (size_t i = 0; i < n_; ++i) cands_[i].logit /= t;
}

void Sampler::run_logit_bias(const Stage &s) {
    if (identity_) {
        for (const auto &[tok, b] : s.bias)
            if ((size_t)tok < n_) cands_[(size_t)tok].logit += b;
    } else {
        for (size_t i = 0; i < n_; ++i) {
            auto it = std::lower_bound(s.bias.begin(), s.bias.end(), cands_[i].id,
                                       [](auto &p, int32_t id) { return p.first < id; });
            if (it != s.bias.end() && it->first == cands_[i].id) cands_[i].logit += it->second;
        }
    }
    sorted_ = false;
}

// Removes the candidates the grammar does not allow (a stable filter).
void Sampler::run_grammar() {
    const auto &v = matcher_->compiled().vocab();
    mask_.resize((v.n_vocab + 31) / 32);
    matcher_->fill_mask(mask_.data());
    auto allowed = [&](int32_t id) {
        return (uint32_t)id < v.n_vocab && ((mask_[(size_t)id >> 5] >> (id & 31)) & 1);
    };
    size_t j = 0;
    for (size_t i = 0; i < n_; ++i)
        if (allowed(cands_[i].id)) cands_[j++] = cands_[i];
    if (j == 0) {
        // Nothing allowed (the matcher has terminated): end of generation.
        for (size_t i = 0; i < n_; ++i) {
            int32_t id = cands_[i].id;
            if (std::find(v.eog.begin(), v.eog.end(), id) != v.eog.end()) cands_[j++] = cands_[i];
        }
        if (j == 0) return;  // no end-of-generation token either: leave the row as it is
    }
    if (j != n_) identity_ = false;
    n_ = j;
}

size_t Sampler::argmax() const {
    if (sorted_) return 0;
    size_t best = 0;
    for (size_t i = 1; i < n_; ++i)
        if (better(cands_[i], cands_[best])) best = i;
    return best;
}

// A draw from the softmax of the candidates in their current order:
// target = u * sum(w), the first i whose running sum of w exceeds target.
// Zero-weight candidates are never chosen.
size_t Sampler::draw() {
    float max = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < n_; ++i) max = std::max(max, cands_[i].logit);
    double sum = 0.0;
    for (size_t i = 0; i < n_; ++i) sum += rel_exp(cands_[i].logit, max);
    const uint32_t r = (uint32_t)rng_();
    const double u = (double)(r >> 8) * (1.0 / 16777216.0);  // [0, 1), 24 bits
    const double target = u * sum;
    double cum = 0.0;
    size_t last_nonzero = argmax();
    for (size_t i = 0; i < n_; ++i) {
        float w = rel_exp(cands_[i].logit, max);
        if (w <= 0.0f) continue;
        cum += w;
        last_nonzero = i;
        if (target < cum) return i;
    }
    return last_nonzero;  // only reached through rounding at u close to 1
}

// ---- running the chain ----------------------------------------------------------

void Sampler::apply_unmasked(const float *logits, size_t n_vocab) {
    load(logits, n_vocab);
    run_stages(true);
}

std::span<const SamplerCandidate> Sampler::apply(const float *logits, size_t n_vocab) {
    load(logits, n_vocab);
    run_stages(false);
    return {cands_.data(), n_};
}

void Sampler::load(const float *logits, size_t n_vocab) {
    if (!logits) fail(VT_ERR_INVALID_ARGUMENT, "sampler: logits is NULL");
    if (n_vocab == 0 || n_vocab > (size_t)std::numeric_limits<int32_t>::max())
        fail(VT_ERR_INVALID_ARGUMENT, "sampler: n_vocab %zu out of range", n_vocab);
    if (cands_.size() < n_vocab) cands_.resize(n_vocab);  // the only allocation
    for (size_t i = 0; i < n_vocab; ++i) {
        float l = logits[i];
        cands_[i] = {(int32_t)i, l == l ? l : -std::numeric_limits<float>::infinity()};
    }
    n_ = n_vocab;
    sorted_ = false;
    identity_ = true;
}

void Sampler::run_stages(bool skip_grammar) {
    for (Stage &s : stages_) {
        switch (s.kind) {
        case Kind::penalties: run_penalties(s); break;
        case Kind::top_k: run_top_k(s.n); break;
        case Kind::top_p: run_top_p(s.a, s.min_keep); break;
        case Kind::min_p: run_min_p(s.a, s.min_keep); break;
        case Kind::temp: run_temp(s.a); break;
        case Kind::logit_bias: run_logit_bias(s); break;
        case Kind::grammar:
            if (!skip_grammar) run_grammar();
            break;
        }
    }
}

int32_t Sampler::sample(const float *logits, size_t n_vocab) {
    if (final_ == Final::none)
        fail(VT_ERR_INVALID_STATE, "sampler: the chain must end in greedy or dist");
    if (matcher_ && final_ == Final::greedy && stages_[0].kind == Kind::grammar) {
        // Greedy under a grammar that comes first: the best token of the
        // unmasked chain, if the grammar allows it, is also the best allowed
        // one (every other stage keeps the best candidate), so the full mask
        // is computed only when it is not.
        apply_unmasked(logits, n_vocab);
        int32_t t = cands_[argmax()].id;
        if (matcher_->allows(t)) return t;
    }
    apply(logits, n_vocab);
    size_t i = final_ == Final::greedy ? argmax() : draw();
    return cands_[i].id;
}

} // namespace vt
