// SPDX-License-Identifier: Apache-2.0
// The runs page beside the estimator (issue 12) and what holds the peak (issue 13): runs stored through the
// worker's ingest path with the presets' recipes show the estimator's hottest-rank peak for their stored
// recipe and the error of the measurement against it, formatted as core/units does; runs without a full
// recipe (the guide's) say why they have none. The "what holds the peak" chart and its model take the plain
// struct of chartdata.h; its dump is compared with golden files (tests/ui/golden/, RS_UPDATE_GOLDEN=1
// rewrites them). With this build's recompute-bench, the same on real CPU runs of the worker.
#include <cmath>

#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "../storage/store_test_events.h"
#include "charts/chartview.h"
#include "core/estimator.h"
#include "core/recipe_json.h"
#include "core/rules.h"
#include "core/units.h"
#include "launchpage.h"
#include "models/peakattributionmodel.h"
#include "models/runsmodel.h"
#include "presets.h"
#include "recipedocument.h"
#include "runspage.h"
#include "storage/advice.h"
#include "storage/ingest.h"
#include "storage/store.h"

using namespace rs;
using namespace rs::ui;

namespace {

const QString kGolden = QStringLiteral(RS_SOURCE_DIR "/tests/ui/golden/");

Recipe withModules(Recipe r, const QStringList& modules)
{
    r.recompute_granularity = "selective";
    r.recompute_modules = std::vector<std::string> {};
    for (const auto& m : modules)
        r.recompute_modules->push_back(m.toStdString());
    return r;
}

// Stores one run the way the launch page does: the worker's stream through RunIngest.
qint64 ingestRun(storage::Store* store, const Recipe& recipe, qint64 peak, const QString& status,
    std::optional<qint64> control)
{
    storage::RunIngest ingest(store);
    ingest.setControl(control);
    const auto events = storage::test::stream(recipeToJson(recipe), 4, peak, 100.0, true, status);
    for (const auto& e : events)
        if (!ingest.ingest(storage::test::typed(e)))
            return 0;
    ingest.finish();
    return ingest.runId();
}

// Worker runs are estimated in the worker's layout, as the advisor estimates them (issue 29 item 9: one
// estimate of a run, its layout named).
int64_t directEstimate(const Recipe& r)
{
    return estimateMemory(validate(r).resolved, Layout::Worker).peak_bytes;
}

QString cell(RunsPage* page, qint64 id, int column, int role = Qt::DisplayRole)
{
    return page->model()->index(page->model()->rowOfRun(id), column).data(role).toString();
}

// Compares a dump with its golden file (or, with RS_UPDATE_GOLDEN=1, writes it).
void compareGolden(const QString& name, const QString& dump)
{
    const QString path = kGolden + name;
    if (qEnvironmentVariableIntValue("RS_UPDATE_GOLDEN")) {
        QDir().mkpath(kGolden);
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
        out.write(dump.toUtf8());
        return;
    }
    QFile in(path);
    QVERIFY2(
        in.open(QIODevice::ReadOnly), qPrintable(path + QStringLiteral(" (RS_UPDATE_GOLDEN=1 writes it)")));
    const QString golden = QString::fromUtf8(in.readAll());
    if (golden != dump)
        qInfo().noquote() << "dump:\n" << dump;
    QCOMPARE(dump, golden);
}

PeakAttribution bar(const QString& run, const QString& series, const QString& phase,
    std::initializer_list<std::pair<const char*, qint64>> bytes)
{
    PeakAttribution a;
    a.run = run;
    a.series = series;
    a.phase = phase;
    for (const auto& [k, v] : bytes)
        a.bytes.insert(QString::fromLatin1(k), v);
    return a;
}

} // namespace

class TestRunsEstimate : public QObject {
    Q_OBJECT

private slots:
    void init()
    {
        QVERIFY(m_dir.isValid());
        m_store = std::make_unique<storage::Store>();
        QString error;
        QVERIFY2(m_store->open(m_dir.filePath(QStringLiteral("runs-%1.sqlite").arg(++m_serial)), &error),
            qPrintable(error));
    }
    void cleanup() { m_store.reset(); }

