// SPDX-License-Identifier: Apache-2.0
// The real job from the window (issue 29): the launch page runs the user's own Megatron-LM command once per
// recompute choice through session::JobSession, the loop `recompute sweep --job` runs, against the
// repository's stand-in for Megatron (tests/launch/fake_megatron replays the real H200 logs of each choice's
// recompute flags at their pace): the [] control (recompute off) first, each run's log imported as it
// streams and linked to the control, progress and the live curve as iterations arrive, the comparison at the
// end; cancel stops the sweep with the run stored as far as it got; a command that cannot be written is
// refused before anything starts, naming the field.
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "charts/chartview.h"
#include "core/recipe_input.h"
#include "launchpage.h"
#include "recipedocument.h"
#include "session/job_session.h"
#include "storage/store.h"

using namespace rs;
using namespace rs::ui;
using namespace Qt::StringLiterals;

#ifndef RS_FAKE_MEGATRON
#define RS_FAKE_MEGATRON ""
#endif

namespace {

const QString kLogs = QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-h200");

// The dense fixture's own command line, launched by the stand-in instead of torchrun.
std::vector<std::string> fixtureCommand()
{
    QFile f(kLogs + u"/dense-none.log"_s);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QString first = QString::fromUtf8(f.readLine()).trimmed();
    first.remove(0, QStringLiteral("# command: torchrun ").size());
    std::vector<std::string> words { "--profile", "main", "--mlm-args", RS_FAKE_MEGATRON };
    for (const QString& w : first.split(u' ', Qt::SkipEmptyParts))
        words.push_back(w.toStdString());
    return words;
}

QStringList seen(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()).split(u'\n', Qt::SkipEmptyParts)
                                       : QStringList {};
}

} // namespace

