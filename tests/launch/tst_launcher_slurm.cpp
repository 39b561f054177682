// SPDX-License-Identifier: Apache-2.0
// The worker as a Slurm job through WorkerLauncher (LaunchOptions::slurm) and RunSession, against the real
// Slurm of slurm_cluster.h (munged, slurmctld, slurmd on this host) and, for a login host, the real sshd of
// sshd_fixture.h: the job's tasks are the ranks (their variables checked through a stand-in worker whose
// task 0 is the launcher's test double), a two-task job of the real worker stores every event through the
// session, a job is cancelled with scancel, a held one says why it waits, and a job Slurm rejects says why.
#include <csignal>

#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "core/recipe_json.h"
#include "launch/worker_launcher.h"
#include "session/run_session.h"
#include "slurm_login_host.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs;
using namespace rs::launch;
using namespace rs::session;
using namespace rs::launch::test;

namespace {

Recipe tinyRecipe(int iters, const std::vector<std::string>& modules = {})
{
    Recipe r;
    r.name = "slurm-tiny";
    r.num_layers = 2;
    r.hidden_size = 64;
    r.ffn_hidden_size = 128;
    r.num_attention_heads = 4;
    r.seq_length = 64;
    r.vocab_size = 256;
    r.attention_backend = "unfused";
    r.warmup_iters = 1;
    r.train_iters = iters;
    r.recompute_granularity = "selective";
    r.recompute_modules = modules;
    return r;
}

QByteArray recipeJson(const Recipe& r)
{
    return QByteArray::fromStdString(recipeToJson(r).dump());
}

// Every signal of one launcher, and when the iterations came: while the job was still running or after.
struct Recorder {
    explicit Recorder(WorkerLauncher* l)
        : hello(l, &WorkerLauncher::hello)
        , recipe(l, &WorkerLauncher::recipe)
        , phase(l, &WorkerLauncher::phase)
        , iteration(l, &WorkerLauncher::iteration)
        , rankSummary(l, &WorkerLauncher::rankSummary)
        , result(l, &WorkerLauncher::result)
        , started(l, &WorkerLauncher::started)
        , finished(l, &WorkerLauncher::finished)
        , malformed(l, &WorkerLauncher::malformedLine)
    {
        QObject::connect(l, &WorkerLauncher::iteration, l, [this, l](const rs::stream::Iteration& e) {
            ranks.insert(e.rank);
            if (l->isRunning() && l->slurmState() == u"RUNNING"_s)
                ++whileRunning;
        });
        QObject::connect(l, &WorkerLauncher::note, l, [this](const QString& t) { notes << t; });
        QObject::connect(l, &WorkerLauncher::stderrText, l, [this](const QString& t) { stderrText += t; });
    }
    bool aborted() const { return finished.first().at(0).toBool(); }
    QString reason() const { return finished.first().at(2).toString(); }
    bool noted(const QString& part) const { return !notes.filter(part).isEmpty(); }
    QByteArray trace() const { return (notes.join(u" | "_s) + u" || stderr: "_s + stderrText).toUtf8(); }
    QSignalSpy hello, recipe, phase, iteration, rankSummary, result, started, finished, malformed;
    QSet<int> ranks;
    int whileRunning = 0;
    QStringList notes;
    QString stderrText;
};

// The real recompute-bench: this build's target, or $RS_TEST_REAL_WORKER.
QString realWorker()
{
    QString worker = qEnvironmentVariable("RS_TEST_REAL_WORKER");
#ifdef RS_REAL_WORKER
    if (worker.isEmpty())
        worker = QStringLiteral(RS_REAL_WORKER);
#endif
    return worker;
}

} // namespace

class TestLauncherSlurm : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_standIn; // task 0: the launcher's test double; every task: its Slurm variables on stderr

