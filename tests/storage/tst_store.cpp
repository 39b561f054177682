// SPDX-License-Identifier: Apache-2.0
// The store on real SQLite files: pragmas, migrations from every earlier schema version, live ingest
// (pass, aborted, non-finite), queries with filters, matched-control checks and the comparison deltas.
#include <QCoreApplication>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QTest>

#include "storage/ingest.h"
#include "storage/store.h"
#include "store_test_events.h"

using namespace Qt::StringLiterals;
using namespace rs::storage;
using namespace rs::storage::test;

namespace {

qint64 ingestAll(Store* store, const std::vector<json>& events, bool finish = true,
    std::optional<qint64> control = std::nullopt)
{
    RunIngest ingest(store);
    if (control)
        ingest.setControl(control);
    for (const auto& e : events) {
        if (!ingest.ingest(typed(e)))
            qWarning() << ingest.error();
    }
    if (finish)
        ingest.finish();
    return ingest.runId();
}

QString pragma(Store& store, const QString& name)
{
    QSqlQuery q(store.database());
    if (!q.exec(u"PRAGMA "_s + name) || !q.next())
        return {};
    return q.value(0).toString();
}

} // namespace

class TestStore : public QObject {
    Q_OBJECT
private slots:
    void init() { QVERIFY(m_dir.isValid()); }

    void defaultPathIsTheProductsDataFolder()
    {
        QStandardPaths::setTestModeEnabled(true);
        const QString tool = Store::defaultPath(); // this test names itself otherwise
        QCoreApplication::setApplicationName(u"recompute-studio"_s);
        QCoreApplication::setOrganizationName(u"recompute-studio"_s);
        const QString product = Store::defaultPath();
        QCOMPARE(product,
            QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + u"/measurements.sqlite"_s);
        QVERIFY2(product.endsWith(u"/recompute-studio/recompute-studio/measurements.sqlite"_s),
            qPrintable(product));
        QCOMPARE(tool, product); // one file for the studio, the CLI and any other tool
        QStandardPaths::setTestModeEnabled(false);
    }

    void opensWithWalForeignKeysAndVersion()
    {
        Store store;
        QString error;
        QVERIFY2(store.open(m_dir.filePath(u"a/b/store.sqlite"_s), &error), qPrintable(error));
        QCOMPARE(pragma(store, u"journal_mode"_s), u"wal"_s);
        QCOMPARE(pragma(store, u"foreign_keys"_s), u"1"_s);
        QCOMPARE(store.schemaVersion(), Store::kSchemaVersion);
        QCOMPARE(pragma(store, u"integrity_check"_s), u"ok"_s);
    }

    void migratesEveryEarlierVersion_data()
    {
        QTest::addColumn<int>("from");
        for (int v = 1; v < Store::kSchemaVersion; ++v)
            QTest::addRow("v%d", v) << v;
    }

    void migratesEveryEarlierVersion()
    {
        QFETCH(int, from);
        const QString path = m_dir.filePath(u"migrate-%1.sqlite"_s.arg(from));
        qint64 runId = 0;
        {
            Store old;
            QString error;
            QVERIFY2(old.openAtVersion(path, from, &error), qPrintable(error));
            QCOMPARE(old.schemaVersion(), from);
            // A v1 file knows nothing of phase peaks; the ingest must still work on it.
            runId = ingestAll(&old, stream(recipeJson(modules({})), 4, 1000000, 50.0, true));
            QVERIFY(runId > 0);
            QCOMPARE(old.iterations(runId).size(), 8);
            QSqlQuery q(old.database());
            QCOMPARE(q.exec(u"SELECT COUNT(*) FROM phase_peaks"_s), from >= 2); // a v2 table
            QCOMPARE(q.exec(u"SELECT recipe_match_key FROM runs"_s), from >= 3); // a v3 column
        }
        Store store;
        QString error;
        QVERIFY2(store.open(path, &error), qPrintable(error));
        QCOMPARE(store.schemaVersion(), Store::kSchemaVersion);
        QCOMPARE(pragma(store, u"integrity_check"_s), u"ok"_s);
        QCOMPARE(pragma(store, u"foreign_key_check"_s), QString());
        const auto run = store.run(runId);
        QVERIFY(run);
        QCOMPARE(run->outcome, outcome::Pass);
        QCOMPARE(run->peakAllocated.value_or(0), qint64(1000000));
        QCOMPARE(run->recomputeModules.value_or(QStringList { u"x"_s }), QStringList {});
        QVERIFY(run->importSha256.isEmpty());
        QCOMPARE(store.iterations(runId).size(), 8);
        QCOMPARE(store.rankPeaks(runId).size(), 2);
        QCOMPARE(store.phasePeaks(runId).size(), from == 1 ? 0 : 4); // a v1 file had nowhere to keep them
        // v3 computed the match key of the stored recipe.
        QVERIFY(!run->recipeMatchKey.isEmpty());
        QCOMPARE(run->recipeMatchKey, Store::recipeMatchKey(run->recipeJson));
        // The v2 features work on the upgraded file.
        QVERIFY(store.insertPhasePeak({ runId, 0, u"optimizer-init"_s, 5, 6 }));
        QCOMPARE(store.phasePeaks(runId).size(), from == 1 ? 1 : 5);
        QVERIFY(store.setImportProvenance(runId, u"/x.log"_s, u"deadbeef"_s, u"megatron-lm"_s));
        QCOMPARE(store.runByImportDigest(u"deadbeef"_s).value_or(0), runId);
    }

