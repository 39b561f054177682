// SPDX-License-Identifier: Apache-2.0
#include "core/step_stats.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/recompute_labels.h"
#include "core/units.h"

namespace rs {

namespace {

std::vector<double> cleaned(std::vector<double> v)
{
    v.erase(
        std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x) || x <= 0; }), v.end());
    std::sort(v.begin(), v.end());
    return v;
}

double medianOfSorted(const std::vector<double>& v)
{
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

// P(Binomial(n, 1/2) <= k), in log space so that large n does not underflow.
double binomialHalfCdf(int n, int k)
{
    if (k < 0)
        return 0;
    if (k >= n)
        return 1;
    double sum = 0;
    const double logHalfN = -double(n) * std::log(2.0);
    for (int i = 0; i <= k; ++i)
        sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) + logHalfN);
    return std::min(sum, 1.0);
}

// The exact null distribution of the Mann-Whitney U for sizes n and m, as probabilities of u = 0..n*m,
// by P_{n,m}(u) = n/(n+m) P_{n-1,m}(u-m) + m/(n+m) P_{n,m-1}(u) (convex combinations: no cancellation).
std::vector<double> mannWhitneyPmf(int n, int m)
{
    // layer[j] = P_{i,j} for the current i
    std::vector<std::vector<double>> prev(std::size_t(m) + 1), cur(std::size_t(m) + 1);
    for (int j = 0; j <= m; ++j)
        prev[std::size_t(j)] = { 1.0 }; // i = 0: U = 0 surely
    for (int i = 1; i <= n; ++i) {
        cur[0] = { 1.0 }; // j = 0
        for (int j = 1; j <= m; ++j) {
            std::vector<double> p(std::size_t(i) * std::size_t(j) + 1, 0.0);
            const double a = double(i) / double(i + j), b = double(j) / double(i + j);
            const std::vector<double>& left = prev[std::size_t(j)]; // P_{i-1,j}, shifted by j
            const std::vector<double>& down = cur[std::size_t(j) - 1]; // P_{i,j-1}
            for (std::size_t u = 0; u < left.size(); ++u)
                p[u + std::size_t(j)] += a * left[u];
            for (std::size_t u = 0; u < down.size(); ++u)
                p[u] += b * down[u];
            cur[std::size_t(j)] = std::move(p);
        }
        std::swap(prev, cur);
    }
    return prev[std::size_t(m)];
}

// z with P(Z > z) = tail, by bisection on erfc (tail in (0, 0.5)).
double normalQuantileUpper(double tail)
{
    double lo = 0, hi = 40;
    for (int i = 0; i < 200; ++i) {
        const double mid = (lo + hi) / 2;
        if (0.5 * std::erfc(mid / std::sqrt(2.0)) > tail)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}

std::string signedFixed(double v, int decimals)
{
    return (v >= 0 ? "+" : "") + formatFixed(v, decimals);
}

std::string levelText(double coverage)
{
    return formatFixed(coverage * 100.0, coverage >= 0.995 || coverage < 0.9 ? 1 : 0) + " %";
}

} // namespace

std::optional<double> StepStats::halfWidthPct() const
{
    if (!low_ms || !high_ms || median_ms <= 0)
        return std::nullopt;
    return (*high_ms - *low_ms) / 2.0 / median_ms * 100.0;
}

std::optional<StepStats> stepStats(std::vector<double> steady_ms, double level)
{
    const std::vector<double> v = cleaned(std::move(steady_ms));
    if (v.empty())
        return std::nullopt;
    StepStats s;
    s.n = int(v.size());
    s.median_ms = medianOfSorted(v);
    if (s.n < 2)
        return s;
    const double tail = (1.0 - level) / 2.0;
    // The largest k with P(B <= k-1) <= tail; at least 1 ([min, max]).
    int k = 1;
    for (int c = 2; c <= s.n / 2; ++c) {
        if (binomialHalfCdf(s.n, c - 1) <= tail)
            k = c;
        else
            break;
    }
    s.low_ms = v[std::size_t(k) - 1];
    s.high_ms = v[std::size_t(s.n - k)];
    s.coverage = 1.0 - 2.0 * binomialHalfCdf(s.n, k - 1);
    return s;
}