private slots:
    void initTestCase()
    {
        qRegisterMetaType<SlurmOutcome>();
        startSlurmAndLoginHost();
        m_standIn = m_dir.filePath(u"stand-in-worker"_s);
        QFile f(m_standIn);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(
            QStringLiteral("#!/bin/sh\n"
                           "echo \"rank ${SLURM_PROCID} of ${SLURM_NTASKS} at ${MASTER_ADDR}:${MASTER_PORT}"
                           " RANK=${RANK-unset} FOO=${FOO-unset}\" >&2\n"
                           "[ \"$SLURM_PROCID\" = 0 ] && exec %1 \"$@\"\n"
                           "exit 0\n")
                .arg(QStringLiteral(RS_FAKE_WORKER))
                .toUtf8());
        f.close();
        f.setPermissions(
            QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner | QFile::ReadOther | QFile::ExeOther);
    }
    void cleanupTestCase() { stopSlurmAndLoginHost(); }

    // Nothing reaches sbatch when the settings are wrong or disagree with the launch.
    void settingsAreCheckedBeforeAnything_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("message");
        QTest::newRow("partition") << "partition"
                                   << "Slurm settings: partition: 'a b'";
        QTest::newRow("work folder") << "workdir"
                                     << "Slurm settings: work folder: empty";
        QTest::newRow("ranks") << "ranks"
                               << "ranks: 3, but the Slurm job runs 4 tasks";
        QTest::newRow("ssh host") << "ssh"
                                  << "ssh host gpu1 and a Slurm job at once";
    }
    void settingsAreCheckedBeforeAnything()
    {
        QFETCH(QString, field);
        QFETCH(QString, message);
        SlurmSettings s;
        s.nodes = 2;
        s.tasksPerNode = 2;
        s.workDir = m_dir.filePath(u"unused"_s);
        LaunchOptions o;
        o.workerPath = m_standIn;
        if (field == u"partition"_s)
            s.partition = u"a b"_s;
        else if (field == u"workdir"_s)
            s.workDir.clear();
        else if (field == u"ranks"_s)
            o.ranks = 3;
        else if (field == u"ssh"_s)
            o.sshHost = u"gpu1"_s;
        o.slurm = s;
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        QString error;
        QVERIFY(!launcher.startWithRecipeText(recipeJson(tinyRecipe(2)), o, &error));
        QVERIFY2(error.startsWith(message), qPrintable(error));
        QVERIFY(!launcher.isRunning());
        QCOMPARE(rec.started.size(), 0);
        QVERIFY(!QDir(m_dir.filePath(u"unused"_s)).exists()); // no recipe written
    }

    // A control measured on Slurm stands in only for Slurm runs of the same allocation.
    void signatureNamesTheAllocation()
    {
        LaunchOptions local;
        local.workerPath = m_standIn;
        local.ranks = 4;
        LaunchOptions slurm = local;
        slurm.ranks = 1;
        SlurmSettings s;
        s.partition = u"gpu"_s;
        s.nodes = 2;
        s.tasksPerNode = 2;
        s.gpusPerNode = 2;
        s.workDir = u"/shared/a"_s;
        slurm.slurm = s;
        const QString a = RunSession::launchSignature(local);
        const QString b = RunSession::launchSignature(slurm);
        QVERIFY2(b.contains(u"ranks 4"_s), qPrintable(b));
        QVERIFY2(
            b.contains(u"slurm partition gpu, nodes 2, tasks per node 2, GPUs per node 2"_s), qPrintable(b));
        QVERIFY(!b.endsWith(a) && !a.endsWith(b));
        s.workDir = u"/shared/b"_s; // where the files go does not change what is measured
        s.timeLimit = u"10"_s;
        slurm.slurm = s;
        QCOMPARE(RunSession::launchSignature(slurm), b);
        s.extraSbatchLines = { u"#SBATCH --exclusive"_s };
        slurm.slurm = s;
        QVERIFY(RunSession::launchSignature(slurm) != b);
        QCOMPARE(launchRanks(slurm), 4);
    }

    // The job's tasks are the ranks: srun's variables reach every task, torchrun's exported ones do not,
    // LaunchOptions::environment does; task 0's stream arrives while the job runs, the other tasks' stderr
    // comes prefixed with their task.
    void tasksAreTheRanks_data() { hostRows(); }
    void tasksAreTheRanks()
    {
        QFETCH(QString, host);
        REQUIRE_CLUSTER();
        SlurmSettings s = cluster->settings(u"ranks-"_s + QString(host).replace(u' ', u'-'));
        s.tasksPerNode = 2;
        ON_HOST(s, host);
        LaunchOptions o;
        o.workerPath = m_standIn;
        o.remoteWorker = m_standIn;
        o.environment = { u"FOO=bar baz"_s };
        o.extraArguments = { u"--delay-ms"_s, u"150"_s, u"--stderr"_s, u"from task zero"_s };
        o.slurm = s;
        qputenv("RANK", "5"); // exported into the job by sbatch: must not decide the ranks
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        QString error;
        const Recipe r = tinyRecipe(6);
        const bool started = launcher.startWithRecipeText(recipeJson(r), o, &error);
        qunsetenv("RANK");
        QVERIFY2(started, qPrintable(error));
        QVERIFY(launcher.isRunning());
        QVERIFY(!launcher.slurmJobId().isEmpty());
        QVERIFY2(rec.finished.wait(90000), rec.trace().constData());
        QVERIFY2(!rec.aborted(), qPrintable(rec.reason() + u" / "_s + QString::fromUtf8(rec.trace())));
        QCOMPARE(rec.started.size(), 1);
        QCOMPARE(rec.hello.size(), 1);
        QCOMPARE(rec.result.size(), 1);
        QCOMPARE(rec.iteration.size(), 6);
        QCOMPARE(rec.malformed.size(), 0);
        QVERIFY2(rec.whileRunning >= 1, "no iteration arrived while the job ran: the output is not followed");
        const QString port = u"%1"_s.arg(20000 + launcher.slurmJobId().toInt() % 20000);
        for (int t : { 0, 1 }) {
            const QString line = u"rank %1 of 2 at 127.0.0.1:%2 RANK=unset FOO=bar baz"_s.arg(t).arg(port);
            QVERIFY2(
                rec.stderrText.contains((t ? u"task 1: "_s : QString()) + line), rec.trace().constData());
        }
        QVERIFY2(rec.stderrText.contains(u"from task zero"_s), rec.trace().constData());
        QVERIFY2(rec.noted(u"Slurm job %1 submitted"_s.arg(launcher.slurmJobId())), rec.trace().constData());
        QVERIFY2(rec.noted(u"running"_s), rec.trace().constData());
        QVERIFY2(rec.noted(u"Slurm job %1 completed"_s.arg(launcher.slurmJobId())), rec.trace().constData());
        // The recipe went into the work folder, not onto a command line.
        QVERIFY(
            QFileInfo(launcher.lastArguments().value(launcher.lastArguments().indexOf(m_standIn) + 1)).path()
            == QDir::cleanPath(s.workDir));
        QVERIFY(!launcher.lastArguments().join(u' ').contains(u"slurm-tiny"_s));
    }

    // Two tasks of the real worker on CPU, run by the session: every event arrives through the launcher and
    // is stored; a second launch reuses that [] control (measured on Slurm), one without Slurm does not.
    void realWorkerTwoTaskJobIsStored_data() { hostRows(); }
    void realWorkerTwoTaskJobIsStored()
    {
        QFETCH(QString, host);
        REQUIRE_CLUSTER();
        const QString worker = realWorker();
        if (worker.isEmpty())
            QSKIP("no recompute-bench in this build and RS_TEST_REAL_WORKER is not set");
        SlurmSettings s = cluster->settings(u"real-"_s + QString(host).replace(u' ', u'-'));
        s.tasksPerNode = 2;
        ON_HOST(s, host);
        storage::Store store;
        QTemporaryDir dir;
        QVERIFY(store.open(dir.filePath(u"slurm.sqlite"_s)));
        RunSession session(&store);
        Recorder rec(session.launcher());
        QStringList messages;
        connect(&session, &RunSession::message, this, [&](const QString& m) { messages << m; });
        SessionOptions o;
        o.launch.workerPath = worker;
        o.launch.remoteWorker = worker;
        o.launch.extraArguments = { u"--device"_s, u"cpu"_s };
        o.launch.slurm = s;
        o.provenance = u"tst_launcher_slurm"_s;
        QSignalSpy finished(&session, &RunSession::finished);
        const int iters = 3;
        QVERIFY2(session.start({ tinyRecipe(iters) }, o), qPrintable(session.refusal()));
        QVERIFY2(finished.wait(180000), rec.trace().constData());
        QCOMPARE(session.jobs().size(), 1); // the [] recipe is its own control
        const SessionJob& job = session.jobs().first();
        QVERIFY2(!job.aborted, qPrintable(job.reason + u" / "_s + QString::fromUtf8(rec.trace())));
        const auto run = store.run(job.runId);
        QVERIFY(run);
        if (run->message.contains(u"built without Gloo"_s))
            QSKIP("this worker was built without Gloo (libgloo-dev): several ranks on CPU are refused");
        QVERIFY2(run->outcome == storage::outcome::Pass, qPrintable(run->outcome + u": "_s + run->message));
        QCOMPARE(rec.hello.size(), 1);
        QVERIFY(rec.recipe.size() >= 1);
        QVERIFY(rec.phase.size() >= 1);
        QCOMPARE(rec.iteration.size(), iters * 2);
        QCOMPARE(rec.ranks, (QSet<int> { 0, 1 }));
        QVERIFY(rec.rankSummary.size() >= 1);
        QCOMPARE(rec.result.size(), 1);
        QCOMPARE(rec.malformed.size(), 0);
        QCOMPARE(run->worldSize.value_or(0), 2);
        QCOMPARE(store.iterations(run->id).size(), iters * 2);
        QCOMPARE(store.rankPeaks(run->id).size(), 2);
        QVERIFY(run->peakAllocated.value_or(0) > 0);
        QVERIFY(run->steadyStepMs.value_or(0) > 0);
        QVERIFY2(run->provenance.contains(u"slurm partition debug, nodes 1, tasks per node 2"_s),
            qPrintable(run->provenance));
        QVERIFY2(!messages.filter(u"submitted"_s).isEmpty(), qPrintable(messages.join(u" | "_s)));

        // Measured on Slurm: reused for the same allocation, not for a local launch of two ranks.
        QCOMPARE(session.findReusableControl(tinyRecipe(iters), o.launch).value_or(0), run->id);
        LaunchOptions local = o.launch;
        local.slurm.reset();
        local.ranks = 2;
        QVERIFY(!session.findReusableControl(tinyRecipe(iters), local));
    }

    // scancel while the worker measures: the run ends aborted, says it was cancelled, and keeps what was
    // measured.
    void cancelledJobEndsAborted_data() { hostRows(); }
    void cancelledJobEndsAborted()
    {
        QFETCH(QString, host);
        REQUIRE_CLUSTER();
        const QString worker = realWorker();
        if (worker.isEmpty())
            QSKIP("no recompute-bench in this build and RS_TEST_REAL_WORKER is not set");
        SlurmSettings s = cluster->settings(u"cancel-"_s + QString(host).replace(u' ', u'-'));
        ON_HOST(s, host);
        storage::Store store;
        QTemporaryDir dir;
        QVERIFY(store.open(dir.filePath(u"cancel.sqlite"_s)));
        RunSession session(&store);
        Recorder rec(session.launcher());
        connect(&session, &RunSession::iteration, this, [&](const rs::stream::Iteration& e) {
            if (e.iteration == 2)
                session.cancel();
        });
        SessionOptions o;
        o.launch.workerPath = worker;
        o.launch.remoteWorker = worker;
        o.launch.extraArguments = { u"--device"_s, u"cpu"_s };
        o.launch.slurm = s;
        o.controlFirst = false;
        QSignalSpy finished(&session, &RunSession::finished);
        QVERIFY2(session.start({ tinyRecipe(100000, { "core_attn" }) }, o), qPrintable(session.refusal()));
        QVERIFY2(finished.wait(120000), rec.trace().constData());
        QVERIFY(session.cancelled());
        const SessionJob& job = session.jobs().first();
        QVERIFY(job.aborted);
        QVERIFY2(job.reason.startsWith(u"cancelled: Slurm job "_s)
                && job.reason.contains(u"cancelled (scancel)"_s),
            qPrintable(job.reason));
        const auto run = store.run(job.runId);
        QVERIFY(run);
        QCOMPARE(run->outcome, storage::outcome::Aborted);
        QVERIFY2(run->message.contains(u"scancel"_s), qPrintable(run->message));
        const int stored = int(store.iterations(run->id).size());
        QVERIFY2(stored >= 2 && stored < 100000, qPrintable(QString::number(stored)));
    }

    // Issue 30: a hang-up (the terminal or ssh session of `recompute run` closed) cancels the CLI's Slurm job
    // as Ctrl-C does, and keeps what was measured; the job was left running with nobody to read it.
    void hangUpCancelsTheJob()
    {
        REQUIRE_CLUSTER();
#ifndef RS_RECOMPUTE
        QSKIP("no recompute CLI in this build");
#else
        const QString worker = realWorker();
        if (worker.isEmpty())
            QSKIP("no recompute-bench in this build and RS_TEST_REAL_WORKER is not set");
        const SlurmSettings s = cluster->settings(u"hangup"_s);
        QTemporaryDir dir;
        const QString db = dir.filePath(u"hangup.sqlite"_s), recipe = dir.filePath(u"hangup.json"_s);
        {
            QFile f(recipe);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(recipeJson(tinyRecipe(100000)));
        }
        QProcess cli;
        cli.start(QStringLiteral(RS_RECOMPUTE),
            { u"run"_s, recipe, u"--db"_s, db, u"--remote-worker"_s, worker, u"--device"_s, u"cpu"_s,
                u"--slurm-partition"_s, s.partition, u"--slurm-workdir"_s, s.workDir });
        QVERIFY(cli.waitForStarted(10000));
        // Measuring on the node: iterations are in the store.
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                storage::Store store;
                if (!store.openReadOnly(db))
                    return false;
                const auto runs = store.listRuns();
                return !runs.isEmpty() && store.iterations(runs.first().id).size() >= 2;
            }(),
            120000);
        ::kill(pid_t(cli.processId()), SIGHUP);
        QVERIFY(cli.waitForFinished(60000));
        const QByteArray said = cli.readAllStandardOutput() + cli.readAllStandardError();
        QCOMPARE(cli.exitStatus(), QProcess::NormalExit);
        QVERIFY2(cli.exitCode() == 130, said.constData());
        storage::Store store;
        QVERIFY(store.open(db));
        const auto runs = store.listRuns();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs[0].outcome, storage::outcome::Aborted);
        QVERIFY2(runs[0].message.contains(u"scancel"_s), qPrintable(runs[0].message));
        QVERIFY(store.iterations(runs[0].id).size() >= 2);
        // No job of ours is left pending or running.
        QProcess squeue;
        squeue.start(u"squeue"_s, { u"-h"_s, u"-t"_s, u"PENDING,RUNNING"_s, u"-o"_s, u"%i"_s });
        QVERIFY(squeue.waitForFinished(10000));
        QCOMPARE(squeue.readAllStandardOutput().trimmed(), QByteArray());
