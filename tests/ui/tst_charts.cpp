// SPDX-License-Identifier: Apache-2.0
// The chart layer: the trade-off arithmetic (one point per module set, control marked, failures apart,
// Pareto front, Δ% against the control, the memory target), the per-rank and per-iteration series, and
// export of a drawn chart as PNG and SVG.
#include <cmath>

#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QTest>

#include "charts/chartview.h"

using namespace rs::ui;
using rs::storage::RunRecord;

namespace {

RunRecord run(qint64 id, const QStringList& modules, double gb, std::optional<double> ms,
    const QString& outcome = QStringLiteral("pass"))
{
    RunRecord r;
    r.id = id;
    r.model = QStringLiteral("Moonlight 16B");
    r.recomputeGranularity = QStringLiteral("selective");
    r.recomputeModules = modules;
    r.outcome = outcome;
    r.peakAllocated = qint64(gb * 1e9);
    r.steadyStepMs = ms;
    if (id != 1)
        r.controlRunId = 1;
    return r;
}

QVector<RunRecord> moonlight()
{
    return { run(1, {}, 36.618, 457.18), run(2, { QStringLiteral("moe_act") }, 35.941, 466.26),
        run(3, { QStringLiteral("mla_up_proj") }, 35.902, 480.89),
        run(4, { QStringLiteral("core_attn") }, 36.614, 474.80),
        run(5, { QStringLiteral("layernorm"), QStringLiteral("moe_act") }, 70.0, std::nullopt,
            QStringLiteral("oom")),
        // a repeat of moe_act: averaged into the same point
        run(6, { QStringLiteral("moe_act") }, 35.941, 468.26) };
}

const TradeoffPoint* point(const TradeoffData& d, const QString& moduleSet)
{
    for (const auto& p : d.points)
        if (p.moduleSet == moduleSet)
            return &p;
    return nullptr;
}

} // namespace

class TestCharts : public QObject {
    Q_OBJECT

private slots:
    void tradeoffAbsolute()
    {
        const TradeoffData d = buildTradeoff(moonlight(), TradeoffAxis::Absolute, 36.0);
        QCOMPARE(d.points.size(), 5); // one per module set
        QCOMPARE(d.groups, QStringList { QStringLiteral("Moonlight 16B") });
        const TradeoffPoint* control = point(d, QStringLiteral("[]"));
        QVERIFY(control && control->isControl && !control->failed);
        QCOMPARE(*control->x, 457.18);
        const TradeoffPoint* moeAct = point(d, QStringLiteral("moe_act"));
        QVERIFY(moeAct);
        QCOMPARE(moeAct->runCount, 2);
        QCOMPARE(*moeAct->x, 467.26); // mean of 466.26 and 468.26
        QCOMPARE(moeAct->runId, 6);
        const TradeoffPoint* failed = point(d, QStringLiteral("layernorm, moe_act"));
        QVERIFY(failed && failed->failed && !failed->x && !failed->onFront);
        QVERIFY(failed->outcome.startsWith(QStringLiteral("oom")));
        QCOMPARE(d.memoryTarget.value_or(0.0), 36.0);
        // front: control (fastest), moe_act, mla_up_proj (smallest); core_attn is dominated by moe_act
        QVERIFY(control->onFront);
        QVERIFY(moeAct->onFront);
        QVERIFY(point(d, QStringLiteral("mla_up_proj"))->onFront);
        QVERIFY(!point(d, QStringLiteral("core_attn"))->onFront);
    }

    // A repeat of the control, linked to the first one, is the same point of the same comparison.
    void repeatedControlJoinsItsComparison()
    {
        QVector<RunRecord> runs = moonlight();
        RunRecord repeat = run(7, {}, 36.620, 459.18);
        repeat.controlRunId = 1;
        runs << repeat;
        const TradeoffData d = buildTradeoff(runs, TradeoffAxis::Absolute);
        QCOMPARE(d.groups.size(), 1);
        QCOMPARE(d.points.size(), 5);
        const TradeoffPoint* control = point(d, QStringLiteral("[]"));
        QVERIFY(control && control->isControl);
        QCOMPARE(control->runCount, 2);
        QCOMPARE(*control->x, 458.18);
        // against the control, the control sits at 0 %: its repeats are the reference
        const TradeoffData delta = buildTradeoff(runs, TradeoffAxis::VersusControl);
        QCOMPARE(*point(delta, QStringLiteral("[]"))->x, 0.0);
        QCOMPARE(point(delta, QStringLiteral("[]"))->y, 0.0);
    }

