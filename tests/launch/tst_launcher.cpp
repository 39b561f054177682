// SPDX-License-Identifier: Apache-2.0
// The local launcher against a fake worker (a test double of the process boundary) and, when this build has
// it, the real recompute-bench: signals per event kind, SIGKILL mid-run, exit without result, garbage on
// stdout, cancel(), worker lookup, and the store's ingest fed from the signals.
#include <csignal>

#include <QDir>
#include <QSignalSpy>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "launch/worker_launcher.h"
#include "sshd_fixture.h"
#include "storage/ingest.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs::launch;
using namespace rs::storage;
using rs::launch::test::Sshd;

namespace {
nlohmann::json tinyRecipe(int iters, const QString& name = u"tiny"_s)
{
    return { { "name", name.toStdString() }, { "num_layers", 2 }, { "hidden_size", 64 },
        { "num_attention_heads", 4 }, { "seq_length", 128 }, { "micro_batch_size", 1 },
        { "global_batch_size", 1 }, { "vocab_size", 256 }, { "recompute_granularity", "selective" },
        { "recompute_modules", nlohmann::json::array() }, { "train_iters", iters }, { "warmup_iters", 2 } };
}

// The typed event a spy recorded (argument 0 of its signal).
template <typename Event> Event arg(const QSignalSpy& spy, qsizetype i)
{
    return spy.at(i).at(0).value<Event>();
}

LaunchOptions fake(const QStringList& extra = {})
{
    LaunchOptions o;
    o.workerPath = QStringLiteral(RS_FAKE_WORKER);
    o.extraArguments = extra;
    return o;
}

// The real recompute-bench: this build's target, or $RS_TEST_REAL_WORKER (another build's binary).
QString realWorker()
{
    QString worker = qEnvironmentVariable("RS_TEST_REAL_WORKER");
#ifdef RS_REAL_WORKER
    if (worker.isEmpty())
        worker = QStringLiteral(RS_REAL_WORKER);
#endif
    return worker;
}

struct Recorder {
    explicit Recorder(WorkerLauncher* l)
        : hello(l, &WorkerLauncher::hello)
        , recipe(l, &WorkerLauncher::recipe)
        , phase(l, &WorkerLauncher::phase)
        , iteration(l, &WorkerLauncher::iteration)
        , rankSummary(l, &WorkerLauncher::rankSummary)
        , result(l, &WorkerLauncher::result)
        , finished(l, &WorkerLauncher::finished)
        , malformed(l, &WorkerLauncher::malformedLine)
        , stderrText(l, &WorkerLauncher::stderrText)
    {
    }
    QSignalSpy hello, recipe, phase, iteration, rankSummary, result, finished, malformed, stderrText;
};

// A launcher whose every event goes into a fresh store, each row accepted (a refused row fails the test).
struct StoredLaunch {
    StoredLaunch(QObject* context, const QString& dbName)
        : opened(store.open(dir.filePath(dbName)))
        , ingest(&store)
        , rec(&launcher)
    {
        QObject::connect(&launcher, &WorkerLauncher::streamEvent, context,
            [this](const rs::stream::Event& e) { QVERIFY(ingest.ingest(e)); });
    }
    QTemporaryDir dir;
    Store store;
    bool opened;
    RunIngest ingest;
    WorkerLauncher launcher;
    Recorder rec;
};

} // namespace

class TestLauncher : public QObject {
    Q_OBJECT
private slots:
    void passRunEmitsOneSignalPerEventKind()
    {
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        QString error;
        QVERIFY2(launcher.start(tinyRecipe(5), fake({ u"--stderr"_s, u"diagnostic line"_s }), &error),
            qPrintable(error));
        QVERIFY(rec.finished.wait(20000));
        QCOMPARE(rec.hello.size(), 1);
        QCOMPARE(rec.recipe.size(), 1);
        QCOMPARE(rec.phase.size(), 3); // build, warmup, steady
        QCOMPARE(rec.iteration.size(), 5);
        QCOMPARE(rec.rankSummary.size(), 1);
        QCOMPARE(rec.result.size(), 1);
        QCOMPARE(rec.finished.first().at(0).toBool(), false); // not aborted
        QCOMPARE(rec.finished.first().at(1).toInt(), 0);
        QCOMPARE(arg<rs::stream::Iteration>(rec.iteration, 4).iteration, 5);
        QVERIFY(rec.stderrText.size() >= 1);
        QVERIFY(rec.stderrText.first().at(0).toString().contains(u"diagnostic line"_s));
        QVERIFY(!launcher.isRunning());
    }