    void refusesNewerSchema()
    {
        const QString path = m_dir.filePath(u"newer.sqlite"_s);
        {
            Store store;
            QVERIFY(store.open(path));
            QSqlQuery q(store.database());
            QVERIFY(q.exec(u"PRAGMA user_version = 99"_s));
        }
        Store store;
        QString error;
        QVERIFY(!store.open(path, &error));
        QVERIFY2(error.contains(u"schema version 99 is newer"_s), qPrintable(error));
    }

    void ingestKeepsTheMeasurementContract()
    {
        Store store;
        QVERIFY(store.open(m_dir.filePath(u"ingest.sqlite"_s)));
        const qint64 id
            = ingestAll(&store, stream(recipeJson(modules({ "core_attn" })), 5, 2000000, 80.0, true));
        const auto run = store.run(id);
        QVERIFY(run);
        QCOMPARE(run->source, source::Worker);
        QCOMPARE(run->outcome, outcome::Pass);
        QCOMPARE(run->workerVersion, u"0.1.0"_s);
        QCOMPARE(run->libtorchVersion, u"1.13.1"_s);
        QVERIFY(run->cudaVersion.isEmpty());
        QCOMPARE(run->device, u"cpu"_s);
        QCOMPARE(run->host, u"dev1"_s);
        QCOMPARE(run->worldSize.value_or(0), 2);
        QCOMPARE(run->recipeName, u"tiny"_s);
        QCOMPARE(run->recipeHash, u"abc"_s);
        QCOMPARE(run->seqLength.value_or(0), 4096);
        QCOMPARE(run->precision, u"bf16"_s);
        QCOMPARE(run->attentionBackend, u"fused"_s);
        QCOMPARE(run->recomputeGranularity, u"selective"_s);
        QCOMPARE(run->moduleSetLabel(), u"core_attn"_s);
        QCOMPARE(run->peakAllocated.value_or(0), qint64(2000000));
        QCOMPARE(run->peakRank.value_or(-1), 0);
        QCOMPARE(run->peakReserved.value_or(0), qint64(4000000));
        QCOMPARE(run->steadyStepMs.value_or(0), 80.0);
        QCOMPARE(run->modelTflops.value_or(0), 2.5);
        QCOMPARE(run->lossFinite.value_or(false), true);
        QCOMPARE(run->iterationsPlanned.value_or(0), 6);
        QCOMPARE(store.iterations(id).size(), 10);
        QCOMPARE(store.iterations(id, 1).size(), 5);
        const auto it3 = store.iterations(id, 1).at(2);
        QCOMPARE(it3.iteration, 3);
        QCOMPARE(it3.phase, u"steady"_s);
        QCOMPARE(it3.backwardPeakAllocated.value_or(0), qint64(1999999));
        const auto peaks = store.rankPeaks(id);
        QCOMPARE(peaks.size(), 2);
        QCOMPARE(peaks[1].peakAllocated.value_or(0), qint64(1999999));
        QCOMPARE(peaks[1].peakPhase, u"backward"_s);
        QCOMPARE(store.phasePeaks(id).size(), 4);
    }

