// SPDX-License-Identifier: Apache-2.0
// Every item model of the GUI under QAbstractItemModelTester (which fails the test on a broken
// rowCount/parent/signal contract), plus what each one is for: the deltas against the matched control,
// the runs filters, the label checklist, the diff.
#include <QAbstractItemModelTester>
#include <QColor>
#include <QSignalSpy>
#include <QTest>

#include "core/recipe_json.h"
#include "models/findingsmodel.h"
#include "models/recipediffmodel.h"
#include "models/recomputelabelsmodel.h"
#include "models/runsfilterproxy.h"
#include "models/runsmodel.h"
#include "presets.h"
#include "recipedocument.h"

using namespace rs;
using namespace rs::ui;
using storage::RunRecord;

namespace {

// A run of one matched comparison: everything but the recompute choice is shared.
RunRecord run(qint64 id, const QStringList& modules, double gb, std::optional<double> ms,
    const QString& outcome = QStringLiteral("pass"))
{
    RunRecord r;
    r.id = id;
    r.source = QStringLiteral("worker");
    r.recipeName = QStringLiteral("moonlight");
    r.model = QStringLiteral("Moonlight 16B");
    r.numLayers = 27;
    r.hiddenSize = 2048;
    r.seqLength = 4096;
    r.microBatchSize = 1;
    r.precision = QStringLiteral("bf16");
    r.attentionBackend = QStringLiteral("fused");
    r.device = QStringLiteral("NVIDIA H100");
    r.host = QStringLiteral("node1");
    r.profile = QStringLiteral("guide");
    r.recomputeGranularity = QStringLiteral("selective");
    r.recomputeModules = modules;
    r.outcome = outcome;
    r.peakAllocated = qint64(gb * 1e9);
    r.peakReserved = qint64(gb * 1.1e9);
    r.steadyStepMs = ms;
    r.peakNote = QStringLiteral("after iteration 2");
    return r;
}

QVector<RunRecord> comparison()
{
    QVector<RunRecord> runs;
    runs << run(1, {}, 36.618, 457.18);
    runs << run(2, { QStringLiteral("moe_act") }, 35.941, 466.26);
    runs << run(3, { QStringLiteral("mla_up_proj") }, 35.902, 480.89);
    runs << run(4, { QStringLiteral("core_attn") }, 36.614, 474.80);
    RunRecord failed = run(5, { QStringLiteral("layernorm"), QStringLiteral("moe_act") }, 70.0, std::nullopt,
        QStringLiteral("oom"));
    failed.host = QStringLiteral("node2");
    failed.failureStage = QStringLiteral("forward");
    runs << failed;
    for (int i = 1; i < runs.size(); ++i)
        runs[i].controlRunId = 1;
    return runs;
}

} // namespace

class TestModels : public QObject {
    Q_OBJECT

private slots:
    void findingsModel()
    {
        FindingsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const Recipe r = presetRecipe(QStringLiteral("dense-gqa-swiglu"));
        const Validation v = validate(r);
        QVERIFY(!v.findings.empty());
        model.setFindings(v.findings);
        QCOMPARE(model.rowCount(), int(v.findings.size()));
        QCOMPARE(model.index(0, FindingsModel::RuleColumn).data().toString(),
            QString::fromStdString(v.findings[0].rule_id));
        model.setFindings({});
        QCOMPARE(model.rowCount(), 0);
    }

    void recomputeLabelsModel()
    {
        RecomputeLabelsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        Recipe r = presetRecipe(QStringLiteral("moonlight-mla-moe"));
        model.setRecipe(r);
        QVERIFY(model.rowCount() >= int(allowedRecomputeModules(r.profile).size()));
        QCOMPARE(model.checkedLabels(), QStringList { QStringLiteral("moe_act") });
        // an unknown label read from a file gets its own row, marked as absent
        r.recompute_modules = std::vector<std::string> { "moe_act", "moe_layer" };
        model.setRecipe(r);
        const int unknown = int(model.labels().indexOf(QStringLiteral("moe_layer")));
        QVERIFY(unknown >= 0);
        QVERIFY(!model.index(unknown, 0).data(RecomputeLabelsModel::ExistsRole).toBool());
        // unset modules: Megatron's default core_attn shows as checked, implicitly
        r.recompute_modules.reset();
        model.setRecipe(r);
        QCOMPARE(model.checkedLabels(), QStringList { QStringLiteral("core_attn") });
        const int core = int(model.labels().indexOf(QStringLiteral("core_attn")));
        QVERIFY(model.index(core, 0).data(RecomputeLabelsModel::ImplicitRole).toBool());
        QSignalSpy edited(&model, &RecomputeLabelsModel::modulesEdited);
        QVERIFY(model.setData(model.index(int(model.labels().indexOf(QStringLiteral("moe"))), 0), Qt::Checked,
            Qt::CheckStateRole));
        QCOMPARE(edited.count(), 1);
        QCOMPARE(edited.at(0).at(0).toStringList(),
            (QStringList { QStringLiteral("core_attn"), QStringLiteral("moe") }));
    }

