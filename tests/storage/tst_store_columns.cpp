// SPDX-License-Identifier: Apache-2.0
// The iteration column table (store.h iterationColumns): a field added to the iteration event as one row
// of the table (registerIterationColumn) is decoded from the stream on both ingest paths, stored, read
// back by Store::iterations and exported, without a line of the readers changed; a value of the wrong
// type is a malformed event that names the key; an old file gets the new columns on open.
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QtTest>

#include "core/stream.h"
#include "storage/ingest.h"
#include "storage/report.h"
#include "storage/store.h"
#include "store_test_events.h"

using namespace Qt::StringLiterals;
using namespace rs::storage;
using namespace rs::storage::test;

Q_DECLARE_METATYPE(rs::storage::ColumnType)

class TestStoreColumns : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    static QVector<QJsonObject> withExtra(const QString& key, const QJsonValue& value)
    {
        QVector<QJsonObject> events = stream(recipeJson(QJsonArray()), 3, 1000, 10.0, true);
        for (auto& e : events)
            if (e.value(u"event"_s) == u"iteration"_s)
                e.insert(key, value);
        return events;
    }

private slots:
    // The iteration record is written in three places (the stream's type, the store's row, this column
    // table): the column table's stream keys must be exactly the keys the worker's iteration event carries
    // when every field is known, so a field added to one and not the others fails here.
    void streamKeysAreTheColumnTablesKeys()
    {
        rs::stream::Iteration it;
        it.rank = 1;
        it.iteration = 2;
        it.phase = "steady";
        it.step_ms = it.forward_ms = it.backward_ms = it.optimizer_ms = it.grad_reduce_ms = 1.0;
        it.loss = 2.0;
        it.loss_finite = true;
        it.forward_peak_allocated = it.forward_peak_reserved = it.backward_peak_allocated = 3;
        it.backward_peak_reserved = it.optimizer_peak_allocated = it.optimizer_peak_reserved = 3;
        it.allocated_after = it.reserved_after = it.alloc_retries = it.forward_allocated_after = 4;
        it.optimizer_init = true;
        QStringList eventKeys;
        const nlohmann::json event = it.toJson();
        for (const auto& [key, value] : event.items())
            if (key != "event")
                eventKeys << QString::fromStdString(key);
        QStringList columnKeys;
        for (const IterationColumn& c : iterationColumns())
            if (c.fromStream && c.sinceVersion > 0) // shipped columns, not registered ones
                columnKeys << c.name;
        eventKeys.sort();
        columnKeys.sort();
        QCOMPARE(columnKeys, eventKeys);
    }
    void registeredFieldIsStoredReadAndExported_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<ColumnType>("type");
        QTest::addColumn<QJsonValue>("value");
        QTest::addColumn<QVariant>("stored");
        QTest::addColumn<QString>("csvCell");
        QTest::addColumn<bool>("viaLines"); // the fast line decoder, else QJsonObject events
        QTest::newRow("bytes, lines")
            << u"test_activation_bytes"_s << ColumnType::Integer << QJsonValue(123456789012.0)
            << QVariant(qint64(123456789012)) << u"123456789012"_s << true;
        QTest::newRow("bytes, objects") << u"test_workspace_bytes"_s << ColumnType::Integer
                                        << QJsonValue(4096) << QVariant(qint64(4096)) << u"4096"_s << false;
        QTest::newRow("ms, lines") << u"test_sync_ms"_s << ColumnType::Real << QJsonValue(1.25)
                                   << QVariant(1.25) << u"1.25"_s << true;
        QTest::newRow("flag, objects") << u"test_replayed"_s << ColumnType::Boolean << QJsonValue(true)
                                       << QVariant(true) << u"true"_s << false;
        QTest::newRow("label, lines") << u"test_region"_s << ColumnType::Text << QJsonValue(u"core_attn"_s)
                                      << QVariant(u"core_attn"_s) << u"core_attn"_s << true;
    }
    void registeredFieldIsStoredReadAndExported()
    {
        QFETCH(QString, name);
        QFETCH(ColumnType, type);
        QFETCH(QJsonValue, value);
        QFETCH(QVariant, stored);
        QFETCH(QString, csvCell);
        QFETCH(bool, viaLines);

        registerIterationColumn(name, type); // the one row: nothing else knows the field
        Store store;
        QVERIFY(store.open(m_dir.filePath(name + u".sqlite"_s)));
        RunIngest ingest(&store);
        for (const auto& e : withExtra(name, value)) {
            if (viaLines)
                QVERIFY(ingest.ingestLine(QJsonDocument(e).toJson(QJsonDocument::Compact)));
            else
                QVERIFY(ingest.ingest(e));
        }
        QVERIFY(ingest.finish());
        QCOMPARE(ingest.malformedLines(), 0);

        const auto rows = store.iterations(ingest.runId());
        QCOMPARE(rows.size(), 6);
        for (const auto& row : rows) {
            QVERIFY2(row.extra.contains(name), qPrintable(name));
            QCOMPARE(row.extra.value(name), stored);
            QCOMPARE(row.stepMs, std::optional<double>(10.0)); // the shipped columns as before
        }

        // Export reads the table as stored: the new column is there, with its values.
        const QString out = m_dir.filePath(name + u"-export"_s);
        QString error;
        const QStringList files = exportRuns(store, { ingest.runId() }, out, true, true, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QFile csv(out + u"/iterations.csv"_s);
        QVERIFY(csv.open(QIODevice::ReadOnly));
        const QStringList lines = QString::fromUtf8(csv.readAll()).split(u'\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 7);
        const QStringList head = lines.first().split(u',');
        const int at = int(head.indexOf(name));
        QVERIFY2(at >= 0, qPrintable(lines.first()));
        const QStringList cells = lines[1].split(u',');
        QVERIFY(at < cells.size());
        QCOMPARE(cells[at], csvCell);
        QFile json(out + u"/iterations.json"_s);
        QVERIFY(json.open(QIODevice::ReadOnly));
        const QJsonArray records = QJsonDocument::fromJson(json.readAll()).array();
        QCOMPARE(records.size(), 6);
        QVERIFY(records.first().toObject().contains(name));
    }

    void wrongTypeIsMalformedAndNamed_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QJsonValue>("value");
        QTest::addColumn<bool>("viaLines");
        QTest::addColumn<QString>("reason");
        QTest::newRow("bytes as text, lines")
            << u"forward_peak_allocated"_s << QJsonValue(u"lots"_s) << true
            << u"iteration event: 'forward_peak_allocated': expected a number, got \"lots\""_s;
        QTest::newRow("flag as number, objects")
            << u"optimizer_init"_s << QJsonValue(1) << false
            << u"iteration event: 'optimizer_init': expected true or false, got 1"_s;
        QTest::newRow("phase as number, objects") << u"phase"_s << QJsonValue(2) << false
                                                  << u"iteration event: 'phase': expected a string, got 2"_s;
    }
    void wrongTypeIsMalformedAndNamed()
    {
        QFETCH(QString, key);
        QFETCH(QJsonValue, value);
        QFETCH(bool, viaLines);
        QFETCH(QString, reason);
        Store store;
        QVERIFY(store.open(m_dir.filePath(u"wrong-%1-%2.sqlite"_s.arg(key).arg(viaLines))));
        RunIngest ingest(&store);
        QVector<QJsonObject> events = stream(recipeJson(QJsonArray()), 2, 1000, 10.0, true);
        events[2].insert(key, value); // the first iteration
        for (const auto& e : events) {
            if (viaLines)
                QVERIFY(ingest.ingestLine(QJsonDocument(e).toJson(QJsonDocument::Compact)));
            else
                QVERIFY(ingest.ingest(e));
        }
        QVERIFY(ingest.finish());
        QCOMPARE(ingest.malformedLines(), 1);
        QCOMPARE(ingest.lastMalformedReason(), reason);
        QCOMPARE(store.iterations(ingest.runId()).size(), 3); // the other three
    }

    void anOldFileGetsTheNewColumns()
    {
        const QString path = m_dir.filePath(u"v5.sqlite"_s);
        {
            Store old;
            QVERIFY(old.openAtVersion(path, 5));
            QVERIFY(!old.tableColumnsInFile(u"iterations"_s).contains(u"forward_ms"_s));
            RunIngest ingest(&old);
            for (const auto& e : stream(recipeJson(QJsonArray()), 2, 1000, 10.0, true))
                QVERIFY(ingest.ingest(e));
            QVERIFY(ingest.finish());
        }
        registerIterationColumn(u"test_old_file_column"_s, ColumnType::Integer);
        Store store;
        QVERIFY(store.open(path));
        QCOMPARE(store.schemaVersion(), Store::kSchemaVersion);
        const QStringList columns = store.tableColumnsInFile(u"iterations"_s);
        for (const auto& c : iterationColumns())
            QVERIFY2(columns.contains(c.name), qPrintable(c.name));
        const auto rows = store.iterations(store.listRuns().first().id);
        QCOMPARE(rows.size(), 4);
        QVERIFY(!rows.first().forwardMs); // not measured then
        QVERIFY(!rows.first().extra.contains(u"test_old_file_column"_s));
        QCOMPARE(rows.first().forwardPeakAllocated, std::optional<qint64>(990));
    }
};

QTEST_GUILESS_MAIN(TestStoreColumns)
#include "tst_store_columns.moc"
