// SPDX-License-Identifier: Apache-2.0
// Imports compare themselves: every folder of logs under tests/fixtures/logs/ (one shape, several recompute
// choices: mlm-tp2pp2-comparison, bridge-summary-comparison, and the real Megatron-LM logs of one H200 shape
// in megatron-lm-h200/ once they are there) is imported with no manual step, in name order and in reverse,
// and must come out as one comparison: the run without recompute is the control (labelled as the explicit
// [] or as Megatron's recompute_granularity None), every other run is linked to it, every row is matched,
// and the report gives deltas for every run that passed.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include "storage/log_import.h"
#include "storage/report.h"
#include "storage/store.h"

using namespace Qt::StringLiterals;
using namespace rs::storage;

namespace {
const QString kLogs = QStringLiteral(RS_SOURCE_DIR "/tests/fixtures/logs");

QStringList logsIn(const QString& folder)
{
    QStringList out;
    const QDir dir(folder);
    for (const QString& name : dir.entryList({ u"*.log"_s }, QDir::Files, QDir::Name))
        out << dir.filePath(name);
    return out;
}
} // namespace

class TestImportComparison : public QObject {
    Q_OBJECT
private slots:
    void everyFolderIsOneComparison_data()
    {
        QTest::addColumn<QStringList>("files");
        const QDir root(kLogs);
        int folders = 0;
        for (const QString& sub : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
            QStringList files = logsIn(root.filePath(sub));
            if (files.size() < 2)
                continue;
            ++folders;
            QTest::newRow(qPrintable(sub + u", in name order"_s)) << files;
            std::reverse(files.begin(), files.end());
            QTest::newRow(qPrintable(sub + u", in reverse"_s)) << files;
        }
        QVERIFY2(folders >= 2, "the comparison fixtures are missing");
    }