    void tradeoffVersusControl()
    {
        const TradeoffData d = buildTradeoff(moonlight(), TradeoffAxis::VersusControl, 36.0);
        const TradeoffPoint* control = point(d, QStringLiteral("[]"));
        QCOMPARE(*control->x, 0.0);
        QCOMPARE(control->y, 0.0);
        const TradeoffPoint* mla = point(d, QStringLiteral("mla_up_proj"));
        QCOMPARE(QString::number(*mla->x, 'f', 2), QStringLiteral("5.19")); // the guide's +5.19%
        QCOMPARE(QString::number(mla->y, 'f', 2), QStringLiteral("-1.96")); // and -1.96%
        QCOMPARE(QString::number(*d.memoryTarget, 'f', 2),
            QString::number((36.0 - 36.618) / 36.618 * 100.0, 'f', 2));
        // without a passing control with a step time there is nothing to compare against
        QVector<RunRecord> noControl = moonlight();
        noControl[0].outcome = QStringLiteral("oom");
        noControl[0].steadyStepMs.reset();
        QVERIFY(buildTradeoff(noControl, TradeoffAxis::VersusControl).points.isEmpty());
        QCOMPARE(buildTradeoff(noControl, TradeoffAxis::Absolute).points.size(), 5);
    }

    void paretoFront_data()
    {
        QTest::addColumn<QVector<QPointF>>("points");
        QTest::addColumn<QVector<bool>>("front");
        QTest::addRow("one") << QVector<QPointF> { { 1, 1 } } << QVector<bool> { true };
        QTest::addRow("dominated") << QVector<QPointF> { { 1, 1 }, { 2, 2 } }
                                   << QVector<bool> { true, false };
        QTest::addRow("trade-off") << QVector<QPointF> { { 1, 3 }, { 2, 2 }, { 3, 1 } }
                                   << QVector<bool> { true, true, true };
        QTest::addRow("ties") << QVector<QPointF> { { 1, 2 }, { 1, 2 } } << QVector<bool> { true, true };
        QTest::addRow("same x") << QVector<QPointF> { { 1, 2 }, { 1, 1 } } << QVector<bool> { false, true };
    }

    void paretoFront()
    {
        QFETCH(QVector<QPointF>, points);
        QFETCH(QVector<bool>, front);
        QVector<TradeoffPoint> ps;
        for (const QPointF& p : points) {
            TradeoffPoint t;
            t.x = p.x();
            t.y = p.y();
            ps << t;
        }
        markParetoFront(&ps);
        for (int i = 0; i < ps.size(); ++i)
            QCOMPARE(ps[i].onFront, front[i]);
    }

    void rankBarsAndIterationLines()
    {
        QVector<rs::storage::RankPeak> peaks(2);
        peaks[0].rank = 1;
        peaks[0].peakAllocated = 30'000'000'000;
        peaks[0].peakReserved = 40'000'000'000;
        peaks[1].rank = 0;
        peaks[1].peakAllocated = 31'000'000'000;
        const QVector<RankBar> bars = buildRankBars(peaks);
        QCOMPARE(bars.size(), 2);
        QCOMPARE(bars[0].rank, 0); // sorted by rank
        QCOMPARE(bars[1].reservedGb, 40.0);

        QVector<rs::storage::IterationRow> rows;
        for (int it = 1; it <= 3; ++it) {
            for (int rank = 0; rank < 2; ++rank) {
                rs::storage::IterationRow row;
                row.rank = rank;
                row.iteration = 4 - it; // out of order on purpose
                row.forwardPeakAllocated = qint64(it) * 1'000'000'000;
                row.backwardPeakAllocated = qint64(it) * 2'000'000'000;
                rows << row;
            }
        }
        const QVector<IterationLine> lines = buildIterationLines(rows, 1);
        QCOMPARE(lines.size(), 2); // forward and backward allocated; nothing else was reported
        QCOMPARE(lines[0].points.size(), 3);
        QCOMPARE(lines[0].points.front(), QPointF(1, 3.0)); // sorted by iteration
        QCOMPARE(lines[1].points.back(), QPointF(3, 2.0));
    }

