// SPDX-License-Identifier: Apache-2.0
// Sound step-time comparisons (issue 15): the order-statistic interval of the median, the Hodges-Lehmann
// shift with its Mann-Whitney interval (against the published critical values), the verdict, the
// boundary widths of the guide's tie rule and the choice that never rests on a difference inside the noise.
#include <cmath>

#include <QtTest>

#include "core/step_stats.h"

using namespace Qt::StringLiterals;

Q_DECLARE_METATYPE(std::vector<double>)
Q_DECLARE_METATYPE(std::optional<double>)
Q_DECLARE_METATYPE(rs::Significance)

namespace {

std::vector<double> range(double from, int n, double step = 1.0)
{
    std::vector<double> v;
    for (int i = 0; i < n; ++i)
        v.push_back(from + i * step);
    return v;
}

// A fixed jitter around `centre` (deterministic "noise": centre-4 .. centre+5), repeated to n values.
std::vector<double> noisy(double centre, int n)
{
    static const double j[] = { 0, 3, -2, 5, -4, 1, -1, 4, -3, 2 };
    std::vector<double> v;
    for (int i = 0; i < n; ++i)
        v.push_back(centre + j[i % 10] + 0.01 * (i / 10));
    return v;
}

rs::RecomputeChoice choice(const std::string& spelling)
{
    return rs::parseRecomputeChoice(spelling);
}

} // namespace

class TestStepStats : public QObject {
    Q_OBJECT
private slots:
    void medianInterval_data()
    {
        QTest::addColumn<std::vector<double>>("values");
        QTest::addColumn<double>("median");
        QTest::addColumn<std::optional<double>>("low");
        QTest::addColumn<std::optional<double>>("high");
        QTest::addColumn<double>("coverage");
        // k = largest with P(Bin(n, 1/2) <= k-1) <= 0.025
        QTest::newRow("n 10: 2nd and 9th")
            << range(1, 10) << 5.5 << std::optional(2.0) << std::optional(9.0) << 1.0 - 2.0 * 11.0 / 1024.0;
        QTest::newRow("n 20: 6th and 15th") << range(1, 20) << 10.5 << std::optional(6.0)
                                            << std::optional(15.0) << 1.0 - 2.0 * 0.020694732666015625;
        QTest::newRow("n 6: min and max, 96.9 %")
            << range(1, 6) << 3.5 << std::optional(1.0) << std::optional(6.0) << 1.0 - 2.0 / 64.0;
        QTest::newRow("n 5: min and max, only 93.8 %")
            << range(10, 5) << 12.0 << std::optional(10.0) << std::optional(14.0) << 1.0 - 2.0 / 32.0;
        QTest::newRow("n 1: no interval") << std::vector<double> { 7.0 } << 7.0 << std::optional<double>()
                                          << std::optional<double>() << 0.0;
        QTest::newRow("unsorted, NaN and non-positive left out")
            << std::vector<double> { 9, std::nan(""), 3, -1, 0, 5, 1, 7, 2, 8, 4, 6, 10 } << 5.5
            << std::optional(2.0) << std::optional(9.0) << 1.0 - 2.0 * 11.0 / 1024.0;
    }
    void medianInterval()
    {
        QFETCH(std::vector<double>, values);
        QFETCH(double, median);
        QFETCH(std::optional<double>, low);
        QFETCH(std::optional<double>, high);
        QFETCH(double, coverage);
        const auto s = rs::stepStats(values);
        QVERIFY(s);
        QCOMPARE(s->median_ms, median);
        QCOMPARE(s->low_ms, low);
        QCOMPARE(s->high_ms, high);
        QVERIFY2(std::abs(s->coverage - coverage) < 1e-9, qPrintable(QString::number(s->coverage, 'g', 12)));
        QCOMPARE(s->halfWidthPct().has_value(), low.has_value());
    }

    void nothingMeasured()
    {
        QVERIFY(!rs::stepStats({}));
        QVERIFY(!rs::stepStats({ std::nan(""), -3.0 }));
        QVERIFY(!rs::timeDelta({}, { 1.0, 2.0 }));
        QVERIFY(!rs::timeDelta({ 1.0 }, {}));
    }

