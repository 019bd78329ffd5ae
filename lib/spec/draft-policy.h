// When drafting pays (speculative decoding under load). A step's time grows
// with its tokens, T(n) ~ a + b n: at batch 1 a dominates (the weights are
// read once however many tokens use them) and a draft token is nearly free;
// at a large batch b n dominates and a draft token costs as much as any
// other. A draft token accepted with probability alpha earns alpha tokens for
// b seconds, while the step makes B tokens (B decoding requests) in a + b B:
// it pays when alpha / b > B / (a + b B). The policy fits a and b to the
// engine's own steps (least squares, exponentially forgotten) and alpha to
// its verifications, so the batch size where drafting stops is measured on
// the machine and model at hand, not configured (vLLM's
// disable_by_batch_size, made automatic). The engine shows it decode steps
// only (a prompt chunk's tokens cost differently). With too little to go on
// (no spread in step sizes yet) it drafts, which makes the spread. Once in
// kProbeEvery steps that would not draft, one request drafts (a probe,
// draft_now): the acceptance is measured only on drafts, and the text the
// requests make changes (a suffix cache fills, a request starts copying),
// so a policy that stopped drafting would otherwise never see that it pays
// again; one request's draft keeps the probe's cost to a few tokens.
//
// Not thread-safe: the engine's thread.
#pragma once

#include <cstdint>

namespace vt {

class DraftPolicy {
public:
    void observe_step(uint32_t n_tokens, double seconds);
    void observe_verification(uint32_t drafted, uint32_t accepted);
    // Whether a draft token is expected to earn more than it costs with
    // n_decodes requests decoding in a step.
    bool worth_drafting(uint32_t n_decodes) const;
    // What a step drafts: every request (worth_drafting), one (a probe, once
    // in kProbeEvery steps that are not worth it) or none.
    enum class Drafts { none, probe, all };
    Drafts draft_now(uint32_t n_decodes);
    static constexpr uint32_t kProbeEvery = 32;

    double acceptance() const { return drafted_ > 0 ? accepted_ / drafted_ : 1.0; }
    // The fitted step time a + b n; false while the steps seen have no spread.
    bool cost(double &a, double &b) const;

private:
    double s0_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;  // weighted sums of (n, seconds)
    double drafted_ = 0, accepted_ = 0;                     // weighted draft tokens, accepted ones
    uint32_t skipped_ = 0;                                  // steps not drafted since the last draft
};

} // namespace vt