#endif
    }

    // A held job says why it waits while it waits; cancelled there, it ends aborted.
    void pendingJobSaysWhyItWaits()
    {
        REQUIRE_CLUSTER();
        SlurmSettings s = cluster->settings(u"held-launcher"_s);
        s.extraSbatchLines = { u"#SBATCH --hold"_s };
        LaunchOptions o;
        o.workerPath = m_standIn;
        o.slurm = s;
        WorkerLauncher launcher;
        Recorder rec(&launcher);
        QString error;
        QVERIFY2(launcher.startWithRecipeText(recipeJson(tinyRecipe(2)), o, &error), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(rec.noted(u"pending: held"_s), 20000);
        QCOMPARE(launcher.slurmState(), u"PENDING"_s);
        QVERIFY(launcher.isRunning());
        launcher.cancel();
        QVERIFY2(rec.finished.wait(30000), rec.trace().constData());
        QVERIFY(rec.aborted());
        QVERIFY2(rec.reason().startsWith(u"cancelled: Slurm job "_s), qPrintable(rec.reason()));
        QCOMPARE(rec.iteration.size(), 0);
    }

    // sbatch refuses the job: the run ends aborted with sbatch's own reason, the session runs nothing more.
    void rejectedJobSaysWhy_data()
    {
        hostRows();
    }
    void rejectedJobSaysWhy()
    {
        QFETCH(QString, host);
        REQUIRE_CLUSTER();
        SlurmSettings s = cluster->settings(u"rejected-"_s + QString(host).replace(u' ', u'-'));
        s.partition = u"nosuch"_s;
        ON_HOST(s, host);
        storage::Store store;
        QTemporaryDir dir;
        QVERIFY(store.open(dir.filePath(u"rejected.sqlite"_s)));
        RunSession session(&store);
        Recorder rec(session.launcher());
        SessionOptions o;
        o.launch.workerPath = m_standIn;
        o.launch.remoteWorker = m_standIn;
        o.launch.slurm = s;
        QSignalSpy finished(&session, &RunSession::finished);
        QVERIFY2(session.start({ tinyRecipe(2, { "core_attn" }) }, o), qPrintable(session.refusal()));
        QVERIFY(finished.wait(60000));
        QCOMPARE(rec.started.size(), 0);
        QVERIFY(rec.aborted());
        QVERIFY2(rec.reason().startsWith(u"Slurm rejected the job: "_s)
                && rec.reason().contains(u"partition"_s, Qt::CaseInsensitive),
            qPrintable(rec.reason()));
        QVERIFY(session.startFailed());
        QCOMPARE(session.startError(), rec.reason());
        QCOMPARE(session.jobs().size(), 2); // the control, then the candidate: nothing after the refusal
        QVERIFY(session.jobs().at(0).aborted);
        QCOMPARE(session.jobs().at(1).runId, 0);
        const auto run = store.run(session.jobs().at(0).runId);
        QVERIFY(run);
        QCOMPARE(run->outcome, storage::outcome::Aborted);
        QVERIFY2(run->message.contains(u"partition"_s, Qt::CaseInsensitive), qPrintable(run->message));
    }
};

QTEST_GUILESS_MAIN(TestLauncherSlurm)
#include "tst_launcher_slurm.moc"
