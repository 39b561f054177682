// SPDX-License-Identifier: Apache-2.0
// `recompute run` with the real worker (CPU, a small recipe) against stores that cannot take it (issue
// 16): an immutable store file, and a write lock held for 40 s by another process (the sqlite3 shell).
// Every measured iteration is kept: spooled and imported, or stored after the wait, never an `aborted`
// run. `report` never waits for a write lock; four processes opening one new database at once all
// succeed; `validate --json` and the worker answer non-UTF-8 and impossible recipes with an error, never
// an uncaught exception or a signal; a --host that is an ssh option is refused.
#include <unistd.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "storage/store.h"
#include "tests/cli_process.h"
#include "tests/small_disk.h"
#include "tests/sqlite_lock.h"

using namespace Qt::StringLiterals;
using rs::test::holdWriteLock;
using namespace rs::storage;

namespace {

constexpr int kIters = 40; // 2 warm-up + 38 steady

QJsonObject tinyRecipe(const QString& name)
{
    return { { u"name"_s, name }, { u"num_layers"_s, 2 }, { u"hidden_size"_s, 64 },
        { u"num_attention_heads"_s, 4 }, { u"seq_length"_s, 64 }, { u"micro_batch_size"_s, 1 },
        { u"vocab_size"_s, 512 }, { u"recompute_granularity"_s, u"selective"_s },
        { u"recompute_modules"_s, QJsonArray() }, { u"train_iters"_s, kIters }, { u"warmup_iters"_s, 2 } };
}

QString writeJson(const QTemporaryDir& dir, const QString& file, const QJsonObject& o)
{
    const QString path = dir.filePath(file);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return {};
    f.write(QJsonDocument(o).toJson());
    return path;
}

rs::test::CliRun recompute(const QStringList& args, int timeoutMs = 120000)
{
    return rs::test::runToEnd(QStringLiteral(RS_RECOMPUTE), args, timeoutMs);
}

QStringList realRun(const QString& recipe, const QString& db)
{
    return { u"run"_s, recipe, u"--db"_s, db, u"--worker"_s, QStringLiteral(RS_REAL_WORKER), u"--device"_s,
        u"cpu"_s };
}

// chattr +i (root, ext4 / xfs / btrfs), else chmod a-w (a user other than root). false: neither makes
// it unwritable here.
bool makeUnwritable(const QString& path)
{
    if (QProcess::execute(u"chattr"_s, { u"+i"_s, path }) == 0)
        return true;
    if (::geteuid() != 0)
        return QFile::setPermissions(
            path, QFileDevice::ReadOwner | QFileDevice::ReadGroup | QFileDevice::ReadOther);
    return false;
}
void makeWritable(const QString& path)
{
    QProcess::execute(u"chattr"_s, { u"-i"_s, path });
    QFile::setPermissions(path,
        QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ReadGroup | QFileDevice::ReadOther
            | QFileDevice::ExeOwner);
}
struct Writable {
    QString path;
    ~Writable() { makeWritable(path); }
};

QString spoolNamedIn(const QString& text)
{
    const auto m = QRegularExpression(u"every event is kept in (\\S+\\.jsonl)"_s).match(text);
    return m.hasMatch() ? m.captured(1) : QString();
}

} // namespace

