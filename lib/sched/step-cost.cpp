#include "sched/step-cost.h"

#include <cmath>
#include <algorithm>
#include <utility>

namespace vt {

void StepCost::observe(uint32_t tokens, uint32_t logit_rows, double seconds) {
    if (tokens == 0 || !(seconds > 0) || !std::isfinite(seconds)) return;
    const double x[3] = {1.0, (double)tokens, (double)logit_rows};
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) xx_[i][j] = kForget * xx_[i][j] + x[i] * x[j];
        xt_[i] = kForget * xt_[i] + x[i] * seconds;
    }
    tt_ = kForget * tt_ + seconds * seconds;
    steps_ = kForget * steps_ + 1.0;
    refit();
}

bool StepCost::solve(unsigned mask, double theta[3]) const {
    // Least squares over the coefficients in mask (bit i: coefficient i),
    // the others zero: the normal equations restricted to them, by
    // Gaussian elimination with partial pivoting.
    int idx[3], n = 0;
    for (int i = 0; i < 3; ++i)
        if (mask >> i & 1) idx[n++] = i;
    double a[3][4];
    for (int r = 0; r < n; ++r) {
        for (int c = 0; c < n; ++c) a[r][c] = xx_[idx[r]][idx[c]];
        a[r][n] = xt_[idx[r]];
    }
    for (int c = 0; c < n; ++c) {
        int p = c;
        for (int r = c + 1; r < n; ++r)
            if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
        if (!(std::fabs(a[p][c]) > 1e-12 * xx_[0][0])) return false;
        for (int j = 0; j <= n; ++j) std::swap(a[c][j], a[p][j]);
        for (int r = 0; r < n; ++r) {
            if (r == c) continue;
            const double f = a[r][c] / a[c][c];
            for (int j = c; j <= n; ++j) a[r][j] -= f * a[c][j];
        }
    }
    theta[0] = theta[1] = theta[2] = 0;
    for (int r = 0; r < n; ++r) theta[idx[r]] = a[r][n] / a[r][r];
    return true;
}

void StepCost::refit() {
    // The slopes are only determined when the steps differ in size and
    // their prompt tokens vary apart from their logit rows (in decode-only
    // steps the two are equal, and the fit could not tell them apart).
    if (steps_ < kMinSteps) return;
    const double w = xx_[0][0];
    const double mt = xx_[0][1] / w, ml = xx_[0][2] / w;
    const double vt = xx_[1][1] / w - mt * mt, vl = xx_[2][2] / w - ml * ml, cov = xx_[1][2] / w - mt * ml;
    if (vt < 1.0 || vl < 0.1 || cov * cov > 0.95 * vt * vl) return;

    // No coefficient can be negative (a step does not get faster with more
    // work), but noise, other processes or a load that is not linear in
    // tokens can make the free fit say so. Non-negative least squares by
    // trying each set of free coefficients and keeping the feasible one
    // with the least squared error.
    double best[3] = {}, best_err = INFINITY;
    for (unsigned mask = 1; mask < 8; ++mask) {
        double th[3];
        if (!solve(mask, th) || th[0] < 0 || th[1] < 0 || th[2] < 0) continue;
        // sum w (t - x.th)^2 = tt - 2 th.xt + th.XX.th
        double err = tt_;
        for (int i = 0; i < 3; ++i) {
            err -= 2 * th[i] * xt_[i];
            for (int j = 0; j < 3; ++j) err += th[i] * xx_[i][j] * th[j];
        }
        if (err < best_err) {
            best_err = err;
            std::copy(th, th + 3, best);
        }
    }
    // Steps whose time does not grow with their prompt tokens (at most the
    // rounding of a flat fit) cannot size prompt chunks: keep the last fit.
    const double one = best[0] + best[1] + best[2];
    if (!std::isfinite(best_err) || !(best[1] > 1e-4 * one) || !std::isfinite(one)) return;
    fixed_ = best[0];
    per_token_ = best[1];
    per_logit_row_ = best[2];
    ready_ = true;
}

} // namespace vt
