#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
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
// The same order as a type, for the sorts: a function pointer would make
// every comparison an indirect call.
struct Better {
    bool operator()(const SamplerCandidate &x, const SamplerCandidate &y) const { return better(x, y); }
};

// exp(l - max) with the inf - inf cases defined: equal infinities weigh 1
// (all -inf rows are uniform; +inf logits share the mass).
inline float rel_exp(float l, float max) {
    float d = l - max;
    return d == d ? std::exp(d) : 1.0f;
}

// llama.cpp's top-p sorts a bucketed prefix first; we partial-sort this many
// and only sort the rest when the nucleus is wider.
constexpr size_t kTopPPrefix = 256;

// llama.cpp's penalty of one token seen `count` times (see run_penalties);
// the one arithmetic of both the candidate list and the edited row.
inline float penalized(float logit, int32_t count, float repeat, float freq, float present) {
    logit = logit <= 0.0f ? logit * repeat : logit / repeat;
    return logit - ((float)count * freq + (count > 0 ? present : 0.0f));
}

bool penalties_act(int32_t last_n, float repeat, float freq, float present, size_t n_counts) {
    return last_n != 0 && !(repeat == 1.0f && freq == 0.0f && present == 0.0f) && n_counts != 0;
}

// The maximum scans run on GCC/Clang vector types: kLanes independent
// running maxima (x > m ? x : m is what maxps computes, so NaN never
// replaces m), lowered to whatever vectors the target has.
typedef float Vec4 __attribute__((vector_size(16)));
constexpr size_t kLanes = 16;
// Elements per block of the top-k bound (four lane rounds).
constexpr size_t kBlock = 64;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline Vec4 load4(const float *p) {
    Vec4 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline Vec4 splat(float x) { return Vec4{x, x, x, x}; }

inline Vec4 vmax(Vec4 x, Vec4 m) { return x > m ? x : m; }

// The greatest non-NaN value of p[0..n), -inf if none.
inline float max_of(const float *p, size_t n) {
    Vec4 a0 = splat(kNegInf), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        a0 = vmax(load4(p + i), a0);
        a1 = vmax(load4(p + i + 4), a1);
        a2 = vmax(load4(p + i + 8), a2);
        a3 = vmax(load4(p + i + 12), a3);
    }
    a0 = vmax(vmax(a2, a0), vmax(a3, a1));
    float m = kNegInf;
    for (; i < n; ++i) m = p[i] > m ? p[i] : m;
    for (int j = 0; j < 4; ++j) m = a0[j] > m ? a0[j] : m;
    return m;
}

} // namespace