    void recipeDiffModel()
    {
        RecipeDiffModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        Recipe r = presetRecipe(QStringLiteral("gpt-unfused"));
        Recipe control = RecipeDocument::controlFor(r);
        model.setRecipes(control, r);
        QCOMPARE(model.rowCount(), 1);
        r.overlap_moe_expert_parallel_comm = true;
        model.setRecipes(control, r);
        QCOMPARE(model.rowCount(), 2);
        bool nested = false;
        for (const auto& d : model.differences())
            nested |= d.key == "comm_overlap.overlap_moe_expert_parallel_comm";
        QVERIFY(nested);
    }

    void runsModelDeltas()
    {
        RunsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setRuns(comparison());
        QCOMPARE(model.rowCount(), 5);
        QVERIFY(model.index(0, 0).data(RunsModel::IsControlRole).toBool());
        QCOMPARE(
            model.index(0, RunsModel::AllocatedDeltaColumn).data().toString(), QStringLiteral("control"));
        // moe_act: the guide's -1.85% / +1.99%
        const int moeAct = model.rowOfRun(2);
        QVERIFY(model.allocatedDeltaPct(moeAct).has_value());
        QCOMPARE(QString::number(*model.allocatedDeltaPct(moeAct), 'f', 2), QStringLiteral("-1.85"));
        QCOMPARE(QString::number(*model.timeDeltaPct(moeAct), 'f', 2), QStringLiteral("1.99"));
        QCOMPARE(model.index(moeAct, RunsModel::TimeDeltaColumn).data().toString(), QStringLiteral("+1.99%"));
        // a run that does not match its control (another sequence length) gets no delta, and says why
        QVector<RunRecord> runs = comparison();
        runs[1].seqLength = 8192;
        model.setRuns(runs);
        QVERIFY(!model.allocatedDeltaPct(model.rowOfRun(2)).has_value());
        QVERIFY(model.index(model.rowOfRun(2), RunsModel::AllocatedDeltaColumn)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("seq_length")));
        model.setRuns({});
        QCOMPARE(model.rowCount(), 0);
    }

    // With the runs' steady iterations, Δ time is the sweep's: the shift with its 95 % interval, and "not
    // significant" (greyed, said in the tooltip) when the interval holds 0; without them the plain
    // percentage.
    void runsModelTimeDeltaInterval_data()
    {
        QTest::addColumn<double>("candidateMs");
        QTest::addColumn<double>("spread");
        QTest::addColumn<bool>("significant");
        QTest::newRow("inside the noise") << 462.0 << 20.0 << false;
        QTest::newRow("clearly slower") << 520.0 << 2.0 << true;
    }
    void runsModelTimeDeltaInterval()
    {
        QFETCH(double, candidateMs);
        QFETCH(double, spread);
        QFETCH(bool, significant);
        RunsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setRuns(comparison());
        const int moeAct = model.rowOfRun(2);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        int asked = 0;
        model.setStepSamplesSource([&](const storage::RunRecord& run) {
            ++asked;
            std::vector<double> t;
            const double median = run.id == 1 ? 457.0 : run.id == 2 ? candidateMs : 0.0;
            for (int i = 0; median > 0 && i < 12; ++i)
                t.push_back(median + spread * ((i % 4) - 1.5) / 1.5);
            return stepSamples(t, run.steadyStepMs);
        });
        QCOMPARE(changed.size(), 1);
        const QString text = model.index(moeAct, RunsModel::TimeDeltaColumn).data().toString();
        const auto stats = model.timeDeltaStats(moeAct);
        QVERIFY(stats && stats->low_pct && stats->high_pct);
        QCOMPARE(text,
            QString::asprintf("%+.2f%% [%+.2f, %+.2f]", stats->pct, *stats->low_pct, *stats->high_pct)
                + (significant ? QString() : QStringLiteral(" not significant")));
        QCOMPARE(text, QString::fromStdString(deltaCell(*stats)));
        QCOMPARE(stats->verdict == Significance::NotSignificant, !significant);
        QVERIFY(*stats->low_pct <= stats->pct && stats->pct <= *stats->high_pct);
        const QString tip = model.index(moeAct, RunsModel::TimeDeltaColumn).data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QString::fromStdString(deltaText(*stats))), qPrintable(tip));
        QCOMPARE(tip.contains(QStringLiteral("inside the noise")), !significant);
        const QColor fg
            = model.index(moeAct, RunsModel::TimeDeltaColumn).data(Qt::ForegroundRole).value<QColor>();
        QCOMPARE(fg == QColor(0x70, 0x70, 0x70), !significant);
        QCOMPARE(
            model.index(moeAct, RunsModel::TimeDeltaColumn).data(RunsModel::SortRole).toDouble(), stats->pct);
        // A run without iterations counts its stored step time as its one sample (no interval), against the
        // control's iterations: the same definition; the control stays "control".
        const int mla = model.rowOfRun(3);
        const auto mlaStats = model.timeDeltaStats(mla);
        QVERIFY(mlaStats && !mlaStats->low_pct);
        QCOMPARE(model.index(mla, RunsModel::TimeDeltaColumn).data().toString(),
            QString::asprintf("%+.2f%%", mlaStats->pct));
        QCOMPARE(model.index(0, RunsModel::TimeDeltaColumn).data().toString(), QStringLiteral("control"));
        // Asked once per run, kept until the runs change.
        const int before = asked;
        model.index(moeAct, RunsModel::TimeDeltaColumn).data();
        QCOMPARE(asked, before);
        model.setRuns(comparison());
        model.index(moeAct, RunsModel::TimeDeltaColumn).data();
        QVERIFY(asked > before);
    }

    void runsModelAdviceAndRanks()
    {
        RunsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVector<RunRecord> runs = comparison();
        runs[1].worldSize = 2;
        model.setRuns(runs);
        QCOMPARE(
            model.index(model.rowOfRun(2), RunsModel::RanksColumn).data().toString(), QStringLiteral("2"));
        QCOMPARE(model.index(model.rowOfRun(3), RunsModel::RanksColumn).data().toString(), QString());
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        QHash<qint64, RunAdvice> advice;
        advice.insert(2, RunAdvice { QStringLiteral("chosen"), QString(), true });
        advice.insert(1,
            RunAdvice { QStringLiteral("over-target"), QStringLiteral("over the 36.000 GB target"), false });
        model.setAdvice(advice);
        QCOMPARE(changed.size(), 1);
        QVERIFY(model.index(model.rowOfRun(2), 0).data(RunsModel::ChosenRole).toBool());
        QVERIFY(model.index(model.rowOfRun(2), RunsModel::ModelColumn).data(Qt::BackgroundRole).isValid());
        QCOMPARE(model.index(model.rowOfRun(1), RunsModel::AdviceColumn).data().toString(),
            QStringLiteral("over-target"));
        QVERIFY(model.index(model.rowOfRun(1), RunsModel::AdviceColumn)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .contains(QStringLiteral("36.000 GB")));
        QCOMPARE(model.index(model.rowOfRun(4), RunsModel::AdviceColumn).data().toString(), QString());
        model.setAdvice({});
        QVERIFY(!model.index(model.rowOfRun(2), 0).data(RunsModel::ChosenRole).toBool());
    }

    void runsFilterAndSort()
    {
        RunsModel model;
        model.setRuns(comparison());
        RunsFilterProxy proxy;
        proxy.setSourceModel(&model);
        QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(proxy.rowCount(), 5);
        proxy.setModuleSetFilter(QStringLiteral("moe_act"));
        QCOMPARE(proxy.rowCount(), 1);
        QCOMPARE(proxy.index(0, 0).data(RunsModel::RunIdRole).toLongLong(), 2);
        proxy.setModuleSetFilter({});
        proxy.setOutcomeFilter(RunsFilterProxy::kFailed);
        QCOMPARE(proxy.rowCount(), 1);
        QCOMPARE(proxy.index(0, 0).data(RunsModel::RunIdRole).toLongLong(), 5);
        proxy.setOutcomeFilter({});
        proxy.setHostFilter(QStringLiteral("node1"));
        QCOMPARE(proxy.rowCount(), 4);
        proxy.setHostFilter({});
        proxy.setRecipeFilter(QStringLiteral("MOONLIGHT"));
        QCOMPARE(proxy.rowCount(), 5);
        proxy.setRecipeFilter(QStringLiteral("nemotron"));
        QCOMPARE(proxy.rowCount(), 0);
        proxy.setRecipeFilter({});
        // numbers sort as numbers: smallest peak first is mla_up_proj (35.902 GB)
        proxy.sort(RunsModel::PeakAllocatedColumn, Qt::AscendingOrder);
        QCOMPARE(proxy.index(0, 0).data(RunsModel::RunIdRole).toLongLong(), 3);
        proxy.sort(RunsModel::StepTimeColumn, Qt::DescendingOrder);
        QCOMPARE(proxy.index(0, 0).data(RunsModel::RunIdRole).toLongLong(), 3); // 480.89 ms
    }
};

QTEST_MAIN(TestModels)
#include "tst_models.moc"