    // Each preset's [] control and one candidate, stored through the ingest: the estimate column is the
    // estimator's figure for the recipe as stored (and as the preset reads), the error the measurement's.
    void estimateAndErrorOfStoredRuns_data()
    {
        QTest::addColumn<QString>("preset");
        QTest::addColumn<QStringList>("modules");
        QTest::addColumn<double>("measuredOverEstimate"); // the stored peak, as a multiple of the estimate
        QTest::addColumn<QString>("status");
        QTest::newRow("gpt-unfused core_attn, 3 % over")
            << QStringLiteral("gpt-unfused") << QStringList { QStringLiteral("core_attn") } << 1.03
            << QStringLiteral("pass");
        QTest::newRow("dense-gqa-swiglu mlp, 12 % under")
            << QStringLiteral("dense-gqa-swiglu") << QStringList { QStringLiteral("mlp") } << 0.88
            << QStringLiteral("pass");
        QTest::newRow("moonlight moe_act, on the estimate")
            << QStringLiteral("moonlight-mla-moe") << QStringList { QStringLiteral("moe_act") } << 1.0
            << QStringLiteral("pass");
        QTest::newRow("moonlight mla_up_proj, oom: no error")
            << QStringLiteral("moonlight-mla-moe") << QStringList { QStringLiteral("mla_up_proj") } << 1.2
            << QStringLiteral("oom");
    }
    void estimateAndErrorOfStoredRuns()
    {
        QFETCH(QString, preset);
        QFETCH(QStringList, modules);
        QFETCH(double, measuredOverEstimate);
        QFETCH(QString, status);
        const Recipe base = presetRecipe(preset);
        const Recipe controlRecipe = withModules(base, {});
        const Recipe candidateRecipe = withModules(base, modules);
        const int64_t controlEstimate = directEstimate(controlRecipe);
        const int64_t candidateEstimate = directEstimate(candidateRecipe);
        QVERIFY(controlEstimate > 0 && candidateEstimate > 0);
        const qint64 controlPeak = controlEstimate; // the stream's rank 0 peak; rank 1 is one byte less
        const qint64 candidatePeak = qint64(std::llround(double(candidateEstimate) * measuredOverEstimate));
        const qint64 control
            = ingestRun(m_store.get(), controlRecipe, controlPeak, QStringLiteral("pass"), {});
        QVERIFY(control > 0);
        const qint64 candidate = ingestRun(m_store.get(), candidateRecipe, candidatePeak, status, control);
        QVERIFY(candidate > 0);

        RunsPage page(m_store.get());
        QAbstractItemModelTester tester(page.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester attributionTester(
            page.attributionModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        const storage::RunRecord* stored = page.model()->runById(candidate);
        QVERIFY(stored && !stored->recipeJson.isEmpty());
        QCOMPARE(page.model()->headerData(RunsModel::EstimateColumn, Qt::Horizontal).toString(),
            QStringLiteral("Estimate GB"));
        // The figure of the recipe as stored, and the same as the preset's own.
        const int64_t fromStored = directEstimate(recipeFromJsonText(stored->recipeJson.toStdString()));
        QCOMPARE(fromStored, candidateEstimate);
        QCOMPARE(cell(&page, candidate, RunsModel::EstimateColumn),
            QString::fromStdString(formatGb(candidateEstimate)));
        QCOMPARE(cell(&page, control, RunsModel::EstimateColumn),
            QString::fromStdString(formatGb(controlEstimate)));
        QCOMPARE(page.model()
                     ->index(page.model()->rowOfRun(candidate), RunsModel::EstimateColumn)
                     .data(RunsModel::SortRole)
                     .toLongLong(),
            qint64(candidateEstimate));
        const qint64 measured = *stored->peakAllocated;
        if (status == QLatin1String("pass")) {
            const double expected
                = (double(measured) - double(candidateEstimate)) / double(candidateEstimate) * 100.0;
            QCOMPARE(cell(&page, candidate, RunsModel::EstimateErrorColumn),
                QString::asprintf("%+.1f%%", expected));
            QVERIFY(std::abs(*page.model()->estimateErrorPct(page.model()->rowOfRun(candidate)) - expected)
                < 1e-9);
            QVERIFY(std::abs(expected - (measuredOverEstimate - 1.0) * 100.0) < 0.1);
        } else {
            QCOMPARE(cell(&page, candidate, RunsModel::EstimateErrorColumn), QString());
            QVERIFY(cell(&page, candidate, RunsModel::EstimateErrorColumn, Qt::ToolTipRole)
                        .contains(QStringLiteral("did not pass")));
        }
        QVERIFY(cell(&page, candidate, RunsModel::EstimateColumn, Qt::ToolTipRole)
                    .contains(QStringLiteral("; worker layout")));
        // The advisor estimates the run alike: the reasons it gives beside the runs name the same figure.
        const auto advice = storage::adviseOnControl(*m_store, control, 1000.0);
        QVERIFY(advice);
        for (std::size_t i = 0; i < advice->candidates.size(); ++i) {
            if (advice->rows[int(i)].run.id == candidate) {
                QCOMPARE(advice->candidates[i].estimated_peak_bytes.value_or(0), candidateEstimate);
                QCOMPARE(
                    QString::fromStdString(advice->candidates[i].estimated_layout), QStringLiteral("worker"));
            }
        }

        // What holds the peak: the run on top, its control below, each bar the estimate's whole peak.
        page.selectRun(candidate);
        const PeakAttributionData data = page.attributionModel()->attribution();
        QCOMPARE(data.bars.size(), 2);
        QCOMPARE(data.bars[0].runId, candidate);
        QCOMPARE(data.bars[1].runId, control);
        QCOMPARE(data.bars[0].series, QStringLiteral("estimate"));
        QCOMPARE(data.bars[0].total(), qint64(candidateEstimate));
        QCOMPARE(data.bars[1].total(), qint64(controlEstimate));
        for (auto it = data.bars[0].bytes.begin(); it != data.bars[0].bytes.end(); ++it)
            QVERIFY2(peakCategories().contains(it.key()), qPrintable(it.key()));
        QVERIFY(!page.attributionChart()->isEmpty());
    }

    // The guide's runs keep no full recipe: no figure, and the tooltip says why.
    void guideRunsSayWhyTheyHaveNoEstimate()
    {
        QString error;
        QCOMPARE(m_store->seedGuideSample(storage::Store::guideSamplePath(), &error), 12);
        RunsPage page(m_store.get());
        QAbstractItemModelTester tester(page.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(cell(&page, 1, RunsModel::EstimateColumn), QString());
        QVERIFY(cell(&page, 1, RunsModel::EstimateColumn, Qt::ToolTipRole)
                    .contains(QStringLiteral("no full recipe")));
        page.selectRun(2);
        QVERIFY(page.attributionModel()->attribution().bars.isEmpty());
        QVERIFY(page.attributionChart()->isEmpty());
    }

    // The model and chart over a plain struct (what the store's measured attribution will fill).
    void attributionModelGolden()
    {
        PeakAttributionData data;
        data.title = QStringLiteral("What holds the peak");
        data.memoryTargetGb = 30.0;
        data.bars << bar(QStringLiteral("run 7: core_attn"), QStringLiteral("measured"),
            QStringLiteral("backward"),
            { { "parameters", 4'000'000'000 }, { "main_parameters", 8'000'000'000 },
                { "gradient_buffer", 8'000'000'000 }, { "optimizer_states", 4'000'000'000 },
                { "activations", 3'250'000'000 }, { "backward", 1'125'000'000 }, { "other", 62'500'000 } });
        data.bars << bar(QStringLiteral("run 3: [] (control)"), QStringLiteral("measured"),
            QStringLiteral("backward"),
            { { "parameters", 4'000'000'000 }, { "main_parameters", 8'000'000'000 },
                { "gradient_buffer", 8'000'000'000 }, { "optimizer_states", 4'000'000'000 },
                { "activations", 9'500'000'000 }, { "backward", 1'000'000'000 }, { "workspace", 1 },
                // not a category of the stream's: counted as other
                { "rotary_tables", 37'500'000 } });
        PeakAttributionModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setAttribution(data);
        compareGolden(QStringLiteral("peak-attribution-struct.tsv"), model.dump());
        QCOMPARE(model.index(1, PeakAttributionModel::FirstCategoryColumn + 7)
                     .data(PeakAttributionModel::BytesRole)
                     .toLongLong(),
            37'500'000LL);

        PeakAttributionChart chart;
        chart.resize(900, 400);
        chart.setData(data);
        QVERIFY(!chart.isEmpty());
        // the categories present, in the stream's order, then the target
        QCOMPARE(chart.legendNames(),
            (QStringList { QStringLiteral("parameters"), QStringLiteral("main parameters"),
                QStringLiteral("gradient buffer"), QStringLiteral("optimizer states"),
                QStringLiteral("activations"), QStringLiteral("backward"), QStringLiteral("workspace"),
                QStringLiteral("other"), QStringLiteral("memory target 30.00 GB") }));
        const auto ticks = chart.axisTicks(Qt::Horizontal);
        QVERIFY(!ticks.isEmpty() && ticks.front() == 0.0 && ticks.back() >= 30.0);
        const QImage image = chart.toImage(QSize(900, 400));
        QVERIFY(!image.isNull());
        chart.setData({});
        QVERIFY(chart.isEmpty());
    }

    // The estimate of a real preset's comparison as the runs page feeds the chart.
    void attributionOfAStoredComparisonGolden()
    {
        const Recipe base = presetRecipe(QStringLiteral("gpt-unfused"));
        const qint64 control
            = ingestRun(m_store.get(), withModules(base, {}), 50'000'000'000, QStringLiteral("pass"), {});
        const qint64 candidate = ingestRun(m_store.get(), withModules(base, { QStringLiteral("core_attn") }),
            40'000'000'000, QStringLiteral("pass"), control);
        RunsPage page(m_store.get());
        page.setMemoryTarget(40.0);
        page.selectRun(candidate);
        compareGolden(QStringLiteral("peak-attribution-gpt-unfused.tsv"), page.attributionModel()->dump());
    }

    // The store's measured attribution beside the estimate: each run's estimate, then its measured bar at
    // the phase of its peak (the higher of the phases stored), for the run and its control.
    void measuredBesideTheEstimateGolden()
    {
        const Recipe base = presetRecipe(QStringLiteral("gpt-unfused"));
        const qint64 control
            = ingestRun(m_store.get(), withModules(base, {}), 50'000'000'000, QStringLiteral("pass"), {});
        const qint64 candidate = ingestRun(m_store.get(), withModules(base, { QStringLiteral("core_attn") }),
            40'000'000'000, QStringLiteral("pass"), control);
        auto stored = [&](qint64 run, const QString& phase, qint64 activations) {
            storage::PeakAttributionRow row;
            row.runId = run;
            row.phase = phase;
            row.categories = { { QStringLiteral("parameters"), 4'000'000'000 },
                { QStringLiteral("gradient_buffer"), 8'000'000'000 },
                { QStringLiteral("optimizer_states"), 16'000'000'000 },
                { QStringLiteral("activations"), activations },
                { QStringLiteral("workspace"), 250'000'000 } };
            row.attributed = 28'250'000'000 + activations;
            row.peakAllocated = row.attributed;
            row.activations = { { 0, QStringLiteral("core_attn"), activations } };
            QVERIFY(m_store->insertPeakAttribution(row));
        };
        stored(control, QStringLiteral("forward"), 21'750'000'000); // the control's peak: 50 GB in forward
        stored(control, QStringLiteral("backward"), 1'000'000'000);
        stored(candidate, QStringLiteral("backward"), 11'750'000'000); // the candidate's: 40 GB in backward
        RunsPage page(m_store.get());
        QAbstractItemModelTester tester(
            page.attributionModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        page.setMemoryTarget(40.0);
        page.selectRun(candidate);
        const PeakAttributionData data = page.attributionModel()->attribution();
        QCOMPARE(data.bars.size(), 4);
        const QList<QPair<qint64, QString>> order { { candidate, QStringLiteral("estimate") },
            { candidate, QStringLiteral("measured") }, { control, QStringLiteral("estimate") },
            { control, QStringLiteral("measured") } };
        for (int i = 0; i < 4; ++i) {
            QCOMPARE(data.bars[i].runId, order[i].first);
            QCOMPARE(data.bars[i].series, order[i].second);
        }
        QCOMPARE(data.bars[1].phase, QStringLiteral("backward"));
        QCOMPARE(data.bars[1].total(), 40'000'000'000LL);
        QCOMPARE(data.bars[3].phase, QStringLiteral("forward"));
        QCOMPARE(data.bars[3].total(), 50'000'000'000LL);
        QCOMPARE(data.bars[3].category(QStringLiteral("activations")), 21'750'000'000LL);
        QVERIFY(!page.attributionChart()->isEmpty());
        compareGolden(QStringLiteral("peak-attribution-measured.tsv"), page.attributionModel()->dump());
    }

    // Real CPU runs of the worker (this build's recompute-bench): estimated, with an error, and attributed.
    void realWorkerRuns_data()
    {
        QTest::addColumn<QString>("modules");
        QTest::newRow("core_attn") << QStringLiteral("core_attn");
        QTest::newRow("mlp") << QStringLiteral("mlp");
    }
    void realWorkerRuns()
    {
        QFETCH(QString, modules);
        QString worker = qEnvironmentVariable("RS_TEST_REAL_WORKER");
#ifdef RS_REAL_WORKER
        if (worker.isEmpty())
            worker = QStringLiteral(RS_REAL_WORKER);
#endif
        if (worker.isEmpty() || !QFileInfo::exists(worker))
            QSKIP("no recompute-bench built (build it, or set RS_TEST_REAL_WORKER, to run this)");
        const QByteArray saved = qgetenv("RS_WORKER");
        qputenv("RS_WORKER", worker.toLocal8Bit());
        RecipeDocument document;
        Recipe recipe = presetRecipe(QStringLiteral("gpt-unfused"));
        recipe.num_layers = 2;
        recipe.hidden_size = 128;
        recipe.ffn_hidden_size.reset();
        recipe.num_attention_heads = 4;
        recipe.seq_length = 128;
        recipe.vocab_size = 512;
        recipe.warmup_iters = 1;
        recipe.train_iters = 2;
        recipe.add_bias_linear = false; // mlp is a row: with biases Megatron cannot run it (RT30)
        document.setRecipe(withModules(recipe, { modules }));
        LaunchPage launch(&document, m_store.get());
        QSignalSpy finished(&launch, &LaunchPage::launchFinished);
        QVERIFY(launch.start());
        QVERIFY(finished.wait(120000));
        qputenv("RS_WORKER", saved);
        QCOMPARE(launch.storedRuns().size(), 2);
        const qint64 control = launch.storedRuns()[0];
        const qint64 candidate = launch.storedRuns()[1];

        RunsPage page(m_store.get());
        QAbstractItemModelTester tester(page.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        for (const qint64 id : { control, candidate }) {
            const int row = page.model()->rowOfRun(id);
            const storage::RunRecord* r = page.model()->run(row);
            QVERIFY2(r->outcome == QStringLiteral("pass"), qPrintable(r->message));
            const MemoryEstimate* e = page.model()->estimate(row);
            QVERIFY2(e, qPrintable(page.model()->estimateNote(row)));
            const auto err = page.model()->estimateErrorPct(row);
            QVERIFY(err);
            qInfo("run %lld (%s): measured %s GB, estimate %s GB, error %+.1f%%", id,
                qPrintable(r->moduleSetLabel()), formatGb(r->peakAllocated).c_str(),
                formatGb(e->peak_bytes).c_str(), *err);
            QCOMPARE(cell(&page, id, RunsModel::EstimateErrorColumn), QString::asprintf("%+.1f%%", *err));
            // a CPU run of a tiny model: the estimate is of the same order (issue 12 holds it to 5 %)
            QVERIFY2(std::abs(*err) < 50.0, qPrintable(QString::number(*err)));
        }
        page.selectRun(candidate);
        // the estimate and the measured attribution of the run, then of its control
        const PeakAttributionData data = page.attributionModel()->attribution();
        QCOMPARE(data.bars.size(), 4);
        for (int i = 0; i < 4; ++i) {
            const qint64 id = i < 2 ? candidate : control;
            QCOMPARE(data.bars[i].runId, id);
            QCOMPARE(data.bars[i].series, i % 2 ? QStringLiteral("measured") : QStringLiteral("estimate"));
            if (i % 2 == 0)
                continue;
            const auto rows = m_store->peakAttribution(id);
            const storage::PeakAttributionRow* peak = storage::Store::peakPhaseOf(rows);
            QVERIFY(peak && peak->attributed);
            QCOMPARE(data.bars[i].phase, peak->phase);
            QCOMPARE(data.bars[i].total(), *peak->attributed);
            // the bar accounts for the run's stored peak within 1 %
            const qint64 stored = *page.model()->runById(id)->peakAllocated;
            QVERIFY2(std::abs(double(data.bars[i].total() - stored)) <= 0.01 * double(stored),
                qPrintable(QStringLiteral("%1 vs %2").arg(data.bars[i].total()).arg(stored)));
        }
    }

private:
    QTemporaryDir m_dir;
    std::unique_ptr<storage::Store> m_store;
    int m_serial = 0;
};

QTEST_MAIN(TestRunsEstimate)
#include "tst_runsestimate.moc"