    void delta_data()
    {
        QTest::addColumn<std::vector<double>>("candidate");
        QTest::addColumn<std::vector<double>>("control");
        QTest::addColumn<double>("shift");
        QTest::addColumn<std::optional<double>>("low");
        QTest::addColumn<std::optional<double>>("high");
        QTest::addColumn<rs::Significance>("verdict");
        // n = m = 10: the published two-sided 5 % critical U is 23, so the interval is the 24th smallest
        // and 24th largest of the 100 differences (1..19, d occurring 10 - |d - 10| times): 7 and 13.
        QTest::newRow("10 vs 10, +10 ms: slower")
            << range(110, 10) << range(100, 10) << 10.0 << std::optional(7.0) << std::optional(13.0)
            << rs::Significance::Slower;
        QTest::newRow("10 vs 10, -10 ms: faster")
            << range(100, 10) << range(110, 10) << -10.0 << std::optional(-13.0) << std::optional(-7.0)
            << rs::Significance::Faster;
        QTest::newRow("same noise, +0.5 ms: not significant")
            << noisy(100.5, 10) << noisy(100, 10) << 0.5 << std::optional(-2.5) << std::optional(3.5)
            << rs::Significance::NotSignificant;
        QTest::newRow("identical: not significant")
            << noisy(100, 10) << noisy(100, 10) << 0.0 << std::optional(-3.0) << std::optional(3.0)
            << rs::Significance::NotSignificant;
        // 1 / C(4, 2) = 1/6 and 1 / C(6, 3) = 1/20 are both above 2.5 %: no interval at all.
        QTest::newRow("2 vs 2: too few, not significant")
            << std::vector<double> { 200, 201 } << std::vector<double> { 100, 101 } << 100.0
            << std::optional<double>() << std::optional<double>() << rs::Significance::NotSignificant;
        QTest::newRow("3 vs 3: too few, not significant")
            << range(200, 3) << range(100, 3) << 100.0 << std::optional<double>() << std::optional<double>()
            << rs::Significance::NotSignificant;
        // 1 / C(8, 4) = 1/70 <= 2.5 % < 2/70: the extreme differences.
        QTest::newRow("4 vs 4: min and max difference")
            << range(200, 4) << range(100, 4) << 100.0 << std::optional(97.0) << std::optional(103.0)
            << rs::Significance::Slower;
    }
    void delta()
    {
        QFETCH(std::vector<double>, candidate);
        QFETCH(std::vector<double>, control);
        QFETCH(double, shift);
        QFETCH(std::optional<double>, low);
        QFETCH(std::optional<double>, high);
        QFETCH(rs::Significance, verdict);
        const auto d = rs::timeDelta(candidate, control);
        QVERIFY(d);
        QCOMPARE(d->delta_ms, shift);
        QCOMPARE(d->low_ms, low);
        QCOMPARE(d->high_ms, high);
        QCOMPARE(d->verdict, verdict);
        if (low) {
            QVERIFY(d->coverage >= 0.95);
            QVERIFY(d->low_pct && d->high_pct && *d->low_pct <= d->pct && d->pct <= *d->high_pct);
        }
        QVERIFY(!rs::deltaText(*d).empty());
    }

    // Beyond 2500 pairs the normal approximation: it must agree with the exact count near the boundary.
    void normalApproximation_data()
    {
        QTest::addColumn<double>("shift");
        QTest::addColumn<rs::Significance>("verdict");
        QTest::newRow("+20 ms over 60 iterations: slower") << 20.0 << rs::Significance::Slower;
        QTest::newRow("-20 ms: faster") << -20.0 << rs::Significance::Faster;
        QTest::newRow("+1 ms inside +-5 noise: not significant") << 1.0 << rs::Significance::NotSignificant;
    }
    void normalApproximation()
    {
        QFETCH(double, shift);
        QFETCH(rs::Significance, verdict);
        const auto d = rs::timeDelta(noisy(1000 + shift, 60), noisy(1000, 60));
        QVERIFY(d && d->low_ms && d->high_ms);
        QCOMPARE(d->verdict, verdict);
        QVERIFY(d->coverage > 0.94 && d->coverage < 0.97);
        QVERIFY(std::abs(d->delta_ms - shift) < 0.5);
    }

