// SPDX-License-Identifier: Apache-2.0
// The recipe page's plan (core/plan.h in the window): the plan's item model under QAbstractItemModelTester,
// the plan's front on the trade-off chart as predictions that give way to measurements of the same recipe
// and choice, the plan's table beside what a real store measured of it, and the Plan tab offscreen (the
// bundled records offered, a measured one first; the provisional record labelled PROVISIONAL wherever its
// figures are shown; a file of the user's beside them).
#include <cmath>

#include <nlohmann/json.hpp>

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include "charts/chartdata.h"
#include "charts/chartview.h"
#include "core/advisor.h"
#include "core/plan.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "models/planmodel.h"
#include "planpanel.h"
#include "presets.h"
#include "recipedocument.h"
#include "runspage.h"
#include "storage/store.h"

using namespace rs;
using namespace rs::ui;
using storage::RunRecord;

namespace {

// The bundled record that is provisional (resources/calibration/h100-bf16-PROVISIONAL.json).
QString provisionalPath()
{
    for (const auto& b : PlanPanel::bundledRates())
        if (b.provisional)
            return b.path;
    qFatal("no provisional rates record in the resources");
}

CalibrationRates provisionalRates()
{
    QFile f(provisionalPath());
    if (!f.open(QIODevice::ReadOnly))
        qFatal("the provisional rates record is not in the resources");
    return calibrationFromJson(nlohmann::json::parse(f.readAll().toStdString()));
}

Recipe resolvedPreset(const QString& name, std::optional<double> target)
{
    Recipe r = presetRecipe(name);
    r.memory_target_gb = target;
    return validate(r).resolved;
}

Plan planOf(const Recipe& resolved)
{
    const auto t = resolved.memory_target_gb;
    return planRecompute(
        resolved, InputFormat::Json, provisionalRates(), t, t ? kEstimateErrorFraction : 0.0);
}

// A stored run of `choice` of `resolved`, as the worker's ingest stores it: the resolved recipe's JSON, its
// match key, the recompute columns.
RunRecord measuredRun(qint64 id, const Recipe& resolved, const RecomputeChoice& choice, double gb, double ms,
    std::optional<qint64> control)
{
    const Recipe run = validate(candidateRecipe(resolved, choice)).resolved;
    RunRecord r;
    r.id = id;
    r.source = QStringLiteral("worker");
    r.recipeName = QString::fromStdString(run.name);
    r.recipeJson = QString::fromStdString(recipeToJson(run).dump());
    r.recipeMatchKey = storage::Store::recipeMatchKey(r.recipeJson);
    r.recomputeGranularity = QString::fromStdString(choice.granularity);
    if (choice.granularity == "full") {
        r.recomputeMethod = QString::fromStdString(choice.method);
        r.recomputeNumLayers = choice.num_layers;
    } else {
        QStringList modules;
        for (const auto& m : choice.modules)
            modules << QString::fromStdString(m);
        r.recomputeModules = modules;
    }
    r.outcome = QStringLiteral("pass");
    r.peakAllocated = qint64(gb * 1e9);
    r.steadyStepMs = ms;
    r.controlRunId = control;
    return r;
}

int predictedCount(const TradeoffData& d)
{
    int n = 0;
    for (const auto& p : d.points)
        n += p.predicted;
    return n;
}

} // namespace