    void lineFastPathMatchesTheJsonParser_data()
    {
        QTest::addColumn<QByteArray>("line");
        QTest::newRow("full") << QByteArray(
            "{\"event\":\"iteration\",\"rank\":1,\"iteration\":7,\"phase\":\"steady\",\"step_ms\":812.25,"
            "\"loss\":10.43,"
            "\"loss_finite\":true,\"forward_peak_allocated\":123456789012,\"forward_peak_reserved\":"
            "223456789012,"
            "\"backward_peak_allocated\":323456789012,\"backward_peak_reserved\":423456789012,"
            "\"optimizer_peak_allocated\":5,\"optimizer_peak_reserved\":6,\"allocated_after\":7,\"reserved_"
            "after\":8,"
            "\"alloc_retries\":3,\"optimizer_init\":false}");
        QTest::newRow("nulls, not finite")
            << QByteArray("{\"event\":\"iteration\",\"rank\":0,\"iteration\":2,\"phase\":\"warmup\",\"step_"
                          "ms\":1e3,\"loss\":null,"
                          "\"loss_finite\":false,\"forward_peak_allocated\":null,\"alloc_retries\":null,"
                          "\"optimizer_init\":true}");
        QTest::newRow("keys in another order, spaces, CRLF") << QByteArray(
            "{ \"rank\" : 3 , \"loss\": -1.5E-2, \"event\" : \"iteration\", \"iteration\":4 }\r\n");
        QTest::newRow("unknown keys, an escape")
            << QByteArray("{\"event\":\"iteration\",\"rank\":0,\"iteration\":5,\"note\":\"a \\\"quoted\\\" "
                          "word\",\"step_ms\":3}");
        QTest::newRow("unknown nested key") << QByteArray(
            "{\"event\":\"iteration\",\"rank\":0,\"iteration\":6,\"extra\":{\"a\":[1,2]},\"step_ms\":4.5}");
        QTest::newRow("no loss_finite key")
            << QByteArray("{\"event\":\"iteration\",\"rank\":0,\"iteration\":8,\"loss\":2}");
        QTest::newRow("phase times, gradient average, forward left")
            << QByteArray("{\"event\":\"iteration\",\"rank\":1,\"iteration\":3,\"forward_ms\":1.5,"
                          "\"backward_ms\":2.25,\"optimizer_ms\":0.5,\"grad_reduce_ms\":0.125,"
                          "\"forward_allocated_after\":4096}");
        QTest::newRow("integers written as doubles") << QByteArray(
            "{\"event\":\"iteration\",\"rank\":1.0,\"iteration\":2e0,\"forward_peak_allocated\":"
            "1.23456789012E11}");
    }

    // The bulk path (iteration lines straight into the row) stores what the launcher's path (the line decoded
    // into stream::Iteration, then iterationRowFromEvent) stores, column by column.
    void lineFastPathMatchesTheJsonParser()
    {
        QFETCH(QByteArray, line);
        Store store;
        QVERIFY(store.open(
            m_dir.filePath(u"fastpath-%1.sqlite"_s.arg(QString::fromLatin1(QTest::currentDataTag()))
                               .replace(u' ', u'_')
                               .replace(u',', u'_'))));
        const auto events = stream(recipeJson(modules({})), 0, 1000, 10.0, false);
        RunIngest viaLine(&store);
        RunIngest viaTyped(&store);
        for (const auto& e : events) {
            QVERIFY(viaLine.ingestLine(test::line(e)));
            QVERIFY(viaTyped.ingest(typed(e)));
        }
        QVERIFY(viaLine.ingestLine(line));
        QVERIFY(viaTyped.ingest(rs::stream::decodeLine(line.toStdString())));
        QCOMPARE(viaLine.malformedLines(), 0);
        QCOMPARE(viaTyped.malformedLines(), 0);
        QVERIFY(viaLine.finish() && viaTyped.finish());
        const auto a = store.iterations(viaLine.runId());
        const auto b = store.iterations(viaTyped.runId());
        QCOMPARE(a.size(), 1);
        QCOMPARE(b.size(), 1);
        for (const IterationColumn& c : iterationColumns()) {
            if (c.name == u"run_id")
                continue;
            QVERIFY2(c.get(a[0]) == c.get(b[0]),
                qPrintable(u"%1: %2 vs %3"_s.arg(c.name, c.get(a[0]).toString(), c.get(b[0]).toString())));
        }
        QCOMPARE(store.run(viaLine.runId())->lossFinite, store.run(viaTyped.runId())->lossFinite);
    }