    void recipeTravelsAsAFileNeverThroughAShell()
    {
        // A name a shell would act on reaches the worker unchanged: the argv is a vector.
        const QString name = u"x'; touch /tmp/rs-pwned; echo \"$HOME\" `id`"_s;
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        QVERIFY(launcher.start(tinyRecipe(2, name), fake()));
        QVERIFY(rec.finished.wait(20000));
        QCOMPARE(rec.recipe.size(), 1);
        QCOMPARE(QString::fromStdString(
                     arg<rs::stream::RecipeEvent>(rec.recipe, 0).recipe.at("name").get<std::string>()),
            name);
        QCOMPARE(launcher.lastArguments().size(), 1);
        QVERIFY(launcher.lastArguments().first().endsWith(u".json"_s));
        QVERIFY(!QFile::exists(u"/tmp/rs-pwned"_s));
    }

    void sigkillMidRunLeavesAnAbortedRunWithItsIterations()
    {
        StoredLaunch s(this, u"killed.sqlite"_s);
        QVERIFY(s.opened);
        QVERIFY(s.launcher.start(tinyRecipe(10), fake({ u"--kill-after"_s, u"4"_s })));
        QVERIFY(s.rec.finished.wait(20000));
        QCOMPARE(s.rec.finished.first().at(0).toBool(), true); // aborted
        QCOMPARE(s.rec.finished.first().at(1).toInt(), -1); // killed by a signal
        QCOMPARE(s.rec.result.size(), 0);
        QVERIFY(s.ingest.finish(s.rec.finished.first().at(2).toString()));
        const auto run = s.store.run(s.ingest.runId());
        QVERIFY(run);
        QCOMPARE(run->outcome, outcome::Aborted);
        QVERIFY2(run->message.contains(u"killed"_s), qPrintable(run->message));
        QCOMPARE(s.store.iterations(run->id).size(), 4);
        QCOMPARE(s.store.iterations(run->id).last().iteration, 4);
        QCOMPARE(run->device, u"cpu"_s);
        QCOMPARE(run->peakAllocated.value_or(0), qint64(1500004)); // max of what was reported
        QSqlQuery q(s.store.database());
        QVERIFY(q.exec(u"PRAGMA integrity_check"_s) && q.next());
        QCOMPARE(q.value(0).toString(), u"ok"_s);
    }

    void exitWithoutResultIsAborted()
    {
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        QVERIFY(launcher.start(tinyRecipe(10), fake({ u"--exit-after"_s, u"2"_s })));
        QVERIFY(rec.finished.wait(20000));
        QCOMPARE(rec.finished.first().at(0).toBool(), true);
        QCOMPARE(rec.finished.first().at(1).toInt(), 3);
        QVERIFY(rec.finished.first().at(2).toString().contains(u"without a result"_s));
        QCOMPARE(rec.iteration.size(), 2);
    }

    void garbageOnStdoutIsReportedNotFatal()
    {
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        QVERIFY(launcher.start(tinyRecipe(3), fake({ u"--garbage"_s, u"--no-newline-end"_s })));
        QVERIFY(rec.finished.wait(20000));
        QCOMPARE(rec.malformed.size(), 2);
        QCOMPARE(rec.iteration.size(), 3);
        QCOMPARE(rec.result.size(), 1); // the last line had no '\n' and still counts
        QCOMPARE(rec.finished.first().at(0).toBool(), false);
    }

    // A line whose key has the wrong type is decoded once, by the launcher, and reported naming the event
    // and the key; it is not dispatched, and the run goes on.
    void wronglyTypedLineIsReportedNamingEventAndKey()
    {
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        QVERIFY(launcher.start(tinyRecipe(3), fake({ u"--wrong-type"_s, u"2"_s })));
        QVERIFY(rec.finished.wait(20000));
        QCOMPARE(rec.malformed.size(), 1);
        QCOMPARE(rec.malformed.first().at(1).toString(),
            u"iteration event: 'step_ms': expected a number, got \"slow\""_s);
        QVERIFY(rec.malformed.first().at(0).toByteArray().contains("\"slow\""));
        QCOMPARE(rec.iteration.size(), 2); // iterations 1 and 3
        QCOMPARE(arg<rs::stream::Iteration>(rec.iteration, 1).iteration, 3);
        QCOMPARE(rec.result.size(), 1);
        QCOMPARE(rec.finished.first().at(0).toBool(), false);
    }

    void failingResultIsNotAborted()
    {
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        QVERIFY(launcher.start(tinyRecipe(3), fake({ u"--status"_s, u"oom"_s })));
        QVERIFY(rec.finished.wait(20000));
        QCOMPARE(rec.finished.first().at(0).toBool(), false);
        QCOMPARE(arg<rs::stream::Result>(rec.result, 0).status, std::string("oom"));
    }

