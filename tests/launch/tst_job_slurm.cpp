// SPDX-License-Identifier: Apache-2.0
// Real jobs as Slurm jobs (issue 15): JobRun with JobOptions::slurm submits the user's own training command
// (the stand-in that replays the real H200 Megatron-LM logs at their pace) as a batch job built from the
// host settings (SlurmJob's script), follows it and imports its task output as it comes; Slurm's errors
// say what failed (rejected and why, held and why it waits, cancelled). Then `recompute sweep --job
// --slurm-*` end to end: the [] control and one candidate, each a Slurm job, stored, linked and compared.
// Against the real Slurm of slurm_cluster.h and, for a login host, the real sshd of sshd_fixture.h.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "../cli_process.h"
#include "core/recipe_input.h"
#include "session/job_run.h"
#include "slurm_login_host.h"
#include "storage/log_import.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs;
using namespace rs::launch;
using namespace rs::session;
using namespace rs::launch::test;

namespace {

const QString kLogs = QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/megatron-lm-h200");

// The dense fixture's own command line (its first line), the launcher swapped for the stand-in.
QStringList fixtureWords()
{
    QFile f(kLogs + u"/dense-none.log"_s);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    QString first = QString::fromUtf8(f.readLine()).trimmed();
    first.remove(0, QStringLiteral("# command: ").size());
    QStringList words = first.split(u' ', Qt::SkipEmptyParts);
    words[0] = QStringLiteral(RS_FAKE_MEGATRON);
    return words;
}

Recipe mlmRecipe()
{
    std::vector<std::string> args { "--profile", "main", "--mlm-args" };
    for (const QString& w : fixtureWords())
        args.push_back(w.toStdString());
    return readRecipeInput(args, nullptr).recipe;
}

QStringList readLines(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(f.readAll()).split(u'\n', Qt::SkipEmptyParts);
}

} // namespace

class TestJobSlurm : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    // What the stand-in replayed, through a login host too (sshd's SetEnv gives the job its environment).
    QString m_seen;

