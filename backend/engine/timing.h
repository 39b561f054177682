// SPDX-License-Identifier: Apache-2.0
// The steady step time's spread (issue 14): the median of the steady iterations, the interval that holds
// 95 % of them, and a 95 % confidence interval of the median. Standard library only.
#pragma once

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace rs::engine {

struct StepTimeSpread {
    int n = 0;
    double median = 0;
    // The 2.5th and 97.5th percentiles of the steady step times (linear interpolation between order
    // statistics, NumPy's default): where 95 % of the iterations lie.
    double p2_5 = 0, p97_5 = 0;
    // A distribution-free 95 % confidence interval of the median: the order statistics x(j) and x(k)
    // (1-based) with the largest j / smallest k such that P(j <= B < k) >= 0.95 for B ~ Binomial(n, 1/2);
    // with fewer than 6 iterations no such pair exists and the interval is [min, max] (coverage below 95 %).
    double median_lo = 0, median_hi = 0;
};

inline double percentileOf(const std::vector<double>& sorted, double q)
{
    if (sorted.empty())
        return 0;
    const double pos = q * static_cast<double>(sorted.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(sorted.size() - 1, lo + 1);
    return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

inline StepTimeSpread stepTimeSpread(std::vector<double> v)
{
    StepTimeSpread s;
    s.n = static_cast<int>(v.size());
    if (v.empty())
        return s;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s.p2_5 = percentileOf(v, 0.025);
    s.p97_5 = percentileOf(v, 0.975);
    // Binomial(n, 1/2) probabilities; the symmetric pair j, k = n + 1 - j with the largest j whose
    // coverage P(j <= B <= n - j) is still at least 0.95.
    std::vector<double> pmf(n + 1);
    const double log_half_n = static_cast<double>(n) * std::log(0.5);
    for (size_t i = 0; i <= n; ++i)
        pmf[i] = std::exp(std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1)
            - std::lgamma(double(n - i) + 1) + log_half_n);
    size_t best = 0; // 0: none found
    for (size_t j = 1; 2 * j <= n; ++j) {
        double coverage = 0;
        for (size_t i = j; i <= n - j; ++i)
            coverage += pmf[i];
        if (coverage >= 0.95)
            best = j;
    }
    if (best == 0) {
        s.median_lo = v.front();
        s.median_hi = v.back();
    } else {
        s.median_lo = v[best - 1];
        s.median_hi = v[n - best];
    }
    return s;
}

} // namespace rs::engine
