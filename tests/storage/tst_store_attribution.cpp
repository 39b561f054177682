// SPDX-License-Identifier: Apache-2.0
// What holds the peak, stored: the real worker (CPU, fp32, a tiny stack) runs a [] control and a candidate,
// its stream is ingested, and the stored attribution of every phase sums to the stored peak within 1 %; the
// memory layout is stored; `recompute report`'s Markdown shows "what holds the peak" for both runs.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "storage/ingest.h"
#include "storage/report.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs::storage;

namespace {
QJsonObject tinyRecipe(const QJsonArray& modules)
{
    return QJsonObject { { u"name"_s, u"tiny-attribution"_s }, { u"num_layers"_s, 2 },
        { u"hidden_size"_s, 64 }, { u"num_attention_heads"_s, 4 }, { u"seq_length"_s, 128 },
        { u"micro_batch_size"_s, 2 }, { u"global_batch_size"_s, 2 }, { u"vocab_size"_s, 256 },
        { u"attention_backend"_s, u"unfused"_s }, { u"recompute_granularity"_s, u"selective"_s },
        { u"recompute_modules"_s, modules }, { u"train_iters"_s, 3 }, { u"warmup_iters"_s, 1 } };
}

// Runs the worker on `recipe` and ingests its stream; returns the run id (0 on failure).
qint64 runWorker(Store* store, const QJsonObject& recipe, std::optional<qint64> control)
{
    QProcess worker;
    worker.start(QStringLiteral(RS_REAL_WORKER), { u"-"_s, u"--device"_s, u"cpu"_s });
    if (!worker.waitForStarted(30000))
        return 0;
    worker.write(QJsonDocument(recipe).toJson(QJsonDocument::Compact));
    worker.closeWriteChannel();
    if (!worker.waitForFinished(150000) || worker.exitCode() != 0) {
        qWarning() << worker.readAllStandardError();
        return 0;
    }
    RunIngest ingest(store);
    if (control)
        ingest.setControl(control);
    for (const QByteArray& line : worker.readAllStandardOutput().split('\n'))
        if (!line.trimmed().isEmpty() && !ingest.ingestLine(line))
            return 0;
    if (!ingest.finish() || ingest.malformedLines() != 0)
        return 0;
    return ingest.runId();
}
} // namespace

class TestStoreAttribution : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    Store m_store;
    qint64 m_control = 0;
    qint64 m_candidate = 0;

private slots:
    void initTestCase()
    {
        QVERIFY(m_store.open(m_dir.filePath(u"attribution.sqlite"_s)));
        m_control = runWorker(&m_store, tinyRecipe(QJsonArray()), std::nullopt);
        QVERIFY(m_control != 0);
        m_candidate = runWorker(&m_store, tinyRecipe(QJsonArray { u"core_attn"_s }), m_control);
        QVERIFY(m_candidate != 0);
    }

    void attributionSumsToThePeak_data()
    {
        QTest::addColumn<bool>("control");
        QTest::newRow("[] control") << true;
        QTest::newRow("core_attn") << false;
    }
    void attributionSumsToThePeak()
    {
        QFETCH(bool, control);
        const qint64 id = control ? m_control : m_candidate;
        const auto rows = m_store.peakAttribution(id);
        QVERIFY2(rows.size() >= 3, qPrintable(QString::number(rows.size()))); // forward, backward, optimizer…
        for (const PeakAttributionRow& r : rows) {
            QVERIFY(r.peakAllocated && *r.peakAllocated > 0);
            QVERIFY(r.attributed);
            qint64 sum = 0;
            for (const auto& [name, bytes] : r.categories)
                sum += bytes;
            QCOMPARE(sum, *r.attributed); // the categories are the attributed bytes
            const double off = std::abs(double(*r.attributed - *r.peakAllocated)) / double(*r.peakAllocated);
            QVERIFY2(off <= 0.01,
                qPrintable(
                    u"%1: attributed %2 vs peak %3"_s.arg(r.phase).arg(*r.attributed).arg(*r.peakAllocated)));
            qint64 activations = 0;
            for (const ActivationShare& a : r.activations)
                activations += a.bytes;
            for (const auto& [name, bytes] : r.categories)
                if (name == u"activations")
                    QCOMPARE(activations, bytes);
        }
        // The phase of the peak holds the run's stored peak (rank 0's rank_summary).
        const PeakAttributionRow* peak = Store::peakPhaseOf(rows);
        QVERIFY(peak);
        const auto ranks = m_store.rankPeaks(id);
        QCOMPARE(ranks.size(), 1);
        const double off = std::abs(double(*peak->peakAllocated - *ranks.first().peakAllocated))
            / double(*ranks.first().peakAllocated);
        QVERIFY2(off <= 0.01,
            qPrintable(u"peak phase %1: %2 vs rank peak %3"_s.arg(peak->phase)
                           .arg(*peak->peakAllocated)
                           .arg(*ranks.first().peakAllocated)));
        const auto layout = m_store.memoryLayout(id);
        QVERIFY(layout);
        QCOMPARE(layout->microBatches, std::optional<int>(1));
        QVERIFY(layout->parameterBytes.value_or(0) > 0);
    }

    void reportShowsWhatHoldsThePeak()
    {
        const auto tables = buildReport(m_store, m_control, {});
        QCOMPARE(tables.size(), 1);
        QCOMPARE(tables.first().attribution.size(), 2);
        const QString md = formatReport(tables, ReportFormat::Markdown);
        QVERIFY2(md.contains(u"#### What holds the peak (rank 0, GB)"_s), qPrintable(md));
        QVERIFY2(md.contains(u"| [] (control) |"_s), qPrintable(md));
        QVERIFY2(md.contains(u"| core_attn |"_s), qPrintable(md));
        QVERIFY(md.contains(u"activations (GB)"_s));
    }
};

QTEST_GUILESS_MAIN(TestStoreAttribution)
#include "tst_store_attribution.moc"
