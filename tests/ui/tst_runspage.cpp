// SPDX-License-Identifier: Apache-2.0
// The runs page as a user reads it: the banner counts what the filter shows, the memory target keeps
// two decimals, the advisor's choice for the target is marked in the table and on the chart with every
// other run's reason (the same advice as `recompute advise`, step-time significance included), the ranks
// column, a cancelled run drawn as stopped rather than failed, the table's context menu (compare, set as
// control, re-run, delete), and a hovered point's tooltip staying up.
#include <QAbstractItemModelTester>
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHelpEvent>
#include <QLabel>
#include <QMenu>
#include <QMouseEvent>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>

#include "charts/chartview.h"
#include "core/step_stats.h"
#include "models/runsfilterproxy.h"
#include "models/runsmodel.h"
#include "reportwriter.h"
#include "runspage.h"
#include "storage/advice.h"
#include "storage/log_import.h"
#include "storage/report.h"
#include "storage/store.h"

using namespace rs;
using namespace rs::ui;
using storage::RunRecord;

namespace {

RunRecord workerRun(const QStringList& modules, double gb, std::optional<double> ms,
    const QString& outcome = storage::outcome::Pass)
{
    RunRecord r;
    r.source = storage::source::Worker;
    r.createdAt = QDateTime::currentDateTimeUtc();
    r.recipeName = QStringLiteral("tiny");
    r.model = QStringLiteral("Tiny GPT");
    r.numLayers = 4;
    r.hiddenSize = 256;
    r.seqLength = 512;
    r.microBatchSize = 1;
    r.precision = QStringLiteral("bf16");
    r.device = QStringLiteral("cpu");
    r.host = QStringLiteral("testhost");
    r.profile = QStringLiteral("main");
    r.recomputeGranularity = QStringLiteral("selective");
    r.recomputeModules = modules;
    r.outcome = outcome;
    r.peakAllocated = qint64(gb * 1e9);
    r.steadyStepMs = ms;
    r.worldSize = 1;
    return r;
}

int rowOf(RunsPage* page, qint64 id)
{
    return page->model()->rowOfRun(id);
}

QString cell(RunsPage* page, qint64 id, int column, int role = Qt::DisplayRole)
{
    return page->model()->index(rowOf(page, id), column).data(role).toString();
}

void showComparison(RunsPage* page, qint64 control)
{
    const int i = page->comparisonBox()->findData(control);
    QVERIFY(i >= 0);
    page->comparisonBox()->setCurrentIndex(i);
    page->redrawTradeoff();
}

} // namespace

