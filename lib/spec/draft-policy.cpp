#include "spec/draft-policy.h"

namespace vt {

namespace {
// Forgetting per observation: about the last 100 steps count (load and the
// requests' text change), and the last few hundred draft tokens.
constexpr double kStepDecay = 0.99, kDraftDecay = 0.995;
} // namespace

void DraftPolicy::observe_step(uint32_t n_tokens, double seconds) {
    if (n_tokens == 0 || !(seconds > 0)) return;
    const double x = n_tokens;
    s0_ = kStepDecay * s0_ + 1;
    sx_ = kStepDecay * sx_ + x;
    sy_ = kStepDecay * sy_ + seconds;
    sxx_ = kStepDecay * sxx_ + x * x;
    sxy_ = kStepDecay * sxy_ + x * seconds;
}

void DraftPolicy::observe_verification(uint32_t drafted, uint32_t accepted) {
    for (uint32_t i = 0; i < drafted; ++i) {
        drafted_ = kDraftDecay * drafted_ + 1;
        accepted_ = kDraftDecay * accepted_ + (i < accepted ? 1 : 0);
    }
}

bool DraftPolicy::cost(double &a, double &b) const {
    const double var = s0_ * sxx_ - sx_ * sx_;
    // Spread of at least about one token among the steps seen.
    if (s0_ < 8 || var < 0.25 * s0_ * s0_) return false;
    b = (s0_ * sxy_ - sx_ * sy_) / var;
    a = (sy_ - b * sx_) / s0_;
    return true;
}

bool DraftPolicy::worth_drafting(uint32_t n_decodes) const {
    double a = 0, b = 0;
    if (n_decodes == 0 || !cost(a, b) || b <= 0) return true;
    // alpha / b > B / (a + b B), both sides positive.
    const double alpha = acceptance(), B = n_decodes;
    return alpha * (a + b * B) > B * b;
}

DraftPolicy::Drafts DraftPolicy::draft_now(uint32_t n_decodes) {
    if (worth_drafting(n_decodes)) {
        skipped_ = 0;
        return Drafts::all;
    }
    if (++skipped_ < kProbeEvery) return Drafts::none;
    skipped_ = 0;
    return Drafts::probe;
}

} // namespace vt