class TestPlan : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        // Never the user's own settings (the remembered rates file).
        QCoreApplication::setOrganizationName(QStringLiteral("recompute-studio-tests"));
        QVERIFY(m_settingsDir.isValid());
        QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, m_settingsDir.path());
        QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, m_settingsDir.path());
    }
    void init() { QSettings().clear(); }

    void planModel_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<double>("target"); // 0: none
        QTest::addColumn<bool>("anyFits");
        QTest::newRow("moonlight, 80 GB") << QStringLiteral("moonlight-mla-moe") << 80.0 << true;
        QTest::newRow("moonlight, no target") << QStringLiteral("moonlight-mla-moe") << 0.0 << true;
        QTest::newRow("moonlight, 1 GB: nothing fits") << QStringLiteral("moonlight-mla-moe") << 1.0 << false;
        QTest::newRow("dense gqa, 80 GB: its 171 GB fit nowhere")
            << QStringLiteral("dense-gqa-swiglu") << 80.0 << false;
        QTest::newRow("gpt unfused, 32 GB: recompute needed")
            << QStringLiteral("gpt-unfused") << 32.0 << true;
        QTest::newRow("gpt unfused, no target") << QStringLiteral("gpt-unfused") << 0.0 << true;
    }
    void planModel()
    {
        QFETCH(QString, preset);
        QFETCH(double, target);
        QFETCH(bool, anyFits);
        const Plan plan
            = planOf(resolvedPreset(preset, target > 0 ? std::optional<double>(target) : std::nullopt));
        PlanModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 0);
        model.setPlan(plan);
        QCOMPARE(model.rowCount(), int(plan.candidates.size()));
        QCOMPARE(model.columnCount(), int(PlanModel::ColumnCount));
        QCOMPARE(model.chosenRow() >= 0, anyFits);
        // The control first, and every row says its verdict and choice as the plan does.
        QCOMPARE(model.index(0, PlanModel::ChoiceColumn).data().toString(), QStringLiteral("[]"));
        for (int row = 0; row < model.rowCount(); ++row) {
            const PlanCandidate& c = plan.candidates[size_t(row)];
            QCOMPARE(
                model.index(row, PlanModel::ChoiceColumn).data().toString(), QString::fromStdString(c.label));
            QCOMPARE(model.index(row, PlanModel::VerdictColumn).data().toString(),
                QString::fromLatin1(planVerdictName(c.verdict)));
            QCOMPARE(model.index(row, PlanModel::ReasonColumn).data().toString(),
                QString::fromStdString(c.reason));
            const bool chosen = row == model.chosenRow();
            QCOMPARE(model.index(row, PlanModel::StepColumn).data(PlanModel::ChosenRole).toBool(), chosen);
            QCOMPARE(
                model.index(row, PlanModel::ChoiceColumn).data(Qt::FontRole).value<QFont>().bold(), chosen);
            if (c.verdict == PlanVerdict::Invalid) {
                QVERIFY(!model.index(row, PlanModel::StepColumn).data().isValid());
                continue;
            }
            QCOMPARE(model.index(row, PlanModel::StepColumn).data(PlanModel::SortRole).toDouble(), c.step_ms);
            QCOMPARE(model.index(row, PlanModel::PeakColumn).data(PlanModel::SortRole).toLongLong(),
                qlonglong(c.peak_bytes));
            QCOMPARE(model.index(row, PlanModel::StagePeaksColumn).data().toString().count(QLatin1Char('/')),
                int(c.rank_peaks.size()) - 1);
        }
        if (anyFits) {
            const PlanCandidate& c = plan.candidates[size_t(model.chosenRow())];
            // The cheapest that fits: no fitting choice is predicted faster.
            for (const PlanCandidate& o : plan.candidates)
                if (o.verdict == PlanVerdict::Fits)
                    QVERIFY(o.step_ms >= c.step_ms);
        }
        // Predictions from the provisional record say so in the step-time headers.
        QVERIFY(plan.provisional);
        QVERIFY(model.headerData(PlanModel::StepColumn, Qt::Horizontal)
                    .toString()
                    .contains(QLatin1String("PROVISIONAL")));
        QVERIFY(model.headerData(PlanModel::DeltaColumn, Qt::Horizontal)
                    .toString()
                    .contains(QLatin1String("PROVISIONAL")));
        model.clear();
        QCOMPARE(model.rowCount(), 0);
        QVERIFY(!model.headerData(PlanModel::StepColumn, Qt::Horizontal)
                     .toString()
                     .contains(QLatin1String("PROVISIONAL")));
    }

    // Each predicted point of the plan's front gives way to a stored measurement of the same recipe and
    // choice.
    void predictionGivesWayToMeasurement_data()
    {
        QTest::addColumn<QString>(
            "measure"); // which front choices are measured: none | control | all | other
        QTest::newRow("nothing measured: every front point predicted") << QStringLiteral("none");
        QTest::newRow("the [] measured") << QStringLiteral("control");
        QTest::newRow("every front choice measured") << QStringLiteral("all");
        QTest::newRow("another recipe measured: no replacement") << QStringLiteral("other");
    }
    void predictionGivesWayToMeasurement()
    {
        QFETCH(QString, measure);
        // The unfused GPT: its front runs from [] (36.5 GB) down through full recompute to core_attn.
        const Recipe resolved = resolvedPreset(QStringLiteral("gpt-unfused"), 32.0);
        const Plan plan = planOf(resolved);
        const PlanOverlay overlay = planOverlay(plan, resolved, InputFormat::Json);
        QCOMPARE(overlay.front.size(), qsizetype(plan.front.size()));
        QVERIFY(overlay.front.size() >= 2);
        QVERIFY(overlay.provisional);
        // The plan's [] is on its front (no recompute is the fastest); it is the one the control stands for.
        int controlAt = -1;
        for (int k = 0; k < overlay.front.size(); ++k)
            if (overlay.front[k].isControl)
                controlAt = k;
        QVERIFY(controlAt >= 0);

        Recipe other = resolved;
        other.seq_length *= 2; // another recipe: its runs are no measurement of this plan
        QVector<RunRecord> runs;
        const Recipe& measuredRecipe = measure == QLatin1String("other") ? other : resolved;
        if (measure != QLatin1String("none"))
            runs << measuredRun(1, measuredRecipe, RecomputeChoice {}, 70.0, 1000.0, std::nullopt);
        if (measure == QLatin1String("all") || measure == QLatin1String("other"))
            for (int k = 0; k < overlay.front.size(); ++k)
                if (k != controlAt)
                    runs << measuredRun(
                        10 + k, measuredRecipe, overlay.front[k].choice, 60.0 - k, 1100.0 + k, 1);
        const int measured = measure == QLatin1String("all") ? int(overlay.front.size())
            : measure == QLatin1String("control")            ? 1
                                                             : 0;
        for (TradeoffAxis axis : { TradeoffAxis::Absolute, TradeoffAxis::VersusControl }) {
            QVector<const RunRecord*> pointers;
            for (const auto& r : runs)
                pointers << &r;
            TradeoffData data = buildTradeoffFrom(pointers, axis);
            const int measuredPoints = int(data.points.size());
            applyPlan(&data, overlay, pointers, axis);
            QCOMPARE(predictedCount(data), int(overlay.front.size()) - measured);
            QCOMPARE(int(data.points.size()), measuredPoints + int(overlay.front.size()) - measured);
            int onPlanFront = 0;
            for (const auto& p : data.points) {
                onPlanFront += p.onPlanFront;
                if (p.predicted) {
                    QVERIFY(p.runIds.isEmpty());
                    QVERIFY(!p.onFront); // not on the measured front
                    QVERIFY(p.tooltip.contains(QLatin1String("PROVISIONAL")));
                } else if (p.onPlanFront) {
                    QVERIFY(p.tooltip.contains(QLatin1String("measured in place of the plan's predicted")));
                }
            }
            QCOMPARE(onPlanFront, int(overlay.front.size()));
            QVERIFY(data.provisionalPredictions);
            // Predictions join the measured recipe's comparison; another recipe's plan gets a group of its
            // own.
            const bool ownGroup = measure == QLatin1String("none") || measure == QLatin1String("other");
            for (const auto& p : data.points)
                if (p.predicted)
                    QCOMPARE(data.groups[p.groupIndex].startsWith(QLatin1String("plan: ")), ownGroup);
            if (axis == TradeoffAxis::Absolute) {
                // The predicted point sits at the plan's own figures.
                for (const auto& p : data.points)
                    if (p.predicted)
                        for (const auto& pp : overlay.front)
                            if (pp.moduleSet == p.moduleSet) {
                                QCOMPARE(*p.x, pp.stepMs);
                                QCOMPARE(p.y, pp.peakGb);
                            }
            }
        }
        // On the chart: a legend entry for the predictions, provisional said.
        QVector<const RunRecord*> pointers;
        for (const auto& r : runs)
            pointers << &r;
        TradeoffData data = buildTradeoffFrom(pointers, TradeoffAxis::Absolute);
        applyPlan(&data, overlay, pointers, TradeoffAxis::Absolute);
        TradeoffChart chart;
        chart.resize(900, 600);
        chart.setData(data);
        QCOMPARE(chart.legendNames().contains(predictedSeriesName(true)), measured < overlay.front.size());
    }

    // On the runs page: the plan's entry under "Trade-off of" shows its recipe's runs and the front, a stored
    // measurement in place of its prediction; the store's recipe_match_key column is what matches them.
    void runsPageDrawsThePlan()
    {
        QTemporaryDir dir;
        storage::Store store;
        QString error;
        QVERIFY2(store.open(dir.filePath(QStringLiteral("plan.sqlite")), &error), qPrintable(error));
        const Recipe resolved = resolvedPreset(QStringLiteral("gpt-unfused"), 32.0);
        const Plan plan = planOf(resolved);
        const PlanOverlay overlay = planOverlay(plan, resolved, InputFormat::Json);
        RunRecord control = measuredRun(0, resolved, RecomputeChoice {}, 36.0, 70.0, std::nullopt);
        const qint64 controlId = store.insertRun(control);
        QVERIFY(controlId > 0);
        RunsPage page(&store);
        page.resize(1200, 700);
        page.show();
        page.reload();
        QCOMPARE(page.comparisonBox()->findData(RunsPage::kPlanComparison), -1);
        page.setPlan(overlay);
        QVERIFY(page.comparisonBox()->findData(RunsPage::kPlanComparison) >= 0);
        page.showPlan();
        const TradeoffData& data = page.tradeoffChart()->data();
        QCOMPARE(predictedCount(data), int(overlay.front.size()) - 1); // the [] is measured
        bool controlMeasured = false;
        for (const auto& p : data.points)
            controlMeasured |= p.isControl && !p.predicted && p.onPlanFront && p.runIds.contains(controlId);
        QVERIFY(controlMeasured);
        QVERIFY(page.tradeoffChart()->legendNames().contains(predictedSeriesName(true)));
        page.clearPlan();
        QCOMPARE(page.comparisonBox()->findData(RunsPage::kPlanComparison), -1);
        QCOMPARE(predictedCount(page.tradeoffChart()->data()), 0);
    }

    // The plan's Measured column: a real store holding the []'s run and one candidate's (both of the planned
    // recipe, as the worker stores them), looked up by the panel through the store's recipe_match_key.
    void measuredColumn_data()
    {
        QTest::addColumn<bool>("controlStored");
        QTest::addColumn<QString>("outcome"); // the candidate's run
        QTest::addColumn<double>("candidateMs");
        QTest::addColumn<bool>("otherRecipe"); // the runs are of a recipe with another seq_length
        QTest::newRow("[] and the chosen one: Δ and miss")
            << true << QStringLiteral("pass") << 1100.0 << false;
        QTest::newRow("the chosen one faster than []") << true << QStringLiteral("pass") << 950.0 << false;
        QTest::newRow("no []: no Δ") << false << QStringLiteral("pass") << 1100.0 << false;
        QTest::newRow("the chosen one failed") << true << QStringLiteral("oom") << 0.0 << false;
        QTest::newRow("another recipe's runs: nothing measured")
            << true << QStringLiteral("pass") << 1100.0 << true;
    }
    void measuredColumn()
    {
        QFETCH(bool, controlStored);
        QFETCH(QString, outcome);
        QFETCH(double, candidateMs);
        QFETCH(bool, otherRecipe);
        QSettings().setValue(PlanPanel::kRatesSetting, provisionalPath());
        QTemporaryDir dir;
        storage::Store store;
        QString error;
        QVERIFY2(store.open(dir.filePath(QStringLiteral("plan.sqlite")), &error), qPrintable(error));

        RecipeDocument document;
        Recipe recipe = presetRecipe(QStringLiteral("gpt-unfused"));
        recipe.memory_target_gb = 32.0;
        document.resetUntitled(recipe);
        // What the panel will plan: the same plan, for the choice to store a run of.
        const Recipe resolved = validate(recipe).resolved;
        const Plan expected = planOf(resolved);
        QVERIFY(expected.chosen);
        const PlanCandidate& chosen = expected.candidates[*expected.chosen];
        Recipe stored = resolved;
        if (otherRecipe)
            stored.seq_length *= 2;
        qint64 controlId = 0;
        if (controlStored) {
            controlId
                = store.insertRun(measuredRun(0, stored, RecomputeChoice {}, 36.5, 1000.0, std::nullopt));
            QVERIFY(controlId > 0);
        }
        RunRecord run = measuredRun(0, stored, chosen.choice, 30.25, candidateMs,
            controlId ? std::optional<qint64>(controlId) : std::nullopt);
        if (outcome != QLatin1String("pass")) {
            run.outcome = outcome;
            run.failureStage = QStringLiteral("forward");
            run.steadyStepMs.reset();
        }
        const qint64 runId = store.insertRun(run);
        QVERIFY(runId > 0);

        PlanPanel panel(&document);
        QAbstractItemModelTester tester(
            panel.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        panel.setStore(&store);
        QTRY_VERIFY_WITH_TIMEOUT(!panel.isPlanning() && panel.model()->rowCount() > 0, 60000);
        const PlanModel& model = *panel.model();
        QCOMPARE(model.rowCount(), int(expected.candidates.size()));
        QCOMPARE(model.chosenRow(), int(*expected.chosen));
        const int row = model.chosenRow();
        const auto cell = [&](int r, int role = Qt::DisplayRole) {
            return model.index(r, PlanModel::MeasuredColumn).data(role);
        };
        // Every candidate without a run of its own is empty.
        for (int r = 0; r < model.rowCount(); ++r)
            if (r != row && !(r == 0 && controlStored && !otherRecipe))
                QVERIFY2(!cell(r).isValid(), qPrintable(cell(r).toString()));
        // An empty column is hidden, and the summary says what is measured.
        QCOMPARE(panel.table()->isColumnHidden(PlanModel::MeasuredColumn), otherRecipe);
        QCOMPARE(model.measuredCount(), otherRecipe ? 0 : controlStored ? 2 : 1);
        QVERIFY2(panel.statusLabel()->text().contains(otherRecipe
                         ? QStringLiteral("None of them measured in the store yet")
                         : QStringLiteral("%1 of them measured in the store").arg(model.measuredCount())),
            qPrintable(panel.statusLabel()->text()));
        if (otherRecipe) {
            QVERIFY(!cell(row).isValid());
            QVERIFY(!cell(0).isValid());
            return;
        }
        if (controlStored) {
            QCOMPARE(cell(0).toString(), QStringLiteral("36.50 GB, 1000.0 ms"));
            QCOMPARE(cell(0, PlanModel::MeasuredStepMsRole).toDouble(), 1000.0);
            QVERIFY(!cell(0, PlanModel::MissPtsRole).isValid()); // the reference itself
        }
        if (outcome != QLatin1String("pass")) {
            QCOMPARE(cell(row).toString(), QStringLiteral("oom in forward, 30.25 GB"));
            QVERIFY(!cell(row, PlanModel::MeasuredStepMsRole).isValid());
            QVERIFY(!cell(row, PlanModel::MissPtsRole).isValid());
            return;
        }
        QCOMPARE(cell(row, PlanModel::MeasuredPeakGbRole).toDouble(), 30.25);
        QCOMPARE(cell(row, PlanModel::MeasuredStepMsRole).toDouble(), candidateMs);
        QVERIFY(cell(row, Qt::ToolTipRole).toString().contains(QString::number(runId)));
        if (!controlStored) {
            QCOMPARE(cell(row).toString(), QStringLiteral("30.25 GB, %1 ms").arg(candidateMs, 0, 'f', 1));
            QVERIFY(!cell(row, PlanModel::MeasuredDeltaPctRole).isValid());
            return;
        }
        // One stored step time a side (no iterations): the Δ is the plain difference, in % of the [].
        const double measuredDelta = (candidateMs - 1000.0) / 1000.0 * 100.0;
        QCOMPARE(cell(row, PlanModel::MeasuredDeltaPctRole).toDouble(), measuredDelta);
        // The predicted Δ a measurement is held to: the model's difference over the measured [] step.
        const double predictedDelta
            = 100.0 * (chosen.model_step_ms - model.plan().candidates.front().model_step_ms) / 1000.0;
        QVERIFY(predictedDelta != chosen.delta_pct); // the model's own [] is not 1000 ms
        QCOMPARE(cell(row, PlanModel::MissPtsRole).toDouble(), predictedDelta - measuredDelta);
        QCOMPARE(cell(row).toString(),
            QStringLiteral("30.25 GB, %1 ms, Δ %2 (miss %3)")
                .arg(candidateMs, 0, 'f', 1)
                .arg(QString::asprintf("%+.2f %%", measuredDelta))
                .arg(QString::asprintf("%+.2f pt", predictedDelta - measuredDelta)));
        // Sorted by the miss.
        QCOMPARE(cell(row, PlanModel::SortRole).toDouble(), predictedDelta - measuredDelta);

        // A run stored later is shown once the store is looked at again.
        const qint64 more
            = store.insertRun(measuredRun(0, resolved, chosen.choice, 30.25, candidateMs + 100.0, controlId));
        panel.remeasure();
        QCOMPARE(cell(row, PlanModel::MeasuredStepMsRole).toDouble(), candidateMs + 50.0); // the mean of two
        QVERIFY(cell(row, Qt::ToolTipRole).toString().contains(QString::number(more)));
    }

    // The records compiled into the resources, each named from its own fields; a measured one first.
    void bundledRecords()
    {
        const auto bundled = PlanPanel::bundledRates();
        QVERIFY(bundled.size() >= 2);
        QVERIFY(!bundled.front().provisional);
        bool anyProvisional = false;
        for (const auto& b : bundled) {
            QVERIFY(b.path.startsWith(QLatin1String(":/calibration/")));
            QFile f(b.path);
            QVERIFY(f.open(QIODevice::ReadOnly));
            const CalibrationRates rates
                = calibrationFromJson(nlohmann::json::parse(f.readAll().toStdString()));
            QCOMPARE(b.provisional, rates.provisional);
            QCOMPARE(b.label, PlanPanel::ratesLabel(rates));
            QVERIFY(b.label.startsWith(QString::fromStdString(rates.device + ", " + rates.dtype)));
            QCOMPARE(b.label.contains(QLatin1String("PROVISIONAL")), rates.provisional);
            if (!rates.provisional)
                QVERIFY(b.label.contains(QString::fromStdString(rates.measured_at.substr(0, 10))));
            anyProvisional |= rates.provisional;
        }
        QVERIFY(anyProvisional);
    }

    void panelOffscreen()
    {
        RecipeDocument document;
        Recipe r = presetRecipe(QStringLiteral("moonlight-mla-moe"));
        r.memory_target_gb = 60.0;
        document.resetUntitled(r);
        PlanPanel panel(&document);
        panel.resize(1000, 500);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        // Nothing remembered: the measured record is taken over the provisional one, and planned with.
        const auto bundled = PlanPanel::bundledRates();
        QVERIFY(panel.rates());
        QVERIFY(!panel.rates()->provisional);
        QCOMPARE(panel.ratesFile(), bundled.front().path);
        QCOMPARE(panel.ratesBox()->count(), int(bundled.size()));
        QCOMPARE(panel.ratesBox()->currentText(), bundled.front().label);
        QCOMPARE(panel.targetBox()->value(), 60.0);
        QTRY_VERIFY_WITH_TIMEOUT(!panel.isPlanning() && panel.model()->rowCount() > 0, 30000);
        QVERIFY(!panel.model()->plan().provisional);
        QVERIFY(!panel.statusLabel()->text().contains(QLatin1String("PROVISIONAL")));
        QVERIFY(panel.statusLabel()->text().contains(QLatin1String("Predicted, not measured")));

        // A file that is not a record: the field and the reason; the record in use stays.
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("bad.json"));
        {
            QFile f(bad);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(R"({"kind": "recompute-calibration", "version": 1, "device": "x", "dtype": "bf16"})");
        }
        QString error;
        QVERIFY(!panel.setRatesFile(bad, &error));
        QVERIFY2(error.contains(QLatin1String("source: missing")), qPrintable(error));
        QVERIFY(panel.statusLabel()->text().contains(QLatin1String("source: missing")));
        QCOMPARE(panel.ratesFile(), bundled.front().path);
        QCOMPARE(panel.ratesBox()->count(), int(bundled.size()));

        // The provisional record chosen in the box.
        QSignalSpy planned(&panel, &PlanPanel::planned);
        const int provisionalAt = panel.ratesBox()->findData(provisionalPath());
        QVERIFY(provisionalAt > 0);
        QVERIFY(panel.ratesBox()->itemText(provisionalAt).contains(QLatin1String("PROVISIONAL")));
        panel.ratesBox()->setCurrentIndex(provisionalAt);
        emit panel.ratesBox()->activated(provisionalAt);
        QTRY_VERIFY_WITH_TIMEOUT(planned.count() == 1, 30000);
        QVERIFY(!panel.isPlanning());
        QCOMPARE(QSettings().value(PlanPanel::kRatesSetting).toString(), provisionalPath());
        const Plan& plan = panel.model()->plan();
        QVERIFY(plan.provisional);
        QCOMPARE(plan.target_gb, std::optional<double>(60.0));
        QCOMPARE(panel.model()->rowCount(), int(plan.candidates.size()));
        QVERIFY(panel.statusLabel()->text().contains(QLatin1String("PROVISIONAL")));
        QVERIFY(panel.statusLabel()->text().contains(QLatin1String("Cheapest that fits")));
        const auto overlay = planned.takeFirst().at(0).value<PlanOverlay>();
        QCOMPARE(overlay.front.size(), qsizetype(plan.front.size()));
        // The table shows the model through its sorting proxy; the chosen row is selected, its reason below.
        QCOMPARE(panel.table()->model()->rowCount(), int(plan.candidates.size()));
        const PlanCandidate& chosen = plan.candidates[size_t(panel.model()->chosenRow())];
        QTRY_COMPARE(panel.whyLabel()->text(), QString::fromStdString(chosen.label + ": " + chosen.reason));
        // No store: nothing measured, no column for it, nothing said of it.
        for (int row = 0; row < panel.model()->rowCount(); ++row)
            QVERIFY(!panel.model()->index(row, PlanModel::MeasuredColumn).data().isValid());
        QVERIFY(panel.table()->isColumnHidden(PlanModel::MeasuredColumn));
        QVERIFY(!panel.statusLabel()->text().contains(QLatin1String("measured in the store")));

        // A target typed here re-plans.
        panel.targetBox()->setValue(1.0);
        QTRY_VERIFY_WITH_TIMEOUT(planned.count() == 1, 30000);
        QCOMPARE(panel.model()->plan().target_gb, std::optional<double>(1.0));
        QCOMPARE(panel.model()->chosenRow(), -1);
        QVERIFY(panel.statusLabel()->text().contains(QLatin1String("No choice fits")));
        QVERIFY(!panel.statusLabel()->text().contains(QLatin1String("kept free for the estimate's error")));

        // Just above the lowest estimate (to the box's 0.1 GB): nothing fits with the margin, but that choice
        // is inside it, which a run decides: said so, not as a red "nothing".
        double lowest = 1e30;
        for (const PlanCandidate& c : panel.model()->plan().candidates)
            if (c.verdict != PlanVerdict::Invalid)
                lowest = std::min(lowest, double(c.peak_bytes) / 1e9);
        const double justAbove = std::ceil(lowest * 10 + 0.01) / 10;
        QVERIFY(lowest > 0.95 * justAbove); // the lowest is inside the 5 % margin of it
        panel.targetBox()->setValue(justAbove);
        QTRY_VERIFY_WITH_TIMEOUT(planned.count() == 2, 30000);
        QCOMPARE(panel.model()->chosenRow(), -1);
        QVERIFY2(panel.statusLabel()->text().contains(
                     QLatin1String("on every rank with the 5 % kept free for the estimate's error")),
            qPrintable(panel.statusLabel()->text()));

        // A recipe with rule errors plans nothing and takes the plan back.
        QSignalSpy cleared(&panel, &PlanPanel::planCleared);
        QString why;
        QVERIFY(document.setField("moe_grouped_gemm", false, nullptr, &why));
        QVERIFY(document.setField("recompute_modules", nlohmann::json::array({ "moe_act" }), nullptr, &why));
        QVERIFY(document.validation().hasErrors()); // R12: moe_act needs the grouped GEMM
        QTRY_VERIFY_WITH_TIMEOUT(cleared.count() == 1, 30000);
        QCOMPARE(panel.model()->rowCount(), 0);
        QVERIFY(panel.statusLabel()->text().contains(QLatin1String("rule errors")));

        // The record is remembered: a new panel starts with it.
        {
            PlanPanel again(&document);
            QVERIFY(again.rates());
            QVERIFY(again.rates()->provisional);
            QCOMPARE(again.ratesBox()->currentData().toString(), provisionalPath());
        }

        // A file of the user's: an entry of its own after the bundled ones, remembered as the file.
        const QString mine = dir.filePath(QStringLiteral("my-gpu.json"));
        QVERIFY(QFile::copy(bundled.front().path, mine));
        QVERIFY(panel.setRatesFile(mine, &error));
        QCOMPARE(panel.ratesBox()->count(), int(bundled.size()) + 1);
        QCOMPARE(panel.ratesBox()->currentData().toString(), mine);
        QVERIFY(panel.ratesBox()->currentText().startsWith(QLatin1String("my-gpu.json (")));
        QCOMPARE(QSettings().value(PlanPanel::kRatesSetting).toString(), mine);
        {
            PlanPanel again(&document);
            QCOMPARE(again.ratesFile(), mine);
            QCOMPARE(again.ratesBox()->currentData().toString(), mine);
        }
        // Back to a bundled one: the file's entry goes.
        QVERIFY(panel.setRatesFile(bundled.front().path));
        QCOMPARE(panel.ratesBox()->count(), int(bundled.size()));
        QTRY_VERIFY_WITH_TIMEOUT(!panel.isPlanning(), 30000);
    }

private:
    QTemporaryDir m_settingsDir;
};

QTEST_MAIN(TestPlan)
#include "tst_plan.moc"