    void exportPngAndSvg()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        TradeoffChart chart;
        chart.setData(buildTradeoff(moonlight(), TradeoffAxis::Absolute, 36.0));
        QVERIFY(!chart.isEmpty());
        QString error;
        const QString png = dir.filePath(QStringLiteral("tradeoff.png"));
        QVERIFY2(chart.exportImage(png, &error, QSize(800, 500)), qPrintable(error));
        const QImage image(png);
        QCOMPARE(image.size(), QSize(1600, 1000)); // drawn at 2x
        // not blank: the plot has coloured points
        int coloured = 0;
        for (int y = 0; y < image.height(); y += 4)
            for (int x = 0; x < image.width(); x += 4) {
                const QColor c = image.pixelColor(x, y);
                coloured += c.saturation() > 80;
            }
        QVERIFY2(coloured > 50, qPrintable(QString::number(coloured)));

        const QString svg = dir.filePath(QStringLiteral("tradeoff.svg"));
        QVERIFY2(chart.exportImage(svg, &error, QSize(800, 500)), qPrintable(error));
        QFile file(svg);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray text = file.readAll();
        QVERIFY(text.contains("<svg"));
        QVERIFY2(text.contains("mla_up_proj"), "point labels are drawn as text");
        QVERIFY(text.contains("Peak allocated (GB)"));

