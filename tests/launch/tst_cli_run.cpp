// SPDX-License-Identifier: Apache-2.0
// `recompute run` end to end, as processes: the CLI killed with SIGKILL mid-ingest leaves a database that
// passes PRAGMA integrity_check and keeps what was committed; Ctrl-C stops the worker and the run ends
// `aborted` with its iterations; four CLIs ingest four runs into one database at once.
#include <csignal>
#include <signal.h>

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

#include "storage/store.h"
#include "tests/cli_process.h"

using namespace Qt::StringLiterals;
using namespace rs::storage;

namespace {

QString writeRecipe(const QTemporaryDir& dir, int iters, const QString& name = u"cli-tiny"_s)
{
    const QJsonObject recipe { { u"name"_s, name }, { u"num_layers"_s, 2 }, { u"hidden_size"_s, 64 },
        { u"num_attention_heads"_s, 4 }, { u"seq_length"_s, 128 }, { u"micro_batch_size"_s, 1 },
        { u"global_batch_size"_s, 1 }, { u"recompute_granularity"_s, u"selective"_s },
        { u"recompute_modules"_s, QJsonArray() }, { u"train_iters"_s, iters }, { u"warmup_iters"_s, 1 } };
    const QString path = dir.filePath(name + u".json"_s);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return {};
    f.write(QJsonDocument(recipe).toJson());
    return path;
}

std::unique_ptr<QProcess> startRun(const QStringList& args, const QString& fakeArgs)
{
    auto p = std::make_unique<QProcess>();
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(u"RS_WORKER"_s, QStringLiteral(RS_FAKE_WORKER));
    env.insert(u"FAKE_WORKER_ARGS"_s, fakeArgs);
    p->setProcessEnvironment(env);
    p->setProgram(QStringLiteral(RS_RECOMPUTE));
    p->setArguments(QStringList { u"run"_s } + args);
    p->start();
    return p;
}

int storedIterations(const QString& db)
{
    if (!QFile::exists(db))
        return 0;
    Store store;
    if (!store.open(db))
        return 0;
    QSqlQuery q(store.database());
    if (!q.exec(u"SELECT COUNT(*) FROM iterations"_s) || !q.next())
        return 0;
    return q.value(0).toInt();
}

bool waitForIterations(const QString& db, int atLeast, int timeoutMs)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < timeoutMs) {
        if (storedIterations(db) >= atLeast)
            return true;
        QTest::qWait(20);
    }
    return false;
}

QString integrity(Store& store)
{
    QSqlQuery q(store.database());
    if (!q.exec(u"PRAGMA integrity_check"_s) || !q.next())
        return u"query failed"_s;
    return q.value(0).toString();
}

using Cli = rs::test::CliRun;

Cli recompute(const QStringList& args)
{
    return rs::test::runToEnd(QStringLiteral(RS_RECOMPUTE), args, 60000);
}

} // namespace

