// SPDX-License-Identifier: Apache-2.0
// The chart layer: the trade-off arithmetic (one point per module set, control marked, failures apart,
// Pareto front, Δ% against the control, the memory target), the per-rank and per-iteration series, and
// export of a drawn chart as PNG and SVG.
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