    void cancelStopsTheWorkerAndKeepsWhatWasMeasured()
    {
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"cancel.sqlite"_s)));
        RunIngest ingest(&store);
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        connect(&launcher, &WorkerLauncher::streamEvent, this,
            [&](const rs::stream::Event& e) { ingest.ingest(e); });
        connect(&launcher, &WorkerLauncher::iteration, this, [&](const rs::stream::Iteration& e) {
            if (e.iteration == 2)
                launcher.cancel(500);
        });
        QVERIFY(launcher.start(tinyRecipe(1000), fake({ u"--delay-ms"_s, u"50"_s })));
        QVERIFY(rec.finished.wait(20000));
        QCOMPARE(rec.finished.first().at(0).toBool(), true);
        QVERIFY(rec.finished.first().at(2).toString().contains(u"cancelled"_s));
        QVERIFY(ingest.finish(rec.finished.first().at(2).toString()));
        QCOMPARE(store.run(ingest.runId())->outcome, outcome::Aborted);
        const int stored = store.iterations(ingest.runId()).size();
        QVERIFY2(stored >= 2 && stored < 1000, qPrintable(QString::number(stored)));
    }

    void workerLookup()
    {
        QStringList searched;
        qputenv("RS_WORKER", QByteArray(RS_FAKE_WORKER));
        QCOMPARE(findWorker(&searched), QFileInfo(QStringLiteral(RS_FAKE_WORKER)).absoluteFilePath());
        qputenv("RS_WORKER", "/nonexistent/recompute-bench");
        searched.clear();
        QCOMPARE(findWorker(&searched), QString());
        QCOMPARE(searched, QStringList { u"/nonexistent/recompute-bench"_s });
        WorkerLauncher launcher;
        QString error;
        QVERIFY(!launcher.start(tinyRecipe(1), {}, &error));
        QVERIFY2(error.contains(u"RS_WORKER"_s) && error.contains(u"/nonexistent/recompute-bench"_s),
            qPrintable(error));
        qunsetenv("RS_WORKER");
    }

    void unstartableWorkerFinishesAborted()
    {
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        LaunchOptions o;
        o.workerPath = QDir::tempPath() + u"/no-such-worker-binary"_s;
        QVERIFY(launcher.start(tinyRecipe(1), o));
        QVERIFY(rec.finished.wait(10000));
        QCOMPARE(rec.finished.first().at(0).toBool(), true);
        QVERIFY(rec.finished.first().at(2).toString().contains(u"cannot start"_s));
    }

    void realWorkerStreamIsStored_data()
    {
        QTest::addColumn<int>("ranks");
        QTest::newRow("one rank") << 1;
        // Two worker processes meeting over Gloo: rank 0's stream carries both ranks' rows.
        QTest::newRow("two ranks") << 2;
    }

    void realWorkerStreamIsStored()
    {
        QFETCH(int, ranks);
        const QString worker = realWorker();
        if (worker.isEmpty())
            QSKIP(
                "no recompute-bench in this build (RS_BUILD_WORKER=OFF) and RS_TEST_REAL_WORKER is not set");
        StoredLaunch s(this, u"real.sqlite"_s);
        QVERIFY(s.opened);
        LaunchOptions o;
        o.workerPath = worker;
        o.ranks = ranks;
        nlohmann::json recipe = tinyRecipe(4);
        recipe["ffn_hidden_size"] = 128;
        recipe["seq_length"] = 64;
        recipe["attention_backend"] = "unfused";
        QVERIFY(s.launcher.start(recipe, o));
        QVERIFY(s.rec.finished.wait(120000));
        QVERIFY(s.ingest.finish(s.rec.finished.first().at(2).toString()));
        const auto run = s.store.run(s.ingest.runId());
        QVERIFY(run);
        if (run->message.contains(u"built without Gloo"_s))
            QSKIP("this worker was built without Gloo (libgloo-dev): several ranks on CPU are refused");
        QCOMPARE(s.rec.hello.size(), 1);
        QCOMPARE(s.rec.result.size(), 1);
        QCOMPARE(s.rec.malformed.size(), 0); // the real stream is clean JSON lines
        QVERIFY2(run->outcome == outcome::Pass, qPrintable(run->outcome + u": "_s + run->message));
        QCOMPARE(run->deviceKind, u"cpu"_s);
        QVERIFY(!run->libtorchVersion.isEmpty());
        QCOMPARE(run->recipeHash.size(), 64);
        QCOMPARE(s.store.iterations(run->id).size(), 4 * ranks);
        QCOMPARE(s.store.rankPeaks(run->id).size(), ranks);
        QCOMPARE(arg<rs::stream::Result>(s.rec.result, 0).world_size.value_or(1), ranks);
        QVERIFY(run->peakAllocated.value_or(0) > 0);
        QVERIFY(run->peakReserved.value_or(0) >= run->peakAllocated.value_or(0));
        QVERIFY(run->steadyStepMs.value_or(0) > 0);
        QCOMPARE(run->lossFinite.value_or(false), true);
    }

    void realWorkerKilledMidRunEndsAborted()
    {
        const QString worker = realWorker();
        if (worker.isEmpty())
            QSKIP(
                "no recompute-bench in this build (RS_BUILD_WORKER=OFF) and RS_TEST_REAL_WORKER is not set");
        StoredLaunch s(this, u"real-killed.sqlite"_s);
        QVERIFY(s.opened);
        connect(&s.launcher, &WorkerLauncher::iteration, this, [&](const rs::stream::Iteration& e) {
            if (e.iteration == 3)
                ::kill(pid_t(s.launcher.pid()), SIGKILL);
        });
        LaunchOptions o;
        o.workerPath = worker;
        nlohmann::json recipe = tinyRecipe(100000);
        recipe["ffn_hidden_size"] = 128;
        recipe["seq_length"] = 64;
        recipe["attention_backend"] = "unfused";
        QVERIFY(s.launcher.start(recipe, o));
        QVERIFY(s.rec.finished.wait(120000));
        QCOMPARE(s.rec.finished.first().at(0).toBool(), true);
        QCOMPARE(s.rec.result.size(), 0);
        QVERIFY(s.ingest.finish(s.rec.finished.first().at(2).toString()));
        const auto run = s.store.run(s.ingest.runId());
        QCOMPARE(run->outcome, outcome::Aborted);
        const int stored = s.store.iterations(run->id).size();
        QVERIFY2(stored >= 3 && stored < 100000, qPrintable(QString::number(stored)));
        QCOMPARE(s.store.iterations(run->id).first().iteration, 1);
    }

    // The worker on a "remote" host through a real sshd: the recipe goes over ssh's stdin, the stream comes
    // back on its stdout and is stored like a local one.
    void realWorkerOverSsh()
    {
        const QString worker = realWorker();
        if (worker.isEmpty())
            QSKIP(
                "no recompute-bench in this build (RS_BUILD_WORKER=OFF) and RS_TEST_REAL_WORKER is not set");
        Sshd sshd;
        if (!sshd.skipReason.isEmpty())
            QSKIP(sshd.skipReason.constData());
        StoredLaunch s(this, u"ssh.sqlite"_s);
        QVERIFY(s.opened);
        LaunchOptions o;
        o.sshHost = u"127.0.0.1"_s;
        o.sshOptions = sshd.options();
        o.remoteWorker = worker;
        o.extraArguments = { u"--seed"_s, u"7"_s };
        const nlohmann::json recipe = tinyRecipe(3, u"name with 'quotes' and $(no expansion)"_s);
        QVERIFY(s.launcher.start(recipe, o));
        QVERIFY(s.rec.finished.wait(120000));
        QVERIFY2(!s.rec.finished.first().at(0).toBool(), qPrintable(s.rec.finished.first().at(2).toString()));
        QVERIFY(s.ingest.finish(s.rec.finished.first().at(2).toString()));
        const auto run = s.store.run(s.ingest.runId());
        QVERIFY2(run->outcome == outcome::Pass, qPrintable(run->outcome + u": "_s + run->message));
        QCOMPARE(s.store.iterations(run->id).size(), 3);
        QCOMPARE(s.launcher.workerPath(), u"127.0.0.1:"_s + worker);
        // The recipe travelled on stdin: nothing of it is on ssh's command line.
        QVERIFY(!s.launcher.lastArguments().join(u' ').contains(u"quotes"_s));
    }

    void sshFailureIsNamed()
    {
        if (QStandardPaths::findExecutable(u"ssh"_s).isEmpty())
            QSKIP("no ssh client (openssh-client)");
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        LaunchOptions o;
        o.sshHost = u"127.0.0.1"_s;
        o.sshOptions = { u"-p"_s, QString::number(freeLoopbackPort()), u"-o"_s, u"ConnectTimeout=5"_s };
        QVERIFY(launcher.start(tinyRecipe(3), o));
        QVERIFY(rec.finished.wait(30000));
        QVERIFY(rec.finished.first().at(0).toBool()); // aborted
        const QString reason = rec.finished.first().at(2).toString();
        QVERIFY2(reason.startsWith(u"ssh to 127.0.0.1 failed (exit 255)"_s), qPrintable(reason));
        QVERIFY2(reason.contains(u"Connection refused"_s), qPrintable(reason));

        LaunchOptions ranks = o;
        ranks.ranks = 2;
        QString error;
        QVERIFY(!launcher.start(tinyRecipe(3), ranks, &error));
        QVERIFY2(error.contains(u"torchrun"_s), qPrintable(error));
    }
};

QTEST_GUILESS_MAIN(TestLauncher)
#include "tst_launcher.moc"
