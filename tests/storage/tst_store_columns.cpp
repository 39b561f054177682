// SPDX-License-Identifier: Apache-2.0
// The iteration column table (store.h iterationColumns): a field added to the iteration event as one row
// of the table (registerIterationColumn) is decoded from the stream on both ingest paths (typed events, as
// the launcher hands them on, and JSON lines), stored, read back by Store::iterations and exported,
// without a line of the readers changed; a value of the wrong type is a malformed event that names the
// key; an old file gets the new columns on open. The table's keys are the stream record's keys, and each
// key of stream::Iteration lands in its column.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
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
Q_DECLARE_METATYPE(nlohmann::json)

class TestStoreColumns : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;

    static std::vector<json> withExtra(const std::string& key, const json& value)
    {
        std::vector<json> events = stream(recipeJson(modules({})), 3, 1000, 10.0, true);
        for (auto& e : events)
            if (e.at("event") == "iteration")
                e[key] = value;
        return events;
    }

    // Feeds `events` to the ingest as a saved stream's lines or as the launcher's typed events. A line the
    // launcher's reader refuses (core's decodeLine) is not handed on: its reason comes back in *refused.
    static void feed(RunIngest& ingest, const std::vector<json>& events, bool viaLines, QStringList* refused)
    {
        for (const auto& e : events) {
            if (viaLines) {
                QVERIFY(ingest.ingestLine(line(e)));
                continue;
            }
            try {
                QVERIFY(ingest.ingest(typed(e)));
            } catch (const rs::stream::StreamError& error) {
                *refused << QString::fromStdString(error.what());
            }
        }
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

    // Each key of the stream's iteration, alone in an event with a value no other key has, reaches its own
    // column through the typed path (iterationRowFromEvent) and through the line path, and no other column.
    void eachStreamKeyFillsItsColumn()
    {
        const auto& columns = iterationColumns();
        int checked = 0;
        for (const IterationColumn& c : columns) {
            if (!c.fromStream || c.sinceVersion == 0)
                continue;
            json value;
            QVariant stored;
            switch (c.type) {
            case ColumnType::Integer:
                value = 77;
                stored = QVariant(qint64(77));
                break;
            case ColumnType::Real:
                value = 7.25;
                stored = QVariant(7.25);
                break;
            case ColumnType::Boolean:
                value = true;
                stored = QVariant(true);
                break;
            case ColumnType::Text:
                value = "steady";
                stored = QVariant(u"steady"_s);
                break;
            }
            const json event { { "event", "iteration" }, { c.name.toStdString(), value } };
            const IterationRow fromTyped
                = iterationRowFromEvent(std::get<rs::stream::Iteration>(rs::stream::decodeEvent(event)));
            // ... and what the bulk path stores from the same line
            Store store;
            QVERIFY(store.open(m_dir.filePath(u"key-%1.sqlite"_s.arg(c.name))));
            RunIngest ingest(&store);
            for (const auto& e : stream(recipeJson(modules({})), 0, 1000, 10.0, false))
                QVERIFY(ingest.ingestLine(line(e)));
            QVERIFY(ingest.ingestLine(line(event)));
            QVERIFY(ingest.finish());
            const auto rows = store.iterations(ingest.runId());
            QCOMPARE(rows.size(), 1);
            IterationRow want; // the column set, through the table, and nothing else
            c.set(want, stored);
            for (const IterationColumn& other : columns) {
                if (other.name == u"run_id")
                    continue;
                QVERIFY2(other.get(fromTyped) == other.get(want),
                    qPrintable(
                        u"%1 set: %2 is %3"_s.arg(c.name, other.name, other.get(fromTyped).toString())));
                if (other.name == u"loss_finite" && &other != &c)
                    continue; // the store fills it from the loss when the event does not say
                QVERIFY2(other.get(rows[0]) == other.get(want),
                    qPrintable(u"%1 set, stored: %2 is %3"_s.arg(
                        c.name, other.name, other.get(rows[0]).toString())));
            }
            ++checked;
        }
        int keys = 0;
        const rs::stream::Iteration probe;
        rs::stream::forEachIterationField(probe, [&keys](const char*, const auto&) { ++keys; });
        QCOMPARE(checked, keys); // every key of the iteration event
    }

    void registeredFieldIsStoredReadAndExported_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<ColumnType>("type");
        QTest::addColumn<nlohmann::json>("value");
        QTest::addColumn<QVariant>("stored");
        QTest::addColumn<QString>("csvCell");
        QTest::addColumn<bool>("viaLines"); // the fast line decoder, else typed events
        QTest::newRow("bytes, lines")
            << u"test_activation_bytes"_s << ColumnType::Integer << json(123456789012.0)
            << QVariant(qint64(123456789012)) << u"123456789012"_s << true;
        QTest::newRow("bytes, typed") << u"test_workspace_bytes"_s << ColumnType::Integer << json(4096)
                                      << QVariant(qint64(4096)) << u"4096"_s << false;
        QTest::newRow("ms, lines") << u"test_sync_ms"_s << ColumnType::Real << json(1.25) << QVariant(1.25)
                                   << u"1.25"_s << true;
        QTest::newRow("flag, typed") << u"test_replayed"_s << ColumnType::Boolean << json(true)
                                     << QVariant(true) << u"true"_s << false;
        QTest::newRow("label, lines") << u"test_region"_s << ColumnType::Text << json("core_attn")
                                      << QVariant(u"core_attn"_s) << u"core_attn"_s << true;
        QTest::newRow("label, typed") << u"test_region_typed"_s << ColumnType::Text << json("mlp")
                                      << QVariant(u"mlp"_s) << u"mlp"_s << false;
    }
    void registeredFieldIsStoredReadAndExported()
    {
        QFETCH(QString, name);
        QFETCH(ColumnType, type);
        QFETCH(nlohmann::json, value);
        QFETCH(QVariant, stored);
        QFETCH(QString, csvCell);
        QFETCH(bool, viaLines);

        registerIterationColumn(name, type); // the one row: nothing else knows the field
        Store store;
        QVERIFY(store.open(m_dir.filePath(name + u".sqlite"_s)));
        RunIngest ingest(&store);
        QStringList refused;
        feed(ingest, withExtra(name.toStdString(), value), viaLines, &refused);
        QVERIFY(refused.isEmpty());
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
        QFile exported(out + u"/iterations.json"_s);
        QVERIFY(exported.open(QIODevice::ReadOnly));
        const QJsonArray records = QJsonDocument::fromJson(exported.readAll()).array();
        QCOMPARE(records.size(), 6);
        QVERIFY(records.first().toObject().contains(name));
    }

    // A value of the wrong type: on the line path the ingest counts the line malformed; on the typed path
    // a shipped key never reaches the ingest (the launcher's reader refuses the line, with the same
    // reason), and a registered column's is counted malformed by the ingest.
    void wrongTypeIsMalformedAndNamed_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<nlohmann::json>("value");
        QTest::addColumn<bool>("viaLines");
        QTest::addColumn<bool>("registered");
        QTest::addColumn<QString>("reason");
        const QString bytes = u"iteration event: 'forward_peak_allocated': expected an integer (bytes or a "
                              "count), got \"lots\""_s;
        QTest::newRow("bytes as text, lines")
            << u"forward_peak_allocated"_s << json("lots") << true << false << bytes;
        QTest::newRow("bytes as text, typed")
            << u"forward_peak_allocated"_s << json("lots") << false << false << bytes;
        QTest::newRow("flag as number, typed")
            << u"optimizer_init"_s << json(1) << false << false
            << u"iteration event: 'optimizer_init': expected true or false, got 1"_s;
        QTest::newRow("phase as number, lines") << u"phase"_s << json(2) << true << false
                                                << u"iteration event: 'phase': expected a string, got 2"_s;
        QTest::newRow("registered, lines")
            << u"test_wrong_bytes"_s << json("x") << true << true
            << u"iteration event: 'test_wrong_bytes': expected an integer, got \"x\""_s;
        QTest::newRow("registered, typed")
            << u"test_wrong_bytes"_s << json(0.5) << false << true
            << u"iteration event: 'test_wrong_bytes': expected an integer, got 0.5"_s;
    }
    void wrongTypeIsMalformedAndNamed()
    {
        QFETCH(QString, key);
        QFETCH(nlohmann::json, value);
        QFETCH(bool, viaLines);
        QFETCH(bool, registered);
        QFETCH(QString, reason);
        if (registered)
            registerIterationColumn(key, ColumnType::Integer);
        Store store;
        QVERIFY(store.open(m_dir.filePath(
            u"wrong-%1-%2.sqlite"_s.arg(QString::fromLatin1(QTest::currentDataTag())).replace(u' ', u'_'))));
        RunIngest ingest(&store);
        std::vector<json> events = stream(recipeJson(modules({})), 2, 1000, 10.0, true);
        events[2][key.toStdString()] = value; // the first iteration
        QStringList refused;
        feed(ingest, events, viaLines, &refused);
        QVERIFY(ingest.finish());
        if (viaLines || registered) {
            QCOMPARE(ingest.malformedLines(), 1);
            QCOMPARE(ingest.lastMalformedReason(), reason);
            QVERIFY(refused.isEmpty());
        } else {
            QCOMPARE(refused, QStringList { reason });
            QCOMPARE(ingest.malformedLines(), 0);
        }
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
            for (const auto& e : stream(recipeJson(modules({})), 2, 1000, 10.0, true))
                QVERIFY(ingest.ingest(typed(e)));
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
