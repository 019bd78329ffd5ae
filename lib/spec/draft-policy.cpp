#include "spec/draft-policy.h"

namespace vt {

namespace {
// Forgetting per observation: about the last 100 steps count (load and the
// requests' text change), and the last few hundred draft tokens.
constexpr double kStepDecay = 0.99, kDraftDecay = 0.995;
} // namespace

void DraftPolicy::LinearFit::observe(double x, double y) {
    s0 = kStepDecay * s0 + 1;
    sx = kStepDecay * sx + x;
    sy = kStepDecay * sy + y;
    sxx = kStepDecay * sxx + x * x;
    sxy = kStepDecay * sxy + x * y;
}

bool DraftPolicy::LinearFit::fit(double &a, double &b) const {
    const double var = s0 * sxx - sx * sx;
    // Spread of at least about one unit among the points seen.
    if (s0 < 8 || var < 0.25 * s0 * s0) return false;
    b = (s0 * sxy - sx * sy) / var;
    a = (sy - b * sx) / s0;
    return true;
}

void DraftPolicy::observe_step(uint32_t n_tokens, double seconds) {
    if (n_tokens == 0 || !(seconds > 0)) return;
    steps_.observe(n_tokens, seconds);
}

void DraftPolicy::observe_proposal(uint32_t n_requests, uint32_t k, double seconds) {
    if (n_requests == 0 || k == 0 || !(seconds >= 0)) return;
    proposals_.observe(n_requests, seconds / k);
}

void DraftPolicy::observe_verification(uint32_t drafted, uint32_t accepted) {
    for (uint32_t i = 0; i < drafted; ++i) {
        drafted_ = kDraftDecay * drafted_ + 1;
        accepted_ = kDraftDecay * accepted_ + (i < accepted ? 1 : 0);
    }
}

double DraftPolicy::draft_cost(uint32_t n) const {
    if (proposals_.s0 == 0 || n == 0) return 0;
    double c = 0, d = 0;
    // Without spread (or with a fit that says drafting more costs less), the
    // mean time per request drafted for.
    if (!proposals_.fit(c, d) || d < 0 || c < 0) return proposals_.sy / proposals_.sx;
    return (c + d * n) / n;
}

bool DraftPolicy::worth_drafting(uint32_t n_decodes) const {
    double a = 0, b = 0;
    if (n_decodes == 0 || !cost(a, b) || b <= 0) return true;
    // alpha / (b + D(B) / B) > B / (a + b B), both sides positive.
    const double alpha = acceptance(), B = n_decodes;
    return alpha * (a + b * B) > B * (b + draft_cost(n_decodes));
}

DraftPolicy::Drafts DraftPolicy::draft_now(uint32_t n_decodes) {
    // Before the step cost is known the requests draft, but one step in
    // kProbeEvery does not: drafts of a fixed length (a draft model's) alone
    // would give every step of one request the same size, and no fit.
    double a = 0, b = 0;
    if (!cost(a, b) && ++unfitted_ % kProbeEvery == 0) return Drafts::none;
    if (worth_drafting(n_decodes)) {
        skipped_ = 0;
        return Drafts::all;
    }
    if (++skipped_ < kProbeEvery) return Drafts::none;
    skipped_ = 0;
    return Drafts::probe;
}

} // namespace vt
