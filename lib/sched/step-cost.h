// What a step costs in time, learned from the steps the engine runs, so the
// scheduler can size prompt chunks by the time they add to a step rather
// than by a token count (issue 43: a bf16 model's prompt token costs 3x a
// Q4 one's, relative to its decode step, so one token rule cannot fit both).
//
// The model is linear in what a step computes:
//     seconds = fixed + per_token * tokens + per_logit_row * logit_rows
// fixed is the weight read and the per-step overheads (a decode step of a
// small batch is bandwidth-bound), per_token the compute every token does
// in every layer, per_logit_row the output projection and sampling of a
// sequence that needs logits (a decode token needs one, a prompt chunk
// only at its end). A decode of D sequences then costs fixed + D *
// (per_token + per_logit_row) and P prompt tokens beside it add
// P * per_token.
//
// Fitted by least squares over the recent steps (exponential forgetting, so
// it follows a changing load: other processes, a growing context), and
// kept from the last fit that was well determined: a stationary load gives
// steps of the same shape, which say nothing about the slope. No
// coefficient may be negative (non-negative least squares).
#pragma once

#include <cstdint>

namespace vt {

class StepCost {
public:
    // A step that computed tokens tokens, logit_rows of them with logits,
    // in seconds (forward pass and sampling).
    void observe(uint32_t tokens, uint32_t logit_rows, double seconds);

    bool ready() const { return ready_; }
    double fixed() const { return fixed_; }
    double per_token() const { return per_token_; }
    double per_logit_row() const { return per_logit_row_; }
    double predict(uint32_t tokens, uint32_t logit_rows) const {
        return fixed_ + tokens * per_token_ + logit_rows * per_logit_row_;
    }
    // Predicted seconds of a step of D decodes (D tokens, D logit rows).
    double decode_step(uint32_t decodes) const { return predict(decodes, decodes); }

private:
    void refit();
    bool solve(unsigned mask, double theta[3]) const;

    // Each observation's weight decays by this factor per later step:
    // about the last 100 steps count.
    static constexpr double kForget = 0.99;
    // Steps seen (weighted) before the first fit: one step's time is noisy.
    static constexpr double kMinSteps = 24;

    // Weighted sums of x x^T and x t over x = (1, tokens, logit_rows).
    double xx_[3][3] = {}, xt_[3] = {}, tt_ = 0;
    double steps_ = 0;  // weighted step count
    bool ready_ = false;
    double fixed_ = 0, per_token_ = 0, per_logit_row_ = 0;
};

} // namespace vt
