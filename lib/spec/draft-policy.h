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
// (no spread in step sizes yet) it drafts, which makes the spread, but for
// one step in kProbeEvery. Once in
// kProbeEvery steps that would not draft, one request drafts (a probe,
// draft_now): the acceptance is measured only on drafts, and the text the
// requests make changes (a suffix cache fills, a request starts copying),
// so a policy that stopped drafting would otherwise never see that it pays
// again; one request's draft keeps the probe's cost to a few tokens.
//
// Making the draft may cost time too (a draft model's passes; an n-gram or
// suffix lookup's is small): with D(n) = c + d n the time to draft for n
// requests, per token drafted (the proposal's time over its k), a draft
// token costs b + D(B) / B, which the rule above uses in place of b. D is
// fitted as the step time is; before it has spread, its mean per request.
//
// Not thread-safe: the engine's thread.
#pragma once

#include <cstdint>

namespace vt {

class DraftPolicy {
public:
    void observe_step(uint32_t n_tokens, double seconds);
    void observe_verification(uint32_t drafted, uint32_t accepted);
    // A proposal for n_requests requests of up to k tokens took seconds.
    void observe_proposal(uint32_t n_requests, uint32_t k, double seconds);
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
    bool cost(double &a, double &b) const { return steps_.fit(a, b); }
    // The time to draft one token for each of n requests, D(n) / n (0 before
    // any proposal was seen).
    double draft_cost(uint32_t n) const;

private:
    // y ~ a + b x by weighted least squares, older points forgotten.
    struct LinearFit {
        double s0 = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
        void observe(double x, double y);
        bool fit(double &a, double &b) const;  // false without spread in x
    };
    LinearFit steps_;                    // (tokens, seconds) of decode steps
    LinearFit proposals_;                // (requests, seconds per drafted position) of proposals
    double drafted_ = 0, accepted_ = 0;  // weighted draft tokens, accepted ones
    uint32_t skipped_ = 0;   // steps not drafted since the last draft
    uint32_t unfitted_ = 0;  // steps asked about before the step cost had a fit
};

} // namespace vt
