// SPDX-License-Identifier: Apache-2.0
// The launch page end to end against the launcher's test double (tests/launch/fake_worker.cpp): the
// control runs first and becomes the recipe run's control, the progress bar and the live memory curve
// follow the stream, every run lands in the store, and cancel ends a run as aborted with what it measured.
// A recipe with rule errors is refused before anything starts (nothing stored); a stored matched control is
// reused (the worker starts for the candidate only), also one that `recompute sweep` measured, whose [] is
// the page's own (same recipe hash); repeats show their spread; the live chart keeps the control's curve and
// draws reserved memory in its own colours.
#include <QCheckBox>
#include <QFile>
#include <QJsonDocument>
#include <QLineEdit>
#include <QProcess>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "charts/chartview.h"
#include "core/recipe_json.h"
#include "core/step_stats.h"
#include "launchpage.h"
#include "presets.h"
#include "recipedocument.h"
#include "session/run_session.h"
#include "storage/significance.h"
#include "storage/store.h"

using namespace rs;
using namespace rs::ui;

class TestLaunchPage : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
#ifndef RS_FAKE_WORKER
        QSKIP("the launcher's fake worker is not part of this build (tests/launch)");
#else
        qputenv("RS_WORKER", RS_FAKE_WORKER);
#endif
        QVERIFY(m_dir.isValid());
        QString error;
        QVERIFY2(m_store.open(m_dir.filePath(QStringLiteral("runs.sqlite")), &error), qPrintable(error));
    }

    void runsControlThenRecipe()
    {
        RecipeDocument document;
        Recipe recipe = presetRecipe(QStringLiteral("moonlight-mla-moe"));
        recipe.train_iters = 6;
        recipe.warmup_iters = 2;
        document.setRecipe(recipe);
        LaunchPage page(&document, &m_store);
        QSignalSpy stored(&page, &LaunchPage::runStored);
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QVERIFY(page.controlFirstBox()->isChecked());
        QVERIFY(page.start());
        QVERIFY(page.isRunning());
        QVERIFY(finished.wait(30000));
        QCOMPARE(stored.count(), 2);
        const QVector<qint64> runs = page.storedRuns();
        QCOMPARE(runs.size(), 2);
        const auto control = m_store.run(runs[0]);
        const auto candidate = m_store.run(runs[1]);
        QVERIFY(control && candidate);
        QVERIFY(control->isExplicitControl());
        QCOMPARE(candidate->moduleSetLabel(), QStringLiteral("moe_act"));
        QCOMPARE(candidate->controlRunId.value_or(0), runs[0]);
        QCOMPARE(candidate->outcome, QStringLiteral("pass"));
        QCOMPARE(page.progressBar()->value(), page.progressBar()->maximum());
        QVERIFY(!page.memoryChart()->isEmpty());
        QVERIFY(!m_store.iterations(runs[1]).isEmpty());
        QVERIFY(!page.isRunning());
        // The control's curve stayed while the candidate ran, and reserved lines have their own colours.
        bool controlCurve = false;
        QSet<QRgb> allocated, reserved;
        for (const IterationLine& l : page.liveLines()) {
            controlCurve |= l.name.startsWith(QStringLiteral("[] "));
            (l.dashed ? reserved : allocated).insert(l.color.rgb());
        }
        QVERIFY(controlCurve);
        QVERIFY(!reserved.isEmpty() && !allocated.isEmpty());
        QVERIFY(!reserved.intersects(allocated));
        QVERIFY2(page.summaryText().contains(QStringLiteral("[moe_act]")), qPrintable(page.summaryText()));
    }

    // Refused before anything starts: nothing stored, the findings named, no "waiting" left on screen.
    void refusesARecipeWithRuleErrors_data()
    {
        QTest::addColumn<QStringList>("modules");
        QTest::addColumn<bool>("controlFirst");
        QTest::addColumn<QString>("rule");
        QTest::newRow("unknown label, control first")
            << QStringList { QStringLiteral("bogus_label") } << true << QStringLiteral("R11");
        QTest::newRow("typo, no control")
            << QStringList { QStringLiteral("core_atn") } << false << QStringLiteral("R11");
    }

    void refusesARecipeWithRuleErrors()
    {
        QFETCH(QStringList, modules);
        QFETCH(bool, controlFirst);
        QFETCH(QString, rule);
        RecipeDocument document;
        Recipe recipe = presetRecipe(QStringLiteral("gpt-unfused"));
        recipe.recompute_granularity = "selective";
        recipe.recompute_modules = std::vector<std::string> {};
        for (const QString& m : modules)
            recipe.recompute_modules->push_back(m.toStdString());
        document.setRecipe(recipe);
        QVERIFY(document.validation().hasErrors());
        LaunchPage page(&document, &m_store);
        page.controlFirstBox()->setChecked(controlFirst);
        const int before = m_store.runCount();
        QSignalSpy started(page.session()->launcher(), &launch::WorkerLauncher::started);
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QVERIFY(!page.start());
        QVERIFY(!page.isRunning());
        QVERIFY2(
            page.statusText().contains(QStringLiteral("rule errors")) && page.statusText().contains(rule),
            qPrintable(page.statusText()));
        QTest::qWait(200);
        QCOMPARE(started.count(), 0);
        QCOMPARE(finished.count(), 0);
        QCOMPARE(m_store.runCount(), before);
        QVERIFY(page.storedRuns().isEmpty());
        QVERIFY(page.memoryChart()->isEmpty());
    }

    // The second launch of one recipe links the control the first one measured: the worker starts once.
    void reusesAStoredMatchedControl()
    {
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("reuse.sqlite"))));
        RecipeDocument document;
        Recipe recipe = presetRecipe(QStringLiteral("gpt-unfused"));
        recipe.train_iters = 4;
        recipe.warmup_iters = 1;
        document.setRecipe(recipe);
        LaunchPage page(&document, &store);
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QVERIFY(page.start());
        QVERIFY(finished.wait(30000));
        QCOMPARE(page.storedRuns().size(), 2);
        const qint64 control = page.storedRuns().front();

        QSignalSpy started(page.session()->launcher(), &launch::WorkerLauncher::started);
        QVERIFY(page.start());
        QVERIFY(finished.wait(30000));
        QCOMPARE(started.count(), 1); // the candidate only
        QCOMPARE(page.storedRuns().size(), 1);
        const auto candidate = store.run(page.storedRuns().front());
        QVERIFY(candidate);
        QCOMPARE(candidate->controlRunId.value_or(0), control);
        const QString date = store.run(control)->createdAt.toString(QStringLiteral("yyyy-MM-dd HH:mm"));
        QVERIFY2(page.controlText().contains(QStringLiteral("run %1 of %2").arg(control).arg(date)),
            qPrintable(page.controlText()));
        // The control's stored curve is drawn beside the candidate's.
        bool controlCurve = false;
        for (const IterationLine& l : page.liveLines())
            controlCurve |= l.name.startsWith(QStringLiteral("[] "));
        QVERIFY(controlCurve);

        // Unchecked: the control runs again.
        page.reuseControlBox()->setChecked(false);
        QVERIFY(page.start());
        QVERIFY(finished.wait(30000));
        QCOMPARE(page.storedRuns().size(), 2);
        QVERIFY(page.storedRuns().front() != control);
    }

    // Repeats: every run linked to one control, the spread of the figures shown.
    void repeatsShowTheirSpread()
    {
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("repeats.sqlite"))));
        RecipeDocument document;
        Recipe recipe = presetRecipe(QStringLiteral("gpt-unfused"));
        recipe.train_iters = 3;
        recipe.warmup_iters = 1;
        document.setRecipe(recipe);
        LaunchPage page(&document, &store);
        page.repeatsBox()->setValue(3);
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QVERIFY(page.start());
        QVERIFY(finished.wait(30000));
        // Three rounds of the control, then the recipe.
        const QVector<qint64> runs = page.storedRuns();
        QCOMPARE(runs.size(), 6);
        for (int i = 0; i < runs.size(); ++i) {
            const auto r = store.run(runs[i]);
            QCOMPARE(r->isExplicitControl(), i % 2 == 0);
            if (i % 2 == 0)
                QVERIFY(!r->controlRunId); // the control's repeats pool with its first run
            else
                QCOMPARE(r->controlRunId.value_or(0), runs.front());
        }
        QVERIFY2(page.summaryText().contains(QStringLiteral("over 3 runs")), qPrintable(page.summaryText()));
        QVERIFY2(page.summaryText().contains(QStringLiteral("Δ time")), qPrintable(page.summaryText()));
    }

    // Issue 29 item 8: the worker refuses the [] control itself ("the recipe needs about 281 GB ...; this
    // host has 25 GB"): the candidate is not launched, the page says the control was refused (not "measured
    // in this launch"), and the chart does not wait for an iteration that never comes.
    void refusedControlStopsTheLaunch()
    {
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("refused.sqlite"))));
        RecipeDocument document;
        document.setRecipe(presetRecipe(QStringLiteral("moonlight-mla-moe")));
        LaunchPage page(&document, &store);
        page.workerArgumentsEdit()->setText(QStringLiteral("--refuse needs-about-281-GB"));
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QSignalSpy stored(&page, &LaunchPage::runStored);
        QVERIFY(page.start());
        QVERIFY(finished.wait(30000));
        QCOMPARE(stored.size(), 1); // the control only
        QCOMPARE(store.runCount(), 1);
        const auto control = store.run(page.storedRuns().front());
        QCOMPARE(control->outcome, storage::outcome::Invalid);
        QVERIFY2(page.statusText().contains(QStringLiteral("refused the [] control")),
            qPrintable(page.statusText()));
        QVERIFY2(
            page.statusText().contains(QStringLiteral("needs-about-281-GB")), qPrintable(page.statusText()));
        QVERIFY2(!page.controlText().contains(QStringLiteral("measured in this launch")),
            qPrintable(page.controlText()));
        QVERIFY2(page.controlText().contains(QStringLiteral("invalid")), qPrintable(page.controlText()));
        QVERIFY2(!page.memoryChart()->emptyMessage().contains(QStringLiteral("Waiting")),
            qPrintable(page.memoryChart()->emptyMessage()));
        QVERIFY(page.memoryChart()->emptyMessage().contains(QStringLiteral("before its first iteration")));
        QVERIFY(!page.isRunning());
    }

    // Issue 29 item 10: what a run reads does not change under it (where, how many ranks, how often), and
    // the keyboard is not left in a box that no longer takes input; after the run, all of it is back.
    void settingsAreLockedDuringARun()
    {
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("locked.sqlite"))));
        RecipeDocument document;
        Recipe recipe = presetRecipe(QStringLiteral("gpt-unfused"));
        recipe.train_iters = 4;
        recipe.warmup_iters = 1;
        document.setRecipe(recipe);
        LaunchPage page(&document, &store);
        page.show();
        page.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&page));
        page.workerArgumentsEdit()->setText(QStringLiteral("--delay-ms 30"));
        page.ranksBox()->setFocus();
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QVERIFY(page.start());
        for (QWidget* w : page.settingsWidgets())
            QVERIFY2(!w->isEnabled(), w->metaObject()->className());
        QVERIFY(!page.ranksBox()->isEnabled() && !page.hostEdit()->isEnabled());
        QVERIFY(page.cancelButton()->hasFocus());
        QVERIFY(finished.wait(30000));
        for (QWidget* w : page.settingsWidgets())
            QVERIFY(w->isEnabled());
        QVERIFY(page.ranksBox()->isEnabled());
    }

    // Issue 29 item 3: the launch's summary gives the product's one Δ step time, named (core's
    // kStepDeltaName), from the stored steady iterations: one slow step moves the mean, not the shift.
    void summaryGivesTheOneStepTimeDelta()
    {
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("delta.sqlite"))));
        RecipeDocument document;
        Recipe recipe = presetRecipe(QStringLiteral("gpt-unfused"));
        recipe.train_iters = 10;
        recipe.warmup_iters = 2;
        document.setRecipe(recipe);
        LaunchPage page(&document, &store);
        page.workerArgumentsEdit()->setText(QStringLiteral("--candidate-slow 9 400"));
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QVERIFY(page.start());
        QVERIFY(finished.wait(30000));
        const QVector<qint64> runs = page.storedRuns();
        QCOMPARE(runs.size(), 2);
        const auto d = timeDelta(
            storage::steadyIterationTimes(store, runs[1]), storage::steadyIterationTimes(store, runs[0]));
        QVERIFY(d);
        const QString expected = QStringLiteral("%1 %2").arg(
            QString::fromUtf8(kStepDeltaName), QString::fromStdString(deltaCell(*d)));
        QVERIFY2(page.summaryText().contains(expected),
            qPrintable(page.summaryText() + QStringLiteral(" / ") + expected));
        // The mean would have said otherwise (the stored steady step times).
        const double meanPct = (*store.run(runs[1])->steadyStepMs - *store.run(runs[0])->steadyStepMs)
            / *store.run(runs[0])->steadyStepMs * 100.0;
        QVERIFY(std::abs(meanPct - d->pct) > 5.0);
        // A tiny run's peak keeps its figures (1.5 MB: 0.00150 GB, not 0.002).
        QVERIFY2(page.summaryText().contains(QStringLiteral("0.00150")), qPrintable(page.summaryText()));
    }

    // `recompute sweep` and the page build one [] control for a recipe with moe_layer_recompute (R19): the
    // page reuses the sweep's control, and, run again, stores one with the same recipe hash.
    void cliSweepControlIsThePagesControl()
    {
#ifndef RS_RECOMPUTE_EXE
        QSKIP("this build has no recompute CLI");
#else
        QTemporaryDir dir;
        const QString db = dir.filePath(QStringLiteral("sweep.sqlite"));
        Recipe recipe = presetRecipe(QStringLiteral("moonlight-mla-moe"));
        recipe.train_iters = 3;
        recipe.warmup_iters = 1;
        recipe.moe_layer_recompute = true;
        const QString path = dir.filePath(QStringLiteral("moe.json"));
        {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QByteArray::fromStdString(recipeToJson(recipe).dump(2)));
        }
        QProcess cli;
        cli.start(QStringLiteral(RS_RECOMPUTE_EXE),
            { QStringLiteral("sweep"), path, QStringLiteral("--db"), db, QStringLiteral("--modules"),
                QStringLiteral("moe_act") });
        QVERIFY(cli.waitForFinished(60000));
        QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
        storage::Store store;
        QVERIFY(store.open(db));
        storage::RunFilter controls;
        controls.moduleSet = QStringList {};
        const auto cliControls = store.listRuns(controls);
        QCOMPARE(cliControls.size(), 1);
        const storage::RunRecord cliControl = cliControls.front();

        RecipeDocument document;
        QString error;
        QVERIFY2(document.load(path, &error), qPrintable(error));
        LaunchPage page(&document, &store);
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QSignalSpy started(page.session()->launcher(), &launch::WorkerLauncher::started);
        QVERIFY(page.start());
        QVERIFY(finished.wait(30000));
        QCOMPARE(started.count(), 1); // the sweep's control is the page's: reused
        QCOMPARE(page.session()->controlRunId().value_or(0), cliControl.id);

        page.reuseControlBox()->setChecked(false);
        QVERIFY(page.start());
        QVERIFY(finished.wait(30000));
        const auto pageControl = store.run(page.storedRuns().front());
        QVERIFY(pageControl && pageControl->isExplicitControl());
        QVERIFY(pageControl->id != cliControl.id);
        QCOMPARE(pageControl->recipeHash, cliControl.recipeHash);
        QCOMPARE(pageControl->recipeJson, cliControl.recipeJson);