    void everyFolderIsOneComparison()
    {
        QFETCH(QStringList, files);
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"comparison.sqlite"_s)));
        QVector<qint64> ids;
        for (const QString& file : files) {
            const ImportResult r = importTrainingLog(&store, file);
            QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
            QVERIFY2(!r.duplicate, qPrintable(file));
            ids << r.runId;
        }
        const QVector<RunRecord> runs = store.listRuns();
        QCOMPARE(runs.size(), files.size());
        // A folder may hold several shapes (megatron-lm-h200: dense, Llama-like, MoE, and no-recompute
        // variants with another optimizer, softmax or micro-batch): each shape is its own comparison.
        QHash<qint64, RunRecord> controls;
        for (const RunRecord& r : runs) {
            QVERIFY2(r.recomputeGranularity != u"unknown", qPrintable(r.provenance));
            QVERIFY2(r.numLayers && r.hiddenSize && r.seqLength, qPrintable(r.provenance));
            if (r.isNoRecompute())
                controls.insert(r.id, r);
        }
        QVERIFY(!controls.isEmpty());
        for (const RunRecord& r : runs) {
            if (r.isNoRecompute()) {
                QVERIFY2(!r.controlRunId, qPrintable(r.provenance));
                continue;
            }
            QVERIFY2(r.controlRunId && controls.contains(*r.controlRunId), qPrintable(r.provenance));
            const RunRecord& c = controls.value(*r.controlRunId);
            QVERIFY(c.controlKind() == u"explicit-[]" || c.controlKind() == u"megatron-none");
            QVERIFY2(Store::matchCheck(r, c).matched, qPrintable(r.provenance + u" vs "_s + c.provenance));
            // No other run without recompute matches it: the control is the only one it could have.
            for (const RunRecord& other : controls) {
                if (other.id != c.id)
                    QVERIFY2(!Store::matchCheck(r, other).matched,
                        qPrintable(r.provenance + u" also matches "_s + other.provenance));
            }
        }

        const QVector<ReportTable> tables = buildReport(store, std::nullopt, {});
        QCOMPARE(unmatchedRows(tables), 0);
        int deltas = 0, compared = 0, passed = 0;
        for (const ReportTable& t : tables) {
            QVERIFY(t.control); // every run has its control, or is one
            QVERIFY(controls.contains(t.control->id));
            QCOMPARE(t.rows.size(), store.runsControlledBy(t.control->id).size() + 1);
            ++compared;
            for (const ComparisonRow& row : t.rows) {
                if (row.isControl || row.run.outcome != outcome::Pass)
                    continue;
                ++passed;
                if (row.run.peakAllocated && row.run.peakNote == t.control->peakNote)
                    QVERIFY2(row.allocatedVsControlPct, qPrintable(row.run.provenance));
                if (row.run.steadyStepMs && t.control->steadyStepMs)
                    QVERIFY2(row.timeVsControlPct, qPrintable(row.run.provenance));
                deltas += row.allocatedVsControlPct.has_value();
            }
            const QString md = formatReport({ t }, ReportFormat::Markdown);
            const QString vs = t.control->isExplicitControl() ? u"Allocated vs []"_s : u"Allocated vs None"_s;
            QVERIFY2(md.contains(vs), qPrintable(md));
            QVERIFY(md.contains(t.control->controlKindLabel()));
        }
        QVERIFY(compared >= 1);
        // A folder of runs that did not pass (bridge-rank-h200: fake-process-group MoE ranks and fp16 runs
        // whose every step was skipped) is still one comparison, with no delta to take.
        QVERIFY(deltas >= 1 || passed == 0);
    }

    // The real Megatron + TE logs of a Bridge recipe's rank on the H200 (docs/benchmarks.md "Bridge
    // recipes by name"): none is a measurement to compare, and the importer says so. The Moonlight rank
    // under --fake-process-group has a NaN grad norm from its first step (the skipped all-to-all leaves
    // the token counts unset); the fp16 runs skip every step (loss scale 2^32), so no Adam moment is ever
    // made.
    void realBridgeRankLogsAreNoMeasurements_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("failedAt");
        for (const char* f :
            { "fp16-dense-none", "fp16-dense-core_attn", "fp16-moe-none", "fp16-moe-moe_act" })
            QTest::newRow(f) << QString::fromLatin1(f) << 1;
        for (const char* f : { "moonlight-none", "moonlight-core_attn", "moonlight-mla_up_proj",
                 "moonlight-mla_up_proj-mlp", "moonlight-moe_act", "moonlight-layernorm-moe_act" })
            QTest::newRow(f) << QString::fromLatin1(f) << 2;
    }
    void realBridgeRankLogsAreNoMeasurements()
    {
        QFETCH(QString, file);
        QFETCH(int, failedAt);
        const QString path = kLogs + u"/bridge-rank-h200/"_s + file + u".log"_s;
        if (!QFileInfo::exists(path))
            QSKIP("tests/fixtures/logs/bridge-rank-h200 is not in this checkout");
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"rank.sqlite"_s)));
        const ImportResult r = importTrainingLog(&store, path);
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        const auto run = store.run(r.runId);
        QVERIFY(run);
        QCOMPARE(run->outcome, outcome::Nonfinite);
        QCOMPARE(run->failureIteration, std::optional<int>(failedAt));
    }

    // The real logs: three shapes of one H200, each compared with its own run without recompute; the
    // variants that change something else (distributed optimizer, fp32 softmax, MBS 2) are not.
    void realMegatronLmLogs()
    {
        const QString folder = kLogs + u"/megatron-lm-h200"_s;
        if (!QDir(folder).exists())
            QSKIP("tests/fixtures/logs/megatron-lm-h200 is not in this checkout");
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"h200.sqlite"_s)));
        QHash<QString, qint64> id;
        for (const QString& file : logsIn(folder)) {
            const auto r = importTrainingLog(&store, file);
            QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
            id.insert(QFileInfo(file).completeBaseName(), r.runId);
        }
        auto controlOf = [&](const char* name) {
            return store.run(id.value(QLatin1String(name)))->controlRunId.value_or(0);
        };
        for (const char* name :
            { "dense-core_attn", "dense-full-block-4", "dense-full-uniform-1", "dense-mlp" })
            QCOMPARE(controlOf(name), id.value(u"dense-none"_s));
        for (const char* name : { "llama-core_attn", "llama-full-uniform-1", "llama-mlp" })
            QCOMPARE(controlOf(name), id.value(u"llama-none"_s));
        for (const char* name : { "moe-core_attn", "moe-full-uniform-1", "moe-moe", "moe-shared_experts" })
            QCOMPARE(controlOf(name), id.value(u"moe-none"_s));
        const auto distopt = Store::matchCheck(
            *store.run(id.value(u"dense-none-distopt"_s)), *store.run(id.value(u"dense-none"_s)));
        QVERIFY(!distopt.matched);
        QVERIFY2(distopt.reasons.contains(u"use_distributed_optimizer: True vs False"_s),
            qPrintable(distopt.reasons.join(u"; "_s)));
        const auto dense = store.run(id.value(u"dense-mlp"_s));
        QCOMPARE(dense->outcome, outcome::Oom);
        QCOMPARE(dense->failureIteration.value_or(0), 1);
        QCOMPARE(store.run(id.value(u"dense-none"_s))->controlKind(), u"megatron-none"_s);
        // Full recompute keeps less than none: the delta is negative, as measured.
        const auto tables = buildReport(store, id.value(u"dense-none"_s), {});
        QCOMPARE(tables.size(), 1);
        QCOMPARE(tables[0].rows.size(), 5);
        for (const auto& row : tables[0].rows) {
            if (row.run.moduleSetLabel() == u"full uniform 1")
                QVERIFY(row.allocatedVsControlPct.value_or(0) < -40);
        }
    }

    // Issue 29 item 2: `max allocated` is torch's running maximum, so a peak that grew by 1-2 MB after
    // iteration 2 of one run (the Llama-like core_attn, three of four MoE candidates) is still read at the
    // same point as its control's when both logged the same iterations: the allocated delta is given, the
    // matched run compared, never "peak after iteration 4 vs 2: not compared".
    void runningMaximumPeaksAreCompared_data()
    {
        QTest::addColumn<QString>("control");
        QTest::addColumn<QString>("candidate");
        QTest::newRow("llama core_attn (grew after iteration 2)") << u"llama-none"_s << u"llama-core_attn"_s;
        QTest::newRow("moe moe (the control grew after 2)") << u"moe-none"_s << u"moe-moe"_s;
        QTest::newRow("moe core_attn") << u"moe-none"_s << u"moe-core_attn"_s;
        QTest::newRow("moe shared_experts") << u"moe-none"_s << u"moe-shared_experts"_s;
        QTest::newRow("dense core_attn") << u"dense-none"_s << u"dense-core_attn"_s;
    }
    void runningMaximumPeaksAreCompared()
    {
        QFETCH(QString, control);
        QFETCH(QString, candidate);
        const QString folder = kLogs + u"/megatron-lm-h200/"_s;
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"peaks.sqlite"_s)));
        const auto c = importTrainingLog(&store, folder + control + u".log"_s);
        const auto r = importTrainingLog(&store, folder + candidate + u".log"_s);
        QVERIFY2(c.error.isEmpty() && r.error.isEmpty(), qPrintable(c.error + r.error));
        const auto run = store.run(r.runId);
        const auto ctrl = store.run(c.runId);
        QCOMPARE(run->controlRunId.value_or(0), c.runId);
        // Both read after the last iteration they reported: the same point.
        QCOMPARE(run->peakNote, ctrl->peakNote);
        const auto rows = store.compare(c.runId, { r.runId });
        QCOMPARE(rows.size(), 2);
        QVERIFY2(rows[1].match.matched, qPrintable(rows[1].match.reasons.join(u"; "_s)));
        QVERIFY2(rows[1].allocatedVsControlPct, qPrintable(rows[1].match.notes.join(u"; "_s)));
        const double expected = (double(*run->peakAllocated) - double(*ctrl->peakAllocated))
            / double(*ctrl->peakAllocated) * 100;
        QCOMPARE(qRound(*rows[1].allocatedVsControlPct * 1000), qRound(expected * 1000));
        for (const QString& n : rows[1].match.notes)
            QVERIFY2(!n.contains(u"not compared"_s), qPrintable(n));
    }

    // Issue 29 item 10: the allocator reserves what it allocates; memory lines whose max reserved is below
    // their max allocated are not torch's counters: flagged in the run's notes and never its peak.
    void reservedBelowAllocatedIsFlagged()
    {
        QFile in(kLogs + u"/megatron-lm-h200/dense-none.log"_s);
        QVERIFY(in.open(QIODevice::ReadOnly));
        QString text = QString::fromUtf8(in.readAll());
        // Every rank-0 line's max reserved set to 1 MB, below its max allocated.
        QStringList lines = text.split(u'\n');
        const QRegularExpression reserved(u"max reserved: [0-9.]+"_s);
        for (QString& line : lines) {
            if (line.startsWith(u"[Rank 0]"_s))
                line.replace(reserved, u"max reserved: 1.00"_s);
        }
        text = lines.join(u'\n');
        QTemporaryDir dir;
        const QString path = dir.filePath(u"edited.log"_s);
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(text.toUtf8());
        out.close();
        Store store;
        QVERIFY(store.open(dir.filePath(u"flag.sqlite"_s)));
        const auto r = importTrainingLog(&store, path);
        QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
        const QString notes = r.notes.join(u"; "_s);
        QVERIFY2(notes.contains(u"max reserved below max allocated refused"_s), qPrintable(notes));
        QVERIFY(store.run(r.runId)->notes.contains(u"max reserved below max allocated"_s));
        // The refused max reserved is not kept: never the run's peak reserved.
        const auto run = store.run(r.runId);
        QVERIFY(run->peakAllocated && (!run->peakReserved || *run->peakReserved >= *run->peakAllocated));
        // The log as Megatron wrote it has no such note.
        const auto clean = importTrainingLog(&store, kLogs + u"/megatron-lm-h200/dense-none.log"_s);
        QVERIFY(!clean.notes.join(u"; "_s).contains(u"max reserved below"_s));
    }

    // The synthetic folders' own values: what each recompute choice costs against Megatron's None.
    void knownDeltas_data()
    {
        QTest::addColumn<QString>("folder");
        QTest::addColumn<QString>("moduleSet");
        QTest::addColumn<QString>("outcome");
        QTest::addColumn<int>("failureIteration");
        QTest::addColumn<double>("allocatedPct"); // NaN: no delta
        const double none = std::nan("");
        QTest::newRow("mlm full") << u"mlm-tp2pp2-comparison"_s << u"full uniform 1"_s << outcome::Pass << 0
                                  << -47.46;
        QTest::newRow("mlm core_attn")
            << u"mlm-tp2pp2-comparison"_s << u"core_attn"_s << outcome::Pass << 0 << -15.25;
        QTest::newRow("mlm mlp, RuntimeError: CUDA error: out of memory")
            << u"mlm-tp2pp2-comparison"_s << u"mlp"_s << outcome::Oom << 2 << none;
        QTest::newRow("bridge moe_act")
            << u"bridge-summary-comparison"_s << u"moe_act"_s << outcome::Pass << 0 << -13.39;
        QTest::newRow("bridge layernorm, moe_act, NCCL out of memory")
            << u"bridge-summary-comparison"_s << u"layernorm, moe_act"_s << outcome::Oom << 3 << -10.71;
    }

    void knownDeltas()
    {
        QFETCH(QString, folder);
        QFETCH(QString, moduleSet);
        QFETCH(QString, outcome);
        QFETCH(int, failureIteration);
        QFETCH(double, allocatedPct);
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"known.sqlite"_s)));
        for (const QString& file : logsIn(kLogs + u'/' + folder))
            QVERIFY(importTrainingLog(&store, file).error.isEmpty());
        const auto tables = buildReport(store, std::nullopt, {});
        QCOMPARE(tables.size(), 1);
        const auto row = std::find_if(tables[0].rows.begin(), tables[0].rows.end(),
            [&](const ComparisonRow& r) { return r.run.moduleSetLabel() == moduleSet; });
        QVERIFY(row != tables[0].rows.end());
        QCOMPARE(row->run.outcome, outcome);
        QCOMPARE(row->run.failureIteration.value_or(0), failureIteration);
        if (std::isnan(allocatedPct)) {
            QVERIFY(!row->allocatedVsControlPct);
        } else {
            QVERIFY(row->allocatedVsControlPct);
            QCOMPARE(qRound(*row->allocatedVsControlPct * 100), qRound(allocatedPct * 100));
        }
        QCOMPARE(tables[0].control->moduleSetLabel(), u"none"_s);
        QCOMPARE(tables[0].control->controlKind(), u"megatron-none"_s);
    }

    // A control the user picks wins over the automatic one, and a later import does not undo it.
    void userControlIsKept()
    {
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"user.sqlite"_s)));
        const QString folder = kLogs + u"/mlm-tp2pp2-comparison/"_s;
        const auto core = importTrainingLog(&store, folder + u"selective_core_attn.log"_s);
        const auto full = importTrainingLog(&store, folder + u"full_uniform_1.log"_s);
        QVERIFY(!full.controlRunId); // no run without recompute yet
        QString error;
        QVERIFY2(store.linkControl(full.runId, core.runId, &error), qPrintable(error));
        QVERIFY(!store.linkControl(core.runId, full.runId, &error)); // a loop
        QVERIFY2(error.contains(u"loop"_s), qPrintable(error));
        QVERIFY(!store.linkControl(core.runId, core.runId, &error));
        QVERIFY(!store.linkControl(core.runId, 999, &error));
        const auto none = importTrainingLog(&store, folder + u"none.log"_s);
        QCOMPARE(none.runsLinkedToIt, 1); // core_attn; full keeps the user's control
        QCOMPARE(store.run(full.runId)->controlRunId.value_or(0), core.runId);
        QCOMPARE(store.run(core.runId)->controlRunId.value_or(0), none.runId);
        const auto tables = buildReport(store, std::nullopt, {});
        QCOMPARE(tables.size(), 2);
        QVERIFY(formatReport(tables, ReportFormat::Markdown).contains(u"Allocated vs control"_s));
        // --control at import
        ImportOptions options;
        options.control = full.runId;
        const auto mlp = importTrainingLog(&store, folder + u"selective_core_attn_mlp.log"_s, options);
        QVERIFY2(mlp.error.isEmpty(), qPrintable(mlp.error));
        QCOMPARE(store.run(mlp.runId)->controlRunId.value_or(0), full.runId);
        options.control = 12345;
        QVERIFY(importTrainingLog(&store, folder + u"selective_mlp_oom.log"_s, options)
                    .error.contains(u"not in"_s));
        QVERIFY(store.linkControl(mlp.runId, std::nullopt, &error));
        QVERIFY(!store.run(mlp.runId)->controlRunId);
    }

    // Runs whose shape the log does not tell are never linked without being asked.
    void unknownShapeIsNotLinked()
    {
        QTemporaryDir dir;
        Store store;
        QVERIFY(store.open(dir.filePath(u"unknown.sqlite"_s)));
        ImportOptions none;
        none.overrides = { u"model.recompute_granularity=null"_s };
        const auto a = importTrainingLog(&store, kLogs + u"/bridge_moe_pass.log"_s, none);
        QVERIFY2(a.error.isEmpty(), qPrintable(a.error));
        QCOMPARE(store.run(a.runId)->moduleSetLabel(), u"none"_s);
        ImportOptions moe;
        moe.overrides
            = { u"model.recompute_granularity=selective"_s, u"model.recompute_modules=[moe_act]"_s };
        const auto b = importTrainingLog(&store, kLogs + u"/bridge_moe_act_oom.log"_s, moe);
        QVERIFY(!b.controlRunId);
        QCOMPARE(a.runsLinkedToIt, 0);
    }
};

QTEST_GUILESS_MAIN(TestImportComparison)
#include "tst_import_comparison.moc"