    // A value the bulk path does not read plainly goes to the stream's reader, which names it: the line is
    // malformed on both paths, with one reason, and nothing of it is stored.
    void lineFastPathLeavesWhatItCannotReadToTheReader_data()
    {
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("expected");
        QTest::newRow("bytes not whole") << QByteArray("\"forward_peak_allocated\":1.5")
                                         << u"forward_peak_allocated"_s << u"an integer (bytes or a count)"_s;
        QTest::newRow("rank past int") << QByteArray("\"rank\":3000000000") << u"rank"_s << u"an integer"_s;
        QTest::newRow("bytes as text") << QByteArray("\"backward_peak_allocated\":\"lots\"")
                                       << u"backward_peak_allocated"_s << u"an integer (bytes or a count)"_s;
        QTest::newRow("time as bool") << QByteArray("\"step_ms\":true") << u"step_ms"_s << u"a number"_s;
        QTest::newRow("flag as number")
            << QByteArray("\"optimizer_init\":1") << u"optimizer_init"_s << u"true or false"_s;
        QTest::newRow("phase as number") << QByteArray("\"phase\":2") << u"phase"_s << u"a string"_s;
        QTest::newRow("not a JSON number: .5") << QByteArray("\"step_ms\":.5") << QString() << QString();
        QTest::newRow("not a JSON number: 01") << QByteArray("\"step_ms\":01") << QString() << QString();
        QTest::newRow("not a JSON number: 1.") << QByteArray("\"step_ms\":1.") << QString() << QString();
        QTest::newRow("number overflow") << QByteArray("\"step_ms\":1e999") << QString() << QString();
    }

    void lineFastPathLeavesWhatItCannotReadToTheReader()
    {
        QFETCH(QByteArray, value);
        QFETCH(QString, key);
        QFETCH(QString, expected);
        const QByteArray line = "{\"event\":\"iteration\",\"iteration\":9," + value + "}";
        QString readerSays;
        try {
            rs::stream::decodeLine(line.toStdString());
        } catch (const rs::stream::StreamError& error) {
            readerSays = QString::fromStdString(error.what());
            QCOMPARE(QString::fromStdString(error.key()), key);
        }
        if (key.isEmpty())
            QVERIFY2(readerSays.startsWith(u"not JSON"_s), qPrintable(readerSays));
        else
            QVERIFY2(readerSays.startsWith(u"iteration event: '%1': expected %2, got "_s.arg(key, expected)),
                qPrintable(readerSays));

        Store store;
        QVERIFY(store.open(m_dir.filePath(
            u"leftover-%1.sqlite"_s.arg(QString::fromLatin1(QTest::currentDataTag())).replace(u' ', u'_'))));
        RunIngest ingest(&store);
        for (const auto& e : stream(recipeJson(modules({})), 0, 1000, 10.0, false))
            QVERIFY(ingest.ingestLine(test::line(e)));
        QVERIFY(ingest.ingestLine(line));
        QCOMPARE(ingest.malformedLines(), 1);
        QCOMPARE(ingest.lastMalformedReason(), readerSays);
        QVERIFY(ingest.finish());
        QCOMPARE(store.iterations(ingest.runId()).size(), 0);
    }

    void malformedLinesAreCountedNotStored()
    {
        Store store;
        QVERIFY(store.open(m_dir.filePath(u"malformed.sqlite"_s)));
        RunIngest ingest(&store);
        for (const auto& e : stream(recipeJson(modules({})), 1, 1000, 10.0, false))
            QVERIFY(ingest.ingest(typed(e)));
        QVERIFY(ingest.ingestLine("{\"event\":\"iteration\",\"rank\":0,\"iteration\":9,\"step_ms\":"));
        QVERIFY(ingest.ingestLine("not json at all"));
        QCOMPARE(ingest.malformedLines(), 2);
        QVERIFY(ingest.finish());
        QCOMPARE(store.iterations(ingest.runId()).size(), 2); // the two of the stream, none of the junk
    }

