// SPDX-License-Identifier: Apache-2.0
// The launch page end to end against the launcher's test double (tests/launch/fake_worker.cpp): the
// control runs first and becomes the recipe run's control, the progress bar and the live memory curve
// follow the stream, every run lands in the store, and cancel ends a run as aborted with what it measured.
#include <QCheckBox>
#include <QLineEdit>
#include <QProgressBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "charts/chartview.h"
#include "launchpage.h"
#include "presets.h"
#include "recipedocument.h"
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