    void widths_data()
    {
        QTest::addColumn<QString>("narrower");
        QTest::addColumn<QString>("wider");
        QTest::newRow("moe_act < core_attn") << u"moe_act"_s << u"core_attn"_s;
        QTest::newRow("layernorm < layernorm,moe_act") << u"layernorm"_s << u"layernorm,moe_act"_s;
        QTest::newRow("core_attn < mlp") << u"core_attn"_s << u"mlp"_s;
        QTest::newRow("moe_act < moe") << u"moe_act"_s << u"moe"_s;
        QTest::newRow("shared_experts < moe") << u"shared_experts"_s << u"moe"_s;
        QTest::newRow("mlp < full:uniform:1") << u"mlp"_s << u"full:uniform:1"_s;
        QTest::newRow("core_attn,mlp,moe < full:block:1") << u"core_attn,mlp,moe"_s << u"full:block:1"_s;
        QTest::newRow("full:uniform:1 < full:uniform:2") << u"full:uniform:1"_s << u"full:uniform:2"_s;
    }
    void widths()
    {
        QFETCH(QString, narrower);
        QFETCH(QString, wider);
        QVERIFY(rs::boundaryWidth(choice(narrower.toStdString()))
            < rs::boundaryWidth(choice(wider.toStdString())));
        QCOMPARE(rs::boundaryWidth(rs::RecomputeChoice {}), 0); // [] replays nothing
    }

    void choose_data()
    {
        QTest::addColumn<QStringList>("labels");
        QTest::addColumn<QList<double>>("centres");
        QTest::addColumn<int>("fastest");
        QTest::addColumn<int>("chosen");
        QTest::newRow("full 0.1 ms faster, inside the noise: the narrower core_attn")
            << QStringList { u"core_attn"_s, u"full:uniform:1"_s } << QList<double> { 100, 99.9 } << 1 << 0;
        QTest::newRow("mlp significantly faster: mlp")
            << QStringList { u"core_attn"_s, u"mlp"_s } << QList<double> { 100, 80 } << 1 << 1;
        QTest::newRow("three within the noise: the narrowest, moe_act")
            << QStringList { u"full:uniform:1"_s, u"layernorm,moe_act"_s, u"moe_act"_s }
            << QList<double> { 99, 100, 101 } << 0 << 2;
        QTest::newRow("narrow one significantly slower: the fastest that is not")
            << QStringList { u"moe_act"_s, u"moe"_s, u"full:uniform:1"_s }
            << QList<double> { 150, 100, 100.5 } << 1 << 1;
        QTest::newRow("one choice") << QStringList { u"mlp"_s } << QList<double> { 100 } << 0 << 0;
    }
    void choose()
    {
        QFETCH(QStringList, labels);
        QFETCH(QList<double>, centres);
        QFETCH(int, fastest);
        QFETCH(int, chosen);
        std::vector<rs::TimedChoice> choices;
        for (int i = 0; i < labels.size(); ++i)
            choices.push_back({ choice(labels[i].toStdString()), noisy(centres[i], 20) });
        const rs::SignificantChoice c = rs::chooseBySignificance(choices);
        QCOMPARE(c.fastest, std::optional<std::size_t>(fastest));
        QCOMPARE(c.chosen, std::optional<std::size_t>(chosen));
        QCOMPARE(c.reasons.size(), choices.size());
        for (const auto& r : c.reasons)
            QVERIFY(!r.empty());
        QVERIFY(!c.vs_fastest[std::size_t(fastest)]);
    }

    // Student's t quantiles against the published table (two-sided 95 %: p = 0.975).
    void studentTQuantile_data()
    {
        QTest::addColumn<double>("p");
        QTest::addColumn<int>("df");
        QTest::addColumn<double>("expected");
        QTest::newRow("df 1") << 0.975 << 1 << 12.706;
        QTest::newRow("df 2") << 0.975 << 2 << 4.303;
        QTest::newRow("df 3") << 0.975 << 3 << 3.182;
        QTest::newRow("df 6") << 0.975 << 6 << 2.447;
        QTest::newRow("df 30") << 0.975 << 30 << 2.042;
        QTest::newRow("df 5, 99 % one-sided") << 0.99 << 5 << 3.365;
        QTest::newRow("median") << 0.5 << 4 << 0.0;
        QTest::newRow("lower tail") << 0.025 << 3 << -3.182;
    }
    void studentTQuantile()
    {
        QFETCH(double, p);
        QFETCH(int, df);
        QFETCH(double, expected);
        QVERIFY2(std::fabs(rs::studentTQuantile(p, df) - expected) < 5e-4,
            qPrintable(QString::number(rs::studentTQuantile(p, df), 'f', 5)));
    }

