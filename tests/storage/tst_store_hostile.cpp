// SPDX-License-Identifier: Apache-2.0
// The store under hostile conditions (issue 16): a negative schema version is refused, never a crash;
// opening for reading takes no lock and never waits for a writer; a write lock held by another process is
// waited on (bounded, reported) with every row kept; a store that cannot take a run gets its stream
// spooled to a file that `importWorkerStream` stores later, once, as the run it was.
#include <sys/stat.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "storage/ingest.h"
#include "storage/store.h"
#include "store_test_events.h"
#include "tests/sqlite_lock.h"

using namespace Qt::StringLiterals;
using rs::test::holdWriteLock;
using namespace rs::storage;
using namespace rs::storage::test;

namespace {

} // namespace

class TestStoreHostile : public QObject {
    Q_OBJECT
private slots:
    // Issue 30: a FIFO (or a folder) given as the store is refused at once, naming why; SQLite would block
    // reading a FIFO for ever.
    void aFifoIsNoStore()
    {
        QTemporaryDir dir;
        const QString fifo = dir.filePath(u"store.fifo"_s);
        QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
        Store store;
        QString error;
        QVERIFY(!store.open(fifo, &error));
        QVERIFY2(error.contains(u"not a regular file"_s), qPrintable(error));
        QVERIFY(!store.openReadOnly(fifo, &error));
        QVERIFY2(error.contains(u"not a regular file"_s), qPrintable(error));
        QVERIFY(!store.open(dir.path(), &error));
        QVERIFY2(error.contains(u"not a regular file"_s), qPrintable(error));
    }
    void init() { QVERIFY(m_dir.isValid()); }

    void negativeSchemaVersionIsRefused()
    {
        const QString path = m_dir.filePath(u"negative.sqlite"_s);
        {
            Store store;
            QVERIFY(store.open(path));
            QSqlQuery q(store.database());
            QVERIFY(q.exec(u"PRAGMA user_version = -7"_s));
        }
        for (bool readOnly : { false, true }) {
            Store store;
            QString error;
            QVERIFY(!(readOnly ? store.openReadOnly(path, &error) : store.open(path, &error)));
            QVERIFY2(error.contains(u"schema version -7"_s) && error.contains(u"not a version"_s),
                qPrintable(error));
        }
    }

    void readOnlyOpenNeverWaitsForAWriter()
    {
        const QString path = m_dir.filePath(u"reader.sqlite"_s);
        Store writer;
        QVERIFY(writer.open(path));
        ingestAllRows(&writer, stream(recipeJson(modules({})), 3, 1000, 10.0, true));
        QVERIFY(writer.beginWrite()); // held for the whole test
        QElapsedTimer t;
        t.start();
        Store reader;
        QString error;
        QVERIFY2(reader.openReadOnly(path, &error), qPrintable(error));
        QCOMPARE(reader.listRuns().size(), 1);
        QCOMPARE(reader.iterations(reader.listRuns().first().id).size(), 6);
        QVERIFY2(t.elapsed() < 3000, qPrintable(QString::number(t.elapsed())));
        // and it writes nothing
        QVERIFY(!reader.beginWrite() || !reader.insertRun(RunRecord {}));
        writer.rollbackWrite();
    }

    void lockHeldByAnotherProcessIsWaitedOn()
    {
        const QString path = m_dir.filePath(u"locked.sqlite"_s);
        Store store;
        QVERIFY(store.open(path));
        auto locker = holdWriteLock(path, 4);
        if (!locker)
            QSKIP("no sqlite3 shell to hold the lock");
        RunIngest ingest(&store);
        QStringList said;
        ingest.setNotifier([&](const QString& m) { said << m; });
        const auto events = stream(recipeJson(modules({})), 20, 5000, 10.0, true);
        QElapsedTimer t;
        t.start();
        for (const auto& e : events)
            QVERIFY2(ingest.ingest(typed(e)), qPrintable(ingest.error()));
        QVERIFY(ingest.finish());
        QVERIFY(t.elapsed() >= 2000);
        QVERIFY(ingest.spoolPath().isEmpty());
        QVERIFY2(!said.isEmpty() && said.first().startsWith(u"store locked by another process, waiting ("_s),
            qPrintable(said.join(u" | "_s)));
        const auto run = store.run(ingest.runId());
        QVERIFY(run);
        QCOMPARE(run->outcome, outcome::Pass);
        QCOMPARE(store.iterations(run->id).size(), 40);
        locker->waitForFinished(10000);
    }