const char* significanceName(Significance s)
{
    switch (s) {
    case Significance::Faster:
        return "faster";
    case Significance::Slower:
        return "slower";
    case Significance::NotSignificant:
        return "not significant";
    }
    return "not significant";
}

std::optional<TimeDelta> timeDelta(
    const std::vector<double>& candidate, const std::vector<double>& control, double level)
{
    const std::vector<double> x = cleaned(candidate), y = cleaned(control);
    if (x.empty() || y.empty())
        return std::nullopt;
    const int n = int(x.size()), m = int(y.size());
    std::vector<double> d;
    d.reserve(std::size_t(n) * std::size_t(m));
    for (double a : x) {
        for (double b : y)
            d.push_back(a - b);
    }
    std::sort(d.begin(), d.end());
    TimeDelta out;
    out.delta_ms = medianOfSorted(d);
    const double controlMedian = medianOfSorted(y);
    out.pct = out.delta_ms / controlMedian * 100.0;
    const double tail = (1.0 - level) / 2.0;
    const long long nm = (long long)n * m;
    long long k = 0; // 1-based rank of the lower bound; 0: no interval
    if (nm <= 2500) {
        const std::vector<double> pmf = mannWhitneyPmf(n, m);
        double cdf = 0; // P(U <= k-1)
        for (long long c = 1; c <= nm / 2 + 1; ++c) {
            cdf += pmf[std::size_t(c - 1)];
            if (cdf <= tail + 1e-12) {
                k = c;
                out.coverage = 1.0 - 2.0 * cdf;
            } else {
                break;
            }
        }
    } else {
        const double sd = std::sqrt(double(nm) * double(n + m + 1) / 12.0);
        k = (long long)std::floor(double(nm) / 2.0 - normalQuantileUpper(tail) * sd + 0.5);
        k = std::max(k, 1LL);
        out.coverage
            = 1.0 - 2.0 * 0.5 * std::erfc(-((double(k) - 0.5 - double(nm) / 2.0) / sd) / std::sqrt(2.0));
    }
    if (k >= 1 && k <= nm - k + 1) {
        out.low_ms = d[std::size_t(k - 1)];
        out.high_ms = d[std::size_t(nm - k)];
        out.low_pct = *out.low_ms / controlMedian * 100.0;
        out.high_pct = *out.high_ms / controlMedian * 100.0;
        if (*out.high_ms < 0)
            out.verdict = Significance::Faster;
        else if (*out.low_ms > 0)
            out.verdict = Significance::Slower;
    }
    return out;
}

namespace {

std::vector<double> logsOfPositive(const std::vector<double>& v)
{
    std::vector<double> out;
    for (double x : v) {
        if (std::isfinite(x) && x > 0)
            out.push_back(std::log(x));
    }
    return out;
}

double meanOf(const std::vector<double>& v)
{
    double sum = 0;
    for (double x : v)
        sum += x;
    return sum / double(v.size());
}

// The regularized incomplete beta function I_x(a, b), by its continued fraction (modified Lentz), taken
// on the side where it converges fast.
double incompleteBeta(double a, double b, double x)
{
    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    if (x > (a + 1) / (a + b + 2))
        return 1 - incompleteBeta(b, a, 1 - x);
    const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x)
                             + b * std::log1p(-x))
        / a;
    constexpr double tiny = 1e-300;
    double f = 1, c = 1, d = 0;
    for (int i = 0; i <= 400; ++i) {
        const int m = i / 2;
        double numerator;
        if (i == 0)
            numerator = 1;
        else if (i % 2 == 0)
            numerator = (m * (b - m) * x) / ((a + 2.0 * m - 1) * (a + 2.0 * m));
        else
            numerator = -((a + m) * (a + b + m) * x) / ((a + 2.0 * m) * (a + 2.0 * m + 1));
        d = 1 + numerator * d;
        d = std::fabs(d) < tiny ? 1 / tiny : 1 / d;
        c = 1 + numerator / c;
        if (std::fabs(c) < tiny)
            c = tiny;
        const double step = c * d;
        f *= step;
        if (std::fabs(1 - step) < 1e-14)
            break;
    }
    return front * (f - 1);
}

} // namespace

