// SPDX-License-Identifier: Apache-2.0
// The launch page's host kind "Slurm": its fields, checkSlurmSettings' message shown at the field it names
// before anything is launched (a launch with bad settings is refused, nothing stored), and a launch run as
// Slurm jobs on the real Slurm of tests/launch/slurm_cluster.h (the launcher's test double as the worker):
// the [] control and the recipe each a two-task job, both stored, the candidate linked to its control.
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "../launch/slurm_cluster.h"
#include "core/recipe_input.h"
#include "launchpage.h"
#include "presets.h"
#include "recipedocument.h"
#include "session/job_session.h"
#include "session/run_session.h"
#include "storage/store.h"

using namespace rs;
using namespace rs::ui;
using namespace rs::launch::test;

class TestLaunchPageSlurm : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    storage::Store m_store;

    static Recipe tiny()
    {
        Recipe recipe = presetRecipe(QStringLiteral("moonlight-mla-moe"));
        recipe.train_iters = 4;
        recipe.warmup_iters = 1;
        return recipe;
    }

private slots:
    void initTestCase()
    {
#ifndef RS_FAKE_WORKER
        QSKIP("the launcher's fake worker is not part of this build (tests/launch)");
#else
        qputenv("RS_WORKER", RS_FAKE_WORKER);
#endif
        QString error;
        QVERIFY2(m_store.open(m_dir.filePath(QStringLiteral("runs.sqlite")), &error), qPrintable(error));
        cluster = new SlurmCluster;
    }
    void cleanupTestCase()
    {
        delete cluster;
        cluster = nullptr;
    }

    void hostKindShowsItsFields()
    {
        RecipeDocument document;
        LaunchPage page(&document, &m_store);
        QCOMPARE(page.hostKindBox()->count(), 3);
        QCOMPARE(page.hostKind(), LaunchPage::HostKind::Local);
        QVERIFY(!page.slurmSection()->isVisibleTo(&page));
        QVERIFY(!page.hostEdit()->isVisibleTo(&page));
        page.setHostKind(LaunchPage::HostKind::Slurm);
        QVERIFY(page.slurmSection()->isVisibleTo(&page));
        QVERIFY(!page.ranksBox()->isEnabled()); // the job's tasks are the ranks
        page.slurmNodesBox()->setValue(2);
        page.slurmTasksPerNodeBox()->setValue(4);
        page.slurmGpusPerNodeBox()->setValue(4);
        page.slurmPartitionEdit()->setText(QStringLiteral("gpu"));
        page.slurmTimeEdit()->setText(QStringLiteral("00:20:00"));
        page.slurmAccountEdit()->setText(QStringLiteral("llm"));
        page.slurmExtraLinesEdit()->setPlainText(
            QStringLiteral("#SBATCH --exclusive\n\n#SBATCH --qos=short\n"));
        page.slurmLoginHostEdit()->setText(QStringLiteral("me@login1"));
        const launch::SlurmSettings s = page.slurmSettings();
        QCOMPARE(s.nodes, 2);
        QCOMPARE(s.tasksPerNode, 4);
        QCOMPARE(s.gpusPerNode, 4);
        QCOMPARE(s.partition, QStringLiteral("gpu"));
        QCOMPARE(s.timeLimit, QStringLiteral("00:20:00"));
        QCOMPARE(s.account, QStringLiteral("llm"));
        QCOMPARE(s.extraSbatchLines,
            (QStringList { QStringLiteral("#SBATCH --exclusive"), QStringLiteral("#SBATCH --qos=short") }));
        QCOMPARE(s.loginHost, QStringLiteral("me@login1"));
        QVERIFY(!s.workDir.isEmpty()); // a default under the home folder
        QCOMPARE(page.slurmProblemText(), QString());
        QCOMPARE(page.slurmProblemField(), nullptr);
        page.setHostKind(LaunchPage::HostKind::Ssh);
        QVERIFY(!page.slurmSection()->isVisibleTo(&page));
        QVERIFY(page.hostEdit()->isVisibleTo(&page));
        QVERIFY(page.ranksBox()->isEnabled());
        // A host typed in while on "This host" means ssh.
        page.setHostKind(LaunchPage::HostKind::Local);
        page.hostEdit()->setText(QStringLiteral("gpu7"));
        QCOMPARE(page.hostKind(), LaunchPage::HostKind::Ssh);
    }

    void settingsAreCheckedAtTheField_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("partition") << "partition"
                                   << "gpu; rm -rf /"
                                   << "partition:";
        QTest::newRow("time") << "time"
                              << "1h"
                              << "time limit: '1h'";
        QTest::newRow("account") << "account"
                                 << "-x"
                                 << "account:";
        QTest::newRow("extra line") << "extra"
                                    << "--exclusive"
                                    << "extra #SBATCH line";
        QTest::newRow("work folder") << "workdir"
                                     << ""
                                     << "work folder: empty";
        QTest::newRow("login host") << "login"
                                    << "-oProxyCommand=touch /tmp/x"
                                    << "login host:";
    }
    void settingsAreCheckedAtTheField()
    {
        QFETCH(QString, field);
        QFETCH(QString, value);
        QFETCH(QString, message);
        RecipeDocument document;
        document.setRecipe(tiny());
        LaunchPage page(&document, &m_store);
        page.setHostKind(LaunchPage::HostKind::Slurm);
        QWidget* expected = nullptr;
        if (field == QLatin1String("partition")) {
            page.slurmPartitionEdit()->setText(value);
            expected = page.slurmPartitionEdit();
        } else if (field == QLatin1String("time")) {
            page.slurmTimeEdit()->setText(value);
            expected = page.slurmTimeEdit();
        } else if (field == QLatin1String("account")) {
            page.slurmAccountEdit()->setText(value);
            expected = page.slurmAccountEdit();
        } else if (field == QLatin1String("extra")) {
            page.slurmExtraLinesEdit()->setPlainText(value);
            expected = page.slurmExtraLinesEdit();
        } else if (field == QLatin1String("workdir")) {
            page.slurmWorkDirEdit()->setText(value);
            expected = page.slurmWorkDirEdit();
        } else {
            page.slurmLoginHostEdit()->setText(value);
            expected = page.slurmLoginHostEdit();
        }
        const QString problem = page.slurmProblemText();
        QVERIFY2(problem.startsWith(message), qPrintable(problem));
        QCOMPARE(page.slurmProblemField(), expected);
        // Shown under the fields as soon as it is typed, before any launch.
        bool shown = false;
        for (QLabel* l : page.slurmSection()->findChildren<QLabel*>())
            shown |= l->text() == problem && l->isVisibleTo(&page);
        QVERIFY(shown);
        const int before = int(m_store.listRuns().size());
        QVERIFY(!page.start());
        QVERIFY(!page.isRunning());
        QVERIFY2(page.statusText().contains(problem), qPrintable(page.statusText()));
        QCOMPARE(int(m_store.listRuns().size()), before);
        // Fixed: the mark goes.
        page.setHostKind(LaunchPage::HostKind::Local);
        QCOMPARE(page.slurmProblemField(), nullptr);
    }

    // The [] control and the recipe, each a two-task Slurm job; both stored, linked, the provenance naming
    // the allocation.
    void launchesAsSlurmJobs()
    {
        REQUIRE_CLUSTER();
        RecipeDocument document;
        document.setRecipe(tiny());
        LaunchPage page(&document, &m_store);
        page.setHostKind(LaunchPage::HostKind::Slurm);
        const launch::SlurmSettings s = cluster->settings(QStringLiteral("page"));
        page.slurmPartitionEdit()->setText(s.partition);
        page.slurmWorkDirEdit()->setText(s.workDir);
        page.slurmTasksPerNodeBox()->setValue(2);
        QSignalSpy stored(&page, &LaunchPage::runStored);
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QVERIFY2(page.start(), qPrintable(page.statusText()));
        QVERIFY(finished.wait(120000));
        QCOMPARE(stored.count(), 2);
        const QVector<qint64> runs = page.storedRuns();
        QCOMPARE(runs.size(), 2);
        const auto control = m_store.run(runs[0]);
        const auto candidate = m_store.run(runs[1]);
        QVERIFY(control && candidate);
        QVERIFY(control->isExplicitControl());
        QCOMPARE(candidate->outcome, QStringLiteral("pass"));
        QCOMPARE(candidate->controlRunId.value_or(0), runs[0]);
        QVERIFY2(candidate->provenance.contains(
                     QStringLiteral("slurm partition debug, nodes 1, tasks per node 2")),
            qPrintable(candidate->provenance));
        QVERIFY(!m_store.iterations(runs[1]).isEmpty());
    }

    // The real job from the window on Slurm (issue 29): the user's Megatron-LM line (the stand-in for
    // Megatron replaying the real H200 logs) run once per choice, each a Slurm batch job, its output read as
    // it grows, imported and linked to the control; the queue's word on the job in the log.
    void realJobAsSlurmJobs()
    {
        REQUIRE_CLUSTER();
#ifndef RS_FAKE_MEGATRON
        QSKIP("the stand-in for Megatron (tests/launch/fake_megatron) is not part of this build");
#else
        QFile log(QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-h200/dense-none.log"));
        QVERIFY(log.open(QIODevice::ReadOnly));
        const QString command = QString::fromUtf8(log.readLine())
                                    .trimmed()
                                    .remove(0, QStringLiteral("# command: torchrun ").size());
        std::vector<std::string> words { "--profile", "main", "--mlm-args", RS_FAKE_MEGATRON };
        for (const QString& w : command.split(QLatin1Char(' '), Qt::SkipEmptyParts))
            words.push_back(w.toStdString());
        const RecipeInput in = readRecipeInput(words, nullptr);
        qputenv("RS_FAKE_MEGATRON_PACE", "0.05");
        QTemporaryDir dir;
        storage::Store store;
        QVERIFY(store.open(dir.filePath(QStringLiteral("jobs.sqlite"))));
        RecipeDocument document;
        document.setRecipe(in.recipe);
        document.setInputFormat(in.format);
        LaunchPage page(&document, &store);
        page.setRunKind(LaunchPage::RunKind::Job);
        page.jobChoicesEdit()->setText(QStringLiteral("core_attn"));
        page.jobItersBox()->setValue(6);
        page.setHostKind(LaunchPage::HostKind::Slurm);
        const launch::SlurmSettings s = cluster->settings(QStringLiteral("page-job"));
        page.slurmPartitionEdit()->setText(s.partition);
        page.slurmWorkDirEdit()->setText(s.workDir);
        QSignalSpy finished(&page, &LaunchPage::launchFinished);
        QStringList notes;
        connect(page.jobSession(), &session::JobSession::note, this,
            [&notes](const QString&, const QString& text) { notes << text; });
        QVERIFY2(page.start(), qPrintable(page.statusText()));
        QVERIFY(finished.wait(300000));
        const QVector<qint64> runs = page.storedRuns();
        QCOMPARE(runs.size(), 2);
        const auto control = store.run(runs[0]);
        const auto candidate = store.run(runs[1]);
        QVERIFY(control->isNoRecompute());
        QCOMPARE(candidate->outcome, storage::outcome::Pass);
        QCOMPARE(candidate->controlRunId.value_or(0), control->id);
        QCOMPARE(store.iterations(candidate->id).size(), 6);
        QVERIFY2(!notes.filter(QStringLiteral("Slurm job")).isEmpty(),
            qPrintable(notes.join(QStringLiteral(" | "))));
#endif
    }
};

QTEST_MAIN(TestLaunchPageSlurm)
#include "tst_launchpage_slurm.moc"