    void lockHeldTooLongSpoolsAndImportsOnce()
    {
        const QString path = m_dir.filePath(u"toolong.sqlite"_s);
        Store store;
        QVERIFY(store.open(path));
        auto locker = holdWriteLock(path, 4);
        if (!locker)
            QSKIP("no sqlite3 shell to hold the lock");
        QString spool;
        {
            RunIngest ingest(&store);
            ingest.setMaxLockWait(1500);
            QStringList said;
            ingest.setNotifier([&](const QString& m) { said << m; });
            for (const auto& e : stream(recipeJson(modules({})), 7, 5000, 10.0, true))
                QVERIFY2(ingest.ingest(typed(e)), qPrintable(ingest.error()));
            QVERIFY(ingest.finish());
            spool = ingest.spoolPath();
            QVERIFY2(!spool.isEmpty(), qPrintable(said.join(u" | "_s)));
            QVERIFY(said.last().contains(spool));
            QVERIFY(ingest.spoolReason().contains(u"locked"_s));
        }
        QCOMPARE(QFileInfo(spool).absolutePath(), QFileInfo(path).absolutePath()); // beside the store
        QVERIFY(locker->waitForFinished(10000));
        QVERIFY(isWorkerStreamFile(spool));
        const StreamImport first = importWorkerStream(&store, spool);
        QVERIFY2(first.error.isEmpty(), qPrintable(first.error));
        QCOMPARE(first.iterations, 14);
        const auto run = store.run(first.runId);
        QVERIFY(run);
        QCOMPARE(run->outcome, outcome::Pass);
        QCOMPARE(store.iterations(run->id).size(), 14);
        QCOMPARE(store.rankPeaks(run->id).size(), 2);
        const StreamImport again = importWorkerStream(&store, spool);
        QVERIFY(again.duplicate);
        QCOMPARE(again.runId, first.runId);
        QCOMPARE(store.listRuns().size(), 1);
    }

    void unusableStoreSpoolsEveryEvent()
    {
        // A store that could not be opened (here: one that was closed) takes nothing: from hello on,
        // every event is spooled beside the file that was asked for.
        const QString path = m_dir.filePath(u"closed.sqlite"_s);
        Store store;
        QVERIFY(store.open(path));
        store.close();
        const auto events = stream(recipeJson(modules({})), 5, 5000, 10.0, false); // no result: aborted
        QString spool;
        {
            RunIngest ingest(&store);
            for (const auto& e : events)
                QVERIFY2(ingest.ingest(typed(e)), qPrintable(ingest.error()));
            QVERIFY(ingest.finish(u"killed"_s));
            spool = ingest.spoolPath();
            QCOMPARE(ingest.runId(), qint64(0));
        }
        QVERIFY(spool.startsWith(m_dir.path()));
        QFile f(spool);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll().count('\n'), events.size());
        Store reopened;
        QVERIFY(reopened.open(path));
        const StreamImport imported = importWorkerStream(&reopened, spool);
        QVERIFY2(imported.error.isEmpty(), qPrintable(imported.error));
        const auto run = reopened.run(imported.runId);
        QVERIFY(run);
        QCOMPARE(run->outcome, outcome::Aborted);
        QCOMPARE(reopened.iterations(run->id).size(), 10);
    }

    // Issue 30: where the store's folder takes no file (here a folder under /proc, which no user, root
    // included, can make), the spool goes to the next folder that does: the user's data folder. Every
    // event is in it, and the run imports from it.
    void aSpoolGoesWhereItCanBeWritten()
    {
        const QString data = m_dir.filePath(u"data"_s);
        qputenv("XDG_DATA_HOME", data.toLocal8Bit());
        Store store;
        QVERIFY(!store.open(u"/proc/self/no-such-folder/store.sqlite"_s));
        const auto events = stream(recipeJson(modules({})), 4, 5000, 10.0, true);
        QString spool;
        {
            RunIngest ingest(&store);
            for (const auto& e : events)
                QVERIFY2(ingest.ingest(typed(e)), qPrintable(ingest.error()));
            QVERIFY(ingest.finish());
            spool = ingest.spoolPath();
        }
        qunsetenv("XDG_DATA_HOME");
        QVERIFY2(spool.startsWith(data + u'/'), qPrintable(spool));
        QFile f(spool);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll().count('\n'), events.size());
        Store elsewhere;
        QVERIFY(elsewhere.open(m_dir.filePath(u"elsewhere.sqlite"_s)));
        const StreamImport imported = importWorkerStream(&elsewhere, spool);
        QVERIFY2(imported.error.isEmpty(), qPrintable(imported.error));
        QCOMPARE(elsewhere.iterations(imported.runId).size(), 8);
    }

    // Issue 30: a write lock held past the busy timeout ends in words that say what happened and what to
    // do, not in the driver's text alone.
    void aLockPastTheTimeoutIsNamed()
    {
        const QString path = m_dir.filePath(u"held.sqlite"_s);
        Store store;
        QVERIFY(store.open(path));
        auto locker = holdWriteLock(path, 3);
        if (!locker)
            QSKIP("no sqlite3 shell to hold the lock");
        QVERIFY(store.setBusyTimeout(200));
        QVERIFY(!store.beginWrite());
        QVERIFY(store.lastErrorIsBusy());
        QVERIFY2(store.lastError().startsWith(u"the store is locked by another process"_s)
                && store.lastError().contains(u"try again"_s),
            qPrintable(store.lastError()));
        QVERIFY(locker->waitForFinished(10000));
        QVERIFY2(store.beginWrite(), qPrintable(store.lastError()));
        store.rollbackWrite();
    }

private:
    static void ingestAllRows(Store* store, const std::vector<json>& events)
    {
        RunIngest ingest(store);
        for (const auto& e : events)
            ingest.ingest(typed(e));
        ingest.finish();
    }
    QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestStoreHostile)
#include "tst_store_hostile.moc"