double studentTQuantile(double p, int df)
{
    if (df < 1 || !(p > 0 && p < 1))
        return std::nan("");
    // P(T <= t) for t >= 0: 1 - I_{df/(df+t^2)}(df/2, 1/2) / 2; bisection on t (monotone, no derivative).
    auto cdf = [df](double t) {
        const double x = double(df) / (double(df) + t * t);
        const double tail = incompleteBeta(df / 2.0, 0.5, x) / 2;
        return t >= 0 ? 1 - tail : tail;
    };
    double lo = -1e7, hi = 1e7;
    for (int i = 0; i < 200; ++i) {
        const double mid = (lo + hi) / 2;
        (cdf(mid) < p ? lo : hi) = mid;
    }
    return (lo + hi) / 2;
}

LaunchSpread launchSpread(const std::vector<std::vector<double>>& runMediansPerChoice)
{
    LaunchSpread out;
    double squares = 0;
    for (const std::vector<double>& choice : runMediansPerChoice) {
        const std::vector<double> l = logsOfPositive(choice);
        if (l.size() < 2)
            continue;
        const double mean = meanOf(l);
        for (double x : l)
            squares += (x - mean) * (x - mean);
        out.df += int(l.size()) - 1;
    }
    if (out.df > 0)
        out.sd_log = std::sqrt(squares / out.df);
    return out;
}

Significance launchVerdict(const TimeDelta& d, const std::vector<double>& candidateRunMedians,
    const std::vector<double>& controlRunMedians, const LaunchSpread& spread, double level)
{
    if (d.verdict == Significance::NotSignificant)
        return d.verdict;
    const std::vector<double> c = logsOfPositive(candidateRunMedians), k = logsOfPositive(controlRunMedians);
    if (c.empty() || k.empty() || spread.df < 1)
        return d.verdict; // nothing is known of the spread between launches: the iterations' verdict
    const double diff = meanOf(c) - meanOf(k);
    const double se = spread.sd_log * std::sqrt(1.0 / double(c.size()) + 1.0 / double(k.size()));
    const double critical = studentTQuantile((1 + level) / 2, spread.df);
    const bool beyond = se > 0 ? std::fabs(diff) > critical * se : diff != 0;
    const bool sameSide = (diff > 0) == (d.verdict == Significance::Slower);
    return beyond && sameSide ? d.verdict : Significance::NotSignificant;
}

std::string deltaText(const TimeDelta& d)
{
    std::string s = signedFixed(d.pct, 1) + " %";
    if (d.low_pct && d.high_pct)
        s += " [" + signedFixed(*d.low_pct, 1) + ", " + signedFixed(*d.high_pct, 1) + "] ("
            + levelText(d.coverage) + ")";
    else
        s += " (too few steady iterations for an interval)";
    return s + ", " + significanceName(d.verdict);
}

std::string deltaCell(const TimeDelta& d)
{
    std::string s = signedFixed(d.pct, 2) + "%";
    if (d.low_pct && d.high_pct) {
        s += " [" + signedFixed(*d.low_pct, 2) + ", " + signedFixed(*d.high_pct, 2) + "]";
        if (d.verdict == Significance::NotSignificant)
            s += " not significant";
    }
    return s;
}

std::vector<double> stepSamples(std::vector<double> steadyIterations, std::optional<double> storedStepMs)
{
    if (!steadyIterations.empty() || !storedStepMs)
        return steadyIterations;
    return { *storedStepMs };
}