class TestCliHostile : public QObject {
    Q_OBJECT
private slots:
    void realRunSurvivesAnUnwritableStoreFile()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(u"ro.sqlite"_s);
        {
            Store store;
            QVERIFY(store.open(db));
        }
        if (!makeUnwritable(db))
            QSKIP("cannot make a file unwritable here (root without chattr +i)");
        Writable restore { db };
        const QString recipe = writeJson(dir, u"ro.json"_s, tinyRecipe(u"ro"_s));
        const auto run = recompute(realRun(recipe, db));
        QVERIFY2(run.code == 1, qPrintable(run.out + run.err));
        const QString spool = spoolNamedIn(run.out);
        QVERIFY2(!spool.isEmpty(), qPrintable(run.out + run.err));
        QVERIFY2(run.err.contains(u"the store cannot take the run"_s), qPrintable(run.err));
        QCOMPARE(QFileInfo(spool).absolutePath(), QFileInfo(db).absolutePath()); // beside the store
        QFile f(spool);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll().count("\"event\":\"iteration\""), kIters);
        makeWritable(db);
        const auto imported = recompute({ u"import"_s, spool, u"--db"_s, db });
        QVERIFY2(imported.code == 0, qPrintable(imported.out + imported.err));
        Store store;
        QVERIFY(store.open(db));
        const auto runs = store.listRuns();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs[0].outcome, outcome::Pass);
        QCOMPARE(store.iterations(runs[0].id).size(), kIters);
        QVERIFY(runs[0].peakAllocated.value_or(0) > 0);
    }

    void realRunSurvivesAnUnwritableFolder()
    {
        // The folder takes no -wal, -shm or spool: the store does not open, the spool goes to the user's
        // data folder.
        QTemporaryDir dir, data;
        const QString folder = dir.filePath(u"locked-folder"_s);
        QVERIFY(QDir().mkpath(folder));
        const QString db = folder + u"/ro.sqlite"_s;
        {
            Store store;
            QVERIFY(store.open(db));
        }
        if (QProcess::execute(u"chattr"_s, { u"+i"_s, folder }) != 0)
            QSKIP("chattr +i is not available here");
        Writable restore { folder };
        const QString recipe = writeJson(dir, u"rodir.json"_s, tinyRecipe(u"rodir"_s));
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(u"XDG_DATA_HOME"_s, data.path());
        const auto run = rs::test::runToEnd(QStringLiteral(RS_RECOMPUTE), realRun(recipe, db), 120000, env);
        QVERIFY2(run.code == 1, qPrintable(run.out + run.err));
        const QString spool = spoolNamedIn(run.out);
        QVERIFY2(spool.startsWith(data.path()), qPrintable(run.out + run.err));
        QFile f(spool);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll().count("\"event\":\"iteration\""), kIters);
    }

    // Issue 30: a full disk under the store and under the user's data folder (two small tmpfs, filled): the
    // store fails at its first commit, the spool beside it fails, the data folder's fails, and the stream
    // goes to the temp folder, every event of it, named by the CLI and stored by `recompute import`. (5 of 5
    // runs were lost, and the CLI named a 0-byte file.)
    void realRunOnAFullDiskSpoolsWhereItCan()
    {
        rs::test::SmallDisk storeDisk(1024), dataDisk(64);
        if (!storeDisk.mounted() || !dataDisk.mounted())
            QSKIP("cannot mount a tmpfs here (not root)");
        const QString db = storeDisk.filePath(u"full.sqlite"_s);
        {
            Store store;
            QVERIFY(store.open(db));
        }
        QTemporaryDir dir, temp;
        const QString recipe = writeJson(dir, u"full.json"_s, tinyRecipe(u"full"_s));
        storeDisk.fill(48); // room for the WAL's index, not for the run
        dataDisk.fill();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(u"XDG_DATA_HOME"_s, dataDisk.path());
        env.insert(u"TMPDIR"_s, temp.path());
        const auto run = rs::test::runToEnd(QStringLiteral(RS_RECOMPUTE), realRun(recipe, db), 120000, env);
        QVERIFY2(run.code == 1, qPrintable(run.out + run.err));
        const QString spool = spoolNamedIn(run.out);
        QVERIFY2(spool.startsWith(temp.path() + u'/'), qPrintable(run.out + run.err));
        QFile f(spool);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll().count("\"event\":\"iteration\""), kIters);
        // Nothing half-written is left on the full disks.
        QCOMPARE(QDir(storeDisk.path()).entryList({ u"*.jsonl"_s }, QDir::Files).size(), 0);
        QVERIFY(!QDir(dataDisk.filePath(u"recompute-studio/recompute-studio/spool"_s))
                     .entryList({ u"*.jsonl"_s }, QDir::Files)
                     .size());
        const QString elsewhere = dir.filePath(u"elsewhere.sqlite"_s);
        const auto imported = recompute({ u"import"_s, spool, u"--db"_s, elsewhere });
        QVERIFY2(imported.code == 0, qPrintable(imported.out + imported.err));
        Store store;
        QVERIFY(store.open(elsewhere));
        const auto runs = store.listRuns();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs[0].outcome, outcome::Pass);
        QCOMPARE(store.iterations(runs[0].id).size(), kIters);
    }

    // Issue 30: a store in a folder nobody may write (a shared, read-only store) is read by every verb that
    // only reads: report, advise and export (advise and export tried to open it for writing and failed).
    void aReadOnlyFolderIsReadByEveryReadingVerb()
    {
        QTemporaryDir dir, out;
        const QString folder = dir.filePath(u"shared"_s);
        QVERIFY(QDir().mkpath(folder));
        const QString db = folder + u"/guide.sqlite"_s;
        QCOMPARE(recompute({ u"import"_s, u"--sample"_s, u"--db"_s, db }).code, 0);
        if (QProcess::execute(u"chattr"_s, { u"+i"_s, folder }) != 0)
            QSKIP("chattr +i is not available here");
        Writable restore { folder };
        for (const QStringList& verb :
            { QStringList { u"report"_s }, QStringList { u"advise"_s, u"--target-gb"_s, u"80"_s },
                QStringList { u"export"_s, u"--out"_s, out.path() } }) {
            const auto r = recompute(verb + QStringList { u"--db"_s, db });
            QVERIFY2(r.code == 0, qPrintable(verb.first() + u": "_s + r.out + r.err));
        }
        QVERIFY(QFileInfo(out.filePath(u"runs.csv"_s)).size() > 0);
    }

    // Issue 30: a stored name (from `import --name`, a shared recipe or store) reaches the terminal as text:
    // no escape sequence (a new title, colours) and no line break (a forged row) in report, advise or run.
    void storedNamesReachTheTerminalAsText()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(u"names.sqlite"_s);
        const QString evil = u"moe\x1b]0;owned\x07\x1b[31mRED\u009b31m\n| none | 99.999 |"_s;
        const QString logs = QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs/mlm-tp2pp2-comparison");
        QStringList args = { u"import"_s, u"--db"_s, db, u"--name"_s, evil };
        for (const QString& f : QDir(logs).entryList({ u"*.log"_s }, QDir::Files))
            args << logs + u'/' + f;
        QVERIFY(recompute(args).code == 0);
        const QString recipe = writeJson(dir, u"evil.json"_s, tinyRecipe(evil));
        QStringList tiny = realRun(recipe, dir.filePath(u"tiny.sqlite"_s));
        tiny << u"--iters"_s << u"2"_s;
        for (const QStringList& verb : { QStringList { u"report"_s, u"--db"_s, db },
                 QStringList { u"advise"_s, u"--db"_s, db, u"--target-gb"_s, u"80"_s }, tiny }) {
            const auto r = recompute(verb);
            QVERIFY2(r.code == 0 || r.code == 1, qPrintable(r.out + r.err));
            for (const QString& text : { r.out, r.err }) {
                QVERIFY2(
                    !text.contains(QChar(0x1b)) && !text.contains(QChar(0x07)) && !text.contains(QChar(0x9b)),
                    qPrintable(verb.first() + u": "_s + text));
                QVERIFY2(!text.contains(u"\n| none | 99.999 |"_s), qPrintable(verb.first() + u": "_s + text));
            }
        }
    }

    void realRunWaitsOutAFortySecondLock()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(u"locked.sqlite"_s);
        {
            Store store;
            QVERIFY(store.open(db));
        }
        auto locker = holdWriteLock(db, 40);
        if (!locker)
            QSKIP("no sqlite3 shell to hold the lock");
        const QString recipe = writeJson(dir, u"locked.json"_s, tinyRecipe(u"locked"_s));
        QElapsedTimer t;
        t.start();
        const auto run = recompute(realRun(recipe, db), 180000);
        QVERIFY2(run.code == 0, qPrintable(run.out + run.err));
        QVERIFY(t.elapsed() > 30000);
        QVERIFY2(run.err.contains(u"store locked by another process, waiting ("_s), qPrintable(run.err));
        QVERIFY2(run.out.contains(u"outcome          pass"_s), qPrintable(run.out));
        QVERIFY2(run.out.contains(u"%1 rows stored"_s.arg(kIters)), qPrintable(run.out));
        QVERIFY(locker->waitForFinished(20000));
        Store store;
        QVERIFY(store.open(db));
        const auto runs = store.listRuns();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs[0].outcome, outcome::Pass);
        QCOMPARE(store.iterations(runs[0].id).size(), kIters);
    }

    void reportNeverWaitsForAWriteLock()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath(u"report.sqlite"_s);
        QCOMPARE(recompute({ u"import"_s, u"--sample"_s, u"--db"_s, db }).code, 0);
        auto locker = holdWriteLock(db, 20);
        if (!locker)
            QSKIP("no sqlite3 shell to hold the lock");
        QElapsedTimer t;
        t.start();
        const auto report = recompute({ u"report"_s, u"--db"_s, db }, 15000);
        QVERIFY2(report.code == 0, qPrintable(report.out + report.err));
        QVERIFY2(t.elapsed() < 10000, qPrintable(QString::number(t.elapsed())));
        locker->kill();
        locker->waitForFinished(5000);
    }

    void fourProcessesOpenOneNewDatabase()
    {
        // Each round: four processes open (create, switch to WAL, migrate) one file that does not exist.
        QTemporaryDir dir;
        for (int round = 0; round < 8; ++round) {
            const QString db = dir.filePath(u"new-%1.sqlite"_s.arg(round));
            std::vector<std::unique_ptr<QProcess>> procs;
            for (int i = 0; i < 4; ++i) {
                auto p = std::make_unique<QProcess>();
                p->start(
                    QStringLiteral(RS_RECOMPUTE), { u"report"_s, u"--db"_s, db, u"--format"_s, u"csv"_s });
                procs.push_back(std::move(p));
            }
            for (auto& p : procs) {
                QVERIFY(p->waitForFinished(60000));
                const QString err = QString::fromUtf8(p->readAllStandardError());
                QVERIFY2(!err.contains(u"database is locked"_s), qPrintable(err));
            }
            Store store;
            QVERIFY(store.open(db));
            QCOMPARE(store.schemaVersion(), Store::kSchemaVersion);
        }
    }

    void nonUtf8RecipeNameIsAnErrorEverywhere_data()
    {
        QTest::addColumn<QString>("program");
        QTest::addColumn<QString>("args"); // before the override
        QTest::addColumn<int>("code");
        QTest::newRow("validate --json") << QStringLiteral(RS_RECOMPUTE) << u"validate --json"_s << 2;
        QTest::newRow("run") << QStringLiteral(RS_RECOMPUTE) << u"run --device cpu"_s << 2;
        QTest::newRow("worker") << QStringLiteral(RS_REAL_WORKER) << u"--device cpu"_s << 2;
    }

    void nonUtf8RecipeNameIsAnErrorEverywhere()
    {
        // Raw bytes cannot travel in a QString argument: the shell's printf puts byte 0xe9 in argv.
        QFETCH(QString, program);
        QFETCH(QString, args);
        QFETCH(int, code);
        QTemporaryDir dir;
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(u"RS_DB"_s, dir.filePath(u"utf8.sqlite"_s));
        p.setProcessEnvironment(env);
        p.start(u"/bin/sh"_s,
            { u"-c"_s,
                u"exec \"$0\" "_s + args
                    + u" --overrides model.num_layers=2 model.hidden_size=64 model.num_attention_heads=4 "
                      "\"$(printf '# studio: name=caf\\351')\""_s,
                program });
        QVERIFY(p.waitForFinished(60000));
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        const QString err = QString::fromUtf8(p.readAllStandardError());
        const QString all = out + err;
        QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == code,
            qPrintable(u"exit %1: "_s.arg(p.exitCode()) + out + err));
        QVERIFY2(all.contains(u"name"_s) && all.contains(u"not valid UTF-8"_s) && all.contains(u"caf\\xe9"_s),
            qPrintable(out + err));
    }

    void workerRefusesImpossibleSizesWithoutASignal_data()
    {
        QTest::addColumn<QJsonObject>("patch");
        QTest::addColumn<QString>("says");
        QTest::newRow("num_query_groups 0") << QJsonObject { { u"num_query_groups"_s, 0 } } << u"RS23"_s;
        QTest::newRow("moe_latent_size 0") << QJsonObject { { u"num_moe_experts"_s, 4 },
            { u"moe_latent_size"_s, 0 } } << u"moe_latent_size"_s;
        QTest::newRow("pp x vpp overflow") << QJsonObject { { u"pipeline_model_parallel_size"_s, 65536 },
            { u"virtual_pipeline_model_parallel_size"_s, 65536 } }
                                           << u"RS28"_s;
        QTest::newRow("2^31-1 layers") << QJsonObject { { u"num_layers"_s, 2147483647 } } << u"invalid"_s;
        QTest::newRow("hidden 2^31-1")
            << QJsonObject { { u"hidden_size"_s, 2147483647 }, { u"num_attention_heads"_s, 1 } }
            << u"invalid"_s;
        // Issue 30: a run length in the recipe itself is bounded as --iters is (it ran for ever, counting
        // towards int's limit); a global batch of 10^9 samples is named, not an uncaught bad_alloc.
        QTest::newRow("train_iters 2^31-1")
            << QJsonObject { { u"train_iters"_s, 2147483647 } } << u"\"field\":\"train_iters\""_s;
        QTest::newRow("warmup_iters 2^31-2")
            << QJsonObject { { u"train_iters"_s, 2147483647 }, { u"warmup_iters"_s, 2147483646 } }
            << u"\"field\":\"warmup_iters\""_s;
        QTest::newRow("global_batch_size 10^9")
            << QJsonObject { { u"global_batch_size"_s, 1000000000 } } << u"\"field\":\"global_batch_size\""_s;
    }

    void workerRefusesImpossibleSizesWithoutASignal()
    {
        QFETCH(QJsonObject, patch);
        QFETCH(QString, says);
        QTemporaryDir dir;
        QJsonObject recipe = tinyRecipe(u"impossible"_s);
        for (auto it = patch.begin(); it != patch.end(); ++it)
            recipe.insert(it.key(), it.value());
        const QString path = writeJson(dir, u"impossible.json"_s, recipe);
        const auto r
            = rs::test::runToEnd(QStringLiteral(RS_REAL_WORKER), { path, u"--device"_s, u"cpu"_s }, 60000);
        QVERIFY2(r.code == 2, qPrintable(u"exit %1: "_s.arg(r.code) + r.out.right(500) + r.err.right(500)));
        QVERIFY2(r.out.contains(u"\"status\":\"invalid\""_s) && r.out.contains(says),
            qPrintable(r.out.right(800)));
    }

    void hostThatIsAnSshOptionIsRefused()
    {
        QTemporaryDir dir;
        const QString marker = dir.filePath(u"pwned"_s);
        const QString recipe = writeJson(dir, u"ssh.json"_s, tinyRecipe(u"ssh"_s));
        const auto r = recompute({ u"run"_s, recipe, u"--db"_s, dir.filePath(u"ssh.sqlite"_s), u"--host"_s,
            u"-oProxyCommand=touch "_s + marker });
        QVERIFY(r.code != 0);
        QVERIFY2(r.err.contains(u"starts with '-'"_s), qPrintable(r.err));
        QVERIFY(!QFile::exists(marker));
    }
};

QTEST_GUILESS_MAIN(TestCliHostile)
#include "tst_cli_hostile.moc"