class TestLaunchPageJob : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        if (QString::fromLatin1(RS_FAKE_MEGATRON).isEmpty())
            QSKIP("the stand-in for Megatron (tests/launch/fake_megatron) is not part of this build");
    }
    void init()
    {
        QVERIFY(m_dir.isValid());
        QVERIFY(m_store.open(m_dir.filePath(u"jobs-%1.sqlite"_s.arg(++m_serial))));
        m_seen = m_dir.filePath(u"seen-%1"_s.arg(m_serial));
        qputenv("RS_FAKE_MEGATRON_SEEN", m_seen.toLocal8Bit());
        qputenv("RS_FAKE_MEGATRON_PACE", "0.005");
        const RecipeInput in = readRecipeInput(fixtureCommand(), nullptr);
        m_document.setRecipe(in.recipe);
        m_document.setInputFormat(in.format);
        m_page = std::make_unique<LaunchPage>(&m_document, &m_store);
        m_page->setRunKind(LaunchPage::RunKind::Job);
    }
    void cleanup()
    {
        m_page.reset();
        m_store.close();
    }

    // The fields as a user fills them: the recipe's own launcher is there, the choices typed, the
    // iterations set; the command the [] control will run is shown before anything starts.
    void theCommandIsShownBeforeItRuns()
    {
        QCOMPARE(m_page->jobFrontEndBox()->currentData().toInt(), int(InputFormat::MegatronFlags));
        QVERIFY2(m_page->jobLauncherEdit()->text().startsWith(QStringLiteral(RS_FAKE_MEGATRON)),
            qPrintable(m_page->jobLauncherEdit()->text()));
        m_page->jobChoicesEdit()->setText(u"core_attn full:uniform:1"_s);
        m_page->jobItersBox()->setValue(6);
        const QString preview = m_page->jobCommandPreview();
        QVERIFY2(preview.contains(u"[] control, then core_attn, full uniform 1"_s), qPrintable(preview));
        QVERIFY2(preview.contains(u"--train-iters 6"_s) && preview.contains(u"pretrain_gpt.py"_s),
            qPrintable(preview));
        QVERIFY2(!preview.contains(u"--recompute-granularity"_s),
            qPrintable(preview)); // the control: recompute off
    }

    // A sweep from the window: the control first, every run stored (imported as it streams) and linked, the
    // progress bar and the live curve following the log, the comparison named at the end.
    void sweepsFromTheWindow()
    {
        m_page->jobChoicesEdit()->setText(u"core_attn full:uniform:1"_s);
        m_page->jobItersBox()->setValue(6);
        QSignalSpy finished(m_page.get(), &LaunchPage::launchFinished);
        int maxProgress = 0, iterations = 0, storedWhileRunning = 0;
        connect(m_page->jobSession(), &session::JobSession::iteration, this, [&] {
            ++iterations;
            maxProgress = std::max(maxProgress, m_page->progressBar()->value());
        });
        connect(m_page.get(), &LaunchPage::runStored, this, [&](qint64 id) {
            // Imported as it comes: in the store before the sweep is over.
            if (m_page->isRunning() && m_store.run(id))
                ++storedWhileRunning;
        });
        QVERIFY2(m_page->start(), qPrintable(m_page->statusText()));
        QVERIFY(m_page->isRunning());
        QVERIFY(finished.wait(240000));
        QCOMPARE(
            seen(m_seen), (QStringList { u"dense-none"_s, u"dense-core_attn"_s, u"dense-full-uniform-1"_s }));
        const QVector<qint64> runs = m_page->storedRuns();
        QCOMPARE(runs.size(), 3);
        const auto control = m_store.run(runs[0]);
        QVERIFY(control && control->isNoRecompute());
        QCOMPARE(control->source, storage::source::Import);
        for (int i = 1; i < runs.size(); ++i) {
            const auto r = m_store.run(runs[i]);
            QCOMPARE(r->outcome, storage::outcome::Pass);
            QCOMPARE(r->controlRunId.value_or(0), control->id);
            QCOMPARE(m_store.iterations(r->id).size(), 6);
        }
        QCOMPARE(storedWhileRunning, 3); // every run, as it ended, before the sweep was over
        QCOMPARE(iterations, 18);
        QCOMPARE(maxProgress, 6);
        QVERIFY(!m_page->liveLines().isEmpty());
        QVERIFY2(m_page->summaryText().contains(u"Δ time (HL)"_s), qPrintable(m_page->summaryText()));
        QVERIFY2(m_page->statusText().contains(u"Done"_s), qPrintable(m_page->statusText()));
        QVERIFY(m_page->runButton()->isEnabled() && !m_page->cancelButton()->isEnabled());
    }

    // Cancel stops the run where it is (stored as far as it got) and runs nothing further.
    void cancelStopsTheSweep()
    {
        qputenv("RS_FAKE_MEGATRON_PACE", "1"); // each iteration at its logged pace: cancelled mid-run
        m_page->jobChoicesEdit()->setText(u"core_attn"_s);
        m_page->jobItersBox()->setValue(6);
        QSignalSpy finished(m_page.get(), &LaunchPage::launchFinished);
        QSignalSpy iteration(m_page->jobSession(), &session::JobSession::iteration);
        QVERIFY(m_page->start());
        QVERIFY(iteration.wait(120000));
        m_page->cancel();
        QVERIFY(finished.wait(60000));
        QVERIFY(m_page->jobSession()->cancelled());
        QCOMPARE(seen(m_seen), QStringList { u"dense-none"_s });
        const auto runs = m_store.listRuns();
        QCOMPARE(runs.size(), 1);
        QVERIFY2(runs.front().outcome != storage::outcome::Pass, qPrintable(runs.front().outcome));
        QVERIFY2(m_page->statusText().contains(u"Cancelled"_s), qPrintable(m_page->statusText()));
    }

    // One rank of the layout on this GPU (issue 28's --fake-process-group), from the window: the command
    // shows it, and every run is that rank, said in its provenance.
    void oneRankOnThisGpu()
    {
        m_page->jobChoicesEdit()->setText(u"core_attn"_s);
        m_page->jobItersBox()->setValue(6);
        m_page->jobOneRankBox()->setChecked(true);
        QVERIFY(m_page->jobRankBox()->isEnabled());
        const QString preview = m_page->jobCommandPreview();
        QVERIFY2(preview.contains(u"rank 0 of 1"_s) && preview.contains(u"env RANK=0 WORLD_SIZE=1"_s)
                && preview.contains(u"--fake-process-group"_s),
            qPrintable(preview));
        QSignalSpy finished(m_page.get(), &LaunchPage::launchFinished);
        QVERIFY2(m_page->start(), qPrintable(m_page->statusText()));
        QVERIFY(finished.wait(240000));
        const auto runs = m_store.listRuns();
        QCOMPARE(runs.size(), 2);
        for (const storage::RunRecord& r : runs)
            QVERIFY2(r.provenance.contains(u"--fake-process-group"_s), qPrintable(r.provenance));
    }

    // What cannot be written is refused before anything starts, naming the field: a choice that is none,
    // a Bridge job without its launcher.
    void refusedBeforeAnythingStarts_data()
    {
        QTest::addColumn<int>("frontEnd");
        QTest::addColumn<QString>("launcher");
        QTest::addColumn<QString>("choices");
        QTest::addColumn<QString>("says");
        QTest::newRow("a label the profile does not have")
            << int(InputFormat::MegatronFlags) << QString() << u"core_atn"_s
            << u"recompute choices: 'core_atn' is not a recompute label at main; did you mean 'core_attn'?"_s;
        QTest::newRow("a choice that does not read") << int(InputFormat::MegatronFlags) << QString()
                                                     << u"full:sideways:1"_s << u"recompute choices:"_s;
        QTest::newRow("a launcher with an open quote")
            << int(InputFormat::BridgeOverrides) << u"torchrun 'run_recipe.py"_s << u"core_attn"_s
            << u"launcher:"_s;
    }
    void refusedBeforeAnythingStarts()
    {
        QFETCH(int, frontEnd);
        QFETCH(QString, launcher);
        QFETCH(QString, choices);
        QFETCH(QString, says);
        m_page->jobFrontEndBox()->setCurrentIndex(m_page->jobFrontEndBox()->findData(frontEnd));
        if (!launcher.isNull())
            m_page->jobLauncherEdit()->setText(launcher);
        m_page->jobChoicesEdit()->setText(choices);
        QSignalSpy started(m_page.get(), &LaunchPage::runStarted);
        QVERIFY(!m_page->start());
        QVERIFY2(m_page->statusText().contains(says), qPrintable(m_page->statusText()));
        QCOMPARE(started.size(), 0);
        QCOMPARE(m_store.runCount(), 0);
        QVERIFY(seen(m_seen).isEmpty());
    }

private:
    QTemporaryDir m_dir;
    int m_serial = 0;
    QString m_seen;
    storage::Store m_store;
    RecipeDocument m_document;
    std::unique_ptr<LaunchPage> m_page;
};

QTEST_MAIN(TestLaunchPageJob)
#include "tst_launchpage_job.moc"