std::string statsText(const StepStats& s)
{
    std::string t = formatFixed(s.median_ms, 2) + " ms";
    if (s.low_ms && s.high_ms)
        t += " [" + formatFixed(*s.low_ms, 2) + ", " + formatFixed(*s.high_ms, 2) + "] (n "
            + std::to_string(s.n) + ", " + levelText(s.coverage) + ")";
    else
        t += " (n " + std::to_string(s.n) + ", no interval)";
    return t;
}

int boundaryWidth(const RecomputeChoice& c)
{
    if (c.granularity == "full")
        return 100 + std::max(c.num_layers, 0);
    int w = 0;
    for (const std::string& l : c.modules) {
        const RecomputeLabel* row = findRecomputeLabel(l);
        w += row ? row->boundary_width : 3; // a label no profile knows: as wide as the middle ones
    }
    return w;
}

SignificantChoice chooseBySignificance(const std::vector<TimedChoice>& choices, double level)
{
    SignificantChoice out;
    out.vs_fastest.resize(choices.size());
    out.reasons.resize(choices.size());
    std::vector<std::optional<StepStats>> stats;
    for (const TimedChoice& c : choices)
        stats.push_back(stepStats(c.steady_ms, level));
    for (std::size_t i = 0; i < choices.size(); ++i) {
        if (stats[i] && (!out.fastest || stats[i]->median_ms < stats[*out.fastest]->median_ms))
            out.fastest = i;
    }
    if (!out.fastest) {
        for (std::string& r : out.reasons)
            r = "no steady step time was measured";
        return out;
    }
    const std::size_t f = *out.fastest;
    std::vector<std::vector<double>> launches;
    for (const TimedChoice& c : choices)
        launches.push_back(c.run_medians);
    const LaunchSpread spread = launchSpread(launches);
    const std::string fastLabel = choices[f].choice.label();
    std::vector<std::size_t> pool { f };
    for (std::size_t i = 0; i < choices.size(); ++i) {
        if (i == f)
            continue;
        if (!stats[i]) {
            out.reasons[i] = "no steady step time was measured";
            continue;
        }
        out.vs_fastest[i] = timeDelta(choices[i].steady_ms, choices[f].steady_ms, level);
        if (out.vs_fastest[i])
            out.vs_fastest[i]->verdict = launchVerdict(
                *out.vs_fastest[i], choices[i].run_medians, choices[f].run_medians, spread, level);
        if (out.vs_fastest[i] && out.vs_fastest[i]->verdict != Significance::Slower)
            pool.push_back(i);
    }
    auto key = [&](std::size_t i) {
        return std::make_tuple(boundaryWidth(choices[i].choice), stats[i]->median_ms, i);
    };
    const std::size_t chosen
        = *std::min_element(pool.begin(), pool.end(), [&](auto a, auto b) { return key(a) < key(b); });
    out.chosen = chosen;
    const std::string chosenLabel = choices[chosen].choice.label();
    for (std::size_t i = 0; i < choices.size(); ++i) {
        if (!stats[i])
            continue;
        const bool inPool = std::find(pool.begin(), pool.end(), i) != pool.end();
        const std::string vsFast
            = out.vs_fastest[i] ? deltaText(*out.vs_fastest[i]) + " against " + fastLabel : "";
        if (i == chosen) {
            const auto timed
                = std::count_if(stats.begin(), stats.end(), [](const auto& st) { return st.has_value(); });
            out.reasons[i] = timed == 1 ? std::string("the only one that fits with a steady step time")
                : i == f ? (pool.size() == 1 ? "the fastest, significantly faster than every other that fits"
                                             : "the fastest, and the narrowest boundary of those not "
                                               "significantly slower")
                         : "not significantly slower than the fastest (" + vsFast
                    + ") and the narrowest boundary of those: the guide's tie rule";
        } else if (inPool) {
            out.reasons[i] = (i == f ? std::string("the fastest by median, but ") + chosenLabel
                        + " is not significantly slower and is the narrower boundary"
                                     : "not significantly slower than the fastest (" + vsFast + "), but "
                        + chosenLabel + " is the narrower boundary");
        } else {
            out.reasons[i] = "significantly slower: " + vsFast;
        }
    }
    return out;
}

} // namespace rs