class TestCliRun : public QObject {
    Q_OBJECT
private slots:
    void passRunIsStoredAndSummarised()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(u"pass.sqlite"_s);
        auto p = startRun(
            { writeRecipe(dir, 50), u"--db"_s, db, u"--iters"_s, u"4"_s, u"--warmup"_s, u"2"_s }, {});
        QVERIFY(p->waitForFinished(30000));
        const QString out = QString::fromUtf8(p->readAllStandardOutput());
        QVERIFY2(p->exitCode() == 0, qPrintable(out + QString::fromUtf8(p->readAllStandardError())));
        QVERIFY2(out.contains(u"outcome          pass"_s), qPrintable(out));
        Store store;
        QVERIFY(store.open(db));
        const auto runs = store.listRuns();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs[0].outcome, outcome::Pass);
        QCOMPARE(runs[0].iterationsPlanned.value_or(0), 6); // 2 warm-up + 4 steady reached the recipe
        QCOMPARE(runs[0].warmupIters.value_or(0), 2);
        QCOMPARE(store.iterations(runs[0].id).size(), 6);
        QVERIFY(!runs[0].recipeHash.isEmpty());
    }

    void controlIsLinkedOrRefused()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(u"control.sqlite"_s);
        auto control = startRun({ writeRecipe(dir, 4, u"ctl"_s), u"--db"_s, db }, {});
        QVERIFY(control->waitForFinished(30000));
        QCOMPARE(control->exitCode(), 0);
        // The same recipe with another recompute choice: linked to the control automatically.
        QString candidate = writeRecipe(dir, 4, u"cand"_s);
        {
            QFile f(candidate);
            QVERIFY(f.open(QIODevice::ReadOnly));
            QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
            f.close();
            o.insert(u"recompute_modules"_s, QJsonArray { u"core_attn"_s });
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(QJsonDocument(o).toJson());
        }
        auto p = startRun({ candidate, u"--db"_s, db }, u"--peak-scale 0.5"_s);
        QVERIFY(p->waitForFinished(30000));
        const QString out = QString::fromUtf8(p->readAllStandardOutput());
        QVERIFY2(out.contains(u"control          run 1: Allocated vs [] -50.00%"_s), qPrintable(out));
        // A control named with --control that differs in more than the recompute choice (run length): said,
        // not compared.
        auto other = startRun(
            { writeRecipe(dir, 4, u"other"_s), u"--db"_s, db, u"--iters"_s, u"2"_s, u"--control"_s, u"2"_s },
            {});
        QVERIFY(other->waitForFinished(30000));
        const QString otherOut = QString::fromUtf8(other->readAllStandardOutput());
        QVERIFY2(otherOut.contains(u"control          run 2 is NOT MATCHED, not compared"_s),
            qPrintable(otherOut));
        QCOMPARE(
            recompute({ u"run"_s, writeRecipe(dir, 4, u"x"_s), u"--db"_s, db, u"--control"_s, u"99"_s }).code,
            2);
        QCOMPARE(
            recompute({ u"run"_s, writeRecipe(dir, 4, u"y"_s), u"--db"_s, db, u"--iters"_s, u"0"_s }).code,
            2);
    }

    void cliKilledMidIngestLeavesAnIntactDatabase()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(u"killed-cli.sqlite"_s);
        auto p = startRun({ writeRecipe(dir, 100000), u"--db"_s, db }, u"--delay-ms 2"_s);
        QVERIFY(p->waitForStarted(10000));
        QVERIFY(waitForIterations(db, 200, 30000));
        const qint64 cliPid = p->processId();
        p->kill(); // SIGKILL to the CLI in the middle of its ingest
        QVERIFY(p->waitForFinished(10000));
        QCOMPARE(p->exitStatus(), QProcess::CrashExit);
        Store store;
        QString error;
        QVERIFY2(store.open(db, &error), qPrintable(error));
        QCOMPARE(integrity(store), u"ok"_s);
        QSqlQuery q(store.database());
        QVERIFY(q.exec(u"PRAGMA foreign_key_check"_s));
        QVERIFY(!q.next());
        const auto runs = store.listRuns();
        QCOMPARE(runs.size(), 1);
        // Nobody was left to finish it: the next open sees its ingesting process gone and ends it aborted.
        QCOMPARE(runs[0].outcome, outcome::Aborted);
        QVERIFY2(runs[0].message.contains(u"the ingesting process (pid %1"_s.arg(cliPid)),
            qPrintable(runs[0].message));
        QVERIFY(runs[0].peakAllocated.value_or(0) > 0);
        QVERIFY(store.iterations(runs[0].id).size() >= 200);
        QCOMPARE(store.recoverInterruptedRuns(), 0); // once
    }

    // Ctrl-C, a kill, and (issue 30) a closed terminal or ssh session: each stops the worker (or cancels the
    // Slurm job) and keeps what was measured. SIGHUP ended the CLI at once, its run left `running`.
    void ctrlCStopsTheWorkerAndKeepsTheIterations_data()
    {
        QTest::addColumn<int>("signal");
        QTest::newRow("SIGINT") << int(SIGINT);
        QTest::newRow("SIGTERM") << int(SIGTERM);
        QTest::newRow("SIGHUP") << int(SIGHUP);
    }
    void ctrlCStopsTheWorkerAndKeepsTheIterations()
    {
        QFETCH(int, signal);
        QTemporaryDir dir;
        const QString db = dir.filePath(u"sigint.sqlite"_s);
        auto p = startRun({ writeRecipe(dir, 100000), u"--db"_s, db }, u"--delay-ms 5"_s);
        QVERIFY(p->waitForStarted(10000));
        QVERIFY(waitForIterations(db, 10, 30000));
        ::kill(pid_t(p->processId()), signal);
        QVERIFY(p->waitForFinished(20000));
        QCOMPARE(p->exitStatus(), QProcess::NormalExit);
        QCOMPARE(p->exitCode(), 130);
        Store store;
        QVERIFY(store.open(db));
        const auto runs = store.listRuns();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs[0].outcome, outcome::Aborted);
        QVERIFY(store.iterations(runs[0].id).size() >= 10);
        QCOMPARE(integrity(store), u"ok"_s);
    }

    void importReportExportVerbs()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(u"verbs.sqlite"_s);
        const QString logs = QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/");
        Cli c = recompute({ u"import"_s, u"--db"_s, db, u"--sample"_s });
        QVERIFY2(c.code == 0, qPrintable(c.err));
        QVERIFY(c.out.contains(u"12 runs imported from the guide"_s));
        c = recompute({ u"import"_s, u"--db"_s, db, u"--sample"_s });
        QVERIFY(c.out.contains(u"already in the store"_s));
        c = recompute({ u"import"_s, u"--db"_s, db, logs + u"bridge_moe_act_oom.log"_s, u"--overrides"_s,
            u"model.recompute_granularity=selective"_s, u"model.recompute_modules=[moe_act]"_s });
        QVERIFY2(c.code == 0, qPrintable(c.err));
        QVERIFY2(c.out.contains(u"run 13 [moe_act] oom at iteration 2, peak allocated 66.297 GB"_s),
            qPrintable(c.out));
        c = recompute({ u"import"_s, u"--db"_s, db, logs + u"bridge_moe_act_oom.log"_s });
        QVERIFY(c.out.contains(u"already imported as run 13"_s));
        c = recompute({ u"import"_s, u"--db"_s, db, dir.filePath(u"missing.log"_s) });
        QCOMPARE(c.code, 2);

        // The guide's table, as JSON; the unmatched import is flagged, and --strict says so in the exit code.
        c = recompute({ u"report"_s, u"--db"_s, db, u"--format"_s, u"json"_s });
        QCOMPARE(c.code, 0);
        const QJsonArray tables = QJsonDocument::fromJson(c.out.toUtf8()).array();
        QCOMPARE(tables.size(), 3); // Moonlight, Nemotron, and the import with no [] control
        QCOMPARE(tables[2].toObject().value(u"rows"_s).toArray()[0].toObject().value(u"matched"_s).toBool(),
            false);
        QVERIFY(c.err.contains(u"1 row(s) are not matched"_s));
        QCOMPARE(recompute({ u"report"_s, u"--db"_s, db, u"--strict"_s }).code, 1);
        c = recompute({ u"report"_s, u"--db"_s, db, u"--control"_s, u"1"_s, u"2"_s, u"5"_s });
        QCOMPARE(c.code, 0);
        QVERIFY2(c.out.contains(u"| moe_act | 35.941 | 466.26 | 75.50 | -1.85% | +1.99% | pass | 5 |"_s),
            qPrintable(c.out));
        // A Nemotron run against the Moonlight control: refused row by row, with the reasons.
        c = recompute({ u"report"_s, u"--db"_s, db, u"--control"_s, u"1"_s, u"11"_s });
        QVERIFY(c.out.contains(u"NOT MATCHED: model: Nemotron 3 Nano vs Moonlight 16B"_s));
        QVERIFY(c.out.contains(u"seq_length: 8192 vs 4096"_s));
        QCOMPARE(recompute({ u"report"_s, u"--db"_s, db, u"--format"_s, u"xml"_s }).code, 2);
        QCOMPARE(recompute({ u"report"_s, u"--db"_s, db, u"--control"_s, u"999"_s }).code, 2);

        c = recompute(
            { u"export"_s, u"--db"_s, db, u"--out"_s, dir.filePath(u"export"_s), u"--format"_s, u"csv"_s });
        QVERIFY2(c.code == 0, qPrintable(c.err));
        QCOMPARE(c.out.split(u'\n', Qt::SkipEmptyParts).size(), 10); // 5 tables: .csv and .dtypes.json
        QFile runs(dir.filePath(u"export/runs.csv"_s));
        QVERIFY(runs.open(QIODevice::ReadOnly));
        QCOMPARE(runs.readAll().count('\n'), 14); // header + 13 runs
        QFile its(dir.filePath(u"export/iterations.csv"_s));
        QVERIFY(its.open(QIODevice::ReadOnly));
        QCOMPARE(its.readAll().count('\n'), 2); // header + the import's one iteration
    }

    void fourProcessesIngestIntoOneDatabase()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(u"concurrent.sqlite"_s);
        const int iters = 300;
        std::vector<std::unique_ptr<QProcess>> procs;
        for (int i = 0; i < 4; ++i)
            procs.push_back(
                startRun({ writeRecipe(dir, iters, u"concurrent-%1"_s.arg(i)), u"--db"_s, db }, {}));
        for (auto& p : procs) {
            QVERIFY(p->waitForFinished(60000));
            QVERIFY2(p->exitStatus() == QProcess::NormalExit && p->exitCode() == 0,
                qPrintable(QString::fromUtf8(p->readAllStandardError())));
        }
        Store store;
        QVERIFY(store.open(db));
        QCOMPARE(integrity(store), u"ok"_s);
        const auto runs = store.listRuns();
        QCOMPARE(runs.size(), 4);
        QStringList names;
        for (const auto& r : runs) {
            QCOMPARE(r.outcome, outcome::Pass);
            QCOMPARE(store.iterations(r.id).size(), iters);
            names << r.recipeName;
        }
        names.sort();
        QCOMPARE(names,
            (QStringList { u"concurrent-0"_s, u"concurrent-1"_s, u"concurrent-2"_s, u"concurrent-3"_s }));
    }
};

QTEST_GUILESS_MAIN(TestCliRun)
#include "tst_cli_run.moc"
