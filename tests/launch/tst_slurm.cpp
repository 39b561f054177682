// SPDX-License-Identifier: Apache-2.0
// Slurm jobs against a real Slurm: a controller (slurmctld), a node daemon (slurmd) and munge started on
// this host with a config in the test's own folder. A two-task job of the real worker on CPU is submitted,
// followed and its rank 0 stream read; another is cancelled, one held, one rejected, one fails; and a login
// host over a real sshd submits to the same Slurm.
#include <csignal>
#include <unistd.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QRandomGenerator>
#include <QSet>
#include <QSignalSpy>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include "launch/json_lines.h"
#include "launch/slurm_job.h"
#include "slurm_cluster.h"
#include "sshd_fixture.h"

using namespace Qt::StringLiterals;
using namespace rs::launch;
using namespace rs::launch::test;

namespace {

struct Followed {
    explicit Followed(SlurmJob* job)
        : finished(job, &SlurmJob::finished)
        , states(job, &SlurmJob::stateChanged)
    {
        QObject::connect(job, &SlurmJob::taskOutput, job,
            [this](int task, const QByteArray& bytes) { out[task] += bytes; });
    }
    SlurmOutcome outcome() const { return finished.first().at(0).value<SlurmOutcome>(); }
    QString message() const { return finished.first().at(2).toString(); }
    bool sawState(const QString& state) const
    {
        for (const auto& s : states)
            if (s.at(0).toString() == state)
                return true;
        return false;
    }
    // The job may end inside the call that cancels it, before any wait starts.
    bool waitFinished(int ms) { return !finished.isEmpty() || finished.wait(ms); }
    // What the job went through, for a failure message.
    QByteArray trace() const
    {
        QStringList seen;
        for (const auto& st : states)
            seen << st.at(0).toString() + u'/' + st.at(1).toString();
        return seen.join(u", "_s).toUtf8();
    }
    QSignalSpy finished;
    QSignalSpy states;
    QMap<int, QByteArray> out;
};

} // namespace