    void runsOfADeadIngestingProcessEndAborted()
    {
        const QString path = m_dir.filePath(u"recover.sqlite"_s);
        qint64 dead = 0, alive = 0, elsewhere = 0;
        {
            Store store;
            QVERIFY(store.open(path));
            RunRecord r;
            r.source = source::Worker;
            r.outcome = outcome::Running;
            r.ingestHost = QSysInfo::machineHostName();
            r.ingestPid = 2147483000; // beyond pid_max: no such process
            dead = store.insertRun(r);
            IterationRow it;
            it.runId = dead;
            it.iteration = 1;
            it.backwardPeakAllocated = 4242;
            QVERIFY(store.insertIteration(it));
            r.ingestPid = QCoreApplication::applicationPid();
            alive = store.insertRun(r);
            r.ingestHost = u"another-host"_s;
            r.ingestPid = 2147483000;
            elsewhere = store.insertRun(r);
        }
        Store store;
        QVERIFY(store.open(path)); // recovers
        QCOMPARE(store.run(dead)->outcome, outcome::Aborted);
        QVERIFY(store.run(dead)->message.contains(u"ended before the run did"_s));
        QCOMPARE(store.run(dead)->peakAllocated.value_or(0), qint64(4242));
        QCOMPARE(store.iterations(dead).size(), 1);
        QCOMPARE(store.run(alive)->outcome, outcome::Running); // still being measured here
        QCOMPARE(store.run(elsewhere)->outcome, outcome::Running); // another host's process: cannot tell
        QCOMPARE(store.recoverInterruptedRuns(), 0);
    }

    void streamWithoutResultEndsAborted()
    {
        Store store;
        QVERIFY(store.open(m_dir.filePath(u"aborted.sqlite"_s)));
        const qint64 id = ingestAll(&store, stream(recipeJson(modules({})), 3, 1000, 10.0, false));
        const auto run = store.run(id);
        QCOMPARE(run->outcome, outcome::Aborted);
        QVERIFY(!run->message.isEmpty());
        QCOMPARE(store.iterations(id).size(), 6);
        QCOMPARE(run->peakAllocated.value_or(0), qint64(1000)); // from the iterations it reported
    }

    void nonFiniteLossIsRecorded()
    {
        Store store;
        QVERIFY(store.open(m_dir.filePath(u"nonfinite.sqlite"_s)));
        const qint64 id
            = ingestAll(&store, stream(recipeJson(modules({})), 3, 1000, 10.0, true, outcome::Nonfinite));
        const auto run = store.run(id);
        QCOMPARE(run->outcome, outcome::Nonfinite);
        QCOMPARE(run->failureStage, u"backward"_s);
        QCOMPARE(run->failureIteration.value_or(0), 3);
        QCOMPARE(run->lossFinite.value_or(true), false);
        const auto last = store.iterations(id, 0).last();
        QVERIFY(!last.loss);
        QCOMPARE(last.lossFinite.value_or(true), false);
    }

    void linksTheLatestMatchedControl()
    {
        Store store;
        QVERIFY(store.open(m_dir.filePath(u"control.sqlite"_s)));
        const qint64 otherSeq = ingestAll(&store, stream(recipeJson(modules({}), 8192), 3, 900, 10.0, true));
        const qint64 control = ingestAll(&store, stream(recipeJson(modules({})), 3, 1000, 10.0, true));
        const qint64 candidate
            = ingestAll(&store, stream(recipeJson(modules({ "core_attn" })), 3, 950, 11.0, true));
        const qint64 unmatched
            = ingestAll(&store, stream(recipeJson(modules({ "core_attn" }), 2048), 3, 500, 5.0, true));
        QCOMPARE(store.matchedControl(control), std::nullopt); // a control is not compared with itself
        QCOMPARE(store.matchedControl(candidate).value_or(0), control);
        QCOMPARE(store.matchedControl(unmatched), std::nullopt); // no [] control at seq 2048
        QVERIFY(otherSeq != control);

        const MatchCheck check = store.matchCheck(unmatched, control);
        QVERIFY(!check.matched);
        QVERIFY2(
            check.reasons.contains(u"seq_length: 2048 vs 4096"_s), qPrintable(check.reasons.join(u"; "_s)));

        const auto rows = store.compare(control, { candidate, unmatched });
        QCOMPARE(rows.size(), 3);
        QVERIFY(rows[0].isControl);
        QVERIFY(rows[1].match.matched);
        QCOMPARE(qRound(rows[1].allocatedVsControlPct.value_or(0) * 100), -500); // 950 vs 1000: -5.00%
        QCOMPARE(qRound(rows[1].timeVsControlPct.value_or(0) * 100), 1000); // 11 vs 10 ms: +10.00%
        QVERIFY(!rows[2].match.matched);
        QVERIFY(!rows[2].allocatedVsControlPct);
        QVERIFY(!rows[2].timeVsControlPct);
    }