size_t first_max_index(const float *row, size_t n) {
    const float m = max_of(row, n);
    // Everything -inf or NaN: the first element is as good as any, and the
    // lowest id wins ties.
    if (m == kNegInf) return 0;
    size_t i = 0;
    const Vec4 mv = splat(m);
    for (; i + kLanes <= n; i += kLanes) {
        const auto hit = (load4(row + i) == mv) | (load4(row + i + 4) == mv) | (load4(row + i + 8) == mv) |
                         (load4(row + i + 12) == mv);
        if (hit[0] | hit[1] | hit[2] | hit[3]) break;
    }
    for (; i < n; ++i)
        if (row[i] == m) return i;
    return 0;  // not reached: m is one of the values
}

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
        c.logit = penalized(c.logit, count, repeat, freq, present);
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
        std::sort(cands_.begin(), cands_.begin() + (ptrdiff_t)n_, Better{});
        sorted_ = true;
    } else {
        std::partial_sort(cands_.begin(), cands_.begin() + (ptrdiff_t)m,
                          cands_.begin() + (ptrdiff_t)n_, Better{});
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
    if (weights_.size() < n_) weights_.resize(std::max(n_, cands_.size()));
    float *w = weights_.data();
    double sum = 0.0;
    for (size_t i = 0; i < n_; ++i) {
        w[i] = rel_exp(cands_[i].logit, max);
        sum += w[i];
    }
    const double target = (double)p * sum;

    size_t m = sorted_ ? n_ : nucleus_prefix(max, target);
    double cum = 0.0;
    size_t keep = n_;
    for (size_t i = 0; i < n_; ++i) {
        if (i == m) {
            // The nucleus is wider than the sorted prefix: sort the rest
            // (the prefix already holds the m best, in order).
            std::sort(cands_.begin() + (ptrdiff_t)m, cands_.begin() + (ptrdiff_t)n_, Better{});
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

// Sorts a prefix of the candidates that holds the m best, in order, and
// returns m: the kTopPPrefix best for short lists; for long ones, every
// candidate in the logit buckets (below the maximum) whose weights (the
// first n_ of weights_) reach the target, and one bucket more against
// rounding. A bucket is a range of logits, so those candidates are the m
// best, whatever order the partition leaves them in before the sort.
size_t Sampler::nucleus_prefix(float max, double target) {
    constexpr int kBuckets = 512;
    constexpr float kPerLogit = 8.0f;  // buckets of 1/8 logit, 64 logits below the maximum
    const size_t prefix = std::min(n_, kTopPPrefix);
    if (n_ <= 4 * kTopPPrefix || !std::isfinite(max)) {
        sort_prefix(prefix);
        return prefix;
    }
    // Monotone in the logit, equal logits in one bucket; -inf in the last.
    auto bucket = [&](float l) {
        const float d = (max - l) * kPerLogit;
        return d < (float)(kBuckets - 1) ? (int)d : kBuckets - 1;
    };
    double mass[kBuckets] = {};
    const float *w = weights_.data();
    for (size_t i = 0; i < n_; ++i) mass[bucket(cands_[i].logit)] += w[i];
    const double want = target * (1.0 + 1e-9);
    double cum = 0.0;
    int last = kBuckets - 1;
    for (int b = 0; b < kBuckets - 1; ++b) {
        cum += mass[b];
        if (cum >= want) {
            last = std::min(b + 1, kBuckets - 2);
            break;
        }
    }
    if (last == kBuckets - 1) {  // the nucleus reaches far down: as for short lists
        sort_prefix(prefix);
        return prefix;
    }
    const auto mid = std::partition(cands_.begin(), cands_.begin() + (ptrdiff_t)n_,
                                    [&](const SamplerCandidate &c) { return bucket(c.logit) <= last; });
    std::sort(cands_.begin(), mid, Better{});
    identity_ = false;
    return (size_t)(mid - cands_.begin());
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
    // Each weight is computed once: the walk reads back the very values summed.
    if (weights_.size() < n_) weights_.resize(std::max(n_, cands_.size()));
    float *w = weights_.data();
    double sum = 0.0;
    for (size_t i = 0; i < n_; ++i) {
        w[i] = rel_exp(cands_[i].logit, max);
        sum += w[i];
    }
    const uint32_t r = (uint32_t)rng_();
    const double u = (double)(r >> 8) * (1.0 / 16777216.0);  // [0, 1), 24 bits
    const double target = u * sum;
    double cum = 0.0;
    bool any = false;
    size_t last_nonzero = 0;
    for (size_t i = 0; i < n_; ++i) {
        if (w[i] <= 0.0f) continue;
        cum += w[i];
        last_nonzero = i;
        any = true;
        if (target < cum) return i;
    }
    // Only reached through rounding at u close to 1 (or no weight at all).
    return any ? last_nonzero : argmax();
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

void Sampler::check_row(const float *logits, size_t n_vocab) {
    if (!logits) fail(VT_ERR_INVALID_ARGUMENT, "sampler: logits is NULL");
    if (n_vocab == 0 || n_vocab > (size_t)std::numeric_limits<int32_t>::max())
        fail(VT_ERR_INVALID_ARGUMENT, "sampler: n_vocab %zu out of range", n_vocab);
}

void Sampler::load(const float *logits, size_t n_vocab) {
    check_row(logits, n_vocab);
    if (cands_.size() < n_vocab) cands_.resize(n_vocab);  // the only allocation
    for (size_t i = 0; i < n_vocab; ++i) {
        float l = logits[i];
        cands_[i] = {(int32_t)i, l == l ? l : -std::numeric_limits<float>::infinity()};
    }
    n_ = n_vocab;
    sorted_ = false;
    identity_ = true;
}

void Sampler::run_stages(bool skip_grammar) { run_stages_from(0, skip_grammar); }

void Sampler::run_stages_from(size_t first, bool skip_grammar) {
    for (size_t i = first; i < stages_.size(); ++i) {
        Stage &s = stages_[i];
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
    check_row(logits, n_vocab);
    const int32_t t = sample_fast(logits, n_vocab);
    if (t >= 0) return t;
    apply(logits, n_vocab);
    return finish();
}

int32_t Sampler::finish() {
    size_t i = final_ == Final::greedy ? argmax() : draw();
    return cands_[i].id;
}

// ---- the shortcut -----------------------------------------------------------------

int32_t Sampler::sample_fast(const float *logits, size_t n_vocab) {
    if (matcher_) return -1;
    size_t lead = 0;
    while (lead < stages_.size() && (stages_[lead].kind == Kind::penalties || stages_[lead].kind == Kind::logit_bias))
        ++lead;
    const bool greedy_only = lead == stages_.size() && final_ == Final::greedy;
    const bool top_k = lead < stages_.size() && stages_[lead].kind == Kind::top_k && stages_[lead].n > 0 &&
                       (size_t)stages_[lead].n < n_vocab;
    if (!greedy_only && !top_k) return -1;
    const float *row = edited_row(logits, n_vocab, lead);
    if (!row) return -1;
    if (greedy_only) return (int32_t)first_max_index(row, n_vocab);
    if (!select_top_k(row, n_vocab, (size_t)stages_[lead].n)) return -1;
    run_stages_from(lead + 1, false);
    return finish();
}

const float *Sampler::edited_row(const float *logits, size_t n_vocab, size_t n_lead) {
    bool edits = false;
    for (size_t i = 0; i < n_lead; ++i) {
        const Stage &s = stages_[i];
        edits = edits || (s.kind == Kind::logit_bias ? !s.bias.empty()
                                                     : penalties_act(s.n, s.a, s.b, s.c, s.hist.counts.size()));
    }
    if (!edits) return logits;  // the scans below read NaN as -inf themselves
    if (row_.size() < n_vocab) row_.resize(n_vocab);
    float *row = row_.data();
    for (size_t i = 0; i < n_vocab; ++i) {
        const float l = logits[i];
        row[i] = l == l ? l : kNegInf;
    }
    // Each token's value depends only on its own logit and the stage: the
    // same values, in the same stage order, as on the candidate list.
    for (size_t i = 0; i < n_lead; ++i) {
        const Stage &s = stages_[i];
        if (s.kind == Kind::logit_bias) {
            for (const auto &[tok, b] : s.bias)
                if ((size_t)tok < n_vocab) {
                    row[(size_t)tok] += b;
                    if (row[(size_t)tok] != row[(size_t)tok]) return nullptr;  // +inf - inf: the full path's NaN
                }
        } else if (penalties_act(s.n, s.a, s.b, s.c, s.hist.counts.size())) {
            for (const auto &[tok, count] : s.hist.counts)
                if ((size_t)tok < n_vocab) {
                    row[(size_t)tok] = penalized(row[(size_t)tok], count, s.a, s.b, s.c);
                    if (row[(size_t)tok] != row[(size_t)tok]) return nullptr;
                }
        }
    }
    return row;
}

// The k-th best value is at least T, the k-th greatest of the block maxima
// (k blocks each hold a value >= T). So the blocks whose maximum is below T
// hold none of the k best, and neither do values below T: the k best of the
// row are the k best of what is gathered, in the one total order.
bool Sampler::select_top_k(const float *row, size_t n_vocab, size_t k) {
    const size_t n_blocks = (n_vocab + kBlock - 1) / kBlock;
    if (k * 4 > n_blocks) return false;  // the bound would gather most of the row
    if (block_max_.size() != n_blocks) {
        block_max_.resize(n_blocks);
        kth_.resize(n_blocks);
    }
    for (size_t b = 0; b < n_blocks; ++b)
        block_max_[b] = max_of(row + b * kBlock, std::min(kBlock, n_vocab - b * kBlock));
    std::copy(block_max_.begin(), block_max_.end(), kth_.begin());
    std::nth_element(kth_.begin(), kth_.begin() + (ptrdiff_t)(k - 1), kth_.end(), std::greater<float>());
    const float t = kth_[k - 1];
    if (t == kNegInf) return false;  // fewer than k finite values: -inf ties everywhere
    if (cands_.size() < n_vocab) cands_.resize(n_vocab);
    size_t m = 0;
    for (size_t b = 0; b < n_blocks; ++b) {
        if (block_max_[b] < t) continue;
        const size_t end = std::min(n_vocab, (b + 1) * kBlock);
        for (size_t i = b * kBlock; i < end; ++i)
            if (row[i] >= t) cands_[m++] = {(int32_t)i, row[i]};
    }
    std::partial_sort(cands_.begin(), cands_.begin() + (ptrdiff_t)k, cands_.begin() + (ptrdiff_t)m, Better{});
    n_ = k;
    sorted_ = true;
    identity_ = false;
    return true;
}

} // namespace vt