private slots:
    void initTestCase()
    {
        qRegisterMetaType<SlurmOutcome>();
        m_seen = m_dir.filePath(u"seen"_s);
        // sbatch on this host passes this process's environment into the job; through the login host the
        // job has the ssh session's, which sshd sets.
        qputenv("RS_FAKE_MEGATRON_SEEN", m_seen.toUtf8());
        qputenv("RS_FAKE_MEGATRON_PACE", "1");
        startSlurmAndLoginHost({ u"RS_FAKE_MEGATRON_SEEN="_s + m_seen, u"RS_FAKE_MEGATRON_PACE=1"_s });
    }
    void cleanupTestCase() { stopSlurmAndLoginHost(); }
    void init() { QFile::remove(m_seen); }

    // The stand-in as a Slurm job: its iterations arrive while the job runs, every line of its task output
    // reaches the log (with Slurm's word on the job as "# slurm:" lines), and the log imports as the
    // fixture it replayed.
    void jobStreamsItsOutput_data() { hostRows(); }
    void jobStreamsItsOutput()
    {
        QFETCH(QString, host);
        REQUIRE_CLUSTER();
        SlurmSettings s = cluster->settings(u"stream-"_s + QString(host).replace(u' ', u'-'));
        ON_HOST(s, host);
        JobOptions o;
        o.slurm = s;
        const auto cmd = jobCommand(mlmRecipe(), InputFormat::MegatronFlags, std::nullopt, { 6 });
        JobRun job;
        int iterations = 0, whileRunning = 0;
        QStringList notes;
        connect(&job, &JobRun::note, this, [&](const QString& n) { notes << n; });
        connect(&job, &JobRun::iteration, this, [&](const storage::IterationRow&) {
            ++iterations;
            if (job.isRunning() && job.slurmState() == u"RUNNING"_s)
                ++whileRunning;
        });
        QSignalSpy finished(&job, &JobRun::finished);
        QString error;
        QTemporaryDir dir;
        QVERIFY2(job.start(cmd, dir.filePath(u"job.log"_s), o, &error), qPrintable(error));
        QVERIFY(job.isRunning());
        QCOMPARE(job.program(), u"sbatch"_s);
        QVERIFY2(finished.wait(120000), qPrintable(notes.join(u" | "_s)));
        QVERIFY2(!finished.first().at(0).toBool(),
            qPrintable(finished.first().at(2).toString() + u" / "_s + notes.join(u" | "_s)));
        QVERIFY(!job.isRunning());
        const QString id = job.slurmJobId();
        QVERIFY(!id.isEmpty());
        QVERIFY2(
            !notes.filter(u"Slurm job %1 submitted"_s.arg(id)).isEmpty(), qPrintable(notes.join(u" | "_s)));
        QVERIFY2(notes.contains(u"Slurm job %1 running"_s.arg(id)), qPrintable(notes.join(u" | "_s)));
        QVERIFY2(notes.contains(u"Slurm job %1 completed"_s.arg(id)), qPrintable(notes.join(u" | "_s)));
        QCOMPARE(readLines(m_seen), QStringList { u"dense-none"_s });
        QFile fx(kLogs + u"/dense-none.log"_s);
        QVERIFY(fx.open(QIODevice::ReadOnly));
        const auto expected = storage::parseTrainingLog(fx.readAll());
        QCOMPARE(iterations, int(expected.iterations.size()));
        QVERIFY2(whileRunning >= 1, "no iteration arrived while the job ran: its output is not followed");
        QCOMPARE(job.parsed().iterations.size(), expected.iterations.size());
        QFile lf(job.logPath());
        QVERIFY(lf.open(QIODevice::ReadOnly));
        const QByteArray text = lf.readAll();
        QVERIFY(text.startsWith("# command: "));
        QVERIFY(text.contains(QByteArray("# slurm: Slurm job " + id.toUtf8() + " submitted")));
        QVERIFY(text.trimmed().endsWith("# exit: 0"));
        const auto reread = storage::parseTrainingLog(text);
        QCOMPARE(reread.iterations.size(), expected.iterations.size());
        QCOMPARE(reread.memory.size(), expected.memory.size());
    }

    // The real OOM log ends the stand-in with exit 1: Slurm says the job failed, with its exit code.
    void failedJobSaysItsExitCode()
    {
        REQUIRE_CLUSTER();
        JobOptions o;
        o.slurm = cluster->settings(u"failed"_s);
        const auto cmd
            = jobCommand(mlmRecipe(), InputFormat::MegatronFlags, parseRecomputeChoice("mlp"), { 6 });
        JobRun job;
        QSignalSpy finished(&job, &JobRun::finished);
        QVERIFY(job.start(cmd, m_dir.filePath(u"failed.log"_s), o));
        QVERIFY(finished.wait(120000));
        QVERIFY(finished.first().at(0).toBool());
        QCOMPARE(finished.first().at(1).toInt(), 1);
        QVERIFY2(finished.first().at(2).toString().contains(u"failed with exit code 1"_s),
            qPrintable(finished.first().at(2).toString()));
        QVERIFY(job.parsed().oom);
    }

    // sbatch refuses the job: it ends at once, aborted, with sbatch's own reason, in the log too.
    void rejectedJobSaysWhy_data() { hostRows(); }
    void rejectedJobSaysWhy()
    {
        QFETCH(QString, host);
        REQUIRE_CLUSTER();
        SlurmSettings s = cluster->settings(u"rejected-"_s + QString(host).replace(u' ', u'-'));
        s.partition = u"nosuch"_s;
        ON_HOST(s, host);
        JobOptions o;
        o.slurm = s;
        JobRun job;
        QSignalSpy finished(&job, &JobRun::finished);
        QSignalSpy started(&job, &JobRun::started);
        // Each row its own log: a job's log is always a new file.
        const QString log = m_dir.filePath(u"rejected-"_s + QString(host).replace(u' ', u'-') + u".log"_s);
        QVERIFY(job.start({ "true" }, log, o));
        QVERIFY(finished.wait(30000));
        QCOMPARE(started.size(), 0);
        QVERIFY(finished.first().at(0).toBool());
        const QString reason = finished.first().at(2).toString();
        QVERIFY2(reason.startsWith(u"Slurm rejected the job: "_s)
                && reason.contains(u"partition"_s, Qt::CaseInsensitive),
            qPrintable(reason));
        // Every line of sbatch's answer is a note of ours in the log, none read as the job's output.
        for (const QString& l : reason.split(u'\n', Qt::SkipEmptyParts))
            QVERIFY2(readLines(log).contains(u"# slurm: "_s + l), qPrintable(readLines(log).join(u'\n')));
        for (const QString& l : readLines(log))
            QVERIFY2(l.startsWith(u"# "_s), qPrintable(l));
    }

    // A held job says why it waits while it waits; cancelled, it ends aborted and says so.
    void heldJobSaysWhyItWaitsAndIsCancelled()
    {
        REQUIRE_CLUSTER();
        SlurmSettings s = cluster->settings(u"held"_s);
        s.extraSbatchLines = { u"#SBATCH --hold"_s };
        JobOptions o;
        o.slurm = s;
        JobRun job;
        QStringList notes;
        connect(&job, &JobRun::note, this, [&](const QString& n) { notes << n; });
        QSignalSpy finished(&job, &JobRun::finished);
        QVERIFY(job.start({ "sleep", "600" }, m_dir.filePath(u"held.log"_s), o));
        QTRY_VERIFY_WITH_TIMEOUT(!notes.filter(u"pending: held"_s).isEmpty(), 20000);
        QCOMPARE(job.slurmState(), u"PENDING"_s);
        QVERIFY(job.isRunning());
        job.cancel();
        QVERIFY2(finished.wait(30000), qPrintable(notes.join(u" | "_s)));
        QVERIFY(finished.first().at(0).toBool());
        const QString reason = finished.first().at(2).toString();
        QVERIFY2(reason.startsWith(u"cancelled: Slurm job "_s) && reason.contains(u"cancelled (scancel)"_s),
            qPrintable(reason));
    }

    // `recompute sweep --job` with the Slurm host settings: the [] control, then one candidate, each its own
    // Slurm job, imported, linked and compared.
    void sweepRunsEachChoiceAsASlurmJob_data() { hostRows(); }
    void sweepRunsEachChoiceAsASlurmJob()
    {
        QFETCH(QString, host);
        REQUIRE_CLUSTER();
        SlurmSettings s = cluster->settings(u"sweep-"_s + QString(host).replace(u' ', u'-'));
        ON_HOST(s, host);
        QTemporaryDir dir;
        const QString db = dir.filePath(u"jobs.sqlite"_s);
        QStringList args = { u"sweep"_s, u"--job"_s, u"--db"_s, db, u"--job-iters"_s, u"6"_s, u"--modules"_s,
            u"core_attn"_s, u"--target-gb"_s, u"14"_s, u"--slurm-partition"_s, u"debug"_s,
            u"--slurm-workdir"_s, s.workDir };
        if (!s.loginHost.isEmpty()) {
            args << u"--slurm-login-host"_s << s.loginHost;
            for (const QString& o : s.sshOptions)
                args << u"--slurm-ssh-option"_s << o;
        }
        args << u"--profile"_s << u"main"_s << u"--mlm-args"_s << fixtureWords();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(u"RS_FAKE_MEGATRON_PACE"_s, u"0.05"_s);
        const auto c = rs::test::runToEnd(QStringLiteral(RS_RECOMPUTE), args, 300000, env);
        QVERIFY2(c.code == 0, qPrintable(c.out + c.err));
        QCOMPARE(readLines(m_seen), (QStringList { u"dense-none"_s, u"dense-core_attn"_s }));
        QVERIFY2(c.err.contains(u"each run a Slurm batch job (partition debug"_s), qPrintable(c.err));
        QCOMPARE(c.err.count(u"] Slurm job "_s) >= 4, true);
        QVERIFY2(c.err.contains(u"[[]] Slurm job "_s) && c.err.contains(u"[core_attn] Slurm job "_s),
            qPrintable(c.err));
        QVERIFY2(c.err.contains(u" completed"_s), qPrintable(c.err));
        storage::Store store;
        QVERIFY(store.open(db));
        auto runs = store.listRuns();
        std::reverse(runs.begin(), runs.end());
        QCOMPARE(runs.size(), 2);
        QVERIFY(runs[0].isNoRecompute());
        QCOMPARE(runs[1].outcome, storage::outcome::Pass);
        QCOMPARE(runs[1].recomputeGranularity, u"selective"_s);
        QCOMPARE(runs[1].controlRunId.value_or(0), runs[0].id);
        QVERIFY(store.matchCheck(runs[1].id, runs[0].id).matched);
        QCOMPARE(store.iterations(runs[1].id).size(), 6);
        QVERIFY2(c.out.contains(u"Δ vs []: "_s), qPrintable(c.out));
        QVERIFY2(c.out.contains(u"calibration [core_attn]: estimate "_s), qPrintable(c.out));
        QVERIFY2(c.out.contains(u"\nuse core_attn"_s), qPrintable(c.out));
    }

    // Nothing is submitted when the Slurm settings are wrong, and an ssh host with Slurm is refused.
    void settingsAreChecked()
    {
        JobRun job;
        JobOptions o;
        SlurmSettings s;
        s.workDir = m_dir.filePath(u"unused"_s);
        s.partition = u"a b"_s;
        o.slurm = s;
        QString error;
        QVERIFY(!job.start({ "true" }, m_dir.filePath(u"x.log"_s), o, &error));
        QVERIFY2(error.startsWith(u"Slurm settings: partition: 'a b'"_s), qPrintable(error));
        s.partition.clear();
        o.slurm = s;
        o.sshHost = u"gpu1"_s;
        QVERIFY(!job.start({ "true" }, m_dir.filePath(u"x.log"_s), o, &error));
        QVERIFY2(error.contains(u"login host"_s), qPrintable(error));
        QVERIFY(!QDir(s.workDir).exists());
    }
};

QTEST_GUILESS_MAIN(TestJobSlurm)
#include "tst_job_slurm.moc"