    void explicitControlOverridesTheSearch()
    {
        Store store;
        QVERIFY(store.open(m_dir.filePath(u"explicit.sqlite"_s)));
        const qint64 a = ingestAll(&store, stream(recipeJson(modules({})), 2, 1000, 10.0, true));
        ingestAll(&store, stream(recipeJson(modules({})), 2, 1000, 10.0, true));
        const qint64 c
            = ingestAll(&store, stream(recipeJson(modules({ "mlp" })), 2, 1000, 10.0, true), true, a);
        QCOMPARE(store.matchedControl(c).value_or(0), a);
    }

    void filtersRuns_data()
    {
        QTest::addColumn<QString>("recipeName");
        QTest::addColumn<QStringList>("moduleSet");
        QTest::addColumn<bool>("useModuleSet");
        QTest::addColumn<QString>("outcomeFilter");
        QTest::addColumn<QString>("host");
        QTest::addColumn<int>("expected");
        QTest::newRow("all") << QString() << QStringList() << false << QString() << QString() << 4;
        QTest::newRow("name") << u"TIN"_s << QStringList() << false << QString() << QString() << 4;
        QTest::newRow("name none") << u"moon"_s << QStringList() << false << QString() << QString() << 0;
        QTest::newRow("[]") << QString() << QStringList() << true << QString() << QString() << 1;
        QTest::newRow("set any order") << QString() << QStringList { u"moe_act"_s, u"layernorm"_s } << true
                                       << QString() << QString() << 1;
        QTest::newRow("oom") << QString() << QStringList() << false << u"oom"_s << QString() << 1;
        QTest::newRow("host") << QString() << QStringList() << false << QString() << u"dev1"_s << 4;
        QTest::newRow("host none") << QString() << QStringList() << false << QString() << u"elsewhere"_s << 0;
    }

    void filtersRuns()
    {
        QFETCH(QString, recipeName);
        QFETCH(QStringList, moduleSet);
        QFETCH(bool, useModuleSet);
        QFETCH(QString, outcomeFilter);
        QFETCH(QString, host);
        QFETCH(int, expected);
        Store store;
        QVERIFY(store.open(m_dir.filePath(
            u"filters-%1.sqlite"_s.arg(QString::fromLatin1(QTest::currentDataTag())).replace(u' ', u'_'))));
        ingestAll(&store, stream(recipeJson(modules({})), 2, 1000, 10.0, true));
        ingestAll(&store, stream(recipeJson(modules({ "core_attn" })), 2, 1000, 10.0, true));
        ingestAll(&store, stream(recipeJson(modules({ "layernorm", "moe_act" })), 2, 1000, 10.0, true));
        ingestAll(&store, stream(recipeJson(modules({ "moe" })), 2, 1000, 10.0, true, outcome::Oom));
        RunFilter f;
        f.recipeName = recipeName;
        if (useModuleSet)
            f.moduleSet = moduleSet;
        f.outcome = outcomeFilter;
        f.host = host;
        QCOMPARE(store.listRuns(f).size(), expected);
    }

    void deleteCascades()
    {
        Store store;
        QVERIFY(store.open(m_dir.filePath(u"delete.sqlite"_s)));
        const qint64 control = ingestAll(&store, stream(recipeJson(modules({})), 2, 1000, 10.0, true));
        const qint64 id = ingestAll(&store, stream(recipeJson(modules({ "mlp" })), 2, 1000, 10.0, true));
        QCOMPARE(store.matchedControl(id).value_or(0), control);
        QVERIFY(store.deleteRun(control));
        QCOMPARE(store.iterations(control).size(), 0);
        QCOMPARE(store.rankPeaks(control).size(), 0);
        QCOMPARE(store.matchedControl(id), std::nullopt); // ON DELETE SET NULL
        QCOMPARE(pragma(store, u"foreign_key_check"_s), QString());
    }

private:
    QTemporaryDir m_dir;
};

QTEST_GUILESS_MAIN(TestStore)
#include "tst_store.moc"