class TestRunsPage : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        QVERIFY(m_dir.isValid());
        m_store = std::make_unique<storage::Store>();
        QString error;
        QVERIFY2(m_store->open(m_dir.filePath(QStringLiteral("runs-%1.sqlite").arg(++m_serial)), &error),
            qPrintable(error));
        QVERIFY2(
            m_store->seedGuideSample(storage::Store::guideSamplePath(), &error) == 12, qPrintable(error));
        m_page = std::make_unique<RunsPage>(m_store.get());
        m_modelTester = std::make_unique<QAbstractItemModelTester>(
            m_page->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        m_proxyTester = std::make_unique<QAbstractItemModelTester>(
            m_page->proxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    }
    void cleanup()
    {
        m_proxyTester.reset();
        m_modelTester.reset();
        m_page.reset();
        m_store.reset();
    }

    void bannerCountsWhatTheFilterShows_data()
    {
        QTest::addColumn<QString>("filter");
        QTest::addColumn<int>("shown");
        QTest::newRow("no filter") << QString() << 12;
        QTest::newRow("Nemotron") << QStringLiteral("Nemotron") << 6;
        QTest::newRow("nothing") << QStringLiteral("no such model") << 0;
    }
    void bannerCountsWhatTheFilterShows()
    {
        QFETCH(QString, filter);
        QFETCH(int, shown);
        m_page->proxy()->setRecipeFilter(filter);
        QCOMPARE(m_page->proxy()->rowCount(), shown);
        const QString banner = m_page->banner()->text();
        if (shown == 12) {
            QVERIFY2(
                banner.contains(QStringLiteral("12 run(s)")) && !banner.contains(QStringLiteral(" of 12")),
                qPrintable(banner));
        } else {
            QVERIFY2(banner.contains(QStringLiteral("%1 of 12 run(s) shown").arg(shown)), qPrintable(banner));
        }
        QCOMPARE(banner.contains(QStringLiteral("imported from the guide")), shown > 0);
    }

    void memoryTargetKeepsTwoDecimals_data()
    {
        QTest::addColumn<double>("gb");
        QTest::newRow("35.93") << 35.93;
        QTest::newRow("36") << 36.0;
        QTest::newRow("0.25") << 0.25;
    }
    void memoryTargetKeepsTwoDecimals()
    {
        QFETCH(double, gb);
        m_page->setMemoryTarget(gb);
        QCOMPARE(m_page->targetBox()->value(), gb);
        QVERIFY(m_page->targetBox()->text().contains(QString::number(gb, 'f', 2)));
        QCOMPARE(*m_page->tradeoffChart()->data().memoryTarget, gb);
    }

    // The guide's comparison 1 at 36 GB: moe_act has the lowest stored step time that fits. With stored
    // steady iterations, mla_up_proj's step time made the lowest: inside the noise of moe_act's, moe_act
    // (the narrower boundary) is still chosen by significance, where the advisor alone would take
    // mla_up_proj; clearly apart, mla_up_proj is chosen. The page shows what storage::adviseOnControl
    // (and so `recompute advise`) decides, its note included.
    void advisorMarksTheChosenRunAsRecomputeAdviseDoes_data()
    {
        QTest::addColumn<double>("mlaMs"); // < 0: the guide's sample as it is, no iterations
        QTest::addColumn<double>("spread");
        QTest::addColumn<QString>("chosenLabel");
        QTest::addColumn<bool>("moved");
        QTest::newRow("no iterations: moe_act") << -1.0 << 0.0 << QStringLiteral("moe_act") << false;
        QTest::newRow("not significantly faster: moe_act")
            << 462.0 << 15.0 << QStringLiteral("moe_act") << true;
        QTest::newRow("significantly faster: mla_up_proj")
            << 400.0 << 2.0 << QStringLiteral("mla_up_proj") << false;
    }
    void advisorMarksTheChosenRunAsRecomputeAdviseDoes()
    {
        QFETCH(double, mlaMs);
        QFETCH(double, spread);
        QFETCH(QString, chosenLabel);
        QFETCH(bool, moved);
        if (mlaMs > 0) {
            // Run 3: mla_up_proj, run 5: moe_act (both fit 36 GB); 12 steady iterations each.
            RunRecord mla = *m_store->run(3);
            QCOMPARE(mla.moduleSetLabel(), QStringLiteral("mla_up_proj"));
            QCOMPARE(m_store->run(5)->moduleSetLabel(), QStringLiteral("moe_act"));
            mla.steadyStepMs = mlaMs;
            QVERIFY(m_store->updateRun(mla));
            for (const auto& [id, ms] : { std::pair { qint64(3), mlaMs }, std::pair { qint64(5), 466.0 } }) {
                for (int i = 1; i <= 12; ++i) {
                    storage::IterationRow row;
                    row.runId = id;
                    row.iteration = i;
                    row.phase = QStringLiteral("steady");
                    row.stepMs = ms + spread * ((i % 4) - 1.5) / 1.5;
                    QVERIFY(m_store->insertIteration(row));
                }
            }
            m_page->reload();
        }
        showComparison(m_page.get(), 1);
        m_page->setMemoryTarget(36.0);
        const auto expected = storage::adviseOnControl(*m_store, 1, 36.0);
        QVERIFY(expected && expected->advice.chosen);
        const qint64 chosen = expected->rows[int(*expected->advice.chosen)].run.id;
        QCOMPARE(m_page->model()->runById(chosen)->moduleSetLabel(), chosenLabel);
        // The advisor alone takes the lowest stored step time: where significance moved the choice, the
        // page must not show that one.
        const Advice plain = adviseRecompute(expected->candidates, 36.0);
        QVERIFY(plain.chosen);
        QCOMPARE(plain.chosen != expected->advice.chosen, moved);
        QCOMPARE(!expected->significanceNote.isEmpty(), moved);
        if (moved)
            QVERIFY2(m_page->adviceLabel()->text().contains(expected->significanceNote.toHtmlEscaped()),
                qPrintable(m_page->adviceLabel()->text()));
        for (std::size_t i = 0; i < expected->candidates.size(); ++i) {
            const qint64 id = expected->rows[int(i)].run.id;
            const CandidateVerdict& v = expected->advice.verdicts[i];
            const bool isChosen = id == chosen;
            QCOMPARE(m_page->model()->index(rowOf(m_page.get(), id), 0).data(RunsModel::ChosenRole).toBool(),
                isChosen);
            QCOMPARE(cell(m_page.get(), id, RunsModel::AdviceColumn),
                isChosen ? QStringLiteral("✔ chosen") : QString::fromLatin1(verdictName(v.verdict)));
            if (!isChosen) {
                QVERIFY(!v.reasons.empty());
                QVERIFY(cell(m_page.get(), id, RunsModel::AdviceColumn, Qt::ToolTipRole)
                            .contains(QString::fromStdString(v.reasons.front())));
            }
        }
        // the summary line, and the chosen point ringed on the chart
        QVERIFY2(m_page->adviceLabel()->text().contains(
                     QString::fromStdString(expected->advice.summary).toHtmlEscaped()),
            qPrintable(m_page->adviceLabel()->text()));
        int chosenPoints = 0;
        for (const TradeoffPoint& p : m_page->tradeoffChart()->data().points) {
            if (p.chosen) {
                ++chosenPoints;
                QCOMPARE(p.moduleSet, chosenLabel);
                QVERIFY(p.tooltip.contains(QStringLiteral("advisor: chosen")));
            } else if (p.groupKey == 1) {
                QVERIFY2(p.tooltip.contains(QStringLiteral("advisor: ")), qPrintable(p.tooltip));
            }
        }
        QCOMPARE(chosenPoints, 1);
        QVERIFY(m_page->tradeoffChart()->legendNames().contains(QStringLiteral("advisor's choice")));

        // no target: no advice, and the page says what it needs
        m_page->setMemoryTarget(std::nullopt);
        QVERIFY(m_page->adviceLabel()->text().contains(QStringLiteral("memory target")));
        QCOMPARE(cell(m_page.get(), chosen, RunsModel::AdviceColumn), QString());
        QVERIFY(!m_page->tradeoffChart()->legendNames().contains(QStringLiteral("advisor's choice")));
        // all comparisons at once: the advisor needs one
        m_page->setMemoryTarget(36.0);
        showComparison(m_page.get(), 0);
        QVERIFY(m_page->adviceLabel()->text().contains(QStringLiteral("choose one comparison")));
    }

    void ranksColumn_data()
    {
        QTest::addColumn<int>("worldSize");
        QTest::addColumn<int>("gpuCount");
        QTest::addColumn<QString>("shown");
        QTest::newRow("two ranks") << 2 << 0 << QStringLiteral("2");
        QTest::newRow("an imported job's GPUs") << 0 << 8 << QStringLiteral("8");
        QTest::newRow("unknown") << 0 << 0 << QString();
    }
    void ranksColumn()
    {
        QFETCH(int, worldSize);
        QFETCH(int, gpuCount);
        QFETCH(QString, shown);
        RunRecord r = workerRun({}, 1.0, 10.0);
        r.worldSize = worldSize ? std::optional<int>(worldSize) : std::nullopt;
        r.gpuCount = gpuCount ? std::optional<int>(gpuCount) : std::nullopt;
        const qint64 id = m_store->insertRun(r);
        m_page->reload();
        QCOMPARE(m_page->model()->headerData(RunsModel::RanksColumn, Qt::Horizontal).toString(),
            QStringLiteral("Ranks"));
        QCOMPARE(cell(m_page.get(), id, RunsModel::RanksColumn), shown);
    }

    // The page reads the stored steady iterations: Δ time shows its interval, and "not significant" for a
    // difference inside the noise, as `recompute sweep` prints it.
    void timeDeltaShowsItsInterval_data()
    {
        QTest::addColumn<double>("candidateMs");
        QTest::addColumn<double>("spread");
        QTest::addColumn<bool>("significant");
        QTest::newRow("overlapping") << 101.0 << 5.0 << false;
        QTest::newRow("apart") << 130.0 << 0.5 << true;
    }
    void timeDeltaShowsItsInterval()
    {
        QFETCH(double, candidateMs);
        QFETCH(double, spread);
        QFETCH(bool, significant);
        const qint64 control = m_store->insertRun(workerRun({}, 2.0, 100.0));
        RunRecord c = workerRun({ QStringLiteral("core_attn") }, 1.5, candidateMs);
        c.controlRunId = control;
        const qint64 candidate = m_store->insertRun(c);
        for (const auto& [id, ms] : { std::pair { control, 100.0 }, std::pair { candidate, candidateMs } }) {
            for (int i = 1; i <= 10; ++i) {
                storage::IterationRow row;
                row.runId = id;
                row.iteration = i;
                row.phase = QStringLiteral("steady");
                row.stepMs = ms + spread * ((i % 3) - 1);
                QVERIFY(m_store->insertIteration(row));
            }
        }
        m_page->reload();
        const QString text = cell(m_page.get(), candidate, RunsModel::TimeDeltaColumn);
        QVERIFY2(text.contains(QLatin1Char('[')) && text.contains(QLatin1Char(']')), qPrintable(text));
        QCOMPARE(text.endsWith(QStringLiteral(" not significant")), !significant);
        QVERIFY2(cell(m_page.get(), candidate, RunsModel::TimeDeltaColumn, Qt::ToolTipRole)
                     .contains(QStringLiteral("Hodges-Lehmann")),
            qPrintable(cell(m_page.get(), candidate, RunsModel::TimeDeltaColumn, Qt::ToolTipRole)));
        QCOMPARE(cell(m_page.get(), control, RunsModel::TimeDeltaColumn), QStringLiteral("control"));
    }

    void stoppedRunIsNotDrawnAsFailed_data()
    {
        QTest::addColumn<QString>("outcome");
        QTest::addColumn<QString>("message");
        QTest::addColumn<QString>("legend");
        QTest::addColumn<QString>("outcomeText");
        QTest::newRow("cancelled") << QStringLiteral("aborted")
                                   << QStringLiteral("cancelled: the worker was stopped")
                                   << QStringLiteral("stopped (cancelled / no result)")
                                   << QStringLiteral("aborted (cancelled)");
        QTest::newRow("no result") << QStringLiteral("aborted")
                                   << QStringLiteral("the stream ended without a result")
                                   << QStringLiteral("stopped (cancelled / no result)")
                                   << QStringLiteral("aborted");
        QTest::newRow("oom") << QStringLiteral("oom") << QString() << QStringLiteral("failed (OOM / error)")
                             << QStringLiteral("oom");
    }
    void stoppedRunIsNotDrawnAsFailed()
    {
        QFETCH(QString, outcome);
        QFETCH(QString, message);
        QFETCH(QString, legend);
        QFETCH(QString, outcomeText);
        const qint64 control = m_store->insertRun(workerRun({}, 2.0, 100.0));
        RunRecord candidate = workerRun({ QStringLiteral("core_attn") }, 1.5, std::nullopt, outcome);
        candidate.message = message;
        candidate.controlRunId = control;
        const qint64 id = m_store->insertRun(candidate);
        m_page->reload();
        showComparison(m_page.get(), control);
        const QStringList names = m_page->tradeoffChart()->legendNames();
        QVERIFY2(names.contains(legend), qPrintable(names.join(u'|')));
        const QString other = legend.startsWith(QLatin1String("failed"))
            ? QStringLiteral("stopped (cancelled / no result)")
            : QStringLiteral("failed (OOM / error)");
        QVERIFY2(!names.contains(other), qPrintable(names.join(u'|')));
        QCOMPARE(cell(m_page.get(), id, RunsModel::OutcomeColumn), outcomeText);
    }

    void contextMenu()
    {
        const qint64 control = m_store->insertRun(workerRun({}, 2.0, 100.0));
        RunRecord repeat = workerRun({}, 2.0, 101.0);
        repeat.controlRunId = control;
        const qint64 repeatId = m_store->insertRun(repeat);
        RunRecord candidate = workerRun({ QStringLiteral("core_attn") }, 1.5, 110.0);
        candidate.recipeJson = QStringLiteral("{\"name\":\"tiny\"}");
        const qint64 candidateId = m_store->insertRun(candidate);
        const qint64 doomed = m_store->insertRun(workerRun({ QStringLiteral("mlp") }, 1.2, 120.0));
        m_page->reload();

        std::unique_ptr<QMenu> menu(m_page->contextMenuFor(candidateId));
        QStringList names;
        for (QAction* a : menu->findChildren<QAction*>()) {
            if (!a->objectName().isEmpty())
                names << a->objectName();
        }
        for (const char* expected : { "showComparison", "setAsControl", "rerun", "delete" })
            QVERIFY2(names.contains(QLatin1String(expected)), qPrintable(names.join(u'|')));
        QVERIFY(menu->findChild<QAction*>(QStringLiteral("rerun"))->isEnabled()); // it has a recipe
        QVERIFY(!menu->findChild<QAction*>(QStringLiteral("setAsControl"))->isEnabled()); // not a [] run
        // a guide run carries no recipe: no re-run
        std::unique_ptr<QMenu> guideMenu(m_page->contextMenuFor(2));
        QVERIFY(!guideMenu->findChild<QAction*>(QStringLiteral("rerun"))->isEnabled());

        // compare against the control: linked, deltas follow
        QAction* compare = menu->findChild<QAction*>(QStringLiteral("compareWith%1").arg(control));
        QVERIFY(compare);
        compare->trigger();
        QCOMPARE(m_page->model()->runById(candidateId)->controlRunId, std::optional<qint64>(control));
        QVERIFY(!cell(m_page.get(), candidateId, RunsModel::TimeDeltaColumn).isEmpty());

        // the repeat of the control becomes the comparison's control
        QVERIFY(m_page->makeControl(repeatId));
        QCOMPARE(m_page->model()->runById(candidateId)->controlRunId, std::optional<qint64>(repeatId));
        QCOMPARE(m_page->model()->runById(control)->controlRunId, std::optional<qint64>(repeatId));
        QVERIFY(!m_page->model()->runById(repeatId)->controlRunId);

        // re-run hands the run to whoever takes it (the main window)
        std::unique_ptr<QMenu> again(m_page->contextMenuFor(candidateId));
        qint64 asked = 0;
        connect(m_page.get(), &RunsPage::rerunRequested, this, [&asked](qint64 id) { asked = id; });
        again->findChild<QAction*>(QStringLiteral("rerun"))->trigger();
        QCOMPARE(asked, candidateId);

        const int before = m_page->model()->rowCount();
        QCOMPARE(m_page->deleteRuns({ doomed }, false), 1);
        QCOMPARE(m_page->model()->rowCount(), before - 1);
        QVERIFY(!m_page->model()->runById(doomed));
        QVERIFY(!m_store->run(doomed));
    }

    void hoveredPointKeepsItsTooltip()
    {
        m_page->resize(1200, 800);
        m_page->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_page.get()));
        showComparison(m_page.get(), 1);
        TradeoffChart* chart = m_page->tradeoffChart();
        m_page->chartTabs()->setCurrentWidget(chart);
        qint64 id = 0;
        for (const TradeoffPoint& p : chart->data().points) {
            if (p.groupKey == 1 && p.moduleSet == QLatin1String("moe_act"))
                id = p.runId;
        }
        QVERIFY(id);
        QPoint at;
        QTRY_VERIFY((at = chart->viewPositionOfRun(id), chart->viewport()->rect().contains(at)));
        // A mouse move as the window system delivers it (QTest::mouseMove only moves the cursor, which
        // the offscreen platform does not turn into events).
        for (const QPoint& p : { at + QPoint(30, 30), at }) {
            QMouseEvent move(QEvent::MouseMove, p, chart->viewport()->mapToGlobal(p), Qt::NoButton,
                Qt::NoButton, Qt::NoModifier);
            QApplication::sendEvent(chart->viewport(), &move);
        }
        QTRY_VERIFY(!chart->hoverTip().isEmpty());
        QVERIFY2(chart->hoverTip().contains(QStringLiteral("moe_act")), qPrintable(chart->hoverTip()));
        // The view's own tooltip event (what used to hide it at once) shows the point's tooltip.
        QHelpEvent help(QEvent::ToolTip, at, chart->viewport()->mapToGlobal(at));
        QApplication::sendEvent(chart->viewport(), &help);
        QTRY_VERIFY(QToolTip::isVisible());
        QCOMPARE(QToolTip::text(), chart->hoverTip());
    }

    // Issue 29 item 1: imported Megatron-LM logs compare against their run without recompute (Megatron's
    // None, which Megatron-LM cannot write as []): the comparison is listed, selecting a run shows it, its
    // control is drawn as the control, and the advisor advises on it, as `recompute advise` does.
    void importedMegatronLogsAreChartedAndAdvised_data()
    {
        QTest::addColumn<QStringList>("logs"); // the control first
        QTest::newRow("dense") << QStringList { QStringLiteral("dense-none"),
            QStringLiteral("dense-core_attn"), QStringLiteral("dense-full-uniform-1"),
            QStringLiteral("dense-full-block-4") };
        QTest::newRow("moe") << QStringList { QStringLiteral("moe-none"), QStringLiteral("moe-moe"),
            QStringLiteral("moe-core_attn"), QStringLiteral("moe-shared_experts") };
    }
    void importedMegatronLogsAreChartedAndAdvised()
    {
        QFETCH(QStringList, logs);
        QVector<qint64> ids;
        for (const QString& name : logs) {
            const auto r = storage::importTrainingLog(m_store.get(),
                QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-h200/%1.log").arg(name));
            QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
            ids << r.runId;
        }
        m_page->reload();
        const qint64 control = ids.front();
        QCOMPARE(m_store->run(control)->moduleSetLabel(), QStringLiteral("none"));
        QVERIFY2(m_page->comparisonBox()->findData(control) >= 0, "the None control heads a comparison");
        // Selecting a candidate shows its comparison.
        m_page->selectRun(ids.back());
        QCOMPARE(m_page->comparisonBox()->currentData().toLongLong(), control);
        QVERIFY(!m_page->tradeoffChart()->isEmpty());
        int points = 0, controls = 0;
        for (const TradeoffPoint& p : m_page->tradeoffChart()->data().points) {
            points += p.groupKey == control;
            controls += p.groupKey == control && p.isControl;
        }
        QCOMPARE(points, int(ids.size()));
        QCOMPARE(controls, 1);
        QCOMPARE(cell(m_page.get(), control, RunsModel::AllocatedDeltaColumn), QStringLiteral("control"));
        // The advisor advises on it as the CLI does.
        m_page->setMemoryTarget(100.0);
        const auto expected = storage::adviseOnControl(*m_store, control, 100.0);
        QVERIFY(expected && expected->advice.chosen);
        QVERIFY2(m_page->adviceLabel()->text().contains(
                     QString::fromStdString(expected->advice.summary).toHtmlEscaped()),
            qPrintable(m_page->adviceLabel()->text()));
        // "Show its comparison" from the context menu does the same.
        m_page->comparisonBox()->setCurrentIndex(m_page->comparisonBox()->findData(qint64(1)));
        std::unique_ptr<QMenu> menu(m_page->contextMenuFor(ids[1]));
        menu->findChild<QAction*>(QStringLiteral("showComparison"))->trigger();
        QCOMPARE(m_page->comparisonBox()->currentData().toLongLong(), control);
    }

    // Issue 29 item 3: one Δ step time everywhere, named: the runs table's cell, its header and tooltip, the
    // reports (Markdown and the studio's HTML / PDF), the chart and the advisor give the same figure,
    // core's Hodges-Lehmann shift of the steady iterations, never the mean of the steps.
    void oneStepTimeDeltaEverywhere()
    {
        // One slow step in the candidate: the mean moves by ~9 %, the shift by 1 %.
        const qint64 control = m_store->insertRun(workerRun({}, 2.0, 100.0));
        RunRecord c = workerRun({ QStringLiteral("core_attn") }, 1.5, std::nullopt);
        c.controlRunId = control;
        const qint64 candidate = m_store->insertRun(c);
        std::vector<double> controlMs, candidateMs;
        for (int i = 1; i <= 12; ++i) {
            controlMs.push_back(100.0 + (i % 3) * 0.1);
            candidateMs.push_back(i == 12 ? 200.0 : 101.0 + (i % 3) * 0.1);
        }
        for (const auto& [id, times] :
            { std::pair { control, controlMs }, std::pair { candidate, candidateMs } }) {
            for (int i = 1; i <= 12; ++i) {
                storage::IterationRow row;
                row.runId = id;
                row.iteration = i;
                row.phase = QStringLiteral("steady");
                row.stepMs = times[std::size_t(i - 1)];
                QVERIFY(m_store->insertIteration(row));
            }
        }
        RunRecord cand = *m_store->run(candidate);
        double mean = 0;
        for (double v : candidateMs)
            mean += v / 12.0;
        cand.steadyStepMs = mean; // what a worker stores: the mean of its steady steps
        QVERIFY(m_store->updateRun(cand));
        m_page->reload();
        const auto d = timeDelta(candidateMs, controlMs);
        QVERIFY(d && d->low_pct);
        const QString figure = QString::fromStdString(deltaCell(*d));
        const double meanPct = (mean - 100.1) / 100.1 * 100.0;
        QVERIFY2(std::abs(meanPct - d->pct) > 5.0, "the case must tell the mean from the shift");
        // The runs table: the cell, named in the header and its tooltip.
        QCOMPARE(cell(m_page.get(), candidate, RunsModel::TimeDeltaColumn), figure);
        QCOMPARE(m_page->model()->headerData(RunsModel::TimeDeltaColumn, Qt::Horizontal).toString(),
            QString::fromUtf8(kStepDeltaName));
        QVERIFY(m_page->model()
                    ->headerData(RunsModel::TimeDeltaColumn, Qt::Horizontal, Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("Hodges-Lehmann")));
        // The store's comparison, the Markdown report and the studio's report (HTML, what the PDF prints).
        const auto rows = m_store->compare(control, { candidate });
        QCOMPARE(QString::asprintf("%+.2f", *rows[1].timeVsControlPct), QString::asprintf("%+.2f", d->pct));
        const QString md = storage::formatReport(
            storage::buildReport(*m_store, control, { candidate }), storage::ReportFormat::Markdown);
        QVERIFY2(md.contains(figure) && md.contains(QStringLiteral("Time vs [] (HL)")), qPrintable(md));
        const QString html = ReportWriter(*m_store, { control, candidate }).html(false);
        QVERIFY2(html.contains(figure.toHtmlEscaped()) && html.contains(QString::fromUtf8(kStepDeltaName)),
            qPrintable(html.left(3000)));
        // The chart's Δ% axis places the point by the same figure.
        showComparison(m_page.get(), control);
        m_page->axesBox()->setCurrentIndex(1);
        m_page->redrawTradeoff();
        bool placed = false;
        for (const TradeoffPoint& p : m_page->tradeoffChart()->data().points) {
            if (p.runIds.contains(candidate)) {
                QVERIFY(p.x);
                QCOMPARE(QString::asprintf("%+.2f", *p.x), QString::asprintf("%+.2f", d->pct));
                placed = true;
            }
        }
        QVERIFY(placed);
        // The advisor quotes it, named (1.8 GB: only the candidate fits, so it is chosen).
        m_page->setMemoryTarget(1.8);
        QVERIFY2(m_page->adviceLabel()->text().contains(QStringLiteral("%1 vs the control %2")
                                                            .arg(QString::fromUtf8(kStepDeltaName), figure)
                                                            .toHtmlEscaped()),
            qPrintable(m_page->adviceLabel()->text()));
    }

    // Issue 29 item 6: at 1366 x 768 the advisor's long text does not take the chart's height (the memory
    // axis' labels were cut to "…"), a target far above the runs does not draw the axis below 0 GB, and the
    // ring around the advisor's choice answers hover and click as its point does.
    void tradeoffChartAtLaptopSize_data()
    {
        QTest::addColumn<double>("target");
        QTest::newRow("36 GB: the guide's choice, long advice") << 36.0;
        QTest::newRow("500 GB: far above every run") << 500.0;
    }
    void tradeoffChartAtLaptopSize()
    {
        QFETCH(double, target);
        m_page->resize(1350, 640); // the runs page inside the window at 1366 x 768
        m_page->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_page.get()));
        showComparison(m_page.get(), 1);
        m_page->setMemoryTarget(target);
        TradeoffChart* chart = m_page->tradeoffChart();
        m_page->chartTabs()->setCurrentWidget(chart);
        QTRY_VERIFY(!m_page->adviceLabel()->text().isEmpty());
        auto* scroll = m_page->findChild<QWidget*>(QStringLiteral("adviceScroll"));
        QVERIFY(scroll);
        QVERIFY2(scroll->height() <= m_page->fontMetrics().lineSpacing() * 3 + 6,
            qPrintable(QString::number(scroll->height())));
        QVERIFY2(chart->height() >= 220, qPrintable(QString::number(chart->height())));
        for (double t : chart->axisTicks(Qt::Vertical))
            QVERIFY2(t >= 0.0, qPrintable(QString::number(t)));
        for (double t : chart->axisTicks(Qt::Horizontal))
            QVERIFY2(t >= 0.0, qPrintable(QString::number(t)));
        // The chosen point: hover and click reach it through its ring.
        const TradeoffPoint* chosen = nullptr;
        for (const TradeoffPoint& p : chart->data().points)
            if (p.chosen)
                chosen = &p;
        QVERIFY(chosen);
        const qint64 id = chosen->runId;
        QPoint at;
        QTRY_VERIFY((at = chart->viewPositionOfRun(id), chart->viewport()->rect().contains(at)));
        for (const QPoint& p : { at + QPoint(40, 40), at }) {
            QMouseEvent move(QEvent::MouseMove, p, chart->viewport()->mapToGlobal(p), Qt::NoButton,
                Qt::NoButton, Qt::NoModifier);
            QApplication::sendEvent(chart->viewport(), &move);
        }
        QTRY_VERIFY(!chart->hoverTip().isEmpty());
        QCOMPARE(chart->hoverTip(), chosen->tooltip);
        QSignalSpy activated(chart, &TradeoffChart::runActivated);
        QTest::mouseClick(chart->viewport(), Qt::LeftButton, Qt::NoModifier, at);
        QTRY_COMPARE(activated.size(), 1);
        QCOMPARE(activated.front().front().toLongLong(), id);
    }

    // Issue 29 item 8: a [] control that did not pass and has no run compared with it (the worker refused
    // it) heads no comparison: selecting it does not make it the chart's comparison.
    void failedControlIsNoComparison()
    {
        const int before = m_page->comparisonBox()->currentIndex();
        const qint64 refused
            = m_store->insertRun(workerRun({}, 0.0, std::nullopt, storage::outcome::Invalid));
        m_page->reload();
        QCOMPARE(m_page->comparisonBox()->findData(refused), -1);
        m_page->selectRun(refused);
        QCOMPARE(m_page->comparisonBox()->currentIndex(), before);
    }

    // Issue 29 item 10: a tiny CPU run's peak reads with three significant figures (0.0483 GB, not 0.048).
    void tinyPeaksKeepTheirFigures()
    {
        const qint64 id = m_store->insertRun(workerRun({}, 0.048312, 100.0));
        m_page->reload();
        QCOMPARE(cell(m_page.get(), id, RunsModel::PeakAllocatedColumn), QStringLiteral("0.0483"));
    }

private:
    QTemporaryDir m_dir;
    int m_serial = 0;
    std::unique_ptr<storage::Store> m_store;
    std::unique_ptr<RunsPage> m_page;
    std::unique_ptr<QAbstractItemModelTester> m_modelTester;
    std::unique_ptr<QAbstractItemModelTester> m_proxyTester;
};

QTEST_MAIN(TestRunsPage)
#include "tst_runspage.moc"