        QVERIFY(!chart.exportImage(dir.filePath(QStringLiteral("tradeoff.bmpx")), &error));
        QVERIFY(error.contains(QStringLiteral(".png or .svg")));
    }

    // Axis ticks at round values: 2077/2138/2199 read badly.
    void niceAxis_data()
    {
        QTest::addColumn<double>("lo");
        QTest::addColumn<double>("hi");
        QTest::newRow("step times 2077..2199") << 2077.0 << 2199.0;
        QTest::newRow("GB 35.90..36.62") << 35.902 << 36.618;
        QTest::newRow("percent -12.3..4.1") << -12.3 << 4.1;
        QTest::newRow("MB 0.0 .. 75.6") << 0.0 << 75.6;
        QTest::newRow("one value") << 457.18 << 457.18;
        QTest::newRow("tiny 0.0012..0.0087") << 0.0012 << 0.0087;
    }
    void niceAxis()
    {
        QFETCH(double, lo);
        QFETCH(double, hi);
        const NiceAxis a = rs::ui::niceAxis(lo, hi);
        QVERIFY(a.min <= lo && a.max >= hi);
        QVERIFY(a.tickCount() >= 2 && a.tickCount() <= 7);
        // the step is 1, 2 or 5 times a power of ten, and every tick a multiple of it
        const double mantissa = a.step / std::pow(10.0, std::floor(std::log10(a.step)));
        QVERIFY2(
            std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 || std::abs(mantissa - 5) < 1e-9,
            qPrintable(QString::number(a.step)));
        const double k = a.min / a.step;
        QVERIFY2(std::abs(k - std::round(k)) < 1e-6, qPrintable(QString::number(a.min)));
        // not much wider than asked for
        QVERIFY(a.max - a.min <= std::max(hi - lo, std::abs(hi) * 0.1) * 3 + a.step * 2);
    }

    void drawnTicksAreRound_data()
    {
        QTest::addColumn<bool>("withFailure");
        QTest::newRow("all passed") << false;
        QTest::newRow("a failed module set at the right edge") << true;
    }
    void drawnTicksAreRound()
    {
        QFETCH(bool, withFailure);
        QVector<RunRecord> runs = moonlight();
        if (!withFailure)
            runs.removeAt(4);
        for (RunRecord& r : runs) {
            if (r.steadyStepMs)
                *r.steadyStepMs += 1620.0; // 2077 .. 2101 ms
        }
        TradeoffChart chart;
        chart.setData(buildTradeoff(runs, TradeoffAxis::Absolute, 36.0));
        for (const Qt::Orientation o : { Qt::Horizontal, Qt::Vertical }) {
            const QVector<double> ticks = chart.axisTicks(o);
            QVERIFY(ticks.size() >= 3);
            const double step = ticks[1] - ticks[0];
            const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
            QVERIFY2(std::abs(mantissa - std::round(mantissa)) < 1e-6 && int(std::round(mantissa)) % 3 != 0
                    && int(std::round(mantissa)) != 4,
                qPrintable(QString::number(step)));
            for (double t : ticks)
                QVERIFY2(std::abs(t / step - std::round(t / step)) < 1e-6, qPrintable(QString::number(t)));
        }
    }

    // A cancelled run is not a failure of the recipe: drawn apart, named so.
    void stoppedRuns_data()
    {
        QTest::addColumn<QString>("outcome");
        QTest::addColumn<QString>("message");
        QTest::addColumn<bool>("stopped");
        QTest::addColumn<QString>("text");
        QTest::newRow("cancelled") << QStringLiteral("aborted")
                                   << QStringLiteral("cancelled: the worker was stopped") << true
                                   << QStringLiteral("cancelled");
        QTest::newRow("stream ended") << QStringLiteral("aborted") << QStringLiteral("the stream ended")
                                      << true << QStringLiteral("aborted");
        QTest::newRow("oom") << QStringLiteral("oom") << QString() << false << QStringLiteral("oom");
        QTest::newRow("error") << QStringLiteral("error") << QString() << false << QStringLiteral("error");
    }
    void stoppedRuns()
    {
        QFETCH(QString, outcome);
        QFETCH(QString, message);
        QFETCH(bool, stopped);
        QFETCH(QString, text);
        QVector<RunRecord> runs = moonlight();
        runs[4].outcome = outcome;
        runs[4].message = message;
        const TradeoffData d = buildTradeoff(runs, TradeoffAxis::Absolute);
        const TradeoffPoint* p = point(d, QStringLiteral("layernorm, moe_act"));
        QVERIFY(p);
        QVERIFY(p->failed);
        QCOMPARE(p->stopped, stopped);
        QVERIFY(p->outcome.startsWith(text));
        TradeoffChart chart;
        chart.setData(d);
        const QStringList legend = chart.legendNames();
        QCOMPARE(legend.contains(QStringLiteral("stopped (cancelled / no result)")), stopped);
        QCOMPARE(legend.contains(QStringLiteral("failed (OOM / error)")), !stopped);
    }

    void adviceMarksItsPoint()
    {
        TradeoffData d = buildTradeoff(moonlight(), TradeoffAxis::Absolute, 36.0);
        QHash<qint64, RunAdvice> advice;
        advice.insert(6, RunAdvice { QStringLiteral("chosen"), QString(), true }); // the moe_act repeat
        advice.insert(3, RunAdvice { QStringLiteral("slower"), QStringLiteral("fits, 3.1% slower"), false });
        applyAdvice(&d, advice);
        QVERIFY(point(d, QStringLiteral("moe_act"))->chosen);
        QVERIFY(!point(d, QStringLiteral("mla_up_proj"))->chosen);
        QVERIFY(point(d, QStringLiteral("mla_up_proj"))->tooltip.contains(QStringLiteral("3.1% slower")));
        TradeoffChart chart;
        chart.setData(d);
        QVERIFY(chart.legendNames().contains(QStringLiteral("advisor's choice")));
        QVERIFY(chart.legendNames().contains(QStringLiteral("memory target 36.00 GB")));
    }

    void emptyChartSaysWhy()
    {
        TradeoffChart chart;
        chart.setData(buildTradeoff({}, TradeoffAxis::Absolute));
        QVERIFY(chart.isEmpty());
        RankBarsChart bars;
        bars.setData(QStringLiteral("run"), {});
        QVERIFY(bars.isEmpty());
    }
};

QTEST_MAIN(TestCharts)
#include "tst_charts.moc"
