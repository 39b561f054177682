// SPDX-License-Identifier: Apache-2.0
// The store under hostile conditions (issue 16): a negative schema version is refused, never a crash;
// opening for reading takes no lock and never waits for a writer; a write lock held by another process is
// waited on (bounded, reported) with every row kept; a store that cannot take a run gets its stream
// spooled to a file that `importWorkerStream` stores later, once, as the run it was.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "storage/ingest.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs::storage;

namespace {

QJsonObject recipeJson(const QJsonValue& modules, int seqLength = 4096)
{
    return QJsonObject {
        { u"name"_s, u"tiny"_s },
        { u"num_layers"_s, 4 },
        { u"hidden_size"_s, 256 },
        { u"ffn_hidden_size"_s, 1024 },
        { u"num_attention_heads"_s, 8 },
        { u"num_query_groups"_s, QJsonValue::Null },
        { u"seq_length"_s, seqLength },
        { u"micro_batch_size"_s, 1 },
        { u"global_batch_size"_s, 4 },
        { u"bf16"_s, true },
        { u"attention_backend"_s, u"fused"_s },
        { u"tensor_model_parallel_size"_s, 1 },
        { u"pipeline_model_parallel_size"_s, 1 },
        { u"context_parallel_size"_s, 1 },
        { u"expert_model_parallel_size"_s, 1 },
        { u"sequence_parallel"_s, false },
        { u"recompute_granularity"_s, u"selective"_s },
        { u"recompute_modules"_s, modules },
        { u"profile"_s, u"bridge-pin"_s },
        { u"train_iters"_s, 6 },
        { u"warmup_iters"_s, 2 },
    };
}

QVector<QJsonObject> stream(const QJsonObject& recipe, int iterations, qint64 peak, double stepMs,
    bool withResult, const QString& status = u"pass"_s)
{
    QVector<QJsonObject> events;
    events << QJsonObject { { u"event"_s, u"hello"_s }, { u"worker_version"_s, u"0.1.0"_s },
        { u"libtorch_version"_s, u"1.13.1"_s }, { u"cuda_version"_s, QJsonValue::Null },
        { u"nccl_version"_s, QJsonValue::Null }, { u"device"_s, u"cpu"_s }, { u"device_kind"_s, u"cpu"_s },
        { u"host"_s, u"dev1"_s }, { u"rank"_s, 0 }, { u"world_size"_s, 2 },
        { u"profile"_s, u"bridge-pin"_s } };
    events << QJsonObject { { u"event"_s, u"recipe"_s }, { u"recipe"_s, recipe },
        { u"recipe_hash"_s, u"abc"_s }, { u"findings"_s, QJsonArray() },
        { u"stage_scope"_s, u"all layers"_s } };
    for (int it = 1; it <= iterations; ++it) {
        for (int rank = 0; rank < 2; ++rank) {
            events << QJsonObject { { u"event"_s, u"iteration"_s }, { u"rank"_s, rank },
                { u"iteration"_s, it }, { u"phase"_s, it <= 2 ? u"warmup"_s : u"steady"_s },
                { u"step_ms"_s, stepMs },
                { u"loss"_s, status == u"nonfinite" && it == iterations ? QJsonValue() : 9.5 },
                { u"loss_finite"_s, !(status == u"nonfinite" && it == iterations) },
                { u"forward_peak_allocated"_s, double(peak - 10 - rank) },
                { u"backward_peak_allocated"_s, double(peak - rank) },
                { u"optimizer_peak_allocated"_s, double(peak / 2) }, { u"alloc_retries"_s, 0 },
                { u"optimizer_init"_s, it == 1 } };
        }
    }
    if (!withResult)
        return events;
    for (int rank = 0; rank < 2; ++rank) {
        events << QJsonObject {
            { u"event"_s, u"rank_summary"_s },
            { u"rank"_s, rank },
            { u"peak_allocated"_s, double(peak - rank) },
            { u"peak_reserved"_s, double(peak * 2) },
            { u"peak_phase"_s, u"backward"_s },
            { u"peak_iteration"_s, 3 },
            { u"steady_step_ms"_s, stepMs },
            { u"steady_step_ms_median"_s, stepMs },
            { u"phase_peaks"_s,
                QJsonObject { { u"forward"_s,
                                  QJsonObject { { u"allocated"_s, double(peak - 10 - rank) },
                                      { u"reserved"_s, double(peak * 2) } } },
                    { u"backward"_s,
                        QJsonObject { { u"allocated"_s, double(peak - rank) },
                            { u"reserved"_s, double(peak * 2) } } } } },
        };
    }
    events << QJsonObject { { u"event"_s, u"result"_s }, { u"status"_s, status },
        { u"stage"_s, status == u"pass" ? QJsonValue() : QJsonValue(u"backward"_s) },
        { u"iteration"_s, status == u"pass" ? QJsonValue() : QJsonValue(iterations) },
        { u"message"_s, QString() }, { u"steady_step_ms"_s, stepMs }, { u"tokens_per_s"_s, 1000.0 },
        { u"model_tflops"_s, 2.5 }, { u"executed_tflops"_s, 3.0 } };
    return events;
}

// Another process (the sqlite3 shell) holding the write lock (BEGIN IMMEDIATE) for `seconds`; returns once
// it holds it.
std::unique_ptr<QProcess> holdWriteLock(const QString& db, int seconds)
{
    const QString sqlite = QStandardPaths::findExecutable(u"sqlite3"_s);
    if (sqlite.isEmpty())
        return nullptr;
    auto p = std::make_unique<QProcess>();
    p->start(sqlite, { db });
    if (!p->waitForStarted(5000))
        return nullptr;
    p->write(u"BEGIN IMMEDIATE;\nSELECT 'locked';\n.shell sleep %1\nCOMMIT;\n"_s.arg(seconds).toUtf8());
    p->closeWriteChannel();
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 10000) {
        p->waitForReadyRead(100);
        if (p->readAllStandardOutput().contains("locked"))
            return p;
    }
    return nullptr;
}

} // namespace

class TestStoreHostile : public QObject {
    Q_OBJECT
private slots:
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
        ingestAllRows(&writer, stream(recipeJson(QJsonArray()), 3, 1000, 10.0, true));
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
        const auto events = stream(recipeJson(QJsonArray()), 20, 5000, 10.0, true);
        QElapsedTimer t;
        t.start();
        for (const auto& e : events)
            QVERIFY2(ingest.ingest(e), qPrintable(ingest.error()));
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
            for (const auto& e : stream(recipeJson(QJsonArray()), 7, 5000, 10.0, true))
                QVERIFY2(ingest.ingest(e), qPrintable(ingest.error()));
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
        const auto events = stream(recipeJson(QJsonArray()), 5, 5000, 10.0, false); // no result: aborted
        QString spool;
        {
            RunIngest ingest(&store);
            for (const auto& e : events)
                QVERIFY2(ingest.ingest(e), qPrintable(ingest.error()));
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

private:
    static void ingestAllRows(Store* store, const QVector<QJsonObject>& events)
    {
        RunIngest ingest(store);
        for (const auto& e : events)
            ingest.ingest(e);
        ingest.finish();
    }
    QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestStoreHostile)
#include "tst_store_hostile.moc"