#endif
    }

    void cancelEndsTheRunAborted()
    {
        RecipeDocument document;
        Recipe recipe = presetRecipe(QStringLiteral("gpt-unfused"));
        recipe.train_iters = 50;
        document.setRecipe(recipe);
        LaunchPage page(&document, &m_store);
        page.controlFirstBox()->setChecked(false);
        page.workerArgumentsEdit()->setText(QStringLiteral("--delay-ms 100"));
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QVERIFY(page.start());
        QTRY_VERIFY_WITH_TIMEOUT(page.progressBar()->value() >= 2, 20000);
        page.cancel();
        QVERIFY(finished.wait(20000));
        QCOMPARE(page.storedRuns().size(), 1);
        const auto run = m_store.run(page.storedRuns().front());
        QVERIFY(run);
        QCOMPARE(run->outcome, QStringLiteral("aborted"));
        QVERIFY(m_store.iterations(run->id).size() >= 2); // what it measured is kept
    }

    // End to end with the real worker (this build's recompute-bench, or $RS_TEST_REAL_WORKER): a tiny GPT on
    // the CPU, its [] control first; both runs pass and the candidate has measured per-iteration memory.
    // With two ranks (the Ranks box) every rank's iterations are stored.
    void realWorkerTinyModel_data()
    {
        QTest::addColumn<int>("ranks");
        QTest::newRow("one rank") << 1;
        QTest::newRow("two ranks") << 2;
    }

    void realWorkerTinyModel()
    {
        QFETCH(int, ranks);
        QString worker = qEnvironmentVariable("RS_TEST_REAL_WORKER");
#ifdef RS_REAL_WORKER
        if (worker.isEmpty())
            worker = QStringLiteral(RS_REAL_WORKER);
#endif
        if (worker.isEmpty())
            QSKIP("no recompute-bench in this build (set RS_TEST_REAL_WORKER to run this)");
        const QByteArray saved = qgetenv("RS_WORKER");
        qputenv("RS_WORKER", worker.toLocal8Bit());
        RecipeDocument document;
        Recipe recipe = presetRecipe(QStringLiteral("gpt-unfused"));
        recipe.num_layers = 2;
        recipe.hidden_size = 64;
        recipe.ffn_hidden_size.reset();
        recipe.num_attention_heads = 4;
        recipe.seq_length = 32;
        recipe.vocab_size = 128;
        recipe.warmup_iters = 1;
        recipe.train_iters = 3;
        document.setRecipe(recipe);
        LaunchPage page(&document, &m_store);
        page.ranksBox()->setValue(ranks);
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QVERIFY(page.start());
        QVERIFY(finished.wait(120000));
        qputenv("RS_WORKER", saved);
        QCOMPARE(page.storedRuns().size(), 2);
        const auto control = m_store.run(page.storedRuns()[0]);
        const auto candidate = m_store.run(page.storedRuns()[1]);
        QVERIFY(control && candidate);
        if (candidate->message.contains(QStringLiteral("built without Gloo")))
            QSKIP("this worker was built without Gloo (libgloo-dev): several ranks on CPU are refused");
        QVERIFY2(control->outcome == QStringLiteral("pass"), qPrintable(control->message));
        QCOMPARE(candidate->outcome, QStringLiteral("pass"));
        QCOMPARE(candidate->controlRunId.value_or(0), control->id);
        QVERIFY(candidate->peakAllocated.value_or(0) > 0);
        QCOMPARE(m_store.iterations(candidate->id).size(), 3 * ranks);
        QCOMPARE(m_store.rankPeaks(candidate->id).size(), ranks);
        QVERIFY(!page.memoryChart()->isEmpty());
    }

private:
    QTemporaryDir m_dir;
    storage::Store m_store;
};

QTEST_MAIN(TestLaunchPage)
#include "tst_launchpage.moc"
