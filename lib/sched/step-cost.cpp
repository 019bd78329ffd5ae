#include "sched/step-cost.h"

#include <cmath>
#include <utility>

namespace vt {

void StepCost::observe(uint32_t tokens, uint32_t logit_rows, double seconds) {
    if (tokens == 0 || !(seconds > 0) || !std::isfinite(seconds)) return;
    const double x[3] = {1.0, (double)tokens, (double)logit_rows};
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) xx_[i][j] = kForget * xx_[i][j] + x[i] * x[j];
        xt_[i] = kForget * xt_[i] + x[i] * seconds;
    }
    steps_ = kForget * steps_ + 1.0;
    refit();
}

void StepCost::refit() {
    // The slopes are only determined when the steps differ in size and
    // their prompt tokens vary apart from their logit rows (in decode-only
    // steps the two are equal, and the fit could not tell them apart).
    if (steps_ < 8) return;
    const double w = xx_[0][0];
    const double mt = xx_[0][1] / w, ml = xx_[0][2] / w;
    const double vt = xx_[1][1] / w - mt * mt, vl = xx_[2][2] / w - ml * ml, cov = xx_[1][2] / w - mt * ml;
    if (vt < 1.0 || vl < 0.1 || cov * cov > 0.95 * vt * vl) return;

    // The normal equations, by Gaussian elimination with partial pivoting.
    double a[3][4];
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) a[i][j] = xx_[i][j];
        a[i][3] = xt_[i];
    }
    for (int c = 0; c < 3; ++c) {
        int p = c;
        for (int r = c + 1; r < 3; ++r)
            if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
        if (a[p][c] == 0) return;
        for (int j = 0; j < 4; ++j) std::swap(a[c][j], a[p][j]);
        for (int r = 0; r < 3; ++r) {
            if (r == c) continue;
            const double f = a[r][c] / a[c][c];
            for (int j = c; j < 4; ++j) a[r][j] -= f * a[c][j];
        }
    }
    const double fixed = a[0][3] / a[0][0], per_token = a[1][3] / a[1][1], per_logit = a[2][3] / a[2][2];
    // Noise or a load that is not linear in tokens can give a fit that
    // would make prompts free or decodes cost nothing; keep the last one.
    // (A prompt token at under 1e-4 of a one-sequence step is such a case:
    // rounding of a flat fit.)
    const double one = fixed + per_token + per_logit;
    if (!(one > 0) || !(per_token > 1e-4 * one) || !std::isfinite(one)) return;
    fixed_ = fixed;
    per_token_ = per_token;
    per_logit_row_ = per_logit;
    ready_ = true;
}

} // namespace vt