    // The iterations say slower (110 against 100 ms, 10 each); the launches' medians decide whether it
    // stands. A third choice's launches add to the spread (`others`).
    void launchVerdict_data()
    {
        QTest::addColumn<std::vector<double>>("candidateRuns");
        QTest::addColumn<std::vector<double>>("controlRuns");
        QTest::addColumn<std::vector<double>>("others");
        QTest::addColumn<rs::Significance>("verdict");
        QTest::newRow("launches agree: slower stands")
            << std::vector<double> { 110, 111 } << std::vector<double> { 100, 101 } << std::vector<double> {}
            << rs::Significance::Slower;
        QTest::newRow("launches overlap: not significant")
            << std::vector<double> { 110, 99 } << std::vector<double> { 100, 101 } << std::vector<double> {}
            << rs::Significance::NotSignificant;
        // Apart, but one launch of the control four times slower than the other (a neighbour's burst): the
        // gap is inside the spread between launches.
        QTest::newRow("apart, inside a wide spread")
            << std::vector<double> { 110, 112 } << std::vector<double> { 100, 101 }
            << std::vector<double> { 60, 240 } << rs::Significance::NotSignificant;
        QTest::newRow("apart, beyond a narrow spread")
            << std::vector<double> { 110, 112 } << std::vector<double> { 100, 101 }
            << std::vector<double> { 60, 61 } << rs::Significance::Slower;
        // The launches say the other way round from the iterations: never a verdict.
        QTest::newRow("launches disagree")
            << std::vector<double> { 99, 98 } << std::vector<double> { 100, 101 } << std::vector<double> {}
            << rs::Significance::NotSignificant;
        QTest::newRow("one launch each: the iteration verdict")
            << std::vector<double> { 110 } << std::vector<double> { 100 } << std::vector<double> {}
            << rs::Significance::Slower;
        QTest::newRow("no launch medians: the iteration verdict")
            << std::vector<double> {} << std::vector<double> {} << std::vector<double> {}
            << rs::Significance::Slower;
    }
    void launchVerdict()
    {
        QFETCH(std::vector<double>, candidateRuns);
        QFETCH(std::vector<double>, controlRuns);
        QFETCH(std::vector<double>, others);
        QFETCH(rs::Significance, verdict);
        const rs::LaunchSpread spread = rs::launchSpread({ candidateRuns, controlRuns, others });
        const auto d = rs::timeDelta(range(110, 10), range(100, 10));
        QVERIFY(d && d->verdict == rs::Significance::Slower);
        QCOMPARE(rs::launchVerdict(*d, candidateRuns, controlRuns, spread), verdict);
        // faster, mirrored
        const auto f = rs::timeDelta(range(100, 10), range(110, 10));
        QCOMPARE(rs::launchVerdict(*f, controlRuns, candidateRuns, spread),
            verdict == rs::Significance::Slower ? rs::Significance::Faster : verdict);
    }

    void launchSpreadPoolsEveryChoice()
    {
        // ln-deviations of (e, 1) and (1, e) about their means: +-0.5 each; 4 squares of 0.25 over 2 df.
        const double e = std::exp(1.0);
        const rs::LaunchSpread s = rs::launchSpread({ { e, 1.0 }, { 1.0, e }, { 5.0 } });
        QCOMPARE(s.df, 2);
        QVERIFY(std::fabs(s.sd_log - std::sqrt(0.5)) < 1e-12);
        QCOMPARE(rs::launchSpread({ { 3.0 }, {} }).df, 0);
    }

    void chooseNothingTimed()
    {
        const rs::SignificantChoice c = rs::chooseBySignificance({ { choice("mlp"), {} } });
        QVERIFY(!c.chosen);
        QCOMPARE(c.reasons.front(), std::string("no steady step time was measured"));
    }
};

QTEST_APPLESS_MAIN(TestStepStats)
#include "tst_step_stats.moc"