class TestSlurm : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        qRegisterMetaType<rs::launch::SlurmOutcome>();
        cluster = new SlurmCluster;
    }
    void cleanupTestCase() { delete cluster; }

    void batchScript()
    {
        SlurmSettings s;
        s.partition = u"gpu"_s;
        s.nodes = 2;
        s.tasksPerNode = 8;
        s.gpusPerNode = 8;
        s.timeLimit = u"00:30:00"_s;
        s.account = u"llm"_s;
        s.extraSbatchLines = { u"#SBATCH --exclusive"_s };
        s.workDir = u"/shared/runs/a/"_s;
        const QString script = slurmBatchScript(
            s, { u"recompute-bench"_s, u"/shared/runs/a/recipe.json"_s, u"name with 'quote' and $(x)"_s });
        const QStringList lines = script.split(u'\n');
        QCOMPARE(lines.first(), u"#!/bin/bash"_s);
        for (const QString& expected :
            { u"#SBATCH --nodes=2"_s, u"#SBATCH --ntasks-per-node=8"_s, u"#SBATCH --gpus-per-node=8"_s,
                u"#SBATCH --partition=gpu"_s, u"#SBATCH --time=00:30:00"_s, u"#SBATCH --account=llm"_s,
                u"#SBATCH --exclusive"_s, u"#SBATCH --output=/shared/runs/a/slurm-%j.out"_s })
            QVERIFY2(lines.contains(expected), qPrintable(expected + u" missing in\n"_s + script));
        const QString srun = lines.filter(u"srun"_s).value(0);
        QVERIFY2(srun.contains(u"'/shared/runs/a/task-%j-%t.out'"_s), qPrintable(srun));
        // Every word single-quoted: the job's shell expands nothing of ours.
        QVERIFY2(
            srun.endsWith(
                u"'recompute-bench' '/shared/runs/a/recipe.json' 'name with '\\''quote'\\'' and $(x)'"_s),
            qPrintable(srun));
        // No GPUs asked for: no gpus line at all.
        s.gpusPerNode = 0;
        QVERIFY(!slurmBatchScript(s, { u"true"_s }).contains(u"gpus"_s));
    }

    void settingsAreChecked_data()
    {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("message");
        QTest::newRow("partition") << "partition"
                                   << "gpu; rm -rf /"
                                   << "partition:";
        QTest::newRow("account") << "account"
                                 << "-x"
                                 << "account:";
        QTest::newRow("time") << "time"
                              << "1h"
                              << "time limit: '1h'";
        QTest::newRow("extra line") << "extra"
                                    << "--exclusive"
                                    << "extra #SBATCH line";
        QTest::newRow("extra line break") << "extra"
                                          << "#SBATCH --a\nrm x"
                                          << "extra #SBATCH line";
        QTest::newRow("login host option") << "host"
                                           << "-oProxyCommand=touch /tmp/pwned"
                                           << "login host:";
        QTest::newRow("login host space") << "host"
                                          << "a b"
                                          << "login host:";
        QTest::newRow("nodes") << "nodes"
                               << "0"
                               << "nodes: 0";
        QTest::newRow("no work dir") << "workdir"
                                     << ""
                                     << "work folder: empty";
        // Issue 30: written into `#SBATCH --output=DIR/...`, a blank would add an option to the job.
        QTest::newRow("work dir with a blank") << "workdir"
                                               << "/tmp/x --partition=x"
                                               << "work folder: '/tmp/x --partition=x' holds a blank";
    }
    void settingsAreChecked()
    {
        QFETCH(QString, field);
        QFETCH(QString, value);
        QFETCH(QString, message);
        SlurmSettings s;
        s.workDir = u"/tmp/x"_s;
        QVERIFY(checkSlurmSettings(s).isEmpty());
        if (field == u"partition"_s)
            s.partition = value;
        else if (field == u"account"_s)
            s.account = value;
        else if (field == u"time"_s)
            s.timeLimit = value;
        else if (field == u"extra"_s)
            s.extraSbatchLines = { value };
        else if (field == u"host"_s)
            s.loginHost = value;
        else if (field == u"nodes"_s)
            s.nodes = value.toInt();
        else if (field == u"workdir"_s)
            s.workDir = value;
        const QString got = checkSlurmSettings(s);
        QVERIFY2(got.startsWith(message), qPrintable(got));
        SlurmJob job;
        QString error;
        QVERIFY(!job.submit(s, { u"true"_s }, &error));
        QCOMPARE(error, got);
    }

    void outcomes_data()
    {
        QTest::addColumn<QString>("state");
        QTest::addColumn<int>("outcome");
        QTest::newRow("completed") << "COMPLETED" << int(SlurmOutcome::Completed);
        QTest::newRow("cancelled by") << "CANCELLED by 0" << int(SlurmOutcome::Cancelled);
        QTest::newRow("timeout") << "TIMEOUT" << int(SlurmOutcome::TimeLimit);
        QTest::newRow("node fail") << "NODE_FAIL" << int(SlurmOutcome::NodeFailure);
        QTest::newRow("oom") << "OUT_OF_MEMORY" << int(SlurmOutcome::OutOfMemory);
        QTest::newRow("failed") << "FAILED" << int(SlurmOutcome::Failed);
        QTest::newRow("preempted") << "PREEMPTED" << int(SlurmOutcome::Preempted);
        QTest::newRow("unknown") << "SPECIAL_EXIT" << int(SlurmOutcome::Lost);
    }
    void outcomes()
    {
        QFETCH(QString, state);
        QFETCH(int, outcome);
        QCOMPARE(int(slurmOutcomeFromState(state)), outcome);
    }

    // Two ranks of the real worker on CPU as one Slurm job: rank 0's output file is the stream, with both
    // ranks' iterations in it.
    void twoTaskWorkerJob()
    {
        REQUIRE_CLUSTER();
#ifndef RS_REAL_WORKER
        QSKIP("no recompute-bench in this build");
#else
        SlurmJob job;
        Followed f(&job);
        SlurmSettings s = cluster->settings(u"worker"_s);
        s.tasksPerNode = 2;
        const QJsonObject recipe { { u"name"_s, u"slurm"_s }, { u"num_layers"_s, 2 },
            { u"hidden_size"_s, 64 }, { u"num_attention_heads"_s, 4 }, { u"seq_length"_s, 64 },
            { u"vocab_size"_s, 256 }, { u"recompute_granularity"_s, u"selective"_s },
            { u"recompute_modules"_s, QJsonArray() }, { u"train_iters"_s, 3 }, { u"warmup_iters"_s, 1 } };
        QString error;
        const QString path = job.putFile(s, u"recipe.json"_s, QJsonDocument(recipe).toJson(), &error);
        QVERIFY2(!path.isEmpty(), qPrintable(error));
        QVERIFY2(job.submit(s, { QStringLiteral(RS_REAL_WORKER), path, u"--device"_s, u"cpu"_s }, &error),
            qPrintable(error));
        QVERIFY(!job.jobId().isEmpty());
        QVERIFY2(f.waitFinished(180000), f.trace().constData());
        QVERIFY2(f.outcome() == SlurmOutcome::Completed, qPrintable(f.message()));
        QVERIFY(f.sawState(u"RUNNING"_s));
        JsonLinesReader reader;
        const auto events = reader.feed(f.out.value(0)) + reader.finish();
        QSet<int> iterationRanks;
        rs::stream::Hello hello;
        rs::stream::Result result;
        for (const rs::stream::Event& e : events) {
            if (const auto* h = std::get_if<rs::stream::Hello>(&e))
                hello = *h;
            else if (const auto* it = std::get_if<rs::stream::Iteration>(&e))
                iterationRanks.insert(it->rank);
            else if (const auto* r = std::get_if<rs::stream::Result>(&e))
                result = *r;
        }
        QCOMPARE(hello.world_size, 2);
        QCOMPARE(iterationRanks, (QSet<int> { 0, 1 }));
        QVERIFY2(result.status == "pass", result.toJson().dump().c_str());
#endif
    }

    void cancelAnother()
    {
        REQUIRE_CLUSTER();
        SlurmJob job;
        Followed f(&job);
        QString error;
        QVERIFY2(
            job.submit(cluster->settings(u"long"_s), { u"sleep"_s, u"300"_s }, &error), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(job.state() == u"RUNNING"_s, 60000);
        job.cancel();
        QVERIFY2(f.waitFinished(60000), f.trace().constData());
        QCOMPARE(f.outcome(), SlurmOutcome::Cancelled);
        QVERIFY2(f.message().contains(u"cancelled (scancel)"_s), qPrintable(f.message()));
    }

    void heldJobSaysWhyItWaits()
    {
        REQUIRE_CLUSTER();
        SlurmJob job;
        Followed f(&job);
        SlurmSettings s = cluster->settings(u"held"_s);
        s.extraSbatchLines = { u"#SBATCH --hold"_s };
        QString error;
        QVERIFY2(job.submit(s, { u"true"_s }, &error), qPrintable(error));
        QTRY_VERIFY_WITH_TIMEOUT(f.states.size() > 0, 20000);
        QCOMPARE(f.states.first().at(0).toString(), u"PENDING"_s);
        const QString reason = f.states.first().at(1).toString();
        QCOMPARE(reason, u"JobHeldUser"_s);
        QVERIFY(pendingReasonText(reason).contains(u"held"_s));
        job.cancel();
        QVERIFY2(f.waitFinished(30000), f.trace().constData());
        QCOMPARE(f.outcome(), SlurmOutcome::Cancelled);
    }

    void rejectedJobSaysWhy()
    {
        REQUIRE_CLUSTER();
        SlurmJob job;
        SlurmSettings s = cluster->settings(u"rejected"_s);
        s.partition = u"nosuch"_s;
        QString error;
        QVERIFY(!job.submit(s, { u"true"_s }, &error));
        QVERIFY2(error.startsWith(u"Slurm rejected the job: "_s)
                && error.contains(u"partition"_s, Qt::CaseInsensitive),
            qPrintable(error));
        QVERIFY(job.jobId().isEmpty());
    }

    void failedJobGivesItsExitCode()
    {
        REQUIRE_CLUSTER();
        SlurmJob job;
        Followed f(&job);
        QString error;
        QVERIFY2(
            job.submit(cluster->settings(u"fails"_s), { u"sh"_s, u"-c"_s, u"echo before; exit 3"_s }, &error),
            qPrintable(error));
        QVERIFY2(f.waitFinished(60000), f.trace().constData());
        QCOMPARE(f.outcome(), SlurmOutcome::Failed);
        QCOMPARE(f.finished.first().at(1).toInt(), 3);
        QVERIFY2(f.message().contains(u"exit code 3"_s), qPrintable(f.message()));
        QCOMPARE(f.out.value(0), QByteArray("before\n"));
    }

    // A login host through a real sshd: sbatch, squeue and the output reads all run there.
    void submitsFromALoginHost()
    {
        REQUIRE_CLUSTER();
        rs::launch::test::Sshd sshd({ u"SetEnv SLURM_CONF="_s + cluster->conf });
        if (!sshd.skipReason.isEmpty()) {
            if (inCi())
                QFAIL(sshd.skipReason.constData());
            QSKIP(sshd.skipReason.constData());
        }
        SlurmJob job;
        Followed f(&job);
        SlurmSettings s = cluster->settings(u"login"_s);
        s.loginHost = u"127.0.0.1"_s;
        s.sshOptions = sshd.options();
        s.tasksPerNode = 2;
        QString error;
        const QString note = job.putFile(s, u"note.txt"_s, "written over ssh's stdin\n", &error);
        QVERIFY2(!note.isEmpty(), qPrintable(error));
        QVERIFY2(job.submit(s,
                     { u"sh"_s, u"-c"_s, u"echo task $SLURM_PROCID of $SLURM_NTASKS; cat \"$0\""_s, note },
                     &error),
            qPrintable(error));
        QVERIFY2(f.waitFinished(90000), f.trace().constData());
        QVERIFY2(f.outcome() == SlurmOutcome::Completed, qPrintable(f.message()));
        QCOMPARE(f.out.value(0), QByteArray("task 0 of 2\nwritten over ssh's stdin\n"));
        QCOMPARE(f.out.value(1), QByteArray("task 1 of 2\nwritten over ssh's stdin\n"));
    }
};

QTEST_GUILESS_MAIN(TestSlurm)
#include "tst_slurm.moc"
